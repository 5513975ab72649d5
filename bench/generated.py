"""A kernel's generated chunks into the simulator: the chunk size, and trusted (counted)
against checked chunks.

For each stream, runs :func:`hroof.cachesim.simulate` on ``plan.chunks(size)``
for chunk sizes from 16 Ki to 1 Mi accesses, with the chunks trusted (hroof's
own generator: counted, not checked; what ``hroof simulate KERNEL`` does) and
checked (as a user's arrays), classification off, one thread, the default
machine; best of ``--repeat``, every variant once per round so that all see
the same minutes. Prints end-to-end seconds and the timing split (generate,
check, simulate) of the best run.

Usage::

    python bench/generated.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from hroof.cachesim import simulate
from hroof.machine.model import resolve_machine
from hroof.traces import plan_kernel

STREAMS = [("triad", {"n": 5_000_000}), ("stencil7", {"n": 160})]
SIZES = [1 << 14, 1 << 16, 1 << 18, 1 << 20]


def run(plan, h, size, trusted):
    t0 = time.perf_counter()
    r = simulate(h, plan.chunks(size), classify=False, generated=True, trusted=trusted)
    return time.perf_counter() - t0, r


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    h = resolve_machine(None)
    run(plan_kernel("triad", n=1000), h, 1024, True)  # load the kernels, not timed
    print(f"{h.describe()}; classification off, one thread; load {os.getloadavg()}")
    for name, params in STREAMS:
        plan = plan_kernel(name, **params)
        best: dict = {}
        for _ in range(args.repeat):
            for size in SIZES:
                for trusted in (True, False):
                    t, r = run(plan, h, size, trusted)
                    if (size, trusted) not in best or t < best[size, trusted][0]:
                        best[size, trusted] = (t, r.timing)
        label = f"{name} " + " ".join(f"{k}={v}" for k, v in params.items())
        print(f"\n{label}: {plan.accesses:,} accesses")
        print(f"{'chunk':>8} {'chunks':>8} {'end-to-end s':>12} {'M acc/s':>8} "
              f"{'generate s':>10} {'check s':>8} {'simulate s':>10} (simulate s includes check s)")  # fmt: skip
        for size in SIZES:
            for trusted in (True, False):
                t, tm = best[size, trusted]
                print(f"{size:>8} {'trusted' if trusted else 'checked':>8} {t:12.3f} "
                      f"{plan.accesses / t / 1e6:8.1f} {tm['generate_s']:10.3f} "
                      f"{tm['check_s']:8.3f} {tm['simulate_s']:10.3f}")  # fmt: skip
    print(f"load {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
