"""Reference trace generators: each kernel's loop nest written out plainly in Python, a
list of ``(addr, size, kind)`` from a bound plan's layout and parameters.

The twins the Numba generators of :mod:`hroof.traces` must match element by element
(``tests/test_kernels.py``, ``test_stencils.py``, ``test_dense.py``, ``test_sparse.py``,
``test_bcsr.py``), and the trace of ``hroof simulate --engine reference``
(:func:`reference_trace`). Nothing here imports Numba.
"""

from __future__ import annotations

#: STREAM kernels: the arrays loaded, in order, and the array stored (None: no store).
STREAM_ARRAYS = {
    "copy": (("a",), "c"),
    "scale": (("c",), "b"),
    "add": (("a", "b"), "c"),
    "triad": (("x", "y"), "z"),
    "daxpy": (("x", "y"), "y"),
    "dot": (("x", "y"), None),
}


def naive_stream(plan):
    """The STREAM loop written out: per pass (the warm-up ones, then the counted ones) and
    per i, the loads in order, then the store (if any)."""
    loads, store = STREAM_ARRAYS[plan.kernel]
    arrays = {a.name: a for a in plan.arrays}
    elem = arrays[loads[0]].elem
    store_kind = 2 if plan.params.get("nt") else 1
    trace = []
    passes = plan.params.get("warmup", 0) + plan.params.get("sweeps", 1)
    for i in list(range(plan.params["n"])) * passes:
        for name in loads:
            trace.append((arrays[name].base + i * elem, elem, 0))
        if store is not None:
            trace.append((arrays[store].base + i * elem, elem, store_kind))
    return trace


def _grid(plan):
    """The plan's grid: sizes, strides (elements), element size, and the two bases."""
    p = plan.params
    nx = p["nx"] or p["n"]
    ny = p["ny"] or p["n"]
    three_d = "nz" in p
    nz = (p["nz"] or p["n"]) if three_d else 1
    js = nx + 2 + p["pad_row"]
    ks = js * (ny + 2) + (p["pad_plane"] if three_d else 0)
    old, new = plan.arrays
    assert old.name == "old" and new.name == "new"
    return nx, ny, nz, js, ks, old.elem, old.base, new.base, three_d


def _range(lo, hi, step):
    return range(lo, hi, step if step else hi - lo)


def stencil_trace(plan):
    """The trace of ``plan`` (any of stencil5, stencil7, stencil27), by loop nest: the
    warm-up sweeps, then the counted ones, each swapping old and new."""
    nx, ny, nz, js, ks, elem, a, b, three_d = _grid(plan)
    p = plan.params
    bj, bk = p.get("bj", 0), p.get("bk", 0)
    trace = []
    old, new = a, b
    for _sweep in range(p.get("warmup", 0) + p["sweeps"]):
        for kk in _range(1, nz + 1, bk):
            for jj in _range(1, ny + 1, bj):
                for k in range(kk, min(kk + (bk or nz), nz + 1)):
                    for j in range(jj, min(jj + (bj or ny), ny + 1)):
                        for i in range(1, nx + 1):
                            # 2D grids have no k halo: row j of the only plane.
                            c = i + j * js + (k * ks if three_d else 0)
                            for off in _offsets(plan.kernel, js, ks):
                                trace.append((old + (c + off) * elem, elem, 0))
                            trace.append((new + c * elem, elem, 1))
        old, new = new, old
    return trace


def _offsets(kernel, js, ks):
    if kernel == "stencil5":
        return [0, -1, +1, -js, +js]
    if kernel == "stencil7":
        return [0, -1, +1, -js, +js, -ks, +ks]
    assert kernel == "stencil27"
    out = []
    for dk in (-1, 0, 1):
        for dj in (-1, 0, 1):
            for di in (-1, 0, 1):
                out.append(dk * ks + dj * js + di)
    return out


def distinct_bytes(trace):
    """Number of distinct bytes the trace touches."""
    touched = set()
    for addr, size, _kind in trace:
        for byte in range(size):
            touched.add(addr + byte)
    return len(touched)


def naive_dgemv(plan):
    """The DGEMV loop written out: load A[i][j], load x[j]; store y[i] after each row."""
    a, x, y = plan.arrays
    e = a.elem
    n = plan.params["n"]
    m = plan.params["m"] or n
    trace = []
    for i in range(m):
        for j in range(n):
            trace.append((a.base + (i * n + j) * e, e, 0))
            trace.append((x.base + j * e, e, 0))
        trace.append((y.base + i * e, e, 1))
    return trace


def tile_ranges(size, tile):
    """The (start, stop) of each tile of a loop of ``size`` (0: one tile of everything)."""
    tile = tile or size
    return [(s, min(s + tile, size)) for s in range(0, size, tile)]


def naive_gemm(plan):
    """The tiled GEMM loop nest written out: tile loops in ``order``, then the points of
    a tile in ``order``; each point loads A[i][p], B[p][j], C[i][j] and stores C[i][j]."""
    a, b, c = plan.arrays
    e = a.elem
    prm = plan.params
    m, n, k = prm["m"], prm["n"], prm["k"]
    size = {"i": m, "j": n, "k": k}
    tile = {"i": prm["ti"], "j": prm["tj"], "k": prm["tk"]}
    order = prm["order"]
    trace = []
    l0, l1, l2 = order
    for r0 in tile_ranges(size[l0], tile[l0]):
        for r1 in tile_ranges(size[l1], tile[l1]):
            for r2 in tile_ranges(size[l2], tile[l2]):
                for x0 in range(*r0):
                    for x1 in range(*r1):
                        for x2 in range(*r2):
                            idx = {l0: x0, l1: x1, l2: x2}
                            i, j, p = idx["i"], idx["j"], idx["k"]
                            trace.append((a.base + (i * k + p) * e, e, 0))
                            trace.append((b.base + (p * n + j) * e, e, 0))
                            trace.append((c.base + (i * n + j) * e, e, 0))
                            trace.append((c.base + (i * n + j) * e, e, 1))
    return trace


def naive_spmv(plan):
    """The CSR loop written out: rowptr[0] once; per row rowptr[i+1], then per nonzero
    val[j], col[j], x[col[j]], then the store of y[i]."""
    rowptr, col = plan.args[0].tolist(), plan.args[1].tolist()
    a = {arr.name: arr for arr in plan.arrays}
    ib, elem = a["rowptr"].elem, a["val"].elem
    trace = [(a["rowptr"].base, ib, 0)]
    for i in range(len(rowptr) - 1):
        trace.append((a["rowptr"].base + (i + 1) * ib, ib, 0))
        for j in range(rowptr[i], rowptr[i + 1]):
            trace.append((a["val"].base + j * elem, elem, 0))
            trace.append((a["col"].base + j * ib, ib, 0))
            trace.append((a["x"].base + col[j] * elem, elem, 0))
        trace.append((a["y"].base + i * elem, elem, 1))
    return trace


def naive_blocks(nrows, ncols, rowptr, col, r, c):
    """Block CSR by hand: the set of (block row, block column) holding a nonzero, then
    per block row its sorted block columns. Returns (browptr, bcol, pad_rows, pad_cols)."""
    nbrows = (nrows + r - 1) // r
    nbcols = (ncols + c - 1) // c
    occupied = set()
    for i in range(nrows):
        for j in range(rowptr[i], rowptr[i + 1]):
            occupied.add((i // r, col[j] // c))
    browptr, bcol = [0], []
    for bi in range(nbrows):
        cols = sorted(bj for bb, bj in occupied if bb == bi)
        bcol.extend(cols)
        browptr.append(len(bcol))
    return browptr, bcol, nbrows * r - nrows, nbcols * c - ncols


def naive_bcsr(plan):
    """The register-blocked (BCSR) loop written out from the plan's CSR matrix: browptr[0]
    once; per block row browptr[I+1]; per block bcol[b], the c x values, the r*c values
    row by row; then the r stores of y. Returns (trace, browptr, bcol)."""
    from hroof.traces.sparse import matrix_csr

    nrows, ncols, rowptr, col = matrix_csr(plan.params)
    r, c = plan.params["r"], plan.params["c"]
    browptr, bcol, _, _ = naive_blocks(nrows, ncols, rowptr.tolist(), col.tolist(), r, c)
    a = {arr.name: arr for arr in plan.arrays}
    ib, e = a["browptr"].elem, a["bval"].elem
    trace = [(a["browptr"].base, ib, 0)]
    for bi in range(len(browptr) - 1):
        trace.append((a["browptr"].base + (bi + 1) * ib, ib, 0))
        for b in range(browptr[bi], browptr[bi + 1]):
            trace.append((a["bcol"].base + b * ib, ib, 0))
            for jj in range(c):
                trace.append((a["x"].base + (bcol[b] * c + jj) * e, e, 0))
            for ii in range(r):
                for jj in range(c):
                    trace.append((a["bval"].base + (b * r * c + ii * c + jj) * e, e, 0))
        for ii in range(r):
            trace.append((a["y"].base + (bi * r + ii) * e, e, 1))
    return trace, browptr, bcol


#: The reference generator of each kernel :func:`reference_trace` knows.
GENERATORS = {
    **dict.fromkeys(STREAM_ARRAYS, naive_stream),
    **dict.fromkeys(("stencil5", "stencil7", "stencil27"), stencil_trace),
    "dgemv": naive_dgemv,
    "gemm": naive_gemm,
}


def _c_int(node, env):
    """A kernel file's integer expression (a pycparser node) at the values of ``env``:
    constants and loop indices; C's truncating division."""
    t = type(node).__name__
    if t == "Constant":
        text = node.value.rstrip("uUlL")
        return int(text, 8) if len(text) > 1 and text[0] == "0" and text.isdigit() else int(
            text, 0)  # fmt: skip
    if t == "ID":
        return env[node.name]
    if t == "UnaryOp":
        v = _c_int(node.expr, env)
        return -v if node.op == "-" else v
    a, b = _c_int(node.left, env), _c_int(node.right, env)
    if node.op == "+":
        return a + b
    if node.op == "-":
        return a - b
    if node.op == "*":
        return a * b
    q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
    return q if node.op == "/" else a - q * b


def naive_nest(plan):
    """A kernel file's loop nest run as written (:mod:`hroof.traces.cfile`): loops whose
    bounds are evaluated at every entry, and per statement its accesses in order, their
    addresses from the indices row-major in the plan's layout; the warm-up runs, then
    the counted ones."""
    from hroof.traces.kernels import get_kernel

    nest = get_kernel(plan.kernel).nest
    consts = {c: plan.params[c] for c in nest.constants}
    arrays = {a.name: a for a in plan.arrays}
    dims = {a.name: [_c_int(d, consts) for d in a.dims] for a in nest.arrays}
    trace = []

    def statements(level, slot, env):
        for st in nest.statements:
            if st.level != level or st.slot != slot:
                continue
            for acc in st.accesses:
                flat = 0
                for k, node in enumerate(acc.index):
                    flat = flat * dims[acc.array][k] + _c_int(node, env)
                arr = arrays[acc.array]
                trace.append((arr.base + flat * arr.elem, arr.elem,
                              1 if acc.kind == "store" else 0))  # fmt: skip

    def run(level, env):
        loop = nest.loops[level]
        v = _c_int(loop.lo, env)
        while all(v < _c_int(h, env) + (1 if inclusive else 0) for h, inclusive in loop.his):
            inner = {**env, loop.var: v}
            if level == len(nest.loops) - 1:
                statements(level, "body", inner)
            else:
                statements(level, "pre", inner)
                run(level + 1, inner)
                statements(level, "post", inner)
            v += _c_int(loop.step, env)

    for _ in range(plan.params["warmup"] + plan.params["sweeps"]):
        run(0, dict(consts))
    return trace


def reference_trace(plan) -> list[tuple[int, int, int]] | None:
    """The whole trace of a bound plan of one of hroof's kernels, warm-up included, as a
    list of ``(addr, size, kind)``, written out by its plain loop nest; None for a kernel
    without one here (``spmv``, a kernel registered by a user). Equal, access by access,
    to what the plan's Numba generator writes (the tests check each kernel)."""
    if getattr(plan.gen, "__module__", "") not in OWN_MODULES:
        return None
    if plan.kernel == "spmv":
        bcsr = plan.params.get("storage", "csr") != "csr"
        return naive_bcsr(plan)[0] if bcsr else naive_spmv(plan)
    if plan.kernel.lower().endswith(".c"):
        return naive_nest(plan)
    gen = GENERATORS.get(plan.kernel)
    return None if gen is None else gen(plan)


#: The modules of hroof's own generators (a user may register a kernel of the same name).
OWN_MODULES = ("hroof.traces.stream", "hroof.traces.stencils", "hroof.traces.dense",
               "hroof.traces.sparse", "hroof.traces.affine")  # fmt: skip

__all__ = [
    "GENERATORS",
    "OWN_MODULES",
    "STREAM_ARRAYS",
    "distinct_bytes",
    "naive_bcsr",
    "naive_blocks",
    "naive_dgemv",
    "naive_gemm",
    "naive_nest",
    "naive_spmv",
    "naive_stream",
    "reference_trace",
    "stencil_trace",
    "tile_ranges",
]
