"""Property-based tests (hypothesis) of the fast simulator, ``hroof.cachesim.Simulator``.

Tiny hierarchies (1-3 levels of 1-4 sets, including non-powers of two, x 1-4
ways) and short random traces over a few lines force every rare path:
straddling accesses, conflict and capacity misses, dirty evictions that
cascade, NT-store invalidations, no-write-allocate levels. Each property is
one that the model of ``docs/cache-model.md`` guarantees for *every* trace.
"""

from __future__ import annotations

import json

import numpy as np
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from hroof.cachesim import SCHEMA, HierarchyConfig, LevelConfig, Simulator

LOAD, STORE, NT = 0, 1, 2
LINES = (16, 32, 64)
#: Line-aligned bases: near zero, mid-range, and far above 2**32 (many flag pages apart).
BASES = (0, 4093 * 64, 1 << 40)
#: Lines between consecutive trace lines when a trace is spread out: more than a page of
#: classification flags (512 lines), so a spread trace makes the simulator grow its
#: tables in mid-chunk; prime, so lines still fall into every set.
SPREAD = 521

CLASS_KEYS = {"compulsory", "capacity", "conflict"}
PART_KEYS = {"compulsory", "write_allocate", "capacity", "conflict"}
TOP_KEYS = {"schema", "source", "flops", "accesses", "core", "levels", "memory", "timing"}
CORE_KEYS = {"loads", "stores", "nt_stores", "bytes_loaded", "bytes_stored"}
LEVEL_KEYS = {
    "name", "size", "ways", "line", "sets", "lookups", "hits", "misses", "misses_by_class",
    "write_allocate_fills", "writebacks_in", "writebacks", "bytes", "ai", "traffic_below",
}  # fmt: skip
MEMORY_KEYS = {"name", "bytes_read", "bytes_written", "bytes", "ai"}
TIMING_KEYS = {"trace_s", "simulate_s"}


# ----------------------------------------------------------------------------- strategies


@st.composite
def hierarchies(draw, *, max_levels=3, write_allocate=None, sets=None, line=None):
    """A tiny hierarchy: 1..max_levels levels of 1-4 sets x 1-4 ways, one line size."""
    line = draw(st.sampled_from(LINES)) if line is None else line
    levels = []
    for i in range(draw(st.integers(1, max_levels))):
        nsets = draw(st.integers(1, 4)) if sets is None else sets
        ways = draw(st.integers(1, 4))
        wa = draw(st.booleans()) if write_allocate is None else write_allocate
        levels.append(LevelConfig(f"L{i + 1}", nsets * ways * line, ways, line, write_allocate=wa))
    return HierarchyConfig(tuple(levels))


@st.composite
def traces(draw, line, capacity_lines, *, kinds=(LOAD, STORE, NT), max_size=200):
    """Up to ``max_size`` accesses over about twice the hierarchy's lines.

    Sizes run from 1 to ``2 * line`` bytes, so some accesses straddle one or two
    line boundaries. A quarter of the traces are spread out, ``SPREAD`` lines
    apart. Returns ``(addr, size, kind)`` arrays.
    """
    # A spread trace covers enough lines to outgrow the initial flag pages (64).
    stride = draw(st.sampled_from((1, 1, 1, SPREAD)))
    full = 2 * capacity_lines + 3 if stride == 1 else max(2 * capacity_lines + 3, 400)
    # Mostly the full span (so that sets fill and conflict), sometimes a narrower one.
    span = draw(st.one_of(st.just(full), st.integers(1, full))) * line
    base = draw(st.sampled_from(BASES))
    n = draw(st.integers(0, max_size))  # lists() alone would favour very short traces
    access = st.tuples(st.integers(0, span - 1), st.integers(1, 2 * line), st.sampled_from(kinds))
    accesses = draw(st.lists(access, min_size=n, max_size=n))
    addr = np.array(
        [base + (a // line) * stride * line + a % line for a, _, _ in accesses], dtype=np.int64
    )
    size = np.array([s for _, s, _ in accesses], dtype=np.int64)
    kind = np.array([k for _, _, k in accesses], dtype=np.uint8)
    return addr, size, kind


@st.composite
def cases(draw, *, kinds=(LOAD, STORE, NT), write_allocate=None, sets=None):
    """A hierarchy and a trace that fits it."""
    h = draw(hierarchies(write_allocate=write_allocate, sets=sets))
    capacity = sum(lv.lines for lv in h.levels)
    return (h, *draw(traces(h.line, capacity, kinds=kinds)))


# ----------------------------------------------------------------------------- helpers


def run(h, addr, size, kind, *, classify=True, flush=True, cuts=(), check=True):
    """Feed the trace cut at ``cuts`` (indices), checking the invariants; return the result."""
    sim = Simulator(h, classify=classify)
    for part in np.split(np.arange(len(addr)), sorted(cuts)):
        sim.feed(addr[part], size[part], kind[part])
        if check:
            sim.check_invariants()
    result = sim.finish(flush=flush)
    if check:
        sim.check_invariants()
    return result


def lines_of(addr, size, kind, line, kinds):
    """The line addresses touched by the accesses whose kind is in ``kinds``, with repeats."""
    out = []
    for a, s, k in zip(addr.tolist(), size.tolist(), kind.tolist(), strict=True):
        if k in kinds:
            out.extend(range(a // line, (a + s - 1) // line + 1))
    return out


def without(d, *keys):
    return {k: v for k, v in d.items() if k not in keys}


# ----------------------------------------------------------------------------- properties


@settings(max_examples=examples(150), deadline=None)
@given(cases())
def test_compulsory_misses_at_l1_are_distinct_lines(case):
    h, addr, size, kind = case
    r = run(h, addr, size, kind)
    touched = lines_of(addr, size, kind, h.line, (LOAD, STORE))
    l1 = r.levels[0]
    assert l1.misses_by_class["compulsory"] == len(set(touched))
    assert l1.lookups == len(touched)


@settings(max_examples=examples(150), deadline=None)
@given(cases(), st.booleans())
def test_counters_add_up(case, flush):
    h, addr, size, kind = case
    r = run(h, addr, size, kind, flush=flush)
    for lv in r.levels:
        assert sum(lv.misses_by_class.values()) == lv.misses, lv.name
        assert lv.hits + lv.misses == lv.lookups, lv.name
        assert min(lv.hits, lv.misses, lv.writebacks, lv.writebacks_in) >= 0, lv.name
        assert lv.write_allocate_fills + lv.forwarded_stores <= lv.misses, lv.name
    for above, below in zip(r.levels, r.levels[1:], strict=False):
        # Every miss sends exactly one lookup down; every writeback arrives below.
        assert below.lookups == above.misses, below.name
        assert below.writebacks_in == above.writebacks, below.name
    assert r.levels[0].writebacks_in == 0


@settings(max_examples=examples(150), deadline=None)
@given(cases(), st.booleans())
def test_traffic_partition_and_bytes_per_level(case, flush):
    h, addr, size, kind = case
    r = run(h, addr, size, kind, flush=flush)
    core, line = r.core, h.line
    assert r.levels[0].bytes == core.bytes_loaded + core.bytes_stored
    assert core.bytes_loaded == int(size[kind == LOAD].sum())
    assert core.bytes_stored == int(size[kind == STORE].sum())
    assert core.bytes_nt == int(size[kind == NT].sum())
    for lv in r.levels:
        below = (lv.fills + lv.writebacks) * line + lv.forwarded_store_bytes
        assert set(lv.traffic_below) == PART_KEYS
        assert min(lv.traffic_below.values()) >= 0, lv.name
        assert sum(lv.traffic_below.values()) == lv.traffic_below_bytes == below, lv.name
        assert lv.traffic_below["write_allocate"] == lv.write_allocate_fills * line, lv.name
    for above, lv in zip(r.levels, r.levels[1:], strict=False):
        assert lv.bytes == above.traffic_below_bytes, lv.name
    last = r.levels[-1]
    assert r.memory.bytes == last.traffic_below_bytes + core.bytes_nt
    assert r.memory.bytes_read == last.fills * line


@settings(max_examples=examples(100), deadline=None)
@given(st.data())
def test_chunking_never_changes_a_result(data):
    h, addr, size, kind = data.draw(cases())
    cuts = data.draw(st.lists(st.integers(0, len(addr)), max_size=8))
    classify = data.draw(st.booleans())
    flush = data.draw(st.booleans())
    whole = run(h, addr, size, kind, classify=classify, flush=flush, check=False).to_dict()
    cut = run(h, addr, size, kind, classify=classify, flush=flush, cuts=cuts).to_dict()
    assert without(cut, "timing") == without(whole, "timing")


@settings(max_examples=examples(100), deadline=None)
@given(st.data())
def test_fully_associative_lru_is_a_stack_algorithm(data):
    """LRU inclusion (Mattson et al., 1970): on the same load-only trace a bigger
    fully-associative cache never misses more, and one that holds the whole
    footprint misses only once per distinct line."""
    line = data.draw(st.sampled_from(LINES))
    addr, size, kind = data.draw(traces(line, 8, kinds=(LOAD,)))
    footprint = len(set(lines_of(addr, size, kind, line, (LOAD,))))
    previous = None
    for ways in sorted({1, 2, 3, 4, 6, 8, 13, 24, max(footprint, 1)}):
        h = HierarchyConfig((LevelConfig("L1", ways * line, ways, line),))
        misses = run(h, addr, size, kind, check=False).levels[0].misses
        if previous is not None:
            assert misses <= previous, f"{ways} ways: {misses} > {previous}"
        previous = misses
    assert previous == footprint  # the biggest one holds every line touched


@settings(max_examples=examples(100), deadline=None)
@given(cases(sets=1), st.booleans())
def test_one_set_levels_have_no_conflict_misses(case, flush):
    """A level with one set *is* its fully-associative shadow: every miss is compulsory or
    capacity, whatever the mix of loads, stores, NT stores and writebacks."""
    h, addr, size, kind = case
    r = run(h, addr, size, kind, flush=flush)
    for lv in r.levels:
        assert lv.misses_by_class["conflict"] == 0, lv.name
        assert lv.traffic_below["conflict"] == 0, lv.name


@settings(max_examples=examples(100), deadline=None)
@given(cases(), st.booleans())
def test_classify_off_changes_only_the_class_fields(case, flush):
    h, addr, size, kind = case
    on = run(h, addr, size, kind, flush=flush).to_dict()
    off = run(h, addr, size, kind, classify=False, flush=flush).to_dict()
    for lv in off["levels"]:
        assert lv["misses_by_class"] is None and lv["traffic_below"] is None
    strip = ("misses_by_class", "traffic_below")
    assert [without(lv, *strip) for lv in off["levels"]] == [
        without(lv, *strip) for lv in on["levels"]
    ]
    assert without(off, "levels", "timing", "options") == without(on, "levels", "timing", "options")


@settings(max_examples=examples(100), deadline=None)
@given(cases(kinds=(LOAD, NT)), st.booleans())
def test_no_stores_no_writebacks(case, flush):
    h, addr, size, kind = case
    r = run(h, addr, size, kind, flush=flush)
    for lv in r.levels:
        assert lv.writebacks == lv.writebacks_in == 0, lv.name
        assert lv.write_allocate_fills == lv.forwarded_stores == 0, lv.name
    assert r.memory.bytes_written == r.core.bytes_nt


@settings(max_examples=examples(150), deadline=None)
@given(cases())
def test_flushed_stores_reach_memory(case):
    """With a flush, memory is written iff the core stored anything (any write policy)."""
    h, addr, size, kind = case
    r = run(h, addr, size, kind, flush=True)
    stored = bool(np.isin(kind, (STORE, NT)).any())
    assert (r.memory.bytes_written > 0) == stored
    assert r.memory.bytes_written >= r.core.bytes_nt


@settings(max_examples=examples(150), deadline=None)
@given(cases(write_allocate=True))
def test_every_stored_line_is_written_back_to_memory(case):
    """Write-allocate everywhere, with a flush: each line a store touched leaves the last
    level dirty at least once (evicted, invalidated by an NT store, or flushed)."""
    h, addr, size, kind = case
    r = run(h, addr, size, kind, flush=True)
    stored = set(lines_of(addr, size, kind, h.line, (STORE,)))
    last = r.levels[-1]
    assert last.writebacks >= len(stored)
    assert r.memory.bytes_written == last.writebacks * h.line + r.core.bytes_nt
    # Each line's first writeback from the last level is compulsory traffic.
    assert last.traffic_below["compulsory"] >= len(stored) * h.line
    # Write-allocate levels never forward a store.
    assert all(lv.forwarded_stores == 0 for lv in r.levels)


@settings(max_examples=examples(100), deadline=None)
@given(cases(), st.booleans(), st.one_of(st.none(), st.integers(0, 10**12)))
def test_result_json_round_trip_and_schema(case, classify, flops):
    h, addr, size, kind = case
    sim = Simulator(h, classify=classify)
    sim.feed(addr, size, kind)
    source = {"kernel": "random", "params": {"n": len(addr)}}
    d = sim.finish(flops=flops, source=source).to_dict()
    assert json.loads(json.dumps(d)) == d
    assert set(d) >= TOP_KEYS
    assert d["schema"] == SCHEMA == "hroof.result/1"
    assert d["source"] == source
    assert d["flops"] == flops
    assert d["accesses"] == len(addr)
    assert set(d["core"]) >= CORE_KEYS
    assert set(d["memory"]) >= MEMORY_KEYS
    assert set(d["timing"]) >= TIMING_KEYS
    assert len(d["levels"]) == len(h.levels)
    for lv, cfg in zip(d["levels"], h.levels, strict=True):
        assert set(lv) >= LEVEL_KEYS
        assert (lv["name"], lv["size"], lv["ways"], lv["line"], lv["sets"]) == (
            cfg.name,
            cfg.size,
            cfg.ways,
            cfg.line,
            cfg.sets,
        )
        if classify:
            assert set(lv["misses_by_class"]) == CLASS_KEYS
            assert set(lv["traffic_below"]) == PART_KEYS
        else:
            assert lv["misses_by_class"] is None and lv["traffic_below"] is None
    for part in [*d["levels"], d["memory"]]:
        if flops is None or part["bytes"] == 0:
            assert part["ai"] is None
        else:
            assert part["ai"] == flops / part["bytes"]
