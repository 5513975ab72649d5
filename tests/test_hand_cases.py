"""Hand-checked tiny cases, run on both the fast simulator and its naive twin.

Each expected count is worked out by hand in the comments (2 sets x 2 ways x
64 B lines unless said otherwise), so a disagreement points at the model, not
at one implementation.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import core, expected_level, lvl, memory
from naive import LOAD, NT_STORE, STORE
from naive import simulate as naive_simulate

from hroof.cachesim import HierarchyConfig, LevelConfig, Simulator

NAIVE_KEYS = (
    "name", "lookups", "hits", "misses", "misses_by_class", "write_allocate_fills",
    "forwarded_stores", "writebacks_in", "writebacks", "invalidations", "bytes", "traffic_below",
)  # fmt: skip


def fast_simulate(levels, trace, *, classify=True, flush=True, check=False):
    """Run the fast simulator and project its result onto the twin's keys."""
    h = HierarchyConfig(tuple(LevelConfig(**lv) for lv in levels))
    sim = Simulator(h, classify=classify)
    if trace:
        addr, size, kind = (np.array(col) for col in zip(*trace, strict=True))
        sim.feed(addr, size, kind)
    if check:
        sim.check_invariants()
    d = sim.finish(flush=flush).to_dict()
    if check:
        sim.check_invariants()
    return {
        "core": d["core"],
        "levels": [{k: lv[k] for k in NAIVE_KEYS} for lv in d["levels"]],
        "memory": {k: d["memory"][k] for k in ("bytes_read", "bytes_written", "bytes")},
    }


@pytest.fixture(params=["naive", "fast"])
def simulate(request):
    return naive_simulate if request.param == "naive" else fast_simulate


# ----------------------------------------------------------------------------- 4. by hand
# 2 sets x 2 ways x 64 B unless said otherwise: line L lives in set L % 2. "[a b*]" lists a
# set from LRU to MRU, * = dirty. Accesses are 8 bytes unless said otherwise.


def test_store_miss_write_allocate_and_flush(simulate):
    trace = [(0, 8, STORE)]
    # Store to line 0: miss (compulsory), RFO from memory = write-allocate fill, [0*].
    # Flush: 0* is written back: its first writeback, so the compulsory part.
    r = simulate([lvl("L1", 2, 2)], trace)
    assert r["core"] == core(stores=1, bs=8)
    assert r["levels"] == [
        expected_level(
            "L1", lookups=1, misses=1, classes=(1, 0, 0), wa=1, wb=1, nbytes=8,
            traffic=(64, 64, 0, 0),
        )
    ]  # fmt: skip
    assert r["memory"] == memory(read=64, written=64)
    # Without the flush the dirty line stays: no writeback, nothing written.
    r = simulate([lvl("L1", 2, 2)], trace, flush=False)
    assert r["levels"][0]["writebacks"] == 0
    assert r["levels"][0]["traffic_below"] == dict.fromkeys(
        ("compulsory", "capacity", "conflict"), 0
    ) | {"write_allocate": 64}
    assert r["memory"] == memory(read=64, written=0)


def test_dirty_eviction_and_conflict_reload(simulate):
    trace = [(0, 8, STORE), (128, 8, LOAD), (256, 8, LOAD), (0, 8, LOAD)]
    # Lines 0, 2, 4, 0 -- all set 0.
    # store 0: miss, WA fill: [0*].  load 2: miss: [0* 2].
    # load 4: miss, evicts 0*: writeback 1: [2 4].
    # load 0: miss; seen before, and the 4-line fully-associative shadow holds {0, 2, 4}:
    # a conflict miss. Evicts 2 (clean): [4 0]. Flush: nothing dirty.
    # Traffic: compulsory = loads of 2, 4 + first writeback of 0 = 192; WA = 64;
    # conflict = 64. Total (4 fills + 1 writeback) * 64 = 320.
    r = simulate([lvl("L1", 2, 2)], trace, check=True)
    assert r["core"] == core(loads=3, stores=1, bl=24, bs=8)
    assert r["levels"] == [
        expected_level(
            "L1", lookups=4, misses=4, classes=(3, 0, 1), wa=1, wb=1, nbytes=32,
            traffic=(192, 64, 0, 64),
        )
    ]  # fmt: skip
    assert r["memory"] == memory(read=4 * 64, written=64)


def test_writeback_miss_allocates_without_fill(simulate):
    levels = [lvl("L1", 2, 2), lvl("L2", 2, 2)]
    trace = [(0, 8, STORE), (128, 8, LOAD), (256, 8, LOAD)]
    # store 0: L1 miss, RFO misses L2 (a WA fill there too): L2 [0], L1 [0*].
    # load 2: misses both: L2 [0 2], L1 [0* 2].
    # load 4: L1 miss; L2 miss evicts 0 (clean): L2 [2 4]. L1 inserts 4 and evicts 0*,
    # written back to L2: a miss there, allocated dirty without a fill (not a lookup,
    # not a miss), evicting 2 (clean): L2 [4 0*]. L1 [2 4].
    # Flush: L1 is clean; L2 writes 0* back.
    # L1 traffic: compulsory 2*64 + first writeback 64 = 192, WA 64 -> L2 bytes 256.
    # L2 traffic: compulsory 2*64 + first writeback 64 = 192, WA 64.
    r = simulate(levels, trace, check=True)
    assert r["levels"] == [
        expected_level(
            "L1", lookups=3, misses=3, classes=(3, 0, 0), wa=1, wb=1, nbytes=24,
            traffic=(192, 64, 0, 0),
        ),
        expected_level(
            "L2", lookups=3, misses=3, classes=(3, 0, 0), wa=1, wb_in=1, wb=1, nbytes=256,
            traffic=(192, 64, 0, 0),
        ),
    ]  # fmt: skip
    assert r["memory"] == memory(read=3 * 64, written=64)
    # With pycachesim's quirks the writeback misses L2 and fetches the line: 4 misses.
    assert naive_simulate(levels, trace, quirks=True)["levels"][1]["misses"] == 4


def test_nt_store_invalidates_dirty_line(simulate):
    levels = [lvl("L1", 2, 2), lvl("L2", 2, 2)]
    trace = [(0, 8, STORE), (0, 8, NT_STORE), (0, 8, LOAD)]
    # store 0: L1 [0*], L2 [0] (RFO fill, clean).
    # NT store to line 0: L1 holds it dirty: invalidation, carry -> L1 writeback.
    #   L2: the carried writeback arrives (writebacks_in 1); L2 holds 0 clean: invalidation;
    #   carry -> L2 writeback. Memory gets the line (64) and the NT bytes (8).
    # load 0: misses both; seen before, but the shadows dropped it: capacity, not conflict.
    # Flush: nothing dirty.
    # L1 traffic: WA 64, first writeback 64 (compulsory), capacity fill 64 -> L2 bytes 192.
    r = simulate(levels, trace, check=True)
    assert r["core"] == core(loads=1, stores=1, nt=1, bl=8, bs=8, bnt=8)
    assert r["levels"] == [
        expected_level(
            "L1", lookups=2, misses=2, classes=(1, 1, 0), wa=1, wb=1, inv=1, nbytes=16,
            traffic=(64, 64, 64, 0),
        ),
        expected_level(
            "L2", lookups=2, misses=2, classes=(1, 1, 0), wa=1, wb_in=1, wb=1, inv=1,
            nbytes=192, traffic=(64, 64, 64, 0),
        ),
    ]  # fmt: skip
    assert r["memory"] == memory(read=2 * 64, written=64 + 8)


def test_nt_store_dirty_only_below(simulate):
    levels = [lvl("L1", 2, 2), lvl("L2", 2, 2)]
    trace = [(0, 8, STORE), (128, 8, LOAD), (256, 8, LOAD), (0, 8, LOAD), (0, 8, NT_STORE)]
    # The first three as in test_writeback_miss_allocates_without_fill: L1 [2 4], L2 [4 0*].
    # load 0: L1 miss (conflict: the L1 shadow holds {0, 2, 4}) evicting 2 (clean): L1 [4 0];
    # L2 hit: [4 0*].
    # NT store 0: L1 holds it clean: invalidation, no carry, no writeback. L2 holds it
    # dirty: invalidation, carry -> one L2 writeback (no writeback arrives at L2).
    # Flush: L1 [4], L2 [4], both clean.
    # L1: fills 4 (one WA), writeback 1 -> traffic 320: compulsory 128 + 64, WA 64,
    # conflict 64. L2: lookups 4 (RFO 0, 2, 4, 0), 1 hit, 3 compulsory misses,
    # writebacks 1 (NT carry) -> 256: compulsory 128 + 64, WA 64.
    r = simulate(levels, trace, check=True)
    assert r["levels"] == [
        expected_level(
            "L1", lookups=4, misses=4, classes=(3, 0, 1), wa=1, wb=1, inv=1, nbytes=32,
            traffic=(192, 64, 0, 64),
        ),
        expected_level(
            "L2", lookups=4, hits=1, misses=3, classes=(3, 0, 0), wa=1, wb_in=1, wb=1, inv=1,
            nbytes=320, traffic=(192, 64, 0, 0),
        ),
    ]  # fmt: skip
    assert r["memory"] == memory(read=3 * 64, written=64 + 8)


def test_straddling_accesses(simulate):
    trace = [(56, 16, LOAD), (120, 16, STORE)]
    # load [56, 72): lines 0 and 1 -> two lookups, both compulsory misses: [0], [1].
    # store [120, 136): line 1 (8 B, a hit: dirty) and line 2 (8 B, a miss: WA fill):
    # set 0 [0 2*], set 1 [1*]. Flush: set 0 first (2*), then set 1 (1*): 2 writebacks.
    # Traffic: compulsory = loads of 0, 1 (128) + first writebacks of 2, 1 (128) = 256,
    # WA 64; total (3 fills + 2 writebacks) * 64 = 320.
    r = simulate([lvl("L1", 2, 2)], trace, check=True)
    assert r["core"] == core(loads=1, stores=1, bl=16, bs=16)
    assert r["levels"] == [
        expected_level(
            "L1", lookups=4, hits=1, misses=3, classes=(3, 0, 0), wa=1, wb=2, nbytes=32,
            traffic=(256, 64, 0, 0),
        )
    ]  # fmt: skip
    assert r["memory"] == memory(read=3 * 64, written=2 * 64)
    # A 130-byte load from 60 covers lines 0 (4 B), 1 (64 B) and 2 (62 B): 3 lookups.
    r = simulate([lvl("L1", 2, 2)], [(60, 130, LOAD)])
    assert (r["levels"][0]["lookups"], r["core"]["bytes_loaded"]) == (3, 130)


def test_no_write_allocate_level(simulate):
    levels = [lvl("L1", 2, 2, write_allocate=False), lvl("L2", 2, 2)]
    trace = [(0, 8, STORE), (0, 8, LOAD), (0, 8, STORE)]
    # store 0: L1 miss, no allocation: a forwarded store of 8 B (compulsory part) to L2,
    # where it misses (compulsory); L2 allocates: RFO from memory (WA fill), L2 [0*].
    # load 0: L1 miss; seen, but the L1 shadow did not allocate on the store: capacity.
    # L2 hit (MRU). L1 [0] clean.
    # store 0: L1 hit: [0*].
    # Flush: L1 writes 0* back (first, compulsory) -> L2 hit, dirty; L2 writes 0* back.
    # L1 traffic: 8 + 64 (compulsory) + 64 (capacity fill) = 136 = (1 + 1) * 64 + 8.
    r = simulate(levels, trace, check=True)
    assert r["levels"] == [
        expected_level(
            "L1", lookups=3, hits=1, misses=2, classes=(1, 1, 0), fwd=1, wb=1, nbytes=24,
            traffic=(72, 0, 64, 0),
        ),
        expected_level(
            "L2", lookups=2, hits=1, misses=1, classes=(1, 0, 0), wa=1, wb_in=1, wb=1,
            nbytes=136, traffic=(64, 64, 0, 0),
        ),
    ]  # fmt: skip
    assert r["memory"] == memory(read=64, written=64)

    # A single no-write-allocate level: forwarded bytes are written to memory, per line.
    # store [120, 136) misses lines 1 and 2: two forwarded stores of 8 B each.
    # load 120 (line 1): miss, capacity (seen, never allocated), filled.
    r = simulate([lvl("L1", 2, 2, write_allocate=False)], [(120, 16, STORE), (120, 8, LOAD)])
    assert r["levels"] == [
        expected_level(
            "L1", lookups=3, misses=3, classes=(2, 1, 0), fwd=2, nbytes=24,
            traffic=(16, 0, 64, 0),
        )
    ]  # fmt: skip
    assert r["memory"] == memory(read=64, written=16)


def test_flush_order_within_a_set(simulate):
    # L1 2 sets x 2 ways, L2 1 set x 1 way (64 B). store 0, load 2, store 4, store 0.
    levels = [lvl("L1", 2, 2), lvl("L2", 1, 1)]
    trace = [(0, 8, STORE), (128, 8, LOAD), (256, 8, STORE), (0, 8, STORE)]
    # store 0: L1 [0*], L2 [0].  load 2: L2 evicts 0 (clean) -> [2]; L1 [0* 2].
    # store 4: L2 evicts 2 -> [4]; L1 evicts 0*: writeback misses L2, allocated dirty,
    # evicting 4 (clean): L2 [0*]; L1 [2 4*].
    # store 0: L1 miss (conflict), RFO hits L2; L1 evicts 2 (clean): L1 [4* 0*].
    # Flush L1 from LRU to MRU: 4* misses L2, evicts 0* (L2 writeback 1), L2 [4*];
    # 0* misses L2, evicts 4* (L2 writeback 2), L2 [0*]; L2's flush: writeback 3.
    # (MRU first would have merged 0* into L2's dirty 0*: only 2 L2 writebacks.)
    r = simulate(levels, trace, check=True)
    l1, l2 = r["levels"]
    assert (l1["misses"], l1["misses_by_class"]["conflict"], l1["writebacks"]) == (4, 1, 3)
    assert (l2["lookups"], l2["hits"], l2["misses"]) == (4, 1, 3)
    assert (l2["writebacks_in"], l2["writebacks"]) == (3, 3)
    assert r["memory"] == memory(read=3 * 64, written=3 * 64)


def test_flush_order_sets_in_index_order(simulate):
    # L1 2 sets x 2 ways, L2 1 set x 1 way. Lines 1, 3, 0, 5, 1.
    levels = [lvl("L1", 2, 2), lvl("L2", 1, 1)]
    trace = [(64, 8, STORE), (192, 8, LOAD), (0, 8, STORE), (320, 8, LOAD), (64, 8, STORE)]
    # store 1: L1 s1 [1*], L2 [1].  load 3: L2 [3]; L1 s1 [1* 3].
    # store 0: L2 [0]; L1 s0 [0*].
    # load 5: L2 miss evicts 0 -> [5]; L1 s1 evicts 1*: writeback misses L2, allocated,
    # evicting 5: L2 [1*]; L1 s1 [3 5].
    # store 1: L1 miss (conflict: the shadow holds {1, 3, 0, 5}), RFO hits L2;
    # L1 s1 evicts 3: [5 1*].
    # Flush L1, set 0 first: 0* misses L2, evicts 1* (L2 writeback 1) -> [0*];
    # set 1: 5 is clean, 1* misses L2, evicts 0* (writeback 2) -> [1*]; L2 flush: 3.
    # (Set 1 first would have merged 1* into L2: only 2 L2 writebacks.)
    r = simulate(levels, trace, check=True)
    l1, l2 = r["levels"]
    assert (l1["misses"], l1["misses_by_class"]["conflict"], l1["writebacks"]) == (5, 1, 3)
    assert (l2["lookups"], l2["hits"], l2["misses"]) == (5, 1, 4)
    assert (l2["writebacks_in"], l2["writebacks"]) == (3, 3)
    assert r["memory"] == memory(read=4 * 64, written=3 * 64)


def test_3c_conflict_in_direct_mapped(simulate):
    trace = [(0, 8, LOAD), (128, 8, LOAD), (0, 8, LOAD)]  # lines 0, 2, 0
    # Direct-mapped, 2 sets x 1 way: 0 and 2 share set 0, so the reload misses; the
    # 2-line fully-associative shadow still holds {0, 2}: a conflict miss.
    r = simulate([lvl("L1", 2, 1)], trace)
    assert r["levels"][0]["misses"] == 3
    assert r["levels"][0]["misses_by_class"] == {"compulsory": 2, "capacity": 0, "conflict": 1}
    assert r["levels"][0]["traffic_below"]["conflict"] == 64
    # The same capacity fully associative (1 set x 2 ways) hits the reload.
    r = simulate([lvl("L1", 1, 2)], trace)
    assert (r["levels"][0]["hits"], r["levels"][0]["misses"]) == (1, 2)
    assert r["levels"][0]["misses_by_class"] == {"compulsory": 2, "capacity": 0, "conflict": 0}


def test_3c_capacity(simulate):
    trace = [(64 * line, 8, LOAD) for line in (0, 1, 2, 3, 4, 0)]
    # 2 sets x 2 ways: 4 evicts 0 from set 0. The 4-line shadow after 0..4 holds
    # {1, 2, 3, 4}: the reload of 0 misses there too -> capacity. 5 distinct lines,
    # 5 compulsory misses.
    r = simulate([lvl("L1", 2, 2)], trace)
    assert r["levels"][0]["misses_by_class"] == {"compulsory": 5, "capacity": 1, "conflict": 0}
    assert r["levels"][0]["traffic_below"] == {
        "compulsory": 5 * 64,
        "write_allocate": 0,
        "capacity": 64,
        "conflict": 0,
    }


def test_classify_off(simulate):
    r = simulate([lvl("L1", 2, 2), lvl("L2", 2, 2)], [(0, 8, STORE)], classify=False)
    for level in r["levels"]:
        assert level["misses_by_class"] is None and level["traffic_below"] is None
    assert r["levels"][1]["bytes"] == 64 + 64  # WA fill + flush writeback
    assert r["memory"] == memory(read=64, written=64)
