"""Start-up of a warm ``hroof simulate`` against the floor of any Numba program.

Issue 14 asks for a warm ``hroof simulate triad n=1000`` under 0.5 s. This bench runs,
interleaved and each in a fresh process, the steps every such run pays, and hroof
itself:

1. ``python -c pass`` (the interpreter);
2. ``import numpy``;
3. ``import numpy, numba``;
4. the floor: the same, then one call of a trivial ``@njit(cache=True)`` function
   whose machine code is already in Numba's on-disk cache (Numba's first call loads
   its typing and target registries whatever the function);
5. ``hroof --help`` (no Numba: the parser and the command modules);
6. ``hroof simulate triad n=1000``: engine auto, which runs this small kernel on the
   plain-Python reference model and never imports Numba;
7. the same with ``--engine numba`` (warm: its kernels cached on disk);
8. with ``--base DIR``, ``python -m hroof simulate triad n=1000`` run from another
   source tree (the code before a change), in the same rounds;
9. the crossover: ``hroof simulate`` of larger kernels on each engine
   (``--crossover``, triad and stencil7 from 10,000 to 160,000 accesses).

It prints the best (and median) CPU seconds (user + system of the child, steadier
than wall time on a shared machine) and wall seconds of each over ``--repeat`` runs.

Usage::

    python bench/startup.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

TRIVIAL = """\
from numba import njit

@njit(cache=True, nogil=True)
def total(a):
    s = 0
    for i in range(a.shape[0]):
        s += a[i]
    return s
"""


#: Kernels of about 10,000 to 160,000 accesses (triad: 3 an element; stencil7: 8 a point).
CROSSOVER = [
    ("triad", "n=3333"),
    ("triad", "n=6667"),
    ("triad", "n=13333"),
    ("triad", "n=26667"),
    ("triad", "n=53333"),
    ("stencil7", "n=12"),
    ("stencil7", "n=16"),
    ("stencil7", "n=20"),
    ("stencil7", "n=27"),
]


def run(cmd: list[str], cwd: str | None = None) -> tuple[float, float]:
    """CPU seconds (user + sys) and wall seconds of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument(
        "--base",
        metavar="DIR",
        help="also time 'python -m hroof simulate triad n=1000' from this source tree (e.g. "
        "'git archive REV' unpacked): python -m puts the working directory first on sys.path",
    )
    ap.add_argument(
        "--crossover",
        action="store_true",
        help="also time larger kernels on both engines (where the reference model's time "
        "reaches the simulator's start-up)",
    )
    args = ap.parse_args()
    py = sys.executable
    hroof = os.path.join(os.path.dirname(py), "hroof")
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "trivial.py"), "w") as f:
            f.write(TRIVIAL)
        floor = "import numpy as np, trivial; trivial.total(np.arange(3))"
        cases = [
            ("python -c pass", [py, "-c", "pass"]),
            ("import numpy", [py, "-c", "import numpy"]),
            ("import numpy, numba", [py, "-c", "import numpy, numba"]),
            ("floor: + one cached @njit call", [py, "-c", floor]),
            ("hroof --help", [hroof, "--help"]),
            ("hroof simulate triad n=1000 (auto: reference)", [hroof, "simulate", "triad",
                                                               "n=1000"]),
            ("hroof simulate triad n=1000 --engine numba", [hroof, "simulate", "triad", "n=1000",
                                                            "--engine", "numba"]),
        ]  # fmt: skip
        if args.base:
            cases.append(("base tree: python -m hroof simulate triad n=1000",
                          [py, "-m", "hroof", "simulate", "triad", "n=1000"]))  # fmt: skip
        if args.crossover:
            for kernel, params in CROSSOVER:
                for engine in ("reference", "numba"):
                    cases.append((f"{kernel} {params} --engine {engine}",
                                  [hroof, "simulate", kernel, *params.split(), "--engine", engine]))  # fmt: skip
        cwds = {name: args.base if name.startswith("base") else tmp for name, _ in cases}
        for name, cmd in cases:  # warm: compile the trivial function, hroof's kernels
            run(cmd, cwd=cwds[name])
        times: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in cases}
        for _ in range(args.repeat):
            for name, cmd in cases:
                times[name].append(run(cmd, cwd=cwds[name]))
    print(f"load average {os.getloadavg()[0]:.1f}; best (median) of {args.repeat} runs")
    print("| command | CPU s | wall s |")
    print("|---|---:|---:|")
    for name, ts in times.items():
        cpu = [c for c, _ in ts]
        wall = [w for _, w in ts]
        print(
            f"| {name} | {min(cpu):.3f} ({statistics.median(cpu):.3f}) "
            f"| {min(wall):.3f} ({statistics.median(wall):.3f}) |"
        )


if __name__ == "__main__":
    main()
