"""Sparse matrix-vector product ``y = A x`` over CSR (compressed sparse row).

The matrix is held as ``rowptr`` (``nrows + 1`` indices), ``col`` (one column
index per stored nonzero) and ``val`` (one value per stored nonzero); ``x`` has
``ncols`` and ``y`` ``nrows`` elements. The loop, with its accesses in program
order::

    load rowptr[0]                          # once, before the first row
    for i in range(nrows):
        load rowptr[i + 1]                  # the row's end (its start is the last row's end)
        for j in range(rowptr[i], rowptr[i + 1]):
            load val[j]
            load col[j]
            load x[col[j]]                  # s += val[j] * x[col[j]]
        store y[i]                          # y[i] = s

An iteration is one row; it emits ``2 + 3 * len(row)`` accesses (row 0 one
more, for ``rowptr[0]``), so the trace has ``1 + 2 * nrows + 3 * nnz``
accesses and ``2 * nnz`` flops (a multiply and an add per stored nonzero).
``rowptr`` and ``col`` have ``index_bytes`` (4 or 8) per element; ``val``,
``x`` and ``y`` are ``dtype``. The arrays are laid out in the order rowptr,
col, val, x, y, ``align`` bytes aligned and ``gap`` bytes apart. The
footprint counts the bytes actually touched: all of rowptr, col, val and y,
and only the elements of ``x`` whose column holds a nonzero.

Matrices (parameter ``matrix``):

=============  ===========================================================
poisson2d      the 5-point Laplacian on an ``n x n`` grid: ``n**2`` rows,
               grid point ``(a, b)`` is row ``a * n + b``
poisson3d      the 7-point Laplacian on an ``n x n x n`` grid, likewise
random         ``rows`` x ``rows``, ``nnz_per_row`` distinct random
               columns a row (uniform, seeded by ``seed``)
banded         ``rows`` x ``rows``, columns ``i - band .. i + band`` of
               row ``i`` (clipped to the matrix)
``*.mtx``      a Matrix Market coordinate file (any existing path), read
               by :func:`hroof.traces.mtx.read_mtx`
=============  ===========================================================

Columns are sorted within each row, and each position is stored once. With
``dof`` > 1 every entry of the matrix becomes a dense ``dof x dof`` block (the
Kronecker product with a block of ones: ``dof`` unknowns per grid point, as in
a system of PDEs), so ``poisson2d`` with ``dof=2`` is a matrix of dense 2x2
blocks, the structure register blocking is made for.

Register-blocked SpMV (``storage=bcsr``, block size ``r`` x ``c``). The
matrix is padded with zero rows and columns to multiples of ``r`` and ``c``
and cut into ``r x c`` blocks; every block holding at least one nonzero is
stored whole (its zeros explicitly), row-major, with one column index per
block. Arrays: ``browptr`` (``nrows_p / r + 1`` indices), ``bcol`` (one block
column per stored block), ``bval`` (``r * c`` values per block), ``x``
(``ncols_p`` elements) and ``y`` (``nrows_p`` elements), where ``nrows_p`` and
``ncols_p`` are the padded dimensions. The loop, accesses in program order::

    load browptr[0]                            # once, before the first block row
    for I in range(nrows_p // r):
        load browptr[I + 1]                    # the block row's end
        # y_0 .. y_{r-1} = 0: r accumulators in registers (y is not loaded)
        for b in range(browptr[I], browptr[I + 1]):
            load bcol[b]
            for jj in range(c):
                load x[bcol[b] * c + jj]       # x_jj: the block's c x values, in registers
            for ii in range(r):
                for jj in range(c):
                    load bval[b * r * c + ii * c + jj]   # y_ii += bval * x_jj
        for ii in range(r):
            store y[I * r + ii]

An iteration is one block row; it emits ``1 + r + nb * (1 + c + r * c)``
accesses for ``nb`` blocks (block row 0 one more), so the trace has
``1 + nbrows * (1 + r) + nblocks * (1 + c + r * c)`` accesses. The plan's
``flops`` are the *useful* ones, ``2 * nnz`` (2 per true nonzero, the figure
every AI uses, so CSR and BCSR compare at equal work); the *executed* flops,
``2 * r * c`` per stored block (the explicit zeros are multiplied too), are in
``plan.extra["executed_flops"]``, with the fill ratio (stored entries / true
nonzeros, :func:`fill_ratio`), the explicit zeros and the padding (rows and
columns added). ``r = c = 1`` is CSR with the access order above (index, x,
value); ``storage=csr`` takes no ``r`` or ``c`` but 1.

>>> import hroof.traces.sparse
>>> from hroof.traces import plan_kernel
>>> p = plan_kernel("spmv", matrix="poisson2d", n=3)
>>> p.iterations, p.flops, p.accesses          # 9 rows, 33 nonzeros
(9, 66, 118)
>>> b = plan_kernel("spmv", matrix="poisson2d", n=3, storage="bcsr", r=2, c=2)
>>> b.extra["blocks"], round(b.extra["fill_ratio"], 3), b.extra["executed_flops"]
(19, 2.303, 152)
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

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
from hroof.traces.matrices import (
    matrix_csr,
)

#: The generated matrices (anything else must be a Matrix Market file).
MATRICES = ("poisson2d", "poisson3d", "random", "banded")
#: The storage formats of the ``spmv`` kernel.
STORAGES = ("csr", "bcsr")


@lazy_njit(**GEN)
def _spmv_gen(pos, stop, addr, size, kind, args):
    """Whole rows of a CSR SpMV: rowptr[i+1], then val, col, x per nonzero, then y[i]."""
    rowptr, col, rp_base, col_base, val_base, x_base, y_base, ib, elem = args
    cap = addr.shape[0]
    n = 0
    while pos < stop:
        lo = rowptr[pos]
        hi = rowptr[pos + 1]
        need = 2 + 3 * (hi - lo)
        if pos == 0:
            need += 1
        if n + need > cap:
            break
        if pos == 0:
            addr[n] = rp_base
            size[n] = ib
            kind[n] = LOAD
            n += 1
        addr[n] = rp_base + (pos + 1) * ib
        size[n] = ib
        kind[n] = LOAD
        n += 1
        for j in range(lo, hi):
            addr[n] = val_base + j * elem
            size[n] = elem
            kind[n] = LOAD
            addr[n + 1] = col_base + j * ib
            size[n + 1] = ib
            kind[n + 1] = LOAD
            addr[n + 2] = x_base + col[j] * elem
            size[n + 2] = elem
            kind[n + 2] = LOAD
            n += 3
        addr[n] = y_base + pos * elem
        size[n] = elem
        kind[n] = STORE
        n += 1
        pos += 1
    return n, pos


@lazy_njit(**GEN)
def _bcsr_gen(pos, stop, addr, size, kind, args):
    """Whole block rows of a BCSR SpMV: browptr[I+1], per block bcol, x block, values,
    then the r stores of the y block (the order of the module docstring)."""
    browptr, bcol, bp_base, bc_base, val_base, x_base, y_base, ib, elem, r, c = args
    cap = addr.shape[0]
    rc = r * c
    n = 0
    while pos < stop:
        lo = browptr[pos]
        hi = browptr[pos + 1]
        need = 1 + r + (hi - lo) * (1 + c + rc)
        if pos == 0:
            need += 1
        if n + need > cap:
            break
        if pos == 0:
            addr[n] = bp_base
            size[n] = ib
            kind[n] = LOAD
            n += 1
        addr[n] = bp_base + (pos + 1) * ib
        size[n] = ib
        kind[n] = LOAD
        n += 1
        for b in range(lo, hi):
            addr[n] = bc_base + b * ib
            size[n] = ib
            kind[n] = LOAD
            n += 1
            xb = x_base + bcol[b] * c * elem
            for jj in range(c):
                addr[n] = xb + jj * elem
                size[n] = elem
                kind[n] = LOAD
                n += 1
            vb = val_base + b * rc * elem
            for k in range(rc):
                addr[n] = vb + k * elem
                size[n] = elem
                kind[n] = LOAD
                n += 1
        yb = y_base + pos * r * elem
        for ii in range(r):
            addr[n] = yb + ii * elem
            size[n] = elem
            kind[n] = STORE
            n += 1
        pos += 1
    return n, pos


# --------------------------------------------------------------------------- blocking


@dataclass(frozen=True)
class BlockCSR:
    """A CSR pattern cut into ``r x c`` blocks (block CSR, BCSR).

    The matrix is padded with zero rows and columns to ``nbrows * r`` rows and
    ``nbcols * c`` columns; every block holding a nonzero is stored whole.

    Attributes
    ----------
    nrows, ncols : int
        The matrix's own dimensions.
    r, c : int
        Block rows and columns.
    browptr : numpy.ndarray of int64, shape (nbrows + 1,)
        Block row ``I``'s blocks are ``bcol[browptr[I]:browptr[I + 1]]``.
    bcol : numpy.ndarray of int64, shape (nblocks,)
        Block column of every stored block, sorted within each block row.
    nnz : int
        True nonzeros (entries of the pattern).
    """

    nrows: int
    ncols: int
    r: int
    c: int
    browptr: np.ndarray
    bcol: np.ndarray
    nnz: int

    @property
    def nbrows(self) -> int:
        return len(self.browptr) - 1

    @property
    def nbcols(self) -> int:
        return -(-self.ncols // self.c)

    @property
    def nblocks(self) -> int:
        return int(self.browptr[-1])

    @property
    def stored(self) -> int:
        """Entries stored: ``r * c`` per block, explicit zeros included."""
        return self.nblocks * self.r * self.c

    @property
    def explicit_zeros(self) -> int:
        """Zeros stored (and multiplied) inside the blocks: ``stored - nnz``."""
        return self.stored - self.nnz

    @property
    def pad_rows(self) -> int:
        """Zero rows added to make the row count a multiple of ``r``."""
        return self.nbrows * self.r - self.nrows

    @property
    def pad_cols(self) -> int:
        """Zero columns added to make the column count a multiple of ``c``."""
        return self.nbcols * self.c - self.ncols

    @property
    def fill_ratio(self) -> float:
        """Stored entries / true nonzeros (>= 1; 1.0 for a matrix with no nonzeros)."""
        return self.stored / self.nnz if self.nnz else 1.0

    def to_dict(self) -> dict:
        """The blocking's figures, JSON-ready."""
        return {
            "r": self.r,
            "c": self.c,
            "nnz": self.nnz,
            "blocks": self.nblocks,
            "stored": self.stored,
            "explicit_zeros": self.explicit_zeros,
            "fill_ratio": self.fill_ratio,
            "pad_rows": self.pad_rows,
            "pad_cols": self.pad_cols,
        }


def _check_block(r: int, c: int, nrows: int, ncols: int) -> None:
    for name, v in (("r", r), ("c", c)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise HroofError(f"block size {name} must be a whole number >= 1, got {v!r}")
    if r > nrows or c > ncols:
        raise HroofError(
            f"block size {r}x{c} is larger than the {nrows}x{ncols} matrix; "
            f"use r <= {nrows} and c <= {ncols}"
        )


def to_bcsr(nrows: int, ncols: int, rowptr: np.ndarray, col: np.ndarray, r: int, c: int
            ) -> BlockCSR:  # fmt: skip
    """Cut a CSR pattern into ``r x c`` blocks.

    Parameters
    ----------
    nrows, ncols : int
        The matrix's dimensions.
    rowptr, col : numpy.ndarray
        Its CSR pattern (columns sorted within rows, each position once).
    r, c : int
        Block size, 1 up to ``nrows`` and ``ncols``.

    Returns
    -------
    BlockCSR

    Raises
    ------
    HroofError
        ``r`` or ``c`` below 1, or larger than the matrix.

    Notes
    -----
    O(nnz log nnz) time (one sort of the block keys), O(nnz) memory.

    >>> b = to_bcsr(3, 3, np.array([0, 2, 3, 4]), np.array([0, 1, 1, 2]), 2, 2)
    >>> b.browptr.tolist(), b.bcol.tolist(), b.stored, b.pad_rows
    ([0, 1, 2], [0, 1], 8, 1)
    """
    _check_block(r, c, nrows, ncols)
    nbrows = -(-nrows // r)
    nbcols = -(-ncols // c)
    rowptr = np.asarray(rowptr, dtype=np.int64)
    col = np.asarray(col, dtype=np.int64)
    rows = np.repeat(np.arange(nrows, dtype=np.int64), np.diff(rowptr))
    keys = np.sort((rows // r) * nbcols + col // c)  # a sort is faster than np.unique here
    if len(keys):
        keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))]
    browptr = np.zeros(nbrows + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys // nbcols, minlength=nbrows), out=browptr[1:])
    bcol = np.ascontiguousarray(keys % nbcols, dtype=np.int64)
    return BlockCSR(int(nrows), int(ncols), int(r), int(c), browptr, bcol, len(col))


def _matrix_arg(matrix, params: dict) -> tuple[int, int, np.ndarray, np.ndarray]:
    if isinstance(matrix, (str, os.PathLike)):
        p = {prm.name: prm.default for prm in PARAMS}
        p.update({k: v for k, v in params.items()})
        p["matrix"] = os.fspath(matrix)
        for prm in PARAMS:
            p[prm.name] = prm.parse(p[prm.name], "spmv")
        return matrix_csr(p)
    if params:
        raise HroofError("matrix parameters are for a matrix name or file, not a CSR tuple")
    if isinstance(matrix, tuple) and len(matrix) == 4:
        nrows, ncols, rowptr, col = matrix
        return int(nrows), int(ncols), np.asarray(rowptr), np.asarray(col)
    raise HroofError(
        "matrix must be a generated matrix name, a .mtx path or a tuple "
        f"(nrows, ncols, rowptr, col), got {type(matrix).__name__}"
    )


def blocking(matrix, r: int, c: int, **params) -> BlockCSR:
    """The ``r x c`` blocking of a matrix (see :func:`fill_ratio` for ``matrix``)."""
    return to_bcsr(*_matrix_arg(matrix, params), r, c)


def fill_ratio(matrix, r: int, c: int, **params) -> float:
    """Stored entries / true nonzeros of a matrix stored in ``r x c`` blocks.

    Parameters
    ----------
    matrix : str, path-like or tuple
        A generated matrix (``"poisson2d"``, ...) with its parameters as
        keywords (``n=64``, ``dof=2``, ...; the ``spmv`` kernel's defaults for
        the rest), a Matrix Market file, or ``(nrows, ncols, rowptr, col)``.
    r, c : int
        Block size (1 up to the matrix's dimensions).

    Returns
    -------
    float
        ``r * c * blocks / nnz``: 1.0 when blocking stores no zero, more as the
        explicit zeros grow. Padding rows and columns hold no nonzeros, so they
        raise the ratio only through the blocks they share with real entries.

    >>> fill_ratio("poisson2d", 2, 2, n=8, dof=2), fill_ratio("poisson2d", 1, 1, n=8)
    (1.0, 1.0)
    """
    return blocking(matrix, r, c, **params).fill_ratio


# --------------------------------------------------------------------------- the kernel


def _build(p: dict) -> Plan:
    if p["storage"] == "bcsr":
        return _build_bcsr(p)
    if (p["r"], p["c"]) != (1, 1):
        raise HroofError(
            f"spmv parameters r and c are for storage=bcsr; storage=csr got "
            f"r={p['r']} c={p['c']} (give storage=bcsr, or r=1 c=1)"
        )
    nrows, ncols, rowptr, col = matrix_csr(p)
    ib = p["index_bytes"]
    elem = DTYPES[p["dtype"]]
    nnz = int(rowptr[-1])
    arrays = layout(
        [("rowptr", ib, nrows + 1), ("col", ib, nnz), ("val", elem, nnz), ("x", elem, ncols),
         ("y", elem, nrows)],
        align=p["align"],
        gap=p["gap"],
    )  # fmt: skip
    a = {arr.name: arr for arr in arrays}
    lengths = np.diff(rowptr)
    per = max(2 + 3 * int(lengths.max()), 3 + 3 * int(lengths[0]))
    x_touched = int(np.count_nonzero(np.bincount(col, minlength=ncols))) if nnz else 0
    return Plan(
        arrays=arrays,
        flops=2 * nnz,
        iterations=nrows,
        per_iteration=per,
        accesses=1 + 2 * nrows + 3 * nnz,
        footprint=(nrows + 1 + nnz) * ib + (nnz + x_touched + nrows) * elem,
        gen=_spmv_gen,
        args=(
            rowptr,
            col,
            a["rowptr"].base,
            a["col"].base,
            a["val"].base,
            a["x"].base,
            a["y"].base,
            ib,
            elem,
        ),
        extra={"storage": "csr", "nnz": nnz, "executed_flops": 2 * nnz, "fill_ratio": 1.0},
    )


def _build_bcsr(p: dict) -> Plan:
    nrows, ncols, rowptr, col = matrix_csr(p)
    r, c = p["r"], p["c"]
    try:
        b = to_bcsr(nrows, ncols, rowptr, col, r, c)
    except HroofError as exc:
        raise HroofError(f"spmv: {exc}") from None
    ib = p["index_bytes"]
    elem = DTYPES[p["dtype"]]
    nb, rc = b.nblocks, r * c
    nrows_p, ncols_p = b.nbrows * r, b.nbcols * c
    arrays = layout(
        [("browptr", ib, b.nbrows + 1), ("bcol", ib, nb), ("bval", elem, nb * rc),
         ("x", elem, ncols_p), ("y", elem, nrows_p)],
        align=p["align"],
        gap=p["gap"],
    )  # fmt: skip
    a = {arr.name: arr for arr in arrays}
    lengths = np.diff(b.browptr)
    per_block = 1 + c + rc
    per = max(1 + r + per_block * int(lengths.max()), 2 + r + per_block * int(lengths[0]))
    x_blocks = int(np.count_nonzero(np.bincount(b.bcol, minlength=b.nbcols))) if nb else 0
    executed = 2 * b.stored
    extra = {"storage": "bcsr", **b.to_dict(), "executed_flops": executed}
    rows_word = "row" if b.pad_rows == 1 else "rows"
    cols_word = "column" if b.pad_cols == 1 else "columns"
    notes = (
        f"useful: 2 per true nonzero, used for every AI; the {r}x{c} blocks execute "
        f"{executed:,} (2 per stored entry; fill ratio {b.fill_ratio:.3f}: {b.stored:,} stored "
        f"for {b.nnz:,} nonzeros, {b.explicit_zeros:,} explicit zeros; padding "
        f"{b.pad_rows} {rows_word}, {b.pad_cols} {cols_word})"
    )
    return Plan(
        arrays=arrays,
        flops=2 * b.nnz,
        iterations=b.nbrows,
        per_iteration=per,
        accesses=1 + b.nbrows * (1 + r) + nb * per_block,
        footprint=(b.nbrows + 1 + nb) * ib + (nb * rc + x_blocks * c + nrows_p) * elem,
        gen=_bcsr_gen,
        args=(
            b.browptr,
            b.bcol,
            a["browptr"].base,
            a["bcol"].base,
            a["bval"].base,
            a["x"].base,
            a["y"].base,
            ib,
            elem,
            r,
            c,
        ),
        notes=notes,
        extra=extra,
    )


PARAMS = (
    Param("matrix", "poisson2d", "poisson2d, poisson3d, random, banded or a .mtx file"),
    Param("n", 64, "grid points per dimension (poisson2d, poisson3d)", minimum=1),
    Param("rows", 4096, "rows = columns (random, banded)", minimum=1),
    Param("nnz_per_row", 8, "nonzeros in each row, 1 to rows (random)", minimum=1),
    Param("band", 2, "half bandwidth: columns i-band..i+band (banded)", minimum=0),
    Param("seed", 0, "random seed (random)", minimum=0),
    Param("dof", 1, "unknowns per grid point: each entry a dense dof x dof block", minimum=1),
    Param("storage", "csr", "csr, or bcsr: register-blocked r x c block CSR", choices=STORAGES),
    Param("r", 1, "block rows (storage=bcsr), 1 to the matrix's rows", minimum=1),
    Param("c", 1, "block columns (storage=bcsr), 1 to the matrix's columns", minimum=1),
    Param("index_bytes", 4, "bytes per index (rowptr, col; browptr, bcol)", choices=(4, 8)),
    *layout_params("type of the values, x and y"),
)

register_kernel(
    Kernel(
        "spmv",
        "sparse matrix-vector product y = A x, CSR or r x c block CSR (2 flops a nonzero)",
        PARAMS,
        _build,
        notes="2 flops per stored nonzero (a multiply and an add); with storage=bcsr 2 per "
        "true nonzero (useful), the executed count (explicit zeros too) in the plan's extra",
    )
)
