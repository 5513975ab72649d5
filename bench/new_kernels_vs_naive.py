"""The fast kernels added with issues 6 and 7 against their naive twins, same run.

1. Warp coalescing (``hroof.accel.coalescing.coalesce_chunks``, Numba) against
   ``tests/naive.py``'s ``naive_coalescing`` (Python sets of touched bytes) on a
   kernel's access stream: accesses per second each, and the ratio; the counts are
   checked equal first.
2. The register-blocked SpMV trace (``spmv storage=bcsr``, NumPy) against
   ``naive_bcsr`` (the block-CSR loop written out in Python): accesses per second
   each, and the ratio; the streams are checked equal first.

Each fast kernel runs once untimed (the JIT compile, or NumPy's first touches)
before it is timed; each timing is the best of ``--repeats`` runs.

Usage::

    python bench/new_kernels_vs_naive.py [--coalesce-n 20000] [--spmv-n 64] [--repeats 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from naive import naive_bcsr, naive_coalescing

from hroof.accel import coalescing
from hroof.traces import plan_kernel


def best(fn, repeats: int) -> tuple[float, object]:
    out, times = None, []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def stream(plan) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    parts = list(plan.chunks(reuse=False))
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))


def bench_coalescing(n: int, repeats: int) -> None:
    plan = plan_kernel("stencil7", n=n)
    addr, size, _ = stream(plan)
    per = plan.per_iteration
    chunks = [(addr, size)]
    coalescing.coalesce_chunks(chunks, (32, 64, 128), per)  # JIT compile, not timed
    t_fast, fast = best(lambda: coalescing.coalesce_chunks(chunks, (32, 64, 128), per), repeats)
    t_naive, (warps, used, tr) = best(lambda: naive_coalescing(addr, size, per), 1)
    assert (fast.warps, fast.used_bytes) == (warps, used)
    assert fast.transactions == (tr[32], tr[64], tr[128])
    m = addr.shape[0]
    print(f"coalescing, stencil7 n={n} ({m:,} accesses, {per} per thread):")
    print(f"  fast  {m / t_fast / 1e6:10.2f} M accesses/s  ({t_fast * 1e3:.1f} ms)")
    print(f"  naive {m / t_naive / 1e6:10.2f} M accesses/s  ({t_naive * 1e3:.1f} ms)")
    print(f"  fast / naive: {t_naive / t_fast:.0f}x; counts equal")


def bench_bcsr(n: int, repeats: int) -> None:
    plan = plan_kernel("spmv", matrix="poisson2d", n=n, dof=2, storage="bcsr", r=2, c=2)
    stream(plan)  # first touches, not timed
    t_fast, (addr, size, kind) = best(lambda: stream(plan), repeats)
    t_naive, (expected, _, _) = best(lambda: naive_bcsr(plan), 1)
    got = list(zip(addr.tolist(), size.tolist(), kind.tolist(), strict=True))
    assert got == [tuple(t) for t in expected]
    m = addr.shape[0]
    print(f"BCSR SpMV trace, poisson2d n={n} dof=2, 2x2 blocks ({m:,} accesses):")
    print(f"  fast  {m / t_fast / 1e6:10.2f} M accesses/s  ({t_fast * 1e3:.1f} ms)")
    print(f"  naive {m / t_naive / 1e6:10.2f} M accesses/s  ({t_naive * 1e3:.1f} ms)")
    print(f"  fast / naive: {t_naive / t_fast:.0f}x; streams equal")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--coalesce-n", type=int, default=48, help="stencil7 grid size")
    ap.add_argument("--spmv-n", type=int, default=64, help="poisson2d grid size")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    bench_coalescing(args.coalesce_n, args.repeats)
    bench_bcsr(args.spmv_n, args.repeats)


if __name__ == "__main__":
    main()
