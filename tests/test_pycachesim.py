"""The naive twin (``tests/naive.py``): hand-checked cases and pycachesim agreement.

pycachesim (RRZE-HPC, 0.3.1) is the external reference. Its backend
(``cachesim/backend.c``) does, per cache level:

* ``Cache__load(range)``: ``LOAD_count += 1`` per call (not per line); then for
  every line of the range, in address order: a hit counts ``HIT_count`` and
  moves the line to slot 0 (MRU); a miss counts ``MISS_count``, loads the whole
  line from ``load_from`` (recursively, first), then injects it clean at slot 0,
  shifting the set; the entry pushed out of the last slot (LRU), if valid and
  dirty, counts ``EVICT_count`` and is stored to ``store_to`` (after the fill).
* ``Cache__store(range)``: ``STORE_count += 1`` per call; for every line: on a
  miss (write-allocate) it calls ``Cache__load`` on *itself* for the line, so
  the store miss counts a ``MISS`` (and a ``LOAD``) there and reads the line
  from below; then it marks the line dirty. A store hit counts nothing (no
  ``HIT``) and does not reorder the set: quirk 1. A writeback from above is a
  ``Cache__store`` of the whole line, so a writeback that misses is a miss that
  fetches the line from below: quirk 2.
* ``force_write_back()`` (called by ``CacheSimulator.force_write_back`` on L1,
  L2, ... in that order) walks ``placement[0 .. sets*ways-1]``, i.e. set by set
  in index order and, within a set, from slot 0 (MRU) to the LRU slot; each
  dirty line counts ``EVICT_count``, is stored to the level below (which may
  miss, fetch and evict there) and is then marked clean. Our model flushes a
  set from LRU to MRU, so this is a third difference (it changes counts, see
  :func:`test_pycachesim_flush_order`); ``naive.simulate(quirks=True)`` adopts
  it too.

So with ``quirks=True``: ``MISS_count == misses``, ``EVICT_count ==
writebacks`` and ``HIT_count == hits - store_hits`` at every level, and the
memory's ``LOAD_count`` (the last level's ``MISS_count``) equals the last
level's fills. Nothing else differs on load/store traces.

Addresses: ``CacheSimulator.load(addr)`` with a scalar reaches ``Cache_load``,
which parses the address with the ``"I"`` format (a 32-bit unsigned int) into a
64-bit field whose upper half is left uninitialised, so line ids come out with
garbage high bits. We always pass a one-element list, which goes through
``iterload``/``iterstore`` (``PyLong_AsLong``) and is exact; addresses stay
below ``2**32`` all the same.
"""

from __future__ import annotations

import random

import pytest
from helpers import lvl, memory, run_pycachesim
from naive import LOAD, NT_STORE, STORE, NaiveHierarchy, simulate

LINES = (16, 32, 64)


@pytest.fixture(scope="module")
def cachesim():
    """The pycachesim module, or skip."""
    return pytest.importorskip("cachesim")


# ----------------------------------------------------------------------------- helpers


def random_geometries(rng, count, nlevels):
    """``count`` random hierarchies of ``nlevels`` tiny levels: (sets, ways, line) each."""
    out = []
    for _ in range(count):
        line = rng.choice(LINES)
        out.append([(rng.randint(1, 4), rng.randint(1, 4), line) for _ in range(nlevels)])
    return out


def random_trace(rng, geom, n, store_fraction, nt_fraction=0.0):
    """A random trace over a footprint about twice the hierarchy's, with straddlers."""
    line = geom[0][2]
    footprint = 2 * sum(s * w for s, w, _ in geom) + 3  # lines
    base = rng.choice((0, 0x7FFF_0000 + 8, 0xFFF0_0000))  # < 2**32 - footprint*line
    trace = []
    for _ in range(n):
        size = rng.choice((1, 4, 8, 8, 8, line // 2, line, line + 8, 2 * line + 4))
        addr = base + rng.randrange(footprint * line)
        u = rng.random()
        kind = NT_STORE if u < nt_fraction else STORE if u < nt_fraction + store_fraction else LOAD
        trace.append((addr, size, kind))
    return trace


def naive_levels(geom):
    return [lvl(f"L{i + 1}", s, w, line) for i, (s, w, line) in enumerate(geom)]


def run_naive(geom, trace, *, quirks, flush_mru_first=None, flush=True):
    h = NaiveHierarchy(naive_levels(geom), quirks=quirks, flush_mru_first=flush_mru_first)
    h.run(trace)
    if flush:
        h.flush()
    h.check_invariants()
    return h


# ----------------------------------------------------------------------------- 1. loads


@pytest.mark.parametrize("nlevels", [1, 2, 3])
def test_load_only_matches_pycachesim(cachesim, nlevels):
    rng = random.Random(1000 + nlevels)
    if nlevels == 1:
        # Every tiny single-level geometry.
        geoms = [[(s, w, line)] for s in range(1, 5) for w in range(1, 5) for line in LINES]
    else:
        geoms = random_geometries(rng, 40, nlevels)
    for geom in geoms:
        trace = random_trace(rng, geom, 250, store_fraction=0.0)
        stats, mem = run_pycachesim(cachesim, geom, trace)
        ours = run_naive(geom, trace, quirks=False)
        for st, lv in zip(stats, ours.levels, strict=True):
            got = (lv.misses, lv.hits, lv.writebacks)
            want = (st["MISS_count"], st["HIT_count"], st["EVICT_count"])
            assert got == want, f"{geom} {lv.name}: ours {got} pycachesim {want}"
        assert mem["LOAD_count"] == ours.levels[-1].fills
        # On load-only traces the quirks change nothing.
        assert run_naive(geom, trace, quirks=True).result() == ours.result()


# ----------------------------------------------------------------------------- 2. stores


@pytest.mark.parametrize("nlevels", [1, 2, 3])
@pytest.mark.parametrize("store_fraction", [0.3, 0.7])
def test_load_store_quirks_match_pycachesim(cachesim, nlevels, store_fraction):
    rng = random.Random(2000 + 10 * nlevels + int(10 * store_fraction))
    for geom in random_geometries(rng, 40, nlevels):
        trace = random_trace(rng, geom, 250, store_fraction=store_fraction)
        stats, mem = run_pycachesim(cachesim, geom, trace)
        twin = run_naive(geom, trace, quirks=True)
        for st, lv in zip(stats, twin.levels, strict=True):
            got = (lv.misses, lv.writebacks, lv.hits - lv.store_hits)
            want = (st["MISS_count"], st["EVICT_count"], st["HIT_count"])
            assert got == want, f"{geom} {lv.name}: twin {got} pycachesim {want}"
        assert mem["LOAD_count"] == twin.levels[-1].fills
        assert mem["STORE_count"] == twin.levels[-1].writebacks


def test_load_store_quirks_match_pycachesim_without_flush(cachesim):
    rng = random.Random(2500)
    for geom in random_geometries(rng, 30, 2):
        trace = random_trace(rng, geom, 200, store_fraction=0.5)
        stats, _ = run_pycachesim(cachesim, geom, trace, flush=False)
        twin = run_naive(geom, trace, quirks=True, flush=False)
        for st, lv in zip(stats, twin.levels, strict=True):
            assert (lv.misses, lv.writebacks) == (st["MISS_count"], st["EVICT_count"]), geom


# ----------------------------------------------------------------------------- 3. quirks


def test_quirk_store_hit_keeps_recency(cachesim):
    # One level, 1 set x 2 ways x 64 B. Lines 0, 1, 2 (8-byte accesses).
    trace = [(0, 8, LOAD), (64, 8, LOAD), (0, 8, STORE), (128, 8, LOAD), (0, 8, LOAD)]
    geom = [(1, 2, 64)]
    # Our model: load 0 miss [0]; load 1 miss [0 1]; store 0 hit, dirty and MRU [1 0*];
    # load 2 miss evicts 1 (clean) [0* 2]; load 0 hit [2 0*]. Flush writes 0 back.
    # misses 3, hits 2, writebacks 1.
    ours = run_naive(geom, trace, quirks=False)
    assert (ours.levels[0].misses, ours.levels[0].hits, ours.levels[0].writebacks) == (3, 2, 1)
    # pycachesim: the store hit leaves [0* 1] (0 still LRU); load 2 evicts 0* (EVICT 1)
    # [1 2]; load 0 misses, evicts 1 (clean) [2 0]; nothing dirty at the flush.
    # MISS 4, HIT 0 (a store hit is not counted), EVICT 1.
    (st,), _ = run_pycachesim(cachesim, geom, trace)
    assert (st["MISS_count"], st["HIT_count"], st["EVICT_count"]) == (4, 0, 1)
    twin = run_naive(geom, trace, quirks=True)
    lv = twin.levels[0]
    assert (lv.misses, lv.hits - lv.store_hits, lv.writebacks) == (4, 0, 1)


def test_quirk_writeback_hit_keeps_recency(cachesim):
    # L1 1 set x 1 way, L2 1 set x 2 ways, 64 B lines; lines 0, 1, 2.
    trace = [(0, 8, LOAD), (64, 8, STORE), (0, 8, LOAD), (128, 8, LOAD), (0, 8, LOAD)]
    geom = [(1, 1, 64), (1, 2, 64)]
    # load 0: L1 [0], L2 [0].  store 1: L1 miss evicts 0 (clean), RFO misses L2: L2 [0 1],
    # L1 [1*].  load 0: L2 hit -> [1 0]; L1 evicts 1*, written back to L2: a hit.
    #   ours: dirty + MRU -> L2 [0 1*];  pycachesim: dirty, no reorder -> L2 [1* 0].
    # load 2: L1 evicts 0 (clean); L2 miss evicts its LRU:
    #   ours: 0 (clean) -> [1* 2];       pycachesim: 1* (EVICT 1) -> [0 2].
    # load 0: ours: L2 miss, evicts 1* (writeback) -> [2 0];  pycachesim: L2 hit.
    # L1: 5 misses, 1 writeback either way.  L2: ours 4 misses (0, 1, 2, 0), 1 hit,
    # 1 writeback; pycachesim 3 misses, 2 hits, 1 evict.
    ours = run_naive(geom, trace, quirks=False)
    assert [(lv.misses, lv.writebacks) for lv in ours.levels] == [(5, 1), (4, 1)]
    assert ours.levels[1].hits == 1
    stats, _ = run_pycachesim(cachesim, geom, trace)
    assert [(s["MISS_count"], s["EVICT_count"]) for s in stats] == [(5, 1), (3, 1)]
    assert stats[1]["HIT_count"] == 2
    twin = run_naive(geom, trace, quirks=True)
    assert [(lv.misses, lv.writebacks) for lv in twin.levels] == [(5, 1), (3, 1)]


def test_quirk_writeback_miss_fetches(cachesim):
    # L1 and L2 both 1 set x 1 way x 64 B. store 0, load 1.
    trace = [(0, 8, STORE), (64, 8, LOAD)]
    geom = [(1, 1, 64), (1, 1, 64)]
    # store 0: L1 miss, RFO misses L2: L2 [0], L1 [0*].
    # load 1: L1 miss, L2 miss evicts 0 (clean): L2 [1]; L1 takes 1 and evicts 0*,
    # written back to L2, where it misses:
    #   ours: allocated dirty without a fill (no lookup, no miss), evicting 1 (clean);
    #   pycachesim: a store miss: MISS, fetch 0 from memory, then evict 1 and mark 0 dirty.
    # Flush: L1 [1] clean; L2 [0*] written back.
    ours = run_naive(geom, trace, quirks=False)
    assert [(lv.misses, lv.writebacks) for lv in ours.levels] == [(2, 1), (2, 1)]
    assert ours.result()["memory"] == memory(read=2 * 64, written=64)
    stats, mem = run_pycachesim(cachesim, geom, trace)
    assert [(s["MISS_count"], s["EVICT_count"]) for s in stats] == [(2, 1), (3, 1)]
    assert mem["LOAD_count"] == 3  # three lines read from memory
    twin = run_naive(geom, trace, quirks=True)
    assert [(lv.misses, lv.writebacks) for lv in twin.levels] == [(2, 1), (3, 1)]
    assert twin.result()["memory"] == memory(read=3 * 64, written=64)


def test_pycachesim_flush_order(cachesim):
    # The third difference: pycachesim flushes a set from MRU to LRU.
    # L1 1 set x 2 ways, L2 1 set x 1 way, 64 B lines. store 0, store 1.
    trace = [(0, 8, STORE), (64, 8, STORE)]
    geom = [(1, 2, 64), (1, 1, 64)]
    # store 0: L1 [0*], L2 [0].  store 1: RFO misses L2, evicting 0 (clean): L2 [1];
    # L1 [0* 1*] (0 is LRU).
    # pycachesim flush of L1, MRU first: 1 hits L2 (dirty); 0 misses L2 (quirk 2: MISS,
    # fetch) and evicts 1* (EVICT); then L2's flush writes 0 (EVICT).
    # L2: MISS 3, EVICT 2.  L1: MISS 2, EVICT 2.
    stats, _ = run_pycachesim(cachesim, geom, trace)
    assert [(s["MISS_count"], s["EVICT_count"]) for s in stats] == [(2, 2), (3, 2)]
    twin = run_naive(geom, trace, quirks=True)
    assert [(lv.misses, lv.writebacks) for lv in twin.levels] == [(2, 2), (3, 2)]
    # With the two quirks but our LRU-first flush: 0 misses L2 (MISS 3), evicts 1 (clean);
    # 1 misses L2 (MISS 4), evicts 0* (EVICT 1); L2's flush writes 1 (EVICT 2).
    lru_first = run_naive(geom, trace, quirks=True, flush_mru_first=False)
    assert [(lv.misses, lv.writebacks) for lv in lru_first.levels] == [(2, 2), (4, 2)]


# ----------------------------------------------------------------------------- properties


@pytest.mark.parametrize("nlevels", [1, 2, 3])
def test_random_traces_invariants(nlevels):
    rng = random.Random(3000 + nlevels)
    for geom in random_geometries(rng, 25, nlevels):
        levels = naive_levels(geom)
        for level in levels:
            level["write_allocate"] = rng.random() < 0.7
        trace = random_trace(rng, geom, 200, store_fraction=0.4, nt_fraction=0.1)
        r = simulate(levels, trace, check=True, flush=rng.random() < 0.8)
        c = r["core"]
        assert r["levels"][0]["bytes"] == c["bytes_loaded"] + c["bytes_stored"]
        for above, below in zip(r["levels"], r["levels"][1:], strict=False):
            assert below["bytes"] == sum(above["traffic_below"].values())
        last = r["levels"][-1]
        assert r["memory"]["bytes"] == sum(last["traffic_below"].values()) + c["bytes_nt"]
        line = geom[0][2]
        touched = {
            n
            for a, s, k in trace
            if k != NT_STORE
            for n in range(a // line, (a + s - 1) // line + 1)
        }
        assert r["levels"][0]["misses_by_class"]["compulsory"] == len(touched)
        # classify=False changes nothing but the per-class fields.
        plain = simulate(levels, trace, classify=False, flush=True)
        full = simulate(levels, trace, flush=True)
        for a, b in zip(plain["levels"], full["levels"], strict=True):
            assert {
                k: v for k, v in a.items() if k not in ("misses_by_class", "traffic_below")
            } == {k: v for k, v in b.items() if k not in ("misses_by_class", "traffic_below")}
