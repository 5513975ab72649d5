"""The fast simulator against its plain-Python twin (tests/naive.py): every counter, exactly."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import random_trace
from helpers import assert_same
from naive import simulate as naive_simulate

from hroof.cachesim import HierarchyConfig, LevelConfig, Simulator, simulate
from hroof.cachesim import _kernels as K


def fast_dict(h, addr, size, kind, *, classify=True, flush=True, chunks=1):
    sim = Simulator(h, classify=classify)
    for part in np.array_split(np.arange(len(addr)), chunks):
        sim.feed(addr[part], size[part], kind[part])
    return sim.finish(flush=flush).to_dict()


def levels_from(spec, line):
    return HierarchyConfig(
        tuple(
            LevelConfig(f"L{i + 1}", sets * ways * line, ways, line, write_allocate=wa)
            for i, (sets, ways, wa) in enumerate(spec)
        )
    )


def naive_levels(h):
    return [
        {
            "name": lv.name,
            "size": lv.size,
            "ways": lv.ways,
            "line": lv.line,
            "write_allocate": lv.write_allocate,
        }
        for lv in h.levels
    ]


GEOMETRIES = [
    [(1, 1, True)],
    [(1, 4, True)],
    [(3, 1, True)],
    [(2, 2, True)],
    [(3, 2, True)],
    [(4, 3, True)],
    [(2, 2, False)],
    [(1, 2, True), (3, 2, True)],
    [(2, 1, True), (2, 4, True)],
    [(2, 2, True), (3, 3, True), (4, 4, True)],
    [(3, 2, False), (2, 4, True)],
    [(2, 2, True), (3, 2, False), (4, 2, True)],
    [(4, 4, True), (1, 2, True)],  # lower level smaller than L1
    [(1, 1, True), (1, 1, True), (1, 1, True), (2, 1, True)],
]


@pytest.mark.parametrize(
    "spec", GEOMETRIES, ids=lambda s: "-".join(f"{a}x{b}{'' if c else 'nwa'}" for a, b, c in s)
)
@pytest.mark.parametrize("line", [16, 64])
def test_random_traces_match_naive(spec, line):
    h = levels_from(spec, line)
    rng = np.random.default_rng(abs(hash((tuple(spec), line))) % 2**32)
    for trial in range(12):
        kinds_p = [(0.6, 0.3, 0.1), (1.0, 0.0, 0.0), (0.3, 0.7, 0.0), (0.4, 0.3, 0.3)][trial % 4]
        addr, size, kind = random_trace(
            rng, 300, lines=6 * sum(s * w for s, w, _ in spec) + 3, line=line, p=kinds_p
        )
        accesses = list(zip(addr.tolist(), size.tolist(), kind.tolist(), strict=False))
        for classify, flush in ((True, True), (True, False), (False, True)):
            fast = fast_dict(
                h, addr, size, kind, classify=classify, flush=flush, chunks=1 + trial % 3
            )
            naive = naive_simulate(naive_levels(h), accesses, classify=classify, flush=flush)
            assert_same(fast, naive)


def test_large_random_trace_many_chunks():
    """Longer streams with reuse at several distances, cut into uneven chunks."""
    h = levels_from([(4, 2, True), (8, 4, True), (5, 4, True)], 64)
    rng = np.random.default_rng(7)
    hot = rng.integers(0, 40 * 64, 6000)
    cold = rng.integers(0, 400 * 64, 6000)
    addr = np.where(rng.random(6000) < 0.7, hot, cold).astype(np.int64)
    size = np.full(6000, 8, dtype=np.int64)
    kind = rng.choice(np.array([0, 1, 2], dtype=np.uint8), 6000, p=[0.6, 0.35, 0.05])
    naive = naive_simulate(
        naive_levels(h), list(zip(addr.tolist(), size.tolist(), kind.tolist(), strict=False))
    )
    for chunks in (1, 13):
        assert_same(fast_dict(h, addr, size, kind, chunks=chunks), naive)


def test_flag_pages_grow_mid_chunk():
    """Lines spread over many pages force the classification tables to grow mid-chunk."""
    h = levels_from([(2, 2, True), (4, 2, True)], 64)
    rng = np.random.default_rng(11)
    addr = (rng.integers(0, 5000, 4000) * 512 * 64 + rng.integers(0, 64, 4000)).astype(np.int64)
    size = np.full(4000, 8, dtype=np.int64)
    kind = rng.choice(np.array([0, 1], dtype=np.uint8), 4000)
    naive = naive_simulate(
        naive_levels(h), list(zip(addr.tolist(), size.tolist(), kind.tolist(), strict=False))
    )
    assert_same(fast_dict(h, addr, size, kind), naive)


@pytest.mark.parametrize("spec", [GEOMETRIES[9], GEOMETRIES[11], GEOMETRIES[13]])
def test_first_touch_carried_down_counts_as_each_level_on_its_own(spec):
    """One core, plain levels: L1 marks the requests of its compulsory misses and the
    levels below take the mark instead of their own "seen" bits (``carry_new``). Every
    level reading and setting its own bits (the multicore passes' way) counts the same
    trace the same, counter for counter, with stores, NT stores, a no-write-allocate
    level and flag pages growing mid-chunk."""
    h = levels_from(spec, 64)
    rng = np.random.default_rng(31)
    n = 6000
    addr = np.where(
        rng.random(n) < 0.6,
        rng.integers(0, 30 * 64, n),
        rng.integers(0, 3000, n) * 512 * 64 + rng.integers(0, 64, n),
    ).astype(np.int64)
    size = np.full(n, 8, dtype=np.int64)
    kind = rng.choice(np.array([0, 1, 2], dtype=np.uint8), n, p=[0.55, 0.4, 0.05])
    ctrs = []
    for carry in (True, False):
        sim = Simulator(h, classify=True)
        assert sim._carry_new
        sim._carry_new = carry
        for part in np.array_split(np.arange(n), 5):
            sim.feed(addr[part], size[part], kind[part])
        sim.finish()
        ctrs.append(sim._st.ctr.copy())
    assert (ctrs[0] == ctrs[1]).all()
    assert ctrs[0][:, K.C_WB_FIRST].sum() > 0  # first writebacks were counted


def test_simulate_over_generator_equals_feed():
    h = levels_from([(2, 2, True), (3, 2, True)], 64)
    rng = np.random.default_rng(3)
    addr, size, kind = random_trace(rng, 500, lines=30)
    chunks = [(addr[i : i + 37], size[i : i + 37], kind[i : i + 37]) for i in range(0, 500, 37)]
    seen = []
    r = simulate(h, iter(chunks), progress=seen.append)
    assert sum(seen) == 500
    assert r.to_dict()["levels"] == fast_dict(h, addr, size, kind)["levels"]


@pytest.mark.parametrize(
    ("addr", "size", "kind", "match"),
    [
        ([0, -64], [8, 8], [0, 0], "negative"),
        ([0, 2**62], [8, 8], [0, 0], "2\\*\\*62"),
        (np.array([0, 2**63 + 64], dtype=np.uint64), [8, 8], [0, 0], "negative"),
        ([0, 64], [8, 0], [0, 0], "sizes are not positive"),
        ([0, 64], [8, -8], [0, 0], "1 access sizes are not positive"),
        ([0, 64], np.array([-1, 8], dtype=np.int32), [0, 0], "1 access sizes are not positive"),
        ([0, 64], [8, 2**32], [0, 0], "below 2\\*\\*32 bytes, got 4294967296"),
        ([0, 64], np.array([8, 2**63], dtype=np.uint64), [0, 0], "below 2\\*\\*32"),
        ([0, 64], [8, 8], np.array([0, 3], dtype=np.uint8), "kinds are not 0"),
        ([0, 64], [8, 8], np.array([0, 258]), "kind must be 0"),
        ([0, 64], [8, 8], np.array([0, -1], dtype=np.int8), "kind must be 0"),
        ([0, 64], [8.0, 8.0], [0, 0], "integer array"),
        ([0, 64], [8], [0, 0], "equal lengths"),
    ],
)
def test_bad_chunks_rejected_before_any_state_changes(addr, size, kind, match):
    from hroof._base.errors import HroofError

    h = levels_from([(2, 2, True)], 64)
    sim = Simulator(h)
    with pytest.raises(HroofError, match=match):
        sim.feed(np.asarray(addr), np.asarray(size), np.asarray(kind))
    assert sim.accesses == 0
    sim.feed(np.array([0]), np.array([8]), np.array([0], dtype=np.uint8))
    assert sim.finish().levels[0].misses == 1


@pytest.mark.parametrize("classify", [False, True])
@pytest.mark.parametrize("spec", [GEOMETRIES[9], GEOMETRIES[11], GEOMETRIES[12]])
def test_two_threads_same_result(spec, classify):
    """The pipelined mode (L1 on one thread, the levels below on another) is exact, with
    classification too (each thread's own flag words, grown mid-chunk on both threads:
    the sparse lines open a flag page each, past the 64 a simulator starts with)."""
    h = levels_from(spec, 64)
    rng = np.random.default_rng(5)
    addr, size, kind = random_trace(rng, 3000, lines=200, p=(0.5, 0.4, 0.1))
    # up to 400 flag pages, 8 lines of various sets in each
    sparse = rng.choice(400, 3000) * (K.PAGE * 64 * 3) + rng.integers(0, 8, 3000) * 64
    for a in (addr, sparse):
        for chunks in (1, 7, 40):
            parts = np.array_split(np.arange(len(a)), chunks)
            sims = [Simulator(h, classify=classify, threads=t) for t in (1, 2)]
            assert sims[1].threads == 2 and (sims[1]._fl_lo is not None) == classify
            for part in parts:
                for sim in sims:
                    sim.feed(a[part], size[part], kind[part])
            one, two = (sim.finish().to_dict() for sim in sims)
            assert two["options"]["threads"] == 2
            assert one["levels"] == two["levels"] and one["memory"] == two["memory"]


def test_two_threads_flush_opens_flag_pages():
    """With two threads the levels below L1 keep their own flag words, opened by
    writebacks only: the flush's first writebacks open pages too (300 dirty lines, each
    on its own page, past the 64 pages a simulator starts with), and the flag words grow
    for them."""
    h = levels_from([(2, 2, True), (64, 8, True), (128, 8, True)], 64)
    lines = np.arange(300) * (K.PAGE + 1)
    addr = np.concatenate([lines, lines]) * 64
    size = np.full(addr.shape, 8)
    kind = np.repeat(np.array([1, 0], dtype=np.uint8), 300)
    sims = [Simulator(h, threads=t) for t in (1, 2)]
    for sim in sims:
        sim.feed(addr, size, kind)
    one, two = (sim.finish().to_dict() for sim in sims)
    assert one["levels"] == two["levels"] and one["memory"] == two["memory"]
    assert one["levels"][1]["writebacks"] == 300  # all of them at the flush
    fl = sims[1]._fl_lo
    assert 300 <= fl.meta[K.M_NPAGES] <= fl.pages.shape[0] // K.PAGE


def test_two_threads_only_one_or_two():
    from hroof._base.errors import HroofError

    h = levels_from([(2, 2, True), (4, 2, True)], 64)
    with pytest.raises(HroofError, match="threads must be 1 or 2"):
        Simulator(h, classify=False, threads=4)


@pytest.mark.slow
def test_real_l3_geometry_non_power_of_two_sets():
    """A 20-way L3 of 212,992 sets (260 MiB, as on this project's machine): lines whose
    addresses differ by a multiple of the set count share a set, nothing else does."""
    l3 = LevelConfig("L3", 20 * 212992 * 64, 20, 64)
    assert l3.sets == 212992 and l3.size == 260 * 2**20
    h = HierarchyConfig((l3,))
    same_set = np.arange(21, dtype=np.int64) * 212992 * 64  # 21 lines, one set
    others = (np.arange(21, dtype=np.int64) * 212993 + 5) * 64  # 21 lines, 21 sets
    for base, conflicts in ((same_set, 1), (others, 0)):
        addr = np.concatenate([base, base[:1]])
        r = simulate(h, [(addr, np.full(22, 8), np.zeros(22, dtype=np.uint8))])
        lv = r.levels[0]
        assert lv.misses == 21 + conflicts
        assert lv.misses_by_class == {"compulsory": 21, "capacity": 0, "conflict": conflicts}


@pytest.mark.slow
def test_five_levels_use_wider_flag_words():
    """Five levels need 16-bit flag words (two bits a level): classification still exact."""
    spec = [(1, 2, True), (2, 2, True), (2, 2, False), (4, 2, True), (4, 4, True)]
    h = levels_from(spec, 64)
    rng = np.random.default_rng(21)
    addr, size, kind = random_trace(rng, 1500, lines=120, p=(0.5, 0.4, 0.1))
    sim = Simulator(h)
    assert sim._fl.pages.dtype == np.uint16
    accesses = list(zip(addr.tolist(), size.tolist(), kind.tolist(), strict=True))
    assert_same(fast_dict(h, addr, size, kind, chunks=3), naive_simulate(naive_levels(h), accesses))


def test_tiny_lines_limit_addresses():
    """With 4-byte lines a line index shifted into an event must fit in an int64."""
    from hroof._base.errors import HroofError

    h = HierarchyConfig((LevelConfig("L1", 64, 2, 4), LevelConfig("L2", 128, 2, 4)))
    sim = Simulator(h, classify=False)
    sim.feed(np.array([2**61 - 4]), np.array([4]), np.array([1], np.uint8))
    with pytest.raises(HroofError, match=r"not below 2\*\*61"):
        sim.feed(np.array([2**61]), np.array([4]), np.array([0], np.uint8))
    r = sim.finish()
    assert r.levels[1].misses == 1 and r.levels[1].writebacks == 1


@pytest.mark.parametrize("dtype", [np.int64, np.uint64, np.int32, np.uint16, np.uint8])
@pytest.mark.parametrize("trusted", [False, True])
def test_sizes_of_any_integer_dtype_simulate_as_uint32(dtype, trusted):
    """A chunk's sizes are uint32 in every pass; sizes of another dtype are converted
    (checked first, even when the chunk is marked trusted), with the same result, the
    core's byte counters included."""
    from hroof._base.kinds import SIZE_DTYPE
    from hroof.cachesim._chunks import _as_chunk, _trusted_chunk

    h = levels_from([(2, 2, True), (4, 2, True)], 64)
    rng = np.random.default_rng(5)
    addr, size, kind = random_trace(rng, 400, lines=40)
    want = fast_dict(h, addr, size.astype(SIZE_DTYPE), kind)
    sim = Simulator(h)
    sim.feed(addr.astype(np.int64), size.astype(dtype), kind.astype(np.uint8), trusted=trusted)
    got = sim.finish().to_dict()
    assert got["levels"] == want["levels"] and got["core"] == want["core"]
    chunk = (_trusted_chunk if trusted else _as_chunk)(addr, size.astype(dtype), kind, 6)
    assert chunk[1].dtype == SIZE_DTYPE
    core = got["core"]
    assert core["bytes_loaded"] + core["bytes_stored"] + core["bytes_nt"] == int(size.sum())
