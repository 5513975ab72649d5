"""Native kernels against NumPy on tiny sizes, the arena layout, and the timer's structure.

Measured numbers never appear here: only results of computations (exact or
allclose) and the timer's bookkeeping under a fake clock.
"""

from __future__ import annotations

import numpy as np
import pytest

from hroof._base.errors import HroofError
from hroof.native import measure_kernel, native_kernels, prepare, time_kernel
from hroof.native.stencils import W27
from hroof.native.stream import Q
from hroof.traces import Kernel, Param, Plan, kernels, plan_kernel, register_kernel
from hroof.traces.kernels import BASE, unregister_kernel
from hroof.traces.sparse import matrix_csr


def run_once(kernel, **params):
    """Plan, prepare and run once; return (plan, prepared, inputs before the run)."""
    plan = plan_kernel(kernel, **params)
    prep = prepare(plan)
    before = {k: v.copy() for k, v in prep.arrays.items()}
    prep.run()
    return plan, prep, before


def trace_bytes(plan: Plan) -> int:
    return sum(int(size.sum()) for _, size, _ in plan.chunks(4096))


# ----------------------------------------------------------------- every kernel is covered
def test_every_registered_kernel_has_a_native_twin():
    assert native_kernels() == sorted(k.name for k in kernels())


# ----------------------------------------------------------------- STREAM and DAXPY
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_stream_kernels_match_numpy(dtype):
    n = 37
    q = np.dtype(dtype).type(Q)
    expect = {
        "copy": ("c", lambda a: a["a"]),
        "scale": ("b", lambda a: q * a["c"]),
        "add": ("c", lambda a: a["a"] + a["b"]),
        "triad": ("z", lambda a: a["x"] + q * a["y"]),
        "daxpy": ("y", lambda a: q * a["x"] + a["y"]),
    }
    # float32: two kernels are enough to check the dtype path (each dtype compiles anew)
    names = list(expect) if dtype == "float64" else ["scale", "triad"]
    for name in names:
        out, f = expect[name]
        plan, prep, before = run_once(name, n=n, dtype=dtype, gap=72)
        assert prep.arrays[out].dtype == np.dtype(dtype)
        np.testing.assert_array_equal(prep.arrays[out], f(before))
        for k, v in before.items():  # inputs untouched
            if k != out:
                np.testing.assert_array_equal(prep.arrays[k], v)
        assert prep.core_bytes == trace_bytes(plan)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_dot_returns_the_sum_and_leaves_its_inputs(dtype):
    plan, prep, before = run_once("dot", n=1001, dtype=dtype, gap=72, sweeps=2)
    got = prep.run()
    assert isinstance(got, float)
    want = float(np.dot(before["x"].astype(np.float64), before["y"].astype(np.float64)))
    assert got == pytest.approx(want, rel=1e-12 if dtype == "float64" else 1e-5)
    for k, v in before.items():
        np.testing.assert_array_equal(prep.arrays[k], v)
    assert prep.core_bytes == trace_bytes(plan) == 2 * 1001 * 2 * np.dtype(dtype).itemsize
    assert prep.reset is None and prep.notes == ""


def test_nt_is_accepted_and_said_to_be_ignored():
    _plan, prep, before = run_once("copy", n=8, nt=True)
    np.testing.assert_array_equal(prep.arrays["c"], before["a"])
    assert "ignored" in prep.notes
    assert prepare(plan_kernel("copy", n=8)).notes == ""


# ----------------------------------------------------------------- layout
def test_arena_keeps_the_trace_layout():
    plan = plan_kernel("triad", n=10, align=256, gap=40)
    arrays = prepare(plan).arrays
    first = arrays["x"].ctypes.data
    assert first % 4096 == 0
    for a in plan.arrays:
        assert arrays[a.name].ctypes.data - first == a.base - BASE
        assert arrays[a.name].nbytes == a.nbytes


# ----------------------------------------------------------------- stencils
def grid(flat, plan, three_d):
    """The (nz+2, ny+2, jS) (3D) or (ny+2, jS) (2D) view of a flat stencil array."""
    _offs, _a, _b, _e, _o, js, ks, _nx, ny, nz, _bj, _bk = plan.args
    if three_d:
        return flat.reshape(nz + 2, ks)[:, : js * (ny + 2)].reshape(nz + 2, ny + 2, js)
    return flat.reshape(ny + 2, js)


def reference_sweep(name, a, b, nx, ny, nz):
    """One sweep in NumPy: reads a, writes b's interior, the same expression order."""
    if name == "stencil5":

        def s(dj, di):
            return a[1 + dj : ny + 1 + dj, 1 + di : nx + 1 + di]

        w = a.dtype.type(-4)
        b[1 : ny + 1, 1 : nx + 1] = w * s(0, 0) + s(0, -1) + s(0, 1) + s(-1, 0) + s(1, 0)
        return

    def s(dk, dj, di):
        return a[1 + dk : nz + 1 + dk, 1 + dj : ny + 1 + dj, 1 + di : nx + 1 + di]

    inner = (slice(1, nz + 1), slice(1, ny + 1), slice(1, nx + 1))
    if name == "stencil7":
        w = a.dtype.type(-6)
        b[inner] = (w * s(0, 0, 0) + s(0, 0, -1) + s(0, 0, 1) + s(0, -1, 0) + s(0, 1, 0)
                    + s(-1, 0, 0) + s(1, 0, 0))  # fmt: skip
        return
    offs = [(dk, dj, di) for dk in (-1, 0, 1) for dj in (-1, 0, 1) for di in (-1, 0, 1)]
    sums = {}
    for cls in (1, 2, 3):
        terms = [s(*o) for o in offs if sum(map(abs, o)) == cls]
        total = terms[0]
        for t in terms[1:]:
            total = total + t
        sums[cls] = total
    w0, w1, w2, w3 = (a.dtype.type(w) for w in W27)
    b[inner] = w0 * s(0, 0, 0) + w1 * sums[1] + w2 * sums[2] + w3 * sums[3]


@pytest.mark.parametrize(
    "name, params",
    [
        ("stencil5", {"nx": 5, "ny": 4, "pad_row": 3}),
        ("stencil5", {"n": 4, "sweeps": 3, "dtype": "float32"}),
        ("stencil7", {"nx": 5, "ny": 4, "nz": 3, "pad_row": 1, "pad_plane": 5}),
        ("stencil7", {"n": 6, "bj": 4, "bk": 5, "sweeps": 2}),
        ("stencil7", {"n": 5, "bj": 2, "bk": 3, "sweeps": 3, "dtype": "float32"}),
        ("stencil27", {"nx": 4, "ny": 3, "nz": 5, "pad_row": 2, "pad_plane": 3}),
        ("stencil27", {"n": 3, "sweeps": 2}),
    ],
)
def test_stencils_match_numpy(name, params):
    plan, prep, before = run_once(name, **params)
    three_d = name != "stencil5"
    nx, ny, nz = plan.args[7:10]
    a = grid(before["old"].copy(), plan, three_d)
    b = grid(before["new"].copy(), plan, three_d)
    for _ in range(plan.params["sweeps"]):
        reference_sweep(name, a, b, nx, ny, nz)
        a, b = b, a
    # the expression is evaluated in the same order: float64 agrees exactly
    exact = plan.params["dtype"] == "float64"
    got_old = grid(prep.arrays["old"], plan, three_d)
    got_new = grid(prep.arrays["new"], plan, three_d)
    # after the loop, `a` holds the last sweep's output grid, `b` the other
    last, other = (got_new, got_old) if plan.params["sweeps"] % 2 else (got_old, got_new)
    check = (
        np.testing.assert_array_equal
        if exact
        else (lambda x, y: np.testing.assert_allclose(x, y, rtol=1e-5))
    )
    check(last, a)
    check(other, b)
    assert prep.core_bytes == trace_bytes(plan)


def test_stencil_reset_restores_both_grids():
    plan = plan_kernel("stencil7", n=4, sweeps=2)
    prep = prepare(plan)
    prep.run()
    assert not np.array_equal(prep.arrays["old"], prep.initial["old"])
    prep.reset()
    for k in ("old", "new"):
        np.testing.assert_array_equal(prep.arrays[k], prep.initial[k])
    assert prepare(plan_kernel("stencil7", n=4)).reset is None  # one sweep: input untouched


# ----------------------------------------------------------------- dense
@pytest.mark.parametrize("m, n", [(5, 7), (6, 6)])
def test_dgemv_matches_numpy(m, n):
    plan, prep, before = run_once("dgemv", n=n, m=m if m != n else 0)
    want = before["A"].reshape(m, n) @ before["x"]
    np.testing.assert_allclose(prep.arrays["y"], want, rtol=1e-13)
    assert prep.core_bytes == trace_bytes(plan)


@pytest.mark.parametrize("order", ["ijk", "ikj", "jik", "jki", "kij", "kji"])
@pytest.mark.parametrize("tiles", [{}, {"ti": 2, "tj": 3, "tk": 4}])
def test_gemm_matches_numpy(order, tiles):
    m, n, k = 5, 6, 7
    plan, prep, before = run_once("gemm", m=m, n=n, k=k, order=order, **tiles)
    want = before["C"].reshape(m, n) + before["A"].reshape(m, k) @ before["B"].reshape(k, n)
    np.testing.assert_allclose(prep.arrays["C"].reshape(m, n), want, rtol=1e-13)
    np.testing.assert_array_equal(prep.arrays["A"], before["A"])
    assert prep.core_bytes == trace_bytes(plan)


def test_gemm_tiled_loop_order_sums_like_python():
    """Float32 sums depend on the order of p: the tiled ikj nest adds in the trace's order."""
    m, n, k = 2, 3, 5
    _plan, prep, before = run_once("gemm", m=m, n=n, k=k, order="kij", tk=2, dtype="float32")
    a, b = before["A"].reshape(m, k), before["B"].reshape(k, n)
    c = before["C"].reshape(m, n).copy()
    for p in range(k):  # kij: p outermost, so each C[i][j] gets its terms in p order
        for i in range(m):
            for j in range(n):
                c[i, j] += a[i, p] * b[p, j]
    np.testing.assert_array_equal(prep.arrays["C"].reshape(m, n), c)


# ----------------------------------------------------------------- sparse
@pytest.mark.parametrize(
    "params",
    [
        {"matrix": "poisson2d", "n": 4},
        {"matrix": "poisson3d", "n": 3, "index_bytes": 8},
        {"matrix": "random", "rows": 20, "nnz_per_row": 3, "seed": 2, "dtype": "float32"},
        {"matrix": "banded", "rows": 9, "band": 2},
    ],
)
def test_spmv_matches_numpy(params):
    plan, prep, before = run_once("spmv", **params)
    nrows, ncols, rowptr, col = matrix_csr(plan.params)
    np.testing.assert_array_equal(prep.arrays["rowptr"], rowptr)
    np.testing.assert_array_equal(prep.arrays["col"], col)
    dense = np.zeros((nrows, ncols), dtype=np.float64)
    for i in range(nrows):
        for j in range(rowptr[i], rowptr[i + 1]):
            dense[i, col[j]] = before["val"][j]
    want = dense @ before["x"].astype(np.float64)
    rtol = 1e-5 if plan.params["dtype"] == "float32" else 1e-13
    np.testing.assert_allclose(prep.arrays["y"], want, rtol=rtol)
    assert prep.core_bytes == trace_bytes(plan)


# ----------------------------------------------------------------- errors
def test_kernel_without_native_twin_is_a_clear_error():
    def build(p):
        return plan_kernel("triad", n=p["n"])

    register_kernel(Kernel("only_traced", "a test kernel", (Param("n", 4, "elements"),), build))
    try:
        with pytest.raises(HroofError, match="only_traced has no native implementation"):
            measure_kernel("only_traced", min_time=0)
    finally:
        unregister_kernel("only_traced")


def test_parameters_are_validated_like_simulate():
    with pytest.raises(HroofError, match=r"unknown kernel 'triadd'.*did you mean 'triad'"):
        measure_kernel("triadd")
    with pytest.raises(HroofError, match="has no parameter 'm'"):
        measure_kernel("triad", m=4)
    with pytest.raises(HroofError, match="bj must be at most"):
        measure_kernel("stencil7", n=4, bj=9)


# ----------------------------------------------------------------- timing
class FakeClock:
    """Each call returns the next value; a run takes ``step`` seconds."""

    def __init__(self, steps):
        self.t = 0.0
        self.steps = iter(steps)
        self.reads = 0

    def __call__(self):
        self.reads += 1
        if self.reads % 2 == 0:  # the read after a run
            self.t += next(self.steps)
        return self.t


def test_timer_warms_up_then_repeats_until_the_minimum_time():
    calls, resets, ticks = [], [], []
    clock = FakeClock([0.05, 0.01, 0.3, 0.02, 0.04, 0.06, 0.1])
    t = time_kernel(lambda: calls.append(1), reset=lambda: resets.append(1), warmup=2,
                    min_time=0.5, min_repeats=3, clock=clock, progress=ticks.append)  # fmt: skip
    assert ticks == [1] * 9
    # 0.05 + 0.01 + 0.3 + 0.02 + 0.04 + 0.06 = 0.48 < 0.5, so a seventh repeat runs
    assert t.repeats == 7 and t.warmup == 2
    assert len(calls) == 9 and len(resets) == 9  # reset before every run, warm-up included
    assert t.minimum == pytest.approx(0.01) and t.maximum == pytest.approx(0.3)
    assert t.minimum <= t.q1 <= t.median <= t.q3 <= t.maximum
    assert t.median == pytest.approx(0.05)
    assert t.total == pytest.approx(sum([0.05, 0.01, 0.3, 0.02, 0.04, 0.06, 0.1]))


def test_timer_stops_at_the_minimum_repeats_and_at_most():
    t = time_kernel(lambda: None, min_time=0.0, min_repeats=4, clock=FakeClock([1.0] * 10))
    assert t.repeats == 4 and t.median == 1.0
    t = time_kernel(lambda: None, min_time=1e9, min_repeats=1, max_repeats=6,
                    clock=FakeClock([1e-3] * 10))  # fmt: skip
    assert t.repeats == 6
    with pytest.raises(HroofError, match="repeats"):
        time_kernel(lambda: None, min_repeats=0)


def test_measurement_structure():
    m = measure_kernel("triad", n=64, min_time=0.0, min_repeats=3)
    d = m.to_dict()
    assert d["schema"] == "hroof.measurement/1"
    assert d["flops"] == plan_kernel("triad", n=64).flops == 128
    assert d["footprint_bytes"] == 3 * 64 * 8 and d["core_bytes"] == 3 * 64 * 8
    assert d["timing"]["repeats"] >= 3
    assert d["gflop_s_min"] <= d["gflop_s"] <= d["gflop_s_max"]


def test_arrays_larger_than_free_memory_are_refused(monkeypatch):
    """Linux overcommits: a buffer larger than the free memory is allocated, and the
    process is killed when it fills it. hroof refuses it first, naming the sizes."""
    import hroof.machine.measure.run

    plan = plan_kernel("triad", n=1000)  # 24,000 bytes
    monkeypatch.setattr(hroof.machine.measure.run, "mem_available", lambda: 10_000)
    with pytest.raises(HroofError, match="need 24,000 bytes, more than the 10,000 bytes"):
        prepare(plan)
    monkeypatch.setattr(hroof.machine.measure.run, "mem_available", lambda: None)  # unknown: try
    assert sum(a.size for a in prepare(plan).arrays.values()) == 3000
