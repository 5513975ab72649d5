"""Dense linear algebra: DGEMV (``y = A x``) and GEMM (``C += A B``) with any loop order
and tiling.

All matrices are row-major; elements are ``float64`` (8 bytes) or, with
``dtype=float32``, 4 bytes. Arrays are laid out in the order named below,
``align`` bytes aligned and ``gap`` bytes apart.

**dgemv** (arrays ``A`` (``m x n``), ``x`` (``n``), ``y`` (``m``); ``m=0`` means
``m = n``)::

    for i in range(m):
        for j in range(n):
            y[i] += A[i][j] * x[j]      # load A[i][j], load x[j]
        # store y[i]

The sum of a row is accumulated in a register: ``y`` is never loaded, and
stored once per row, after its ``j`` loop. ``2*m*n`` flops, ``2*m*n + m``
accesses. An iteration (the generator's unit) is one ``(i, j)``; the last
``j`` of a row also emits the store of ``y[i]``.

**gemm** (arrays ``A`` (``m x k``), ``B`` (``k x n``), ``C`` (``m x n``); the
``k`` index is called ``p``). ``order`` names the three loops outermost first
(one of ``ijk``, ``ikj``, ``jik``, ``jki``, ``kij``, ``kji``; ``k`` stands for
``p``). The innermost statement and its access order::

    C[i][j] += A[i][p] * B[p][j]    # load A[i][p], load B[p][j], load C[i][j], store C[i][j]

No register reuse is modelled: every iteration loads and stores ``C[i][j]``,
whatever the order, so the loop order alone changes the stream (the simple
model). ``2*m*n*k`` flops, ``4*m*n*k`` accesses.

Tiling: ``ti``, ``tj``, ``tk`` are the tile sizes of the ``i``, ``j`` and ``p``
loops (0: not tiled, i.e. one tile of the whole loop). The tiles are visited
in ``order``, and within a tile the points in ``order`` too; a tile size that
does not divide its loop leaves a shorter last tile. For ``order="ijk"``::

    for ii in range(0, m, ti):
        for jj in range(0, n, tj):
            for pp in range(0, k, tk):
                for i in range(ii, min(ii + ti, m)):
                    for j in range(jj, min(jj + tj, n)):
                        for p in range(pp, min(pp + tk, k)):
                            C[i][j] += A[i][p] * B[p][j]

An iteration is one innermost statement; the generator decodes its ``pos``
(the statement's index in execution order) into tile and in-tile counters
once per call, then steps the counters.

>>> from hroof.traces import plan_kernel
>>> p = plan_kernel("gemm", m=4, n=4, k=4, order="ikj", tk=3)
>>> p.flops, p.accesses, p.footprint // 8    # 3 matrices of 16 elements
(128, 256, 48)
"""

from __future__ import annotations

from hroof._base.errors import HroofError
from hroof._base.jit import GEN, lazy_njit
from hroof._base.kinds import LOAD, STORE
from hroof.traces.kernels import (
    DTYPES,
    Kernel,
    Param,
    Plan,
    layout,
    layout_params,
    register_kernel,
)

#: The six loop orders of GEMM, outermost loop first (``k`` is the ``p`` loop).
ORDERS = ("ijk", "ikj", "jik", "jki", "kij", "kji")


# --------------------------------------------------------------------------- dgemv
@lazy_njit(**GEN)
def _dgemv_gen(pos, stop, addr, size, kind, args):
    """Whole ``(i, j)`` iterations of DGEMV: load A[i][j], load x[j]; after the last
    ``j`` of row ``i``, store y[i]."""
    base_a, base_x, base_y, n_cols, elem = args
    cap = addr.shape[0]
    w = 0
    i = pos // n_cols
    j = pos - i * n_cols
    row = base_a + i * n_cols * elem
    while pos < stop and w + 3 <= cap:
        addr[w] = row + j * elem
        size[w] = elem
        kind[w] = LOAD
        addr[w + 1] = base_x + j * elem
        size[w + 1] = elem
        kind[w + 1] = LOAD
        w += 2
        j += 1
        pos += 1
        if j == n_cols:
            addr[w] = base_y + i * elem
            size[w] = elem
            kind[w] = STORE
            w += 1
            i += 1
            j = 0
            row += n_cols * elem
    return w, pos


def _dgemv_plan(p: dict) -> Plan:
    elem = DTYPES[p["dtype"]]
    n = p["n"]
    m = p["m"] or n
    a, x, y = layout(
        [("A", elem, m * n), ("x", elem, n), ("y", elem, m)], align=p["align"], gap=p["gap"]
    )
    return Plan(
        arrays=(a, x, y),
        flops=2 * m * n,
        iterations=m * n,
        per_iteration=3,
        accesses=2 * m * n + m,
        footprint=a.nbytes + x.nbytes + y.nbytes,
        gen=_dgemv_gen,
        args=(a.base, x.base, y.base, n, elem),
    )


# --------------------------------------------------------------------------- gemm
@lazy_njit(**GEN)
def _gemm_gen(pos, stop, addr, size, kind, args):
    """Whole innermost iterations of a (tiled) GEMM loop nest in any order.

    Loops 0, 1, 2 are the loops of ``order``, outermost first: ``N*`` their
    trip counts, ``T*`` their tile sizes (``T = N`` when not tiled), and
    ``a*``, ``b*``, ``c*`` the byte strides that one step of the loop adds to
    the addresses of ``A[i][p]``, ``B[p][j]`` and ``C[i][j]``.
    """
    (n0, n1, n2, t0s, t1s, t2s, a0, a1, a2, b0, b1, b2, c0, c1, c2,
     base_a, base_b, base_c, elem) = args  # fmt: skip
    cap = addr.shape[0]
    w = 0
    if pos >= stop or cap < 4:
        return w, pos
    # Decode pos into tile indices (t*) and in-tile offsets (i*); s* are the
    # current tiles' extents (the last tile of a loop may be shorter).
    blk = t0s * n1 * n2
    t0 = pos // blk
    r = pos - t0 * blk
    s0 = min(t0s, n0 - t0 * t0s)
    blk = s0 * t1s * n2
    t1 = r // blk
    r -= t1 * blk
    s1 = min(t1s, n1 - t1 * t1s)
    blk = s0 * s1 * t2s
    t2 = r // blk
    r -= t2 * blk
    s2 = min(t2s, n2 - t2 * t2s)
    i0 = r // (s1 * s2)
    r -= i0 * s1 * s2
    i1 = r // s2
    i2 = r - i1 * s2
    while pos < stop and w + 4 <= cap:
        # One run of the innermost loop, as far as the tile, stop and buffer allow.
        x0 = t0 * t0s + i0
        x1 = t1 * t1s + i1
        x2 = t2 * t2s + i2
        pa = base_a + x0 * a0 + x1 * a1 + x2 * a2
        pb = base_b + x0 * b0 + x1 * b1 + x2 * b2
        pc = base_c + x0 * c0 + x1 * c1 + x2 * c2
        count = min(s2 - i2, stop - pos, (cap - w) // 4)
        for _ in range(count):
            addr[w] = pa
            size[w] = elem
            kind[w] = LOAD
            addr[w + 1] = pb
            size[w + 1] = elem
            kind[w + 1] = LOAD
            addr[w + 2] = pc
            size[w + 2] = elem
            kind[w + 2] = LOAD
            addr[w + 3] = pc
            size[w + 3] = elem
            kind[w + 3] = STORE
            w += 4
            pa += a2
            pb += b2
            pc += c2
        pos += count
        i2 += count
        if i2 < s2:
            break  # stopped by stop or the buffer
        # Step the counters: in-tile loops, then the tile loops.
        i2 = 0
        i1 += 1
        if i1 == s1:
            i1 = 0
            i0 += 1
            if i0 == s0:
                i0 = 0
                t2 += 1
                if t2 * t2s >= n2:
                    t2 = 0
                    t1 += 1
                    if t1 * t1s >= n1:
                        t1 = 0
                        t0 += 1
                        s0 = min(t0s, n0 - t0 * t0s)
                    s1 = min(t1s, n1 - t1 * t1s)
                s2 = min(t2s, n2 - t2 * t2s)
    return w, pos


def _gemm_plan(p: dict) -> Plan:
    elem = DTYPES[p["dtype"]]
    m, n, k = p["m"], p["n"], p["k"]
    sizes = {"i": m, "j": n, "k": k}
    tiles = {}
    for loop, tile, dim in (("i", "ti", "m"), ("j", "tj", "n"), ("k", "tk", "k")):
        t = p[tile]
        if t > sizes[loop]:
            raise HroofError(
                f"gemm parameter {tile} (tile size {t}) must be at most {dim} = {sizes[loop]}"
            )
        tiles[loop] = t or sizes[loop]
    # Byte strides of one step of each loop in A[i][p], B[p][j], C[i][j] (row-major).
    strides = {
        "i": (k * elem, 0, n * elem),
        "j": (0, elem, elem),
        "k": (elem, n * elem, 0),
    }
    order = p["order"]
    a, b, c = layout(
        [("A", elem, m * k), ("B", elem, k * n), ("C", elem, m * n)],
        align=p["align"],
        gap=p["gap"],
    )
    args = (
        *(sizes[loop] for loop in order),
        *(tiles[loop] for loop in order),
        *(strides[loop][0] for loop in order),
        *(strides[loop][1] for loop in order),
        *(strides[loop][2] for loop in order),
        a.base,
        b.base,
        c.base,
        elem,
    )
    return Plan(
        arrays=(a, b, c),
        flops=2 * m * n * k,
        iterations=m * n * k,
        per_iteration=4,
        accesses=4 * m * n * k,
        footprint=a.nbytes + b.nbytes + c.nbytes,
        gen=_gemm_gen,
        args=tuple(int(v) for v in args),
    )


def _common() -> tuple[Param, ...]:
    return (*layout_params(),)


register_kernel(
    Kernel(
        "dgemv",
        "DGEMV: y = A x, A row-major m x n (2*m*n flops)",
        (
            Param("n", 1024, "columns of A (elements of x)", minimum=1),
            Param("m", 0, "rows of A (elements of y); 0 means m = n", minimum=0),
            *_common(),
        ),
        _dgemv_plan,
    )
)
register_kernel(
    Kernel(
        "gemm",
        "GEMM: C += A B, row-major, any loop order, optional tiling (2*m*n*k flops)",
        (
            Param("m", 64, "rows of A and C", minimum=1),
            Param("n", 64, "columns of B and C", minimum=1),
            Param("k", 64, "columns of A, rows of B", minimum=1),
            Param("order", "ijk", "loop order, outermost first (k is the p loop)", ORDERS),
            Param("ti", 0, "tile size of the i loop, elements (0: not tiled)", minimum=0),
            Param("tj", 0, "tile size of the j loop, elements (0: not tiled)", minimum=0),
            Param("tk", 0, "tile size of the p (k) loop, elements (0: not tiled)", minimum=0),
            *_common(),
        ),
        _gemm_plan,
    )
)
