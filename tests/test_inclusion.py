"""Inclusion policies of the naive twin (``tests/naive.py``): hand cases, invariants, pycachesim.

The policies (``docs/cache-model.md``, "Inclusion policies") are pinned here in
the reference twin first: hand-worked cases on 1-set caches, seeded random
stress on tiny geometries with the structural invariants and the inclusion
properties checked along the way, an exact property (an exclusive pair of LRU
levels with the same set count misses like one LRU level of their summed ways),
and pycachesim's ``victims_to`` where its semantics match ours (a line never
comes back after it leaves L1), with a test showing where they differ.
"""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from conftest import random_trace as np_random_trace
from helpers import assert_same, lvl
from naive import (
    EXCLUSIVE,
    INCLUSIVE,
    LOAD,
    NINE,
    POLICIES,
    STORE,
    VICTIM,
    FullyAssociativeLRU,
    NaiveHierarchy,
    simulate,
)

A, B, C = 0, 64, 128  # lines 0, 1, 2 of 64 bytes


def two_levels(policy, l1_ways=2, l2_ways=2):
    """L1 1 set x ``l1_ways``, L2 1 set x ``l2_ways`` with ``policy``, 64-byte lines."""
    return [lvl("L1", 1, l1_ways), lvl("L2", 1, l2_ways) | {"inclusion": policy}]


def contents(h, i):
    """Level ``i``'s only set as (line, dirty) pairs, MRU first."""
    return [(line, dirty) for line, dirty in reversed(h.levels[i].sets[0].items())]


def run(levels, trace, flush=False):
    h = NaiveHierarchy(levels)
    h.run(trace)
    h.check_invariants()
    h.check_inclusion()
    if flush:
        h.flush()
        h.check_invariants()
    return h


# ----------------------------------------------------------------------------- hand cases
def test_l1_must_be_nine():
    with pytest.raises(ValueError, match="L1 has no level above"):
        NaiveHierarchy([lvl("L1", 1, 2) | {"inclusion": VICTIM}])
    with pytest.raises(ValueError, match="inclusion 'bogus'"):
        NaiveHierarchy([lvl("L1", 1, 2), lvl("L2", 1, 2) | {"inclusion": "bogus"}])


def test_exclusive_hand_case():
    """Loads A B C A B: the exclusive L2 adds its 2 lines to L1's 2 (NINE re-reads A)."""
    trace = [(a, 8, LOAD) for a in (A, B, C, A, B)]
    h = run(two_levels(EXCLUSIVE), trace)
    # A B fill L1 only; C evicts A (clean) into L2; A hits L2 and leaves it, evicting B
    # into L2; B hits L2 and leaves it, evicting C into L2.
    assert contents(h, 0) == [(1, False), (0, False)]
    assert contents(h, 1) == [(2, False)]
    l1, l2 = h.result()["levels"]
    assert (l1["lookups"], l1["misses"], l1["victims"], l1["writebacks"]) == (5, 5, 3, 0)
    assert l1["misses_by_class"] == {"compulsory": 3, "capacity": 2, "conflict": 0}
    # L1's traffic: 5 fills + 3 clean victims, the victims counted as capacity.
    assert l1["traffic_below"] == {
        "compulsory": 3 * 64,
        "write_allocate": 0,
        "capacity": 5 * 64,
        "conflict": 0,
    }
    assert (l2["lookups"], l2["hits"], l2["misses"], l2["victims_in"]) == (5, 2, 3, 3)
    assert l2["misses_by_class"] == {"compulsory": 3, "capacity": 0, "conflict": 0}
    assert h.result()["memory"]["bytes_read"] == 3 * 64
    nine = simulate(two_levels(NINE), trace)
    assert nine["memory"]["bytes_read"] == 5 * 64  # A and B come back from memory


def test_victim_hand_case_keeps_the_copy():
    """The same trace with a victim L2: a hit copies the line up and keeps it (MRU)."""
    trace = [(a, 8, LOAD) for a in (A, B, C, A, B)]
    h = run(two_levels(VICTIM), trace)
    assert contents(h, 0) == [(1, False), (0, False)]
    # A hits and stays; B comes in; B hits and stays; C comes in, pushing A out (clean).
    assert contents(h, 1) == [(2, False), (1, False)]
    l1, l2 = h.result()["levels"]
    assert (l1["victims"], l2["hits"], l2["misses"], l2["victims_in"]) == (3, 2, 3, 3)
    assert h.result()["memory"]["bytes_read"] == 3 * 64


def test_exclusive_dirty_line_moves_up():
    """Store A, load B C A: A goes down dirty, comes back up dirty; the flush writes it once."""
    trace = [(A, 8, STORE), (B, 8, LOAD), (C, 8, LOAD), (A, 8, LOAD)]
    h = run(two_levels(EXCLUSIVE), trace)
    assert contents(h, 0) == [(0, True), (2, False)]
    assert contents(h, 1) == [(1, False)]
    h.flush()
    l1, l2 = h.result()["levels"]
    # L1 wrote A back on its eviction and again in the flush; L2 once, in its flush.
    assert (l1["writebacks"], l1["victims"], l2["writebacks_in"], l2["writebacks"]) == (2, 1, 2, 1)
    assert h.result()["memory"]["bytes_written"] == 64
    # A victim L2 keeps the dirty copy and hands a clean one up.
    h = run(two_levels(VICTIM), trace)
    assert contents(h, 0) == [(0, False), (2, False)]
    assert contents(h, 1) == [(1, False), (0, True)]
    h.flush()
    l1, l2 = h.result()["levels"]
    assert (l1["writebacks"], l2["writebacks"]) == (1, 1)
    assert h.result()["memory"]["bytes_written"] == 64


def test_inclusive_back_invalidation():
    """An inclusive L2 as small as L1: each L2 eviction drops L1's copy, counted."""
    trace = [(a, 8, LOAD) for a in (A, B, C, A)]
    h = run(two_levels(INCLUSIVE), trace)
    # C evicts A from L2, which drops A from L1 before L1 takes C; A evicts B the same way.
    assert contents(h, 0) == [(0, False), (2, False)]
    assert contents(h, 1) == [(0, False), (2, False)]
    l1, l2 = h.result()["levels"]
    assert l1["back_invalidations"] == 2 and l2["back_invalidations"] == 0
    # The shadow drops a back-invalidated line too: A's return is a capacity miss.
    assert l1["misses_by_class"] == {"compulsory": 3, "capacity": 1, "conflict": 0}
    assert l2["misses_by_class"] == {"compulsory": 3, "capacity": 1, "conflict": 0}
    nine = simulate(two_levels(NINE), trace)
    assert nine["levels"][0]["misses"] == 4 and nine["levels"][1]["misses"] == 4


def test_inclusive_back_invalidation_carries_dirty_data():
    """A dirty L1 copy dropped by L2's eviction is written back through L2 to memory."""
    trace = [(A, 8, STORE), (B, 8, LOAD), (C, 8, LOAD)]
    h = run(two_levels(INCLUSIVE), trace)
    l1, l2 = h.result()["levels"]
    assert l1["back_invalidations"] == 1
    assert (l1["writebacks"], l2["writebacks_in"], l2["writebacks"]) == (1, 1, 1)
    assert h.result()["memory"]["bytes_written"] == 64
    assert contents(h, 0) == [(2, False), (1, False)]


# ----------------------------------------------------------------------------- stress
def random_trace(rng, nlines, n, stores=True):
    kinds = (LOAD, STORE) if stores else (LOAD,)
    return [
        (rng.randrange(nlines) * 64 + rng.randrange(8) * 8, 8, rng.choice(kinds)) for _ in range(n)
    ]


@pytest.mark.parametrize("seed", range(4))
def test_random_invariants_every_combination(seed):
    """Every policy pair under L1, random loads and stores: invariants hold at every step."""
    rng = random.Random(seed)
    for p2, p3 in itertools.product(POLICIES, POLICIES):
        levels = [
            lvl("L1", 2, 2),
            lvl("L2", 2, rng.choice((1, 2, 3))) | {"inclusion": p2},
            lvl("L3", rng.choice((1, 2)), 4) | {"inclusion": p3},
        ]
        h = NaiveHierarchy(levels)
        for addr, size, kind in random_trace(rng, 24, 300):
            h.access(addr, size, kind)
            h.check_inclusion()
        h.check_invariants()
        h.flush()
        h.check_invariants()
        res = h.result()
        for lv in res["levels"]:
            assert sum(lv["misses_by_class"].values()) == lv["misses"]
        # Every byte the last level reads comes from memory.
        assert res["memory"]["bytes_read"] == h.levels[-1].fills * 64


@pytest.mark.parametrize("seed", range(6))
def test_exclusive_pair_is_one_lru_of_the_summed_ways(seed):
    """Loads only, one set each: an exclusive L2 under L1 misses like one LRU of w1 + w2 lines."""
    rng = random.Random(seed)
    w1, w2 = rng.choice((1, 2, 3)), rng.choice((1, 2, 4))
    trace = random_trace(rng, 12, 400, stores=False)
    res = simulate(two_levels(EXCLUSIVE, w1, w2), trace)
    lru = FullyAssociativeLRU(w1 + w2)
    misses = sum(not lru.touch(addr // 64) for addr, _, _ in trace)
    assert res["levels"][1]["misses"] == misses
    assert res["memory"]["bytes_read"] == misses * 64


# ----------------------------------------------------------------------------- pycachesim
@pytest.fixture(scope="module")
def cachesim():
    return pytest.importorskip("cachesim")


def pycachesim_victims(cachesim, geom):
    """pycachesim: L1 loads from and stores to memory and sends every victim to L2."""
    (s1, w1), (s2, w2) = geom
    l2 = cachesim.Cache("L2", s2, w2, 64, "LRU")
    l1 = cachesim.Cache("L1", s1, w1, 64, "LRU", victims_to=l2)
    mem = cachesim.MainMemory()
    mem.load_to(l1)
    mem.store_from(l1)
    return cachesim.CacheSimulator(l1, mem), l1, l2, mem


@pytest.mark.parametrize("seed", range(8))
def test_victim_matches_pycachesim_victims_to(cachesim, seed):
    """Loads, a direct-mapped victim L2: ours and pycachesim's ``victims_to`` agree exactly.

    pycachesim 0.3.1 looks the victim cache up on an L1 miss and keeps the line
    there on a hit, as our ``victim`` policy does, and inserts every line L1
    evicts. Its ``EVICT_count`` at L1 counts every eviction sent to the victim
    cache, clean or dirty (our ``writebacks + victims``). With one way in L2
    and loads only the semantics match: L1 misses, L2 hits, memory reads and
    the lines each cache holds are equal.
    """
    rng = random.Random(seed)
    geom = ((rng.choice((1, 2)), rng.choice((1, 2))), (rng.choice((1, 2, 4)), 1))
    trace = random_trace(rng, 12, 300, stores=False)
    cs, l1, l2, mem = pycachesim_victims(cachesim, geom)
    for addr, size, _ in trace:
        cs.load([addr], length=size)
    levels = [lvl("L1", *geom[0]), lvl("L2", *geom[1]) | {"inclusion": VICTIM}]
    h = NaiveHierarchy(levels, quirks=True)
    h.run(trace)
    ours = h.result()
    first, second = ours["levels"]
    assert l1.backend.MISS_count == first["misses"]
    assert l1.backend.EVICT_count == first["writebacks"] + first["victims"]
    assert l2.backend.HIT_count == second["hits"]
    assert mem.stats()["LOAD_count"] == ours["memory"]["bytes_read"] // 64
    for cache, level in ((l1, h.levels[0]), (l2, h.levels[1])):
        held = {line for s in level.sets for line in s}
        assert {addr // 64 for addr in cache.backend.cached} == held


def test_victim_differs_from_pycachesim_on_a_dirty_victim(cachesim):
    """Store A, load B C A; L1 1 x 2, L2 1 x 1: the dirty victim A goes different ways.

    pycachesim writes the dirty A to memory as it leaves L1 and then reads A
    from memory again (its victim cache does not serve it); ours carries A
    dirty into L2, serves the reload from L2 (one memory read fewer) and writes
    A to memory only when L2 evicts it for B.
    """
    trace = [(A, 8, STORE), (B, 8, LOAD), (C, 8, LOAD), (A, 8, LOAD)]
    cs, _, l2, mem = pycachesim_victims(cachesim, ((1, 2), (1, 1)))
    for addr, size, kind in trace:
        (cs.load if kind == LOAD else cs.store)([addr], length=size)
    assert (mem.stats()["LOAD_count"], mem.stats()["STORE_count"]) == (4, 2)
    assert l2.backend.HIT_count == 0
    ours = simulate(two_levels(VICTIM, 2, 1), trace, quirks=True, flush=False)
    assert ours["levels"][1]["hits"] == 1
    assert ours["memory"] == {"bytes_read": 3 * 64, "bytes_written": 64, "bytes": 4 * 64}


# ----------------------------------------------------------------------------- fast == naive
POLICY_KEYS = ("inclusion", "victims", "victims_in", "back_invalidations")


def fast_and_naive(levels, addr, size, kind, *, classify=True, flush=True, chunks=1):
    from naive import simulate as naive_simulate

    from hroof.cachesim import Simulator, hierarchy

    sim = Simulator(hierarchy(*levels), classify=classify)
    for part in np.array_split(np.arange(len(addr)), chunks):
        sim.feed(addr[part], size[part], kind[part])
    fast = sim.finish(flush=flush).to_dict()
    trace = list(zip(addr.tolist(), size.tolist(), kind.tolist(), strict=True))
    naive = naive_simulate(levels, trace, classify=classify, flush=flush, check=True)
    return fast, naive


def assert_same_policies(fast, naive):
    assert_same(fast, naive)
    for f, n in zip(fast["levels"], naive["levels"], strict=True):
        # The naive twin reports these only when some level is not NINE.
        plain = {"inclusion": NINE, "victims": 0, "victims_in": 0, "back_invalidations": 0}
        for key in POLICY_KEYS:
            want = n.get(key, plain[key])
            assert f[key] == want, f"{f['name']} {key}: fast {f[key]} != naive {want}"


GEOMS = [
    ((2, 2, True), (2, 2, True), (1, 4, True)),
    ((1, 2, True), (3, 1, True), (2, 3, True)),
    ((2, 1, True), (1, 3, False), (4, 2, True)),
    ((1, 1, False), (2, 2, True), (1, 2, True)),
]


@pytest.mark.parametrize("geom", range(len(GEOMS)))
@pytest.mark.parametrize("p2", POLICIES)
@pytest.mark.parametrize("p3", POLICIES)
def test_fast_equals_naive_every_combination(geom, p2, p3):
    """Random loads, stores and NT stores: every counter of every level equal, exactly."""
    rng = np.random.default_rng(100 * geom + 10 * POLICIES.index(p2) + POLICIES.index(p3))
    levels = [
        lvl(f"L{i + 1}", sets, ways, 64, wa) | {"inclusion": p}
        for i, ((sets, ways, wa), p) in enumerate(zip(GEOMS[geom], (NINE, p2, p3), strict=True))
    ]
    addr, size, kind = np_random_trace(rng, 600, lines=20, p=(0.55, 0.4, 0.05))
    for classify, flush, chunks in ((True, True, 3), (False, False, 1)):
        fast, naive = fast_and_naive(
            levels, addr, size, kind, classify=classify, flush=flush, chunks=chunks
        )
        assert_same_policies(fast, naive)
        if classify:
            for lv in fast["levels"]:
                assert sum(lv["misses_by_class"].values()) == lv["misses"]


def test_fast_hand_cases():
    """The hand cases above, on the fast simulator."""
    loads = [(a, 8, LOAD) for a in (A, B, C, A, B)]
    cases = [
        (EXCLUSIVE, loads, 2, 2),
        (VICTIM, loads, 2, 2),
        (INCLUSIVE, loads[:4], 2, 2),
        (EXCLUSIVE, [(A, 8, STORE), (B, 8, LOAD), (C, 8, LOAD), (A, 8, LOAD)], 2, 2),
        (INCLUSIVE, [(A, 8, STORE), (B, 8, LOAD), (C, 8, LOAD)], 2, 2),
    ]
    for policy, trace, w1, w2 in cases:
        addr, size, kind = (np.array(col, dtype=np.int64) for col in zip(*trace, strict=True))
        fast, naive = fast_and_naive(two_levels(policy, w1, w2), addr, size, kind.astype(np.uint8))
        assert_same_policies(fast, naive)
    addr = np.array([A, B, C, A, B], dtype=np.int64)
    fast, _ = fast_and_naive(
        two_levels(EXCLUSIVE), addr, np.full(5, 8), np.zeros(5, dtype=np.uint8)
    )
    assert fast["levels"][0]["victims"] == 3 and fast["levels"][1]["hits"] == 2
    assert fast["memory"]["bytes_read"] == 3 * 64


def test_plain_model_unchanged_by_the_new_fields():
    """A NINE hierarchy reports zeros in the new counters and loads from old JSON."""
    from hroof.cachesim import SimResult, hierarchy, simulate_arrays

    h = hierarchy(lvl("L1", 1, 2), lvl("L2", 1, 2))
    r = simulate_arrays(h, np.array([A, B, C, A]), np.full(4, 8), np.zeros(4, dtype=np.uint8))
    d = r.to_dict()
    assert [lv["inclusion"] for lv in d["levels"]] == ["nine", "nine"]
    assert all(lv[k] == 0 for lv in d["levels"] for k in POLICY_KEYS[1:])
    for lv in d["levels"]:
        for k in POLICY_KEYS:
            del lv[k]
    assert SimResult.from_dict(d).to_dict() == r.to_dict()


@pytest.mark.parametrize("seed", range(3))
def test_policy_kernel_on_a_plain_hierarchy_equals_the_level_passes(seed):
    """The access-by-access kernel, forced onto an all-NINE hierarchy, matches the level passes."""
    from hroof.cachesim import Simulator, hierarchy

    rng = np.random.default_rng(seed)
    h = hierarchy(lvl("L1", 2, 2), lvl("L2", 3, 2, write_allocate=False), lvl("L3", 2, 4))
    addr, size, kind = np_random_trace(rng, 2000, lines=40, p=(0.5, 0.4, 0.1))
    results = []
    for plain in (True, False):
        sim = Simulator(h)
        sim._nine = plain
        sim.feed(addr, size, kind)
        results.append(sim.finish().to_dict())
    assert results[0]["levels"] == results[1]["levels"]
    assert results[0]["memory"] == results[1]["memory"]


def test_flag_pages_grow_mid_chunk_with_policies():
    """Lines spread over many 512-line pages: the tables grow mid-chunk, results still exact."""
    rng = np.random.default_rng(7)
    levels = [
        lvl("L1", 2, 2),
        lvl("L2", 2, 2) | {"inclusion": EXCLUSIVE},
        lvl("L3", 1, 8) | {"inclusion": INCLUSIVE},
    ]
    lines = rng.integers(0, 300, size=3000) * 1000 + rng.integers(0, 3, size=3000)
    addr = lines * 64
    kind = rng.choice(np.array([0, 1], dtype=np.uint8), size=3000)
    fast, naive = fast_and_naive(levels, addr, np.full(3000, 8), kind, chunks=2)
    assert_same_policies(fast, naive)


def test_set_sampling_with_policies_is_exact_on_its_sets():
    """1/2 of the sets: the counts are twice those of the residue-0 lines alone (naive).

    A victim or a back-invalidated line shares the set residue of the line that
    displaced it, so the sampled sets never exchange lines with the others.
    """
    from naive import simulate as naive_simulate

    from hroof.cachesim import hierarchy
    from hroof.cachesim.sampling import simulate_sampled

    rng = np.random.default_rng(3)
    levels = [
        lvl("L1", 4, 2),
        lvl("L2", 8, 2) | {"inclusion": VICTIM},
        lvl("L3", 4, 4) | {"inclusion": INCLUSIVE},
    ]
    addr, size, kind = np_random_trace(rng, 3000, lines=64, kinds=(0, 1), max_size=8)
    addr, size = addr - addr % 8, np.full(addr.shape, 8)  # each access within one line
    r = simulate_sampled(hierarchy(*levels), [(addr, size, kind)], k=2, groups=1, classify=False)
    keep = (addr // 64) % 2 == 0
    trace = list(zip(addr[keep].tolist(), size[keep].tolist(), kind[keep].tolist(), strict=True))
    naive = naive_simulate(levels, trace, classify=False)
    for f, n in zip(r.to_dict()["levels"], naive["levels"], strict=True):
        for key in ("lookups", "misses", "writebacks", "victims", "back_invalidations"):
            assert f[key] == 2 * n[key], (f["name"], key)


# ----------------------------------------------------------------------------- machine file, CLI
def policy_machine(tmp_path, l2="nine", l3="exclusive", l1=None):
    """A small three-level machine file with the given policies."""
    l1_line = f'inclusion = "{l1}"\n' if l1 else ""
    text = f"""[machine]
name = "policy test"
[compute]
peak = 10.0
[[level]]
name = "L1"
size = "1 KiB"
ways = 2
bandwidth = 100.0
{l1_line}[[level]]
name = "L2"
size = "4 KiB"
ways = 4
inclusion = "{l2}"
bandwidth = 50.0
[[level]]
name = "L3"
size = "16 KiB"
ways = 4
inclusion = "{l3}"
bandwidth = 20.0
[memory]
bandwidth = 10.0
"""
    path = tmp_path / "m.toml"
    path.write_text(text)
    return path


def test_machine_file_inclusion_key(tmp_path):
    from hroof.machine.model import load_machine

    m = load_machine(policy_machine(tmp_path, "victim", "inclusive"))
    assert [lv.inclusion for lv in m.hierarchy.levels] == ["nine", "victim", "inclusive"]
    assert not m.hierarchy.plain and m.hierarchy.with_inclusion("nine").plain


def test_cli_machine_show_prints_inclusion(tmp_path, capsys):
    from helpers import run_cli

    code, out, _ = run_cli(capsys, "machine", "show", policy_machine(tmp_path))
    assert code == 0
    assert "inclusion" in out
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line[:2] in ("L1", "L3")}
    assert "exclusive" in rows["L3"] and "nine" in rows["L1"]


def test_cli_model_nine_compares(tmp_path, capsys):
    """--model nine runs the plain model; the exclusive L3 reads less from memory here."""
    import json

    from helpers import run_cli

    path = policy_machine(tmp_path, "nine", "exclusive")
    # n=24: three planes of the grid (13.5 KiB) fit in L3 alone only just (16 KiB, shared with
    # the other grid), in L2 + L3 (20 KiB) comfortably.
    argv = ["simulate", "stencil7", "n=24", "--machine", path, "--json", "-q"]
    code, out, _ = run_cli(capsys, *argv)
    assert code == 0
    excl = json.loads(out)
    code, out, _ = run_cli(capsys, *argv, "--model", "nine")
    assert code == 0
    nine = json.loads(out)
    assert [lv["inclusion"] for lv in excl["levels"]] == ["nine", "nine", "exclusive"]
    assert [lv["inclusion"] for lv in nine["levels"]] == ["nine"] * 3
    assert excl["levels"][1]["victims"] > 0 and nine["levels"][1]["victims"] == 0
    # L1 and L2 see the same stream either way; only L3 and memory differ.
    assert excl["levels"][0] == nine["levels"][0]
    assert excl["levels"][2]["misses"] < nine["levels"][2]["misses"]
    assert excl["memory"]["bytes_read"] < nine["memory"]["bytes_read"]


def test_cli_l1_policy_rejected(tmp_path, capsys):
    from helpers import assert_cli_bad

    path = policy_machine(tmp_path, l1="exclusive")
    assert_cli_bad(capsys, ["machine", "show", path], "L1", "inclusion", "nine")


def test_cli_unknown_policy_rejected(tmp_path, capsys):
    from helpers import assert_cli_bad

    path = policy_machine(tmp_path, l2="sometimes")
    assert_cli_bad(capsys, ["machine", "show", path], "L2", "inclusion", "sometimes", "victim")


def test_mrc_refuses_a_policy_hierarchy(tmp_path):
    """The miss-ratio curve taps the level passes, which a non-NINE hierarchy does not run."""
    from hroof._base.errors import HroofError
    from hroof.cachesim.mrc import miss_ratio_curve
    from hroof.machine.model import load_machine

    h = load_machine(policy_machine(tmp_path, "nine", "exclusive")).hierarchy
    chunks = [(np.arange(0, 6400, 64), np.full(100, 8), np.zeros(100, dtype=np.uint8))]
    with pytest.raises(HroofError, match="NINE"):
        miss_ratio_curve(chunks, hierarchy=h, level="L3")
    assert miss_ratio_curve(chunks, hierarchy=h, level="L2") is not None
