"""DGEMV and GEMM: traces against naive loop nests (every order, tiled or not), exact
counts, loop order and tiling through the simulator, and bad parameters."""

from __future__ import annotations

import itertools

import pytest
from helpers import collect_plan as collect
from naive import naive_dgemv, naive_gemm

import hroof.traces.dense  # noqa: F401 (registers dgemv and gemm)
from hroof._base.errors import HroofError
from hroof.cachesim import hierarchy
from hroof.studies.runs import simulate_kernel
from hroof.traces import plan_kernel

ORDERS = ("ijk", "ikj", "jik", "jki", "kij", "kji")


def check_plan(plan, expected, flops):
    # one iteration's worth, a prime, and everything at once
    for chunk_size in (plan.per_iteration, 13, 1 << 20):
        assert collect(plan, chunk_size) == expected
    assert plan.flops == flops
    assert plan.accesses == len(expected)
    touched = {addr + b for addr, s, _ in expected for b in range(s)}
    assert plan.footprint == len(touched)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize(
    "params",
    [
        {"m": 4, "n": 3, "k": 5},
        {"m": 5, "n": 7, "k": 3, "ti": 2, "tj": 3, "tk": 2},
        {"m": 6, "n": 4, "k": 4, "ti": 3, "tk": 4},
        {"m": 3, "n": 5, "k": 2, "tj": 2, "dtype": "float32", "gap": 12},
        {"m": 1, "n": 1, "k": 1, "ti": 1, "tj": 1, "tk": 1},
    ],
)
def test_gemm_trace_equals_naive_loop(order, params):
    plan = plan_kernel("gemm", order=order, **params)
    m, n, k = params["m"], params["n"], params["k"]
    expected = naive_gemm(plan)
    check_plan(plan, expected, 2 * m * n * k)
    assert len(expected) == 4 * m * n * k
    assert [a.name for a in plan.arrays] == ["A", "B", "C"]


def test_gemm_every_chunk_size_on_a_ragged_tiling():
    """Every chunk size from one iteration up: the decode of ``pos`` at every call start."""
    plan = plan_kernel("gemm", m=5, n=7, k=3, ti=2, tj=3, tk=2, order="jki")
    expected = naive_gemm(plan)
    for chunk_size in range(4, 60):
        assert collect(plan, chunk_size) == expected


def test_gemm_all_tile_combinations_small():
    """Seeded exhaustive sweep of tilings on tiny sizes, every order."""
    for order, ti, tj, tk in itertools.product(ORDERS, (0, 1, 2, 3), (0, 2, 4), (0, 1, 2)):
        plan = plan_kernel("gemm", m=3, n=4, k=2, order=order, ti=ti, tj=tj, tk=tk)
        assert collect(plan, 28) == naive_gemm(plan), (order, ti, tj, tk)


def test_gemm_orders_differ_and_tile_order_is_program_order():
    traces = {o: naive_gemm(plan_kernel("gemm", m=2, n=2, k=2, order=o)) for o in ORDERS}
    assert len({tuple(t) for t in traces.values()}) == 6
    # ijk: the first two points are (0, 0, 0) then (0, 0, 1): A steps by one element
    a, b, _ = plan_kernel("gemm", m=2, n=2, k=2).arrays
    assert [t[0] for t in traces["ijk"][:8:4]] == [a.base, a.base + 8]
    assert [t[0] for t in traces["ijk"][1:8:4]] == [b.base, b.base + 16]


@pytest.mark.parametrize(
    "params",
    [{"m": 3, "n": 5}, {"m": 7, "n": 2, "dtype": "float32"}, {"n": 4}, {"m": 1, "n": 1},
     {"m": 4, "n": 6, "align": 4096, "gap": 8}],
)  # fmt: skip
def test_dgemv_trace_equals_naive_loop(params):
    plan = plan_kernel("dgemv", **params)
    n = params["n"]
    m = params.get("m", n)
    expected = naive_dgemv(plan)
    check_plan(plan, expected, 2 * m * n)
    assert len(expected) == 2 * m * n + m
    assert [a.name for a in plan.arrays] == ["A", "x", "y"]
    for chunk_size in range(3, 20):
        assert collect(plan, chunk_size) == expected


def test_defaults():
    g = plan_kernel("gemm")
    assert (g.params["m"], g.params["n"], g.params["k"], g.params["order"]) == (64, 64, 64, "ijk")
    assert g.flops == 2 * 64**3
    d = plan_kernel("dgemv")
    assert d.flops == 2 * 1024 * 1024 and d.arrays[0].count == 1024 * 1024


def l1_misses(**params):
    # L1: 4 KiB, 4 ways (64 lines); B (32 x 32 doubles = 8 KiB) does not fit.
    h = hierarchy({"name": "L1", "size": 4096, "ways": 4}, {"name": "L2", "size": 65536, "ways": 8})
    r = simulate_kernel("gemm", h, **params)
    assert r.flops == 2 * params["m"] * params["n"] * params["k"]
    return r.levels[0].misses


def test_loop_order_matters_as_the_textbook_says():
    """ijk walks B down a column (a new line every iteration); ikj walks B and C along
    rows, so it misses far less at an L1 too small for B."""
    size = {"m": 32, "n": 32, "k": 32}
    ijk = l1_misses(order="ijk", **size)
    ikj = l1_misses(order="ikj", **size)
    jki = l1_misses(order="jki", **size)
    assert ijk > 4 * ikj
    assert jki > ikj  # jki walks A and C down columns


def test_tiling_that_fits_reduces_l1_misses():
    size = {"m": 32, "n": 32, "k": 32}
    for order in ("ijk", "ikj"):
        untiled = l1_misses(order=order, **size)
        # three 8 x 8 tiles of doubles: 1.5 KiB, they fit in the 4 KiB L1
        tiled = l1_misses(order=order, ti=8, tj=8, tk=8, **size)
        assert tiled < untiled / 3, order


@pytest.mark.parametrize(
    ("kernel", "params", "words"),
    [
        ("gemm", {"m": 0}, "gemm parameter m must be at least 1"),
        ("gemm", {"k": -1}, "gemm parameter k must be at least 1"),
        ("gemm", {"order": "ijj"}, "gemm parameter order must be one of ijk, ikj"),
        ("gemm", {"m": 4, "ti": 5}, r"gemm parameter ti \(tile size 5\) must be at most m = 4"),
        ("gemm", {"n": 4, "tj": 8}, "parameter tj .* at most n = 4"),
        ("gemm", {"k": 2, "tk": 3}, "parameter tk .* at most k = 2"),
        ("gemm", {"ti": -1}, "parameter ti must be at least 0"),
        ("gemm", {"dtype": "float16"}, "gemm parameter dtype must be one of float64, float32"),
        ("dgemv", {"dtype": "int8"}, "dgemv parameter dtype must be one of"),
        ("dgemv", {"n": 0}, "dgemv parameter n must be at least 1"),
        ("dgemv", {"m": -2}, "dgemv parameter m must be at least 0"),
    ],
)
def test_bad_parameters(kernel, params, words):
    with pytest.raises(HroofError, match=words):
        plan_kernel(kernel, **params)
