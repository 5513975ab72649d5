"""hroof against pycachesim on the reference workload, side by side in one run.

The reference workload is the access stream of the 3D 7-point stencil at
n = 128 (16.8 M accesses: 7 loads and 1 store per point, doubles, two arrays)
on L1 48 KiB/12-way, L2 2 MiB/16-way, L3 32 MiB/16-way, 64-byte lines.

For each simulator it reports accesses per second (best of ``--repeat`` runs,
JIT compile kept apart in a warm-up) and the ratio to pycachesim's
``loadstore``, and it checks the counts:

* on the load-only version of the stream (the store becomes a load), hroof's
  per-level misses must equal pycachesim's exactly;
* on the full stream, the two models differ only by pycachesim's documented
  quirks (a store hit does not refresh LRU; a writeback that misses fetches the
  line); the differences are printed.

Usage::

    python bench/compare_pycachesim.py [--n 128] [--repeat 3] [--skip-pycachesim]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workloads import stencil_arrays, stencil_chunks

from hroof.cachesim import Simulator, hierarchy

LEVELS = (
    {"name": "L1", "size": "48 KiB", "ways": 12, "line": 64},
    {"name": "L2", "size": "2 MiB", "ways": 16, "line": 64},
    {"name": "L3", "size": "32 MiB", "ways": 16, "line": 64},
)


def reference_hierarchy():
    return hierarchy(*LEVELS, name="bench reference (48K/12, 2M/16, 32M/16)")


def run_hroof(h, chunks, classify, threads=1):
    sim = Simulator(h, classify=classify, threads=threads)
    t0 = time.perf_counter()
    for c in chunks:
        sim.feed(*c)
    r = sim.finish()
    return time.perf_counter() - t0, r


def build_pycachesim(h):
    import cachesim

    mem = cachesim.MainMemory()
    below = None
    caches = []
    for lv in reversed(h.levels):
        c = cachesim.Cache(
            lv.name, lv.sets, lv.ways, lv.line, "LRU", store_to=below, load_from=below
        )
        if below is None:
            mem.load_to(c)
            mem.store_from(c)
        caches.insert(0, c)
        below = c
    return cachesim.CacheSimulator(caches[0], mem), caches


def to_loadstore(addr, kind, per_point=8):
    """pycachesim's loadstore input: one (loads, stores) pair per stencil point.

    Done the way a NumPy user would: every point has the same pattern of loads
    and stores, so the columns are split once and turned into lists.
    """
    a = addr.reshape(-1, per_point)
    k = kind.reshape(-1, per_point)
    if not (k == k[0]).all():
        raise ValueError("every point must have the same load/store pattern")
    is_load = k[0] == 0
    return list(zip(a[:, is_load].tolist(), a[:, ~is_load].tolist(), strict=True))


def run_pycachesim(h, pairs):
    cs, caches = build_pycachesim(h)
    t0 = time.perf_counter()
    cs.loadstore(pairs, length=8)
    cs.force_write_back()
    return time.perf_counter() - t0, [c.stats() for c in caches]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=128, help="stencil interior size (default 128)")
    ap.add_argument("--repeat", type=int, default=7, help="rounds per simulator, best kept")
    ap.add_argument("--skip-pycachesim", action="store_true")
    args = ap.parse_args(argv)

    h = reference_hierarchy()
    n_acc = 8 * args.n**3
    print(f"workload: 7-point stencil n={args.n}, {n_acc / 1e6:.1f} M accesses; {h.describe()}")

    # Warm-up: JIT compile (or load from cache) outside the timings.
    t0 = time.perf_counter()
    for classify in (False, True):
        sim = Simulator(h, classify=classify)
        for c in stencil_chunks(4):
            sim.feed(*c)
        sim.finish()
    print(f"warm-up (JIT compile or cache load): {time.perf_counter() - t0:.2f} s")

    # Interleaved rounds, best kept: this machine's timing noise is large (a shared
    # 2-core VM), and interleaving spreads it evenly over the simulators compared.
    rows = []
    results = {}
    for load_only in (True, False):
        tag = "load-only" if load_only else "load/store"
        chunks = [tuple(x.copy() for x in c) for c in stencil_chunks(args.n, load_only=load_only)]
        pairs = conv = None
        if not args.skip_pycachesim:
            addr, _, kind = stencil_arrays(args.n, load_only=load_only)
            t0 = time.perf_counter()
            pairs = to_loadstore(addr, kind)
            conv = time.perf_counter() - t0
            del addr, kind
        best_t = {}
        for _ in range(args.repeat):
            for classify, threads in ((False, 1), (True, 1), (False, 2)):
                name = f"hroof classify={'on' if classify else 'off'}"
                if threads == 2:
                    name += " (2 threads, pipelined levels)"
                gc.collect()
                t, r = run_hroof(h, chunks, classify, threads)
                best_t[name] = min(t, best_t.get(name, t))
                results[(tag, name)] = r
            if pairs is not None:
                gc.collect()
                t, stats = run_pycachesim(h, pairs)
                best_t["pycachesim loadstore"] = min(t, best_t.get("pycachesim loadstore", t))
                results[(tag, "pycachesim")] = stats
        for name, t in best_t.items():
            rows.append((tag, name, t))
        if conv is not None:
            rows.append(
                (
                    tag,
                    "pycachesim end to end (numpy -> lists -> loadstore)",
                    best_t["pycachesim loadstore"] + conv,
                )
            )
        del chunks, pairs
        gc.collect()

    print()
    print(f"{'stream':<11} {'simulator':<52} {'time s':>8} {'M acc/s':>8} {'vs pycs':>8}")
    for tag, name, t in rows:
        ref = next((tt for g, nn, tt in rows if g == tag and nn == "pycachesim loadstore"), None)
        ratio = f"{ref / t:7.2f}x" if ref else "-"
        print(f"{tag:<11} {name:<52} {t:8.3f} {n_acc / t / 1e6:8.1f} {ratio:>8}")

    if not args.skip_pycachesim:
        print()
        for tag in ("load-only", "load/store"):
            ours = results[(tag, "hroof classify=off")]
            theirs = results[(tag, "pycachesim")]
            print(f"{tag}: misses per level (hroof / pycachesim), dirty evictions")
            same = True
            for lv, st in zip(ours.levels, theirs, strict=True):
                mark = "" if lv.misses == st["MISS_count"] else "  differs"
                same &= not mark
                print(
                    f"  {lv.name}: {lv.misses:>10,} / {st['MISS_count']:>10,}{mark}   "
                    f"{lv.writebacks:>9,} / {st['EVICT_count']:>9,}"
                )
            if tag == "load-only" and not same:
                print("ERROR: load-only misses differ from pycachesim", file=sys.stderr)
                return 1
        c = results[("load/store", "hroof classify=on")]
        print("\nhroof 3C classification of the load/store stream:")
        for lv in c.levels:
            print(f"  {lv.name}: {lv.misses_by_class}, traffic below {lv.traffic_below}")
    return 0


if __name__ == "__main__":
    np.seterr(all="raise")
    sys.exit(main())
