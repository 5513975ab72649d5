"""The fast simulator (``hroof.cachesim.Simulator``) directly against pycachesim.

pycachesim (RRZE-HPC, 0.3.1) is driven exactly as in ``tests/test_pycachesim.py``
(see its module docstring for pycachesim's counters, its quirks and why every
address goes through a one-element list and stays below ``2**32``).

* Load-only traces: the two must agree on every level's hits and misses.
* Load/store traces: they differ, but only where pycachesim's documented quirks
  act. The proof is a chain: fast == naive twin (``quirks=False``) on every
  counter, and naive twin (``quirks=True``) == pycachesim on misses, hits and
  dirty evictions; and at least one trace really differs between the ends.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import helpers
import numpy as np
import pytest
from naive import LOAD, STORE, NaiveHierarchy

from hroof.cachesim import HierarchyConfig, LevelConfig, Simulator

cachesim = pytest.importorskip("cachesim")

BENCH = Path(__file__).resolve().parent.parent / "bench"
LINES = (16, 32, 64)
#: Trace bases: zero, an unaligned one near 2**31, and one just below 2**32.
BASES = (0, 0x7FFF_0000 + 8, 0xFFF0_0000)

# ----------------------------------------------------------------------------- helpers


def hierarchy_of(geom):
    """The HierarchyConfig of ``geom``, a list of ``(sets, ways, line)`` per level."""
    return HierarchyConfig(
        tuple(
            LevelConfig(f"L{i + 1}", sets * ways * line, ways, line)
            for i, (sets, ways, line) in enumerate(geom)
        )
    )


def run_fast(geom, trace, *, flush=True):
    addr, size, kind = (np.array(col, dtype=np.int64) for col in zip(*trace, strict=True))
    sim = Simulator(hierarchy_of(geom))
    sim.feed(addr, size, kind)
    return sim.finish(flush=flush)


def run_pycachesim(geom, trace, *, flush=True):
    return helpers.run_pycachesim(cachesim, geom, trace, flush=flush)


def random_geometries(rng, count, nlevels, max_sets=6):
    """``count`` hierarchies of ``nlevels`` tiny levels, set counts not only powers of two."""
    out = []
    for _ in range(count):
        line = rng.choice(LINES)
        out.append([(rng.randint(1, max_sets), rng.randint(1, 4), line) for _ in range(nlevels)])
    return out


def random_trace(rng, geom, n, store_fraction=0.0):
    """``n`` accesses over about twice the hierarchy's lines, some straddling two or three."""
    line = geom[0][2]
    footprint = 2 * sum(s * w for s, w, _ in geom) + 3  # lines
    base = rng.choice(BASES)
    trace = []
    for _ in range(n):
        size = rng.choice((1, 4, 8, 8, 8, line // 2, line, line + 8, 2 * line + 4))
        kind = STORE if rng.random() < store_fraction else LOAD
        trace.append((base + rng.randrange(footprint * line), size, kind))
    return trace


def assert_load_only_agree(geom, trace):
    result = run_fast(geom, trace)
    stats, mem = run_pycachesim(geom, trace)
    for lv, st in zip(result.levels, stats, strict=True):
        got = (lv.misses, lv.hits, lv.writebacks)
        want = (st["MISS_count"], st["HIT_count"], st["EVICT_count"])
        assert got == want, f"{geom} {lv.name}: fast {got} pycachesim {want}"
    line = geom[0][2]
    assert result.memory.bytes_read == stats[-1]["MISS_count"] * line == mem["LOAD_count"] * line
    assert result.memory.bytes_written == 0
    return result


# ----------------------------------------------------------------------------- load-only


def test_load_only_single_level_every_tiny_geometry():
    rng = random.Random(41)
    geoms = [[(s, w, line)] for s in range(1, 6) for w in range(1, 5) for line in LINES]
    hits = misses = 0
    for geom in geoms:
        r = assert_load_only_agree(geom, random_trace(rng, geom, 250))
        hits += r.levels[0].hits
        misses += r.levels[0].misses
    assert hits > 0 and misses > 0


@pytest.mark.parametrize("nlevels", [2, 3])
def test_load_only_multi_level(nlevels):
    rng = random.Random(4200 + nlevels)
    for geom in random_geometries(rng, 40, nlevels):
        assert_load_only_agree(geom, random_trace(rng, geom, 250))


def test_load_only_stencil_stream():
    """A 3D 7-point stencil (n = 12, load-only) on a scaled-down three-level hierarchy:
    2 KiB 4-way (8 sets), 6 KiB 8-way (12 sets) and 24 KiB 8-way (48 sets)."""
    sys.path.insert(0, str(BENCH))
    try:
        from workloads import stencil_arrays
    finally:
        sys.path.remove(str(BENCH))
    addr, size, kind = stencil_arrays(12, load_only=True)
    assert (size == 8).all() and (kind == LOAD).all() and addr.max() < 2**32
    geom = [(8, 4, 64), (12, 8, 64), (48, 8, 64)]
    sim = Simulator(hierarchy_of(geom))
    sim.feed(addr, size, kind)
    result = sim.finish()
    # Aligned 8-byte loads: one pycachesim call over the whole stream is exact.
    cs, caches, mem = helpers.build_pycachesim(cachesim, geom)
    cs.load(addr.tolist(), length=8)
    cs.force_write_back()
    for lv, c in zip(result.levels, caches, strict=True):
        st = c.stats()
        assert lv.hits > 0 and lv.misses > 0, f"{lv.name} needs both hits and misses"
        assert (lv.misses, lv.hits) == (st["MISS_count"], st["HIT_count"]), lv.name
        assert st["EVICT_count"] == lv.writebacks == 0, lv.name
    assert result.memory.bytes_read == caches[-1].stats()["MISS_count"] * 64
    assert mem.stats()["LOAD_count"] == caches[-1].stats()["MISS_count"]


# ----------------------------------------------------------------------------- loads and stores


def naive_levels(geom):
    return [
        {"name": f"L{i + 1}", "size": s * w * line, "ways": w, "line": line}
        for i, (s, w, line) in enumerate(geom)
    ]


def run_naive(geom, trace, *, quirks, flush=True):
    h = NaiveHierarchy(naive_levels(geom), quirks=quirks)
    h.run(trace)
    if flush:
        h.flush()
    h.check_invariants()
    return h


def assert_fast_equals_naive(fast, naive):
    """Every counter of the fast result equals the naive twin's (``quirks=False``)."""
    helpers.assert_same(fast, naive)


def assert_twin_equals_pycachesim(twin, stats, mem):
    """The quirky twin equals pycachesim: misses, dirty evictions, hits (not store hits)."""
    for lv, st in zip(twin.levels, stats, strict=True):
        got = (lv.misses, lv.writebacks, lv.hits - lv.store_hits)
        want = (st["MISS_count"], st["EVICT_count"], st["HIT_count"])
        assert got == want, f"{lv.name}: twin {got} pycachesim {want}"
    assert mem["LOAD_count"] == twin.levels[-1].fills
    assert mem["STORE_count"] == twin.levels[-1].writebacks


@pytest.mark.parametrize("flush", [True, False], ids=["flush", "no-flush"])
@pytest.mark.parametrize("nlevels", [1, 2, 3])
def test_load_store_differences_are_only_the_quirks(nlevels, flush):
    """fast == twin(quirks=False) and twin(quirks=True) == pycachesim, trace by trace;
    and the two ends really differ on some traces."""
    rng = random.Random(4300 + nlevels + (10 if flush else 0))
    differ = 0
    for geom in random_geometries(rng, 8, nlevels, max_sets=4):
        trace = random_trace(rng, geom, 250, store_fraction=0.4)
        fast = run_fast(geom, trace, flush=flush)
        assert_fast_equals_naive(
            fast.to_dict(), run_naive(geom, trace, quirks=False, flush=flush).result()
        )
        stats, mem = run_pycachesim(geom, trace, flush=flush)
        assert_twin_equals_pycachesim(run_naive(geom, trace, quirks=True, flush=flush), stats, mem)
        ours = [(lv.misses, lv.writebacks) for lv in fast.levels]
        theirs = [(st["MISS_count"], st["EVICT_count"]) for st in stats]
        differ += ours != theirs
    assert differ > 0, "no trace shows a quirk: the chain proves nothing"


def test_store_hit_recency_differs_from_pycachesim():
    """Quirk 1 on the fast simulator itself (the case of
    ``test_pycachesim.py::test_quirk_store_hit_keeps_recency``): 1 set x 2 ways x 64 B,
    load 0, load 1, store 0, load 2, load 0.
    Ours: the store hit makes 0 MRU, so load 2 evicts 1 and load 0 hits:
    3 misses, 2 hits, 1 writeback (the flush). pycachesim: 0 stays LRU, load 2 evicts
    it dirty and load 0 misses: 4 misses, no counted hit, 1 eviction."""
    trace = [(0, 8, LOAD), (64, 8, LOAD), (0, 8, STORE), (128, 8, LOAD), (0, 8, LOAD)]
    geom = [(1, 2, 64)]
    lv = run_fast(geom, trace).levels[0]
    assert (lv.misses, lv.hits, lv.writebacks) == (3, 2, 1)
    (st,), _ = run_pycachesim(geom, trace)
    assert (st["MISS_count"], st["HIT_count"], st["EVICT_count"]) == (4, 0, 1)
