"""A chunk's size dtype through the API: the stencil7 n=128 stream (16.8 M accesses) on
the reference hierarchy (L1 48 KiB 12-way, L2 2 MiB 16-way, L3 32 MiB 16-way), one thread,
classification off, fed with uint32 sizes (a chunk's own dtype: generators, trace files)
and with int64 sizes (numpy's default, which the input check converts in its pass);
``--repeats`` rounds of the two, best of 5 each.

Usage::

    python bench/size_dtypes.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from hroof.cachesim import hierarchy, simulate
from hroof.traces import plan_kernel


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    h = hierarchy(
        {"name": "L1", "size": 48 << 10, "ways": 12},
        {"name": "L2", "size": 2 << 20, "ways": 16},
        {"name": "L3", "size": 32 << 20, "ways": 16},
    )
    chunks = [tuple(a.copy() for a in c) for c in plan_kernel("stencil7", n=128).chunks(1 << 20)]
    streams = {
        "uint32 sizes": [(a, s.astype(np.uint32), k) for a, s, k in chunks],
        "int64 sizes": [(a, s.astype(np.int64), k) for a, s, k in chunks],
    }
    for cs in streams.values():
        simulate(h, cs[:1], classify=False, threads=1)  # compile or load
    for _ in range(args.repeats):
        best = {}
        for name, cs in streams.items():
            ts = []
            for _ in range(5):
                t0 = time.perf_counter()
                simulate(h, cs, classify=False, threads=1)
                ts.append(time.perf_counter() - t0)
            best[name] = min(ts)
        ratio = best["int64 sizes"] / best["uint32 sizes"]
        print("; ".join(f"{k} {v * 1e3:.1f} ms" for k, v in best.items()), f"(int64 {ratio:.3f}x)")


if __name__ == "__main__":
    main()
