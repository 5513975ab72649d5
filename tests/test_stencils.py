"""Stencil kernels (hroof.traces.stencils): exact traces against the naive loop nests,
counts, validation, and the lecture's 7-point stencil numbers through the simulator."""

from __future__ import annotations

import numpy as np
import pytest
from naive import distinct_bytes, stencil_trace

import hroof.traces.stencils  # noqa: F401 (registers the stencil kernels)
from hroof._base.errors import HroofError
from hroof.cachesim import hierarchy
from hroof.studies.runs import simulate_kernel
from hroof.traces import get_kernel, plan_kernel

CASES = [
    ("stencil7", {"n": 1}),
    ("stencil7", {"n": 3}),
    ("stencil7", {"nx": 5, "ny": 3, "nz": 4}),
    ("stencil7", {"n": 4, "nx": 2}),
    ("stencil7", {"nx": 3, "ny": 4, "nz": 2, "pad_row": 3, "pad_plane": 5}),
    ("stencil7", {"nx": 4, "ny": 5, "nz": 3, "bj": 2}),
    ("stencil7", {"nx": 3, "ny": 5, "nz": 5, "bj": 2, "bk": 3}),
    ("stencil7", {"nx": 2, "ny": 3, "nz": 4, "bk": 4}),
    ("stencil7", {"nx": 2, "ny": 3, "nz": 4, "bj": 3, "bk": 1, "sweeps": 3}),
    ("stencil7", {"n": 3, "sweeps": 2, "dtype": "float32"}),
    ("stencil7", {"nx": 5, "ny": 2, "nz": 3, "sweeps": 3, "pad_row": 1, "gap": 100}),
    ("stencil7", {"n": 2, "dtype": "float32", "align": 4096, "pad_plane": 1}),
    ("stencil5", {"n": 1}),
    ("stencil5", {"nx": 5, "ny": 3}),
    ("stencil5", {"n": 4, "pad_row": 2, "sweeps": 2}),
    ("stencil5", {"nx": 3, "ny": 6, "sweeps": 3, "dtype": "float32"}),
    ("stencil27", {"n": 1}),
    ("stencil27", {"nx": 4, "ny": 3, "nz": 2}),
    ("stencil27", {"n": 3, "pad_row": 1, "pad_plane": 3, "sweeps": 2}),
    ("stencil27", {"nx": 2, "ny": 2, "nz": 3, "sweeps": 3, "dtype": "float32"}),
]
IDS = [f"{k}-{'-'.join(f'{a}={b}' for a, b in kw.items())}" for k, kw in CASES]


def collect(plan, chunk_size):
    """Concatenate the chunks; check each one's length on the way."""
    cap = max(chunk_size, plan.per_iteration)
    chunks = list(plan.chunks(chunk_size, reuse=False))
    for addr, size, kind in chunks:
        assert 0 < len(addr) <= cap
        assert len(addr) % plan.per_iteration == 0  # whole points only
        assert len(size) == len(kind) == len(addr)
    addr = np.concatenate([c[0] for c in chunks]).tolist()
    size = np.concatenate([c[1] for c in chunks]).tolist()
    kind = np.concatenate([c[2] for c in chunks]).tolist()
    return list(zip(addr, size, kind, strict=True))


@pytest.mark.parametrize(("kernel", "params"), CASES, ids=IDS)
def test_trace_equals_naive(kernel, params):
    plan = plan_kernel(kernel, **params)
    expected = stencil_trace(plan)
    for chunk_size in (1, plan.per_iteration, 37, 1 << 20):
        assert collect(plan, chunk_size) == expected, chunk_size


@pytest.mark.parametrize(("kernel", "params"), CASES, ids=IDS)
def test_counts(kernel, params):
    plan = plan_kernel(kernel, **params)
    trace = stencil_trace(plan)
    p = plan.params
    nz = (p["nz"] or p["n"]) if "nz" in p else 1
    points = (p["nx"] or p["n"]) * (p["ny"] or p["n"]) * nz
    flops = {"stencil5": 5, "stencil7": 7, "stencil27": 30}[kernel]
    loads = {"stencil5": 5, "stencil7": 7, "stencil27": 27}[kernel]
    assert plan.flops == flops * points * p["sweeps"]
    assert plan.iterations == points * p["sweeps"]
    assert plan.per_iteration == loads + 1
    assert plan.accesses == len(trace) == (loads + 1) * points * p["sweeps"]
    assert plan.footprint == distinct_bytes(trace)
    # Every access is one element of old or new, inside the grid, never in the padding.
    nx, ny = p["nx"] or p["n"], p["ny"] or p["n"]
    js = nx + 2 + p["pad_row"]
    ks = js * (ny + 2) + p.get("pad_plane", 0)
    for addr, size, _kind in trace:
        array = next(a for a in plan.arrays if a.base <= addr < a.end)
        index, rest = divmod(addr - array.base, array.elem)
        assert rest == 0 and size == array.elem
        assert index % ks % js <= nx + 1 and index % ks < js * (ny + 2)


@pytest.mark.parametrize(("kernel", "params"), CASES[:12:3] + CASES[-2:], ids=IDS[:12:3] + IDS[-2:])
def test_generator_from_any_position(kernel, params):
    """Start the generator at arbitrary points and stop it early: the decoding of pos."""
    plan = plan_kernel(kernel, **params)
    expected = stencil_trace(plan)
    per = plan.per_iteration
    rng = np.random.default_rng(7)
    addr = np.empty(5 * per, dtype=np.int64)
    size = np.empty_like(addr)
    kind = np.empty(5 * per, dtype=np.uint8)
    for _ in range(30):
        pos = int(rng.integers(0, plan.iterations))
        stop = int(rng.integers(pos + 1, plan.iterations + 1))
        n, new_pos = plan.gen(pos, stop, addr, size, kind, plan.args)
        assert new_pos == min(stop, pos + 5) and n == (new_pos - pos) * per
        got = list(zip(addr[:n].tolist(), size[:n].tolist(), kind[:n].tolist(), strict=True))
        assert got == expected[pos * per : new_pos * per]


def test_small_layout_by_hand():
    """stencil7, n=2: rows of 4 elements, planes of 16, arrays of 64 elements."""
    plan = plan_kernel("stencil7", n=2)
    old, new = plan.arrays
    assert (old.elem, old.count, new.base - old.base) == (8, 64, 512)
    c = 1 + 4 + 16  # point (1, 1, 1)
    first = [(old.base + 8 * (c + d), 8, 0) for d in (0, -1, 1, -4, 4, -16, 16)]
    first.append((new.base + 8 * c, 8, 1))
    assert collect(plan, 8)[:8] == first
    # old: 8 interior + 6 faces of 4; new: 8 interior.
    assert plan.footprint == 8 * (8 + 24 + 8)
    assert plan_kernel("stencil7", n=2, sweeps=2).footprint == 8 * 2 * (8 + 24)


def test_registered_with_documented_params():
    names = {
        k: [p.name for p in get_kernel(k).params] for k in ("stencil5", "stencil7", "stencil27")
    }
    assert "bj" in names["stencil7"] and "bk" in names["stencil7"]
    assert "nz" not in names["stencil5"] and "pad_plane" not in names["stencil5"]
    assert "30 flops" in get_kernel("stencil27").summary


@pytest.mark.parametrize(
    ("kernel", "params", "name"),
    [
        ("stencil7", {"n": 0}, "n"),
        ("stencil7", {"nx": -1}, "nx"),
        ("stencil7", {"ny": 5, "bj": 6}, "bj"),
        ("stencil7", {"n": 4, "bk": 5}, "bk"),
        ("stencil7", {"bj": -1}, "bj"),
        ("stencil7", {"dtype": "float16"}, "dtype"),
        ("stencil7", {"sweeps": 0}, "sweeps"),
        ("stencil7", {"pad_row": -1}, "pad_row"),
        ("stencil5", {"n": 0}, "n"),
        ("stencil5", {"dtype": "int8"}, "dtype"),
        ("stencil27", {"nz": -2}, "nz"),
        ("stencil27", {"sweeps": 0}, "sweeps"),
    ],
)
def test_bad_params(kernel, params, name):
    with pytest.raises(HroofError, match=rf"parameter {name} "):
        plan_kernel(kernel, **params)


def test_unknown_param():
    with pytest.raises(HroofError, match="bj"):
        plan_kernel("stencil27", bj=2)


# ------------------------------------------------------------ the lecture's numbers


def two_levels(l2, l1="4 KiB", l1_ways=4):
    return hierarchy(
        {"name": "L1", "size": l1, "ways": l1_ways}, {"name": "L2", "size": l2, "ways": 16}
    )


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_l1_ai_is_7_over_64(dtype):
    """7 flops over 8 accesses of 8 bytes: L1 AI 0.109 flop/byte (0.219 in float32)."""
    r = simulate_kernel("stencil7", two_levels("64 KiB"), n=24, dtype=dtype)
    elem = 8 if dtype == "float64" else 4
    assert r.levels[0].bytes == 8 * elem * 24**3
    assert r.levels[0].ai == pytest.approx(7 / (8 * elem), rel=1e-12)
    assert r.flops == 7 * 24**3


@pytest.mark.slow
def test_memory_traffic_approaches_24_bytes_a_point():
    """An L2 that holds three planes of old and one of new filters all but one read
    of old and the write (plus write-allocate) of new: 24 bytes a point, plus the
    halo's share, and only compulsory misses."""
    n = 64
    r = simulate_kernel("stencil7", two_levels("256 KiB"), n=n)
    per_point = r.memory.bytes / n**3
    assert 24 < per_point < 24 * 1.06
    assert r.levels[1].misses_by_class["capacity"] == r.levels[1].misses_by_class["conflict"] == 0
    # Exactly: every line of old once, every line of new in (write-allocate) and out.
    trace = collect(plan_kernel("stencil7", n=n), 1 << 22)
    addr = np.array([a for a, _s, _k in trace], dtype=np.int64) // 64
    kind = np.array([k for _a, _s, k in trace])
    lines_old = len(np.unique(addr[kind == 0]))
    lines_new = len(np.unique(addr[kind == 1]))
    assert r.memory.bytes == 64 * (lines_old + 2 * lines_new)
    assert r.memory.bytes_written == 64 * lines_new


def test_small_cache_capacity_misses_and_blocking():
    """An L2 smaller than a plane (34.8 KB at n=64) re-reads old; blocking j fixes it."""
    plain = simulate_kernel("stencil7", two_levels("32 KiB"), n=64)
    blocked = simulate_kernel("stencil7", two_levels("32 KiB"), n=64, bj=8)
    assert plain.memory.bytes / 64**3 > 36
    assert plain.levels[1].misses_by_class["capacity"] > 0
    assert blocked.memory.bytes < 0.7 * plain.memory.bytes
    assert blocked.flops == plain.flops


def test_padding_removes_conflict_misses():
    """n=30: planes of 32 x 32 doubles = 8 KiB, a multiple of a 2-way 4 KiB L1's way:
    old[c - kS], old[c] and old[c + kS] share a set. pad_plane moves them apart."""
    h = two_levels("1 MiB", l1="4 KiB", l1_ways=2)
    plain = simulate_kernel("stencil7", h, n=30)
    padded = simulate_kernel("stencil7", h, n=30, pad_plane=8)
    assert (
        plain.levels[0].misses_by_class["conflict"]
        > 50 * padded.levels[0].misses_by_class["conflict"]
    )
    assert padded.levels[1].bytes < 0.2 * plain.levels[1].bytes
