"""The part of a generated run that ``Simulator.feed_generated`` changes, alone: generate,
count and run L1 (a one-level hierarchy, the default machine's L1, classification off),
chunks of 1 Mi accesses fed one by one (``Plan.chunks`` + ``feed(trusted=True)``, as
before) against blocks straight into L1 (``Plan.generated``), in one process,
interleaved, best of ``--repeat`` (wall and CPU seconds), with the block size varied.

Usage::

    python bench/gen_l1_pass.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from hroof.cachesim import HierarchyConfig, simulate
from hroof.cachesim import _generated as S
from hroof.machine.model import resolve_machine
from hroof.traces import plan_kernel

STREAMS = [("stencil7", {"n": 128}), ("triad", {"n": 5_000_000})]
BLOCKS = [1 << 12, 1 << 14, 1 << 15, 1 << 16, 1 << 18]


def run(h, plan, block):
    if block:
        S.BLOCK = block
    parts = plan.generated(1 << 20) if block else plan.chunks(1 << 20)
    w, c = time.perf_counter(), time.process_time()
    r = simulate(h, parts, classify=False, generated=True, trusted=True)
    return time.perf_counter() - w, time.process_time() - c, r


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args(argv)
    h = HierarchyConfig((resolve_machine(None).levels[0],))
    run(h, plan_kernel("triad", n=1000), 0)
    run(h, plan_kernel("triad", n=1000), 1024)
    print(f"{h.describe()}; start {time.strftime('%H:%M:%S', time.gmtime())} UTC, "
          f"load {os.getloadavg()}")  # fmt: skip
    for name, params in STREAMS:
        plan = plan_kernel(name, **params)
        best: dict = {}
        for _ in range(args.repeat):
            for block in [0, *BLOCKS]:
                w, c, r = run(h, plan, block)
                b = best.setdefault(block, [w, c, r.timing])
                if c < b[1]:
                    b[1], b[2] = c, r.timing
                b[0] = min(b[0], w)
        print(f"\n{name} {params}: {plan.accesses:,} accesses")
        print(f"{'variant':<22} {'wall s':>7} {'cpu s':>7} {'ns/acc':>7} {'gen s':>6} "
              f"{'check s':>7} {'L1 s':>6}")  # fmt: skip
        for block, (w, c, t) in best.items():
            label = f"blocks of {block}" if block else "chunks of 1 Mi (before)"
            print(f"{label:<22} {w:7.3f} {c:7.3f} {c / plan.accesses * 1e9:7.2f} "
                  f"{t['generate_s']:6.3f} {t['check_s']:7.3f} "
                  f"{t['simulate_s'] - t['check_s']:6.3f}")  # fmt: skip
    print(f"end {time.strftime('%H:%M:%S', time.gmtime())} UTC, load {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
