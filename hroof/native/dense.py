"""Native DGEMV and GEMM (hroof.traces.dense): row-major, the trace's loops.

dgemv accumulates each row's sum in a register and stores ``y[i]`` once, as the
trace does. It is compiled without fast-math (like C at -O2 without
-ffast-math), so the sum keeps its order and is not vectorised.

gemm has one function per loop order, each the tiled loop nest of the trace
(tile loops in ``order``, then the in-tile loops in ``order``; a tile size of 0
is one tile of the whole loop) around ``C[i, j] += A[i, p] * B[p, j]``. The
in-tile indices are unsigned, so Numba needs no negative-index wraparound check
and LLVM can vectorise the innermost loop. The trace loads and stores
``C[i][j]`` in every iteration; natively the compiler may keep it in a register
when ``p`` is the innermost loop (the real kernel's right). Every run adds
``A B`` to ``C`` again (linear growth, no reset needed).
"""

from __future__ import annotations

from numba import uint64

from hroof._base.jit import JIT, njit
from hroof.native.core import FLOATS, Prepared, arena, fill, native
from hroof.traces.kernels import Plan


@njit(**JIT)
def dgemv(A, x, y, m, n, zero):
    for i in range(m):
        s = zero
        row = i * n
        for j in range(n):
            s += A[row + j] * x[j]
        y[i] = s


@njit(**JIT)
def gemm_ijk(A, B, C, m, n, k, ti, tj, tk):
    for ii in range(0, m, ti):
        for jj in range(0, n, tj):
            for pp in range(0, k, tk):
                for i in range(uint64(ii), uint64(min(ii + ti, m))):
                    for j in range(uint64(jj), uint64(min(jj + tj, n))):
                        for p in range(uint64(pp), uint64(min(pp + tk, k))):
                            C[i, j] += A[i, p] * B[p, j]


@njit(**JIT)
def gemm_ikj(A, B, C, m, n, k, ti, tj, tk):
    for ii in range(0, m, ti):
        for pp in range(0, k, tk):
            for jj in range(0, n, tj):
                for i in range(uint64(ii), uint64(min(ii + ti, m))):
                    for p in range(uint64(pp), uint64(min(pp + tk, k))):
                        for j in range(uint64(jj), uint64(min(jj + tj, n))):
                            C[i, j] += A[i, p] * B[p, j]


@njit(**JIT)
def gemm_jik(A, B, C, m, n, k, ti, tj, tk):
    for jj in range(0, n, tj):
        for ii in range(0, m, ti):
            for pp in range(0, k, tk):
                for j in range(uint64(jj), uint64(min(jj + tj, n))):
                    for i in range(uint64(ii), uint64(min(ii + ti, m))):
                        for p in range(uint64(pp), uint64(min(pp + tk, k))):
                            C[i, j] += A[i, p] * B[p, j]


@njit(**JIT)
def gemm_jki(A, B, C, m, n, k, ti, tj, tk):
    for jj in range(0, n, tj):
        for pp in range(0, k, tk):
            for ii in range(0, m, ti):
                for j in range(uint64(jj), uint64(min(jj + tj, n))):
                    for p in range(uint64(pp), uint64(min(pp + tk, k))):
                        for i in range(uint64(ii), uint64(min(ii + ti, m))):
                            C[i, j] += A[i, p] * B[p, j]


@njit(**JIT)
def gemm_kij(A, B, C, m, n, k, ti, tj, tk):
    for pp in range(0, k, tk):
        for ii in range(0, m, ti):
            for jj in range(0, n, tj):
                for p in range(uint64(pp), uint64(min(pp + tk, k))):
                    for i in range(uint64(ii), uint64(min(ii + ti, m))):
                        for j in range(uint64(jj), uint64(min(jj + tj, n))):
                            C[i, j] += A[i, p] * B[p, j]


@njit(**JIT)
def gemm_kji(A, B, C, m, n, k, ti, tj, tk):
    for pp in range(0, k, tk):
        for jj in range(0, n, tj):
            for ii in range(0, m, ti):
                for p in range(uint64(pp), uint64(min(pp + tk, k))):
                    for j in range(uint64(jj), uint64(min(jj + tj, n))):
                        for i in range(uint64(ii), uint64(min(ii + ti, m))):
                            C[i, j] += A[i, p] * B[p, j]


#: The native function of each loop order (outermost first; ``k`` is the p loop).
GEMM = {
    "ijk": gemm_ijk,
    "ikj": gemm_ikj,
    "jik": gemm_jik,
    "jki": gemm_jki,
    "kij": gemm_kij,
    "kji": gemm_kji,
}


@native("dgemv")
def _prepare_dgemv(plan: Plan) -> Prepared:
    n = plan.params["n"]
    m = plan.params["m"] or n
    elem = plan.arrays[0].elem
    ftype = FLOATS[elem]
    arrays = arena(plan.arrays, dict.fromkeys(("A", "x", "y"), ftype), plan.params["align"])
    fill(arrays, ["A", "x", "y"])
    args = (arrays["A"], arrays["x"], arrays["y"], m, n, ftype(0))

    def run():
        dgemv(*args)

    return Prepared(run=run, arrays=arrays, core_bytes=plan.accesses * elem)


@native("gemm")
def _prepare_gemm(plan: Plan) -> Prepared:
    p = plan.params
    m, n, k = p["m"], p["n"], p["k"]
    elem = plan.arrays[0].elem
    ftype = FLOATS[elem]
    arrays = arena(plan.arrays, dict.fromkeys(("A", "B", "C"), ftype), p["align"])
    fill(arrays, ["A", "B", "C"])
    fn = GEMM[p["order"]]
    args = (
        arrays["A"].reshape(m, k),
        arrays["B"].reshape(k, n),
        arrays["C"].reshape(m, n),
        m,
        n,
        k,
        p["ti"] or m,
        p["tj"] or n,
        p["tk"] or k,
    )

    def run():
        fn(*args)

    return Prepared(run=run, arrays=arrays, core_bytes=plan.accesses * elem)
