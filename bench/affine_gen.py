"""The kernel-file generator (one compiled interpreter of any affine nest) against the
built-in generators on the same stream, in the same run.

Issue 32 asks that a kernel file run within 1.5x of the built-in stencil7 generator's
speed. For each pair (a file of ``examples/kernels/`` that writes a built-in kernel out,
and that kernel at the same size; the tests prove the streams equal), this times the
generator alone: ``plan.gen`` filling one 64 Ki-access buffer after another (the block
:meth:`~hroof.traces.kernels.Generated.feed_into` hands the simulator) over the whole
trace, the two interleaved round by round, best of ``--repeat``. The compile (first
call) is kept apart; plan building (the file's parse and walk) is printed apart too.
Also end to end: ``simulate_kernel`` of each, classification off, one thread, the
default machine.

Usage::

    python bench/affine_gen.py [--repeat 5] [--n 128]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

from hroof._base.kinds import SIZE_DTYPE
from hroof.studies.runs import simulate_kernel
from hroof.traces import plan_kernel

KERNELS = Path(__file__).resolve().parent.parent / "examples" / "kernels"
BLOCK = 1 << 16


def pairs(n: int) -> list[tuple[str, tuple, tuple]]:
    """(label, (file, constants), (built-in, params)) at about the same trace length."""
    return [
        ("stencil7", ("3d-7pt.c", {"N": n}), ("stencil7", {"n": n})),
        ("stencil7 bj=8 bk=32", ("3d-7pt-blocked.c", {"N": n, "BJ": 8, "BK": 32}),
         ("stencil7", {"n": n, "bj": 8, "bk": 32})),
        ("triad", ("triad.c", {"N": 6 * n**3 // 3}), ("triad", {"n": 6 * n**3 // 3})),
        ("dgemv", ("matvec.c", {"M": n * 16, "N": n * 8}), ("dgemv", {"m": n * 16, "n": n * 8})),
    ]  # fmt: skip


def generate(plan) -> float:
    """Seconds to generate the whole trace into one reused 64 Ki-access buffer."""
    cap = max(BLOCK, plan.per_iteration)
    addr = np.empty(cap, np.int64)
    size = np.empty(cap, SIZE_DTYPE)
    kind = np.empty(cap, np.uint8)
    pos, end, total = 0, plan.iterations, 0
    t0 = time.perf_counter()
    while pos < end:
        n, pos = plan.gen(pos, end, addr, size, kind, plan.args)
        total += n
    t = time.perf_counter() - t0
    assert total == plan.accesses
    return t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--n", type=int, default=128, help="stencil size (the others follow)")
    ap.add_argument("--no-simulate", action="store_true", help="the generators only")
    args = ap.parse_args(argv)
    print(f"load {os.getloadavg()}; best of {args.repeat}; generator alone, 64 Ki blocks")
    print(f"{'stream':<20} {'accesses':>12} {'plan file s':>11} {'file s':>8} "
          f"{'built-in s':>10} {'ratio':>6} {'file M/s':>9}")  # fmt: skip
    for label, (file, consts), (kernel, params) in pairs(args.n):
        t0 = time.perf_counter()
        fplan = plan_kernel(str(KERNELS / file), **consts)
        t_plan = time.perf_counter() - t0
        bplan = plan_kernel(kernel, **params)
        assert fplan.accesses == bplan.accesses
        small = plan_kernel(str(KERNELS / file), **{k: min(v, 8) for k, v in consts.items()})
        generate(small)  # compile or load both generators: not timed
        generate(plan_kernel(kernel, **{k: min(v, 8) for k, v in params.items()}))
        best_f = best_b = float("inf")
        for _ in range(args.repeat):
            best_f = min(best_f, generate(fplan))
            best_b = min(best_b, generate(bplan))
        print(f"{label:<20} {fplan.accesses:>12,} {t_plan:>11.3f} {best_f:>8.3f} "
              f"{best_b:>10.3f} {best_f / best_b:>6.2f} {fplan.accesses / best_f / 1e6:>9.0f}")  # fmt: skip
    if not args.no_simulate:
        print("\nend to end (simulate_kernel, default machine, classification off, 1 thread):")
        for label, (file, consts), (kernel, params) in pairs(args.n)[:1]:
            fplan = plan_kernel(str(KERNELS / file), **consts)
            bplan = plan_kernel(kernel, **params)
            simulate_kernel(plan_kernel(str(KERNELS / file), N=8), classify=False, threads=1)
            best = {"file": float("inf"), "built-in": float("inf")}
            for _ in range(max(1, args.repeat // 2)):
                for name, plan in (("file", fplan), ("built-in", bplan)):
                    t0 = time.perf_counter()
                    simulate_kernel(plan, classify=False, threads=1)
                    best[name] = min(best[name], time.perf_counter() - t0)
            print(f"{label:<20} file {best['file']:.3f} s, built-in {best['built-in']:.3f} s, "
                  f"ratio {best['file'] / best['built-in']:.2f}")  # fmt: skip
    print(f"load {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
