"""The same sweep on every executor: in-process, the local process pool, a Dask LocalCluster.

1. A 16-point ``stencil7`` sweep (``n=16..76:+4``, the reference hierarchy, no
   result cache) run by :func:`hroof.studies.sweep.run_sweep` in-process, in a
   pool of ``--workers`` local processes (started per run, as ``hroof sweep``
   does) and on a ``LocalCluster`` of ``--workers`` processes x 1 thread on
   127.0.0.1 (started once, before the timed runs; its start-up is reported apart).
   The results are checked equal counter for counter before any time is reported.
2. The Dask path's per-point overhead: ``--tiny`` points of ``triad n=8`` (a few
   microseconds of simulation each) in-process and on the cluster; the
   difference per point is what sending a point and its ``hroof.result/1``
   document back costs. A no-op task (``abs``) through the same path is timed too.

Best of ``--repeat`` runs each, every engine warmed up first (Numba cache load).

Usage::

    python bench/cluster.py [--workers 2] [--repeat 3] [--tiny 200]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compare_pycachesim import reference_hierarchy

from hroof.studies.executor import DaskExecutor, InProcess, LocalPool
from hroof.studies.sweep import expand_grid, run_sweep


def counters(points):
    out = []
    for p in points:
        d = p.result.to_dict()
        d.pop("timing", None)
        out.append(d)
    return out


def best(fn, repeat):
    times, value = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - t0)
    return min(times), value


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tiny", type=int, default=200)
    args = ap.parse_args()
    h = reference_hierarchy()
    grid = expand_grid("stencil7", {"n": "16..76:+4"})
    assert len(grid) == 16
    tiny = [{"n": "8", "gap": str(64 * i)} for i in range(args.tiny)]

    t0 = time.perf_counter()
    cluster = DaskExecutor("local", workers=args.workers, timeout=120)
    start_s = time.perf_counter() - t0
    engines = {
        "in-process": InProcess(),
        f"local pool ({args.workers} processes)": LocalPool(args.workers),
        f"Dask LocalCluster ({args.workers} workers x 1 thread)": cluster,
    }
    try:
        for engine in engines.values():  # warm-up: JIT cache load in every worker
            run_sweep("stencil7", grid[:4], h, executor=engine, use_cache=False)
        rows, reference = [], None
        for name, engine in engines.items():
            dt, points = best(
                lambda e=engine: run_sweep("stencil7", grid, h, executor=e, use_cache=False),
                args.repeat,
            )
            got = counters(points)
            if reference is None:
                reference = got
            assert got == reference, f"{name}: results differ from in-process"
            rows.append((name, dt))
        t_in, _ = best(lambda: run_sweep("triad", tiny, h, executor=InProcess(),
                                         use_cache=False), args.repeat)  # fmt: skip
        t_dask, _ = best(lambda: run_sweep("triad", tiny, h, executor=cluster,
                                           use_cache=False), args.repeat)  # fmt: skip
        noop = [(-i,) for i in range(len(tiny))]
        t_noop, _ = best(lambda: list(cluster.run(abs, noop)), args.repeat)
    finally:
        cluster.close()
    accesses = sum(p.result.accesses for p in points)
    print(f"stencil7 n=16..76:+4 (16 points, {accesses / 1e6:.1f} M accesses), "
          f"best of {args.repeat}; results equal counter for counter on all engines")  # fmt: skip
    print(f"LocalCluster start-up (not in the times below): {start_s:.2f} s")
    print("| engine | sweep (s) | vs in-process | vs local pool |")
    print("|---|---:|---:|---:|")
    for name, dt in rows:
        print(f"| {name} | {dt:.2f} | {dt / rows[0][1]:.2f}x | {dt / rows[1][1]:.2f}x |")
    per = (t_dask - t_in) / len(tiny)
    print(f"\nper-point overhead of the Dask path ({len(tiny)} points of triad n=8): "
          f"in-process {t_in * 1e3 / len(tiny):.2f} ms/point, Dask {t_dask * 1e3 / len(tiny):.2f} "
          f"ms/point, overhead {per * 1e3:.2f} ms/point (target < 50 ms)")  # fmt: skip
    print(f"a no-op task (abs) through the same path: {t_noop * 1e3 / len(noop):.2f} ms/task")


if __name__ == "__main__":
    main()
