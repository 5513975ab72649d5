"""One simulation on one thread or two (``threads=2``: L1 beside the levels below): from
what size is two faster?

Runs each kernel size through :func:`hroof.studies.runs.simulate_kernel` with
classification off (``--classify on``: on; ``both``: off, then on) on the default machine, ``threads=1`` and ``threads=2``
alternately (best of ``--repeat``, the same minutes for both), and prints the wall
time of each (generation and simulation) and their ratio. The two results are
compared field by field (they must be equal). ``hroof simulate`` picks two threads
from :data:`hroof.studies.runs.TWO_THREADS_FROM` accesses up.

Usage::

    python bench/threads.py [--repeat 3] [--classify off|on|both] [--machine NAME]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from hroof.machine.model import resolve_machine
from hroof.studies.runs import TWO_THREADS_FROM, simulate_kernel
from hroof.traces import plan_kernel

CASES = [
    ("triad", {"n": 10_000}),
    ("triad", {"n": 100_000}),
    ("triad", {"n": 1_000_000}),
    ("triad", {"n": 10_000_000}),
    ("stencil7", {"n": 32}),
    ("stencil7", {"n": 64}),
    ("stencil7", {"n": 128}),
    ("stencil7", {"n": 200}),
]


def run(plan, h, threads, classify=False):
    t0 = time.perf_counter()
    r = simulate_kernel(plan, h, classify=classify, threads=threads)
    return time.perf_counter() - t0, r


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--classify", choices=("off", "on", "both"), default="off")
    ap.add_argument("--machine", default=None, help="a preset or file (default: hroof's own)")
    args = ap.parse_args(argv)
    modes = {"off": (False,), "on": (True,), "both": (False, True)}[args.classify]
    h = resolve_machine(args.machine)
    for classify in modes:
        run(plan_kernel("triad", n=1000), h, 2, classify)  # load the kernels, not timed
    print(f"{h.describe()}; two threads from {TWO_THREADS_FROM:,} accesses")
    print(f"load average before: {os.getloadavg()}")
    for classify in modes:
        print(f"classification {'on' if classify else 'off'}")
        _table(h, args.repeat, classify)
    print(f"load average after: {os.getloadavg()}")
    return 0


def _table(h, repeat: int, classify: bool) -> None:
    print(f"{'kernel':<22} {'accesses':>10} {'1 thread s':>10} {'2 threads s':>11} {'speed-up':>8}")
    for name, params in CASES:
        plan = plan_kernel(name, **params)
        best = {1: float("inf"), 2: float("inf")}
        results = {}
        for _ in range(repeat):
            for threads in (1, 2):
                t, results[threads] = run(plan, h, threads, classify)
                best[threads] = min(best[threads], t)
        a, b = (results[t].to_dict() for t in (1, 2))
        for d in (a, b):
            d.pop("timing")
            d.pop("options", None)
        assert a == b, f"{name} {params}: the two-thread result differs"
        label = f"{name} " + " ".join(f"{k}={v}" for k, v in params.items())
        print(f"{label:<22} {plan.accesses:>10,} {best[1]:10.3f} {best[2]:11.3f} "
              f"{best[1] / best[2]:7.2f}x")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
