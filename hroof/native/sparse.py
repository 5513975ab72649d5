"""Native CSR SpMV (hroof.traces.sparse): the same matrices, the trace's loop.

The pattern comes from the trace's own builders (the plan's generator holds
``rowptr`` and ``col``), stored with ``index_bytes`` per index at the layout's
offsets; the values and ``x`` are seeded random numbers. Each row's sum is
kept in a register and ``y[i]`` stored once, as in the trace.
"""

from __future__ import annotations

from hroof._base.jit import JIT, njit
from hroof.native.core import FLOATS, INDICES, Prepared, arena, fill, native
from hroof.traces.kernels import Plan


@njit(**JIT)
def spmv(rowptr, col, val, x, y, zero):
    for i in range(rowptr.shape[0] - 1):
        s = zero
        for j in range(rowptr[i], rowptr[i + 1]):
            s += val[j] * x[col[j]]
        y[i] = s


@native("spmv")
def _prepare(plan: Plan) -> Prepared:
    rowptr, col = plan.args[0], plan.args[1]
    ib = plan.params["index_bytes"]
    a = {arr.name: arr for arr in plan.arrays}
    elem = a["val"].elem
    ftype, itype = FLOATS[elem], INDICES[ib]
    types = {"rowptr": itype, "col": itype, "val": ftype, "x": ftype, "y": ftype}
    arrays = arena(plan.arrays, types, plan.params["align"])
    arrays["rowptr"][:] = rowptr
    arrays["col"][:] = col
    fill(arrays, ["val", "x", "y"])
    nrows, nnz = a["y"].count, a["val"].count
    args = (arrays["rowptr"], arrays["col"], arrays["val"], arrays["x"], arrays["y"], ftype(0))

    def run():
        spmv(*args)

    return Prepared(
        run=run,
        arrays=arrays,
        # rowptr (nrows + 1 loads), col and val (nnz each), x (nnz gathers), y (nrows stores)
        core_bytes=(nrows + 1 + nnz) * ib + (2 * nnz + nrows) * elem,
    )
