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
6. ``hroof simulate triad n=1000`` (warm: its kernels cached on disk).

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
            ("hroof simulate triad n=1000", [hroof, "simulate", "triad", "n=1000"]),
        ]
        for _, cmd in cases:  # warm: compile the trivial function, hroof's kernels
            run(cmd, cwd=tmp)
        times: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in cases}
        for _ in range(args.repeat):
            for name, cmd in cases:
                times[name].append(run(cmd, cwd=tmp))
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
