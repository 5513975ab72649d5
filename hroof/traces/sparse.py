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

Columns are sorted within each row, and each position is stored once.

>>> import hroof.traces.sparse
>>> from hroof.traces import plan_kernel
>>> p = plan_kernel("spmv", matrix="poisson2d", n=3)
>>> p.iterations, p.flops, p.accesses          # 9 rows, 33 nonzeros
(9, 66, 118)
"""

from __future__ import annotations

import os

import numpy as np
from numba import njit

from hroof.errors import HroofError, suggest
from hroof.traces.kernels import (
    DTYPES,
    Kernel,
    Param,
    Plan,
    layout,
    layout_params,
    register_kernel,
)
from hroof.traces.mtx import read_mtx

#: The generated matrices (anything else must be a Matrix Market file).
MATRICES = ("poisson2d", "poisson3d", "random", "banded")


@njit(cache=True, nogil=True)
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
            kind[n] = 0
            n += 1
        addr[n] = rp_base + (pos + 1) * ib
        size[n] = ib
        kind[n] = 0
        n += 1
        for j in range(lo, hi):
            addr[n] = val_base + j * elem
            size[n] = elem
            kind[n] = 0
            addr[n + 1] = col_base + j * ib
            size[n + 1] = ib
            kind[n + 1] = 0
            addr[n + 2] = x_base + col[j] * elem
            size[n + 2] = elem
            kind[n + 2] = 0
            n += 3
        addr[n] = y_base + pos * elem
        size[n] = elem
        kind[n] = 1
        n += 1
        pos += 1
    return n, pos


# --------------------------------------------------------------------------- matrices


def _offset_csr(
    nrows: int, offsets: list[int], valid: list[np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """CSR of the matrix with entry ``(i, i + offsets[t])`` wherever ``valid[t][i]``.

    ``offsets`` are sorted, so columns come out sorted within each row. Returns
    ``(rowptr, col)``.
    """
    i = np.arange(nrows, dtype=np.int64)
    cand = np.stack([i + o for o in offsets], axis=1)
    mask = np.stack(valid, axis=1)
    rowptr = np.zeros(nrows + 1, dtype=np.int64)
    np.cumsum(mask.sum(axis=1), out=rowptr[1:])
    return rowptr, np.ascontiguousarray(cand[mask], dtype=np.int64)


def poisson2d(n: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR pattern ``(rowptr, col)`` of the 5-point Laplacian on an ``n x n`` grid.

    Grid point ``(a, b)`` (row ``a``, column ``b`` of the grid) is matrix row
    ``a * n + b``; it couples to its up to four neighbours.

    >>> rowptr, col = poisson2d(2)
    >>> rowptr.tolist(), col[:3].tolist()
    ([0, 3, 6, 9, 12], [0, 1, 2])
    """
    i = np.arange(n * n)
    a, b = i // n, i % n
    t = np.ones(n * n, dtype=bool)
    return _offset_csr(n * n, [-n, -1, 0, 1, n], [a > 0, b > 0, t, b < n - 1, a < n - 1])


def poisson3d(n: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR pattern ``(rowptr, col)`` of the 7-point Laplacian on an ``n x n x n`` grid.

    Grid point ``(a, b, c)`` is matrix row ``(a * n + b) * n + c``.
    """
    i = np.arange(n**3)
    a, b, c = i // (n * n), (i // n) % n, i % n
    t = np.ones(n**3, dtype=bool)
    return _offset_csr(
        n**3,
        [-n * n, -n, -1, 0, 1, n, n * n],
        [a > 0, b > 0, c > 0, t, c < n - 1, b < n - 1, a < n - 1],
    )


def banded(rows: int, band: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR pattern of a ``rows x rows`` band matrix: columns ``i - band .. i + band``."""
    i = np.arange(rows)
    band = min(band, rows - 1)
    offsets = list(range(-band, band + 1))
    return _offset_csr(rows, offsets, [(i + o >= 0) & (i + o < rows) for o in offsets])


def random_csr(rows: int, nnz_per_row: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR pattern of a ``rows x rows`` matrix with ``nnz_per_row`` distinct random
    columns in every row (uniform without replacement, sorted), from ``seed``.

    When ``nnz_per_row**2 <= rows`` (a row of independent draws is then distinct
    with probability above 1/2) all rows are drawn at once and the rows with a
    repeated column drawn again; otherwise row by row without replacement.
    """
    rng = np.random.default_rng(seed)
    k = nnz_per_row
    if k * k <= rows:
        cols = np.sort(rng.integers(0, rows, size=(rows, k)), axis=1)
        redo = np.flatnonzero((np.diff(cols, axis=1) == 0).any(axis=1))
        while len(redo):
            cols[redo] = np.sort(rng.integers(0, rows, size=(len(redo), k)), axis=1)
            bad = (np.diff(cols[redo], axis=1) == 0).any(axis=1)
            redo = redo[bad]
    else:
        cols = np.empty((rows, k), dtype=np.int64)
        for r in range(rows):
            cols[r] = np.sort(rng.choice(rows, size=k, replace=False))
    rowptr = np.arange(rows + 1, dtype=np.int64) * k
    return rowptr, np.ascontiguousarray(cols.reshape(-1), dtype=np.int64)


def matrix_csr(p: dict) -> tuple[int, int, np.ndarray, np.ndarray]:
    """The matrix that the ``spmv`` parameters ``p`` name: ``(nrows, ncols, rowptr, col)``."""
    m = p["matrix"]
    if m == "poisson2d":
        rowptr, col = poisson2d(p["n"])
    elif m == "poisson3d":
        rowptr, col = poisson3d(p["n"])
    elif m == "banded":
        rowptr, col = banded(p["rows"], p["band"])
    elif m == "random":
        if p["nnz_per_row"] > p["rows"]:
            raise HroofError(
                f"spmv parameter nnz_per_row must be between 1 and rows = {p['rows']}, "
                f"got {p['nnz_per_row']}"
            )
        rowptr, col = random_csr(p["rows"], p["nnz_per_row"], p["seed"])
    elif m.endswith(".mtx") or os.path.exists(m):
        nrows, ncols, rowptr, col = read_mtx(m)
        if nrows < 1:
            raise HroofError(f"spmv needs a matrix with at least one row; {m} has none")
        return nrows, ncols, rowptr, col
    else:
        raise HroofError(
            f"spmv parameter matrix must be one of {', '.join(MATRICES)} or a .mtx file, "
            f"got {m!r}{suggest(m, MATRICES)}"
        )
    return len(rowptr) - 1, len(rowptr) - 1, rowptr, col


# --------------------------------------------------------------------------- the kernel


def _build(p: dict) -> Plan:
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
    )


PARAMS = (
    Param("matrix", "poisson2d", "poisson2d, poisson3d, random, banded or a .mtx file"),
    Param("n", 64, "grid points per dimension (poisson2d, poisson3d)", minimum=1),
    Param("rows", 4096, "rows = columns (random, banded)", minimum=1),
    Param("nnz_per_row", 8, "nonzeros in each row, 1 to rows (random)", minimum=1),
    Param("band", 2, "half bandwidth: columns i-band..i+band (banded)", minimum=0),
    Param("seed", 0, "random seed (random)", minimum=0),
    Param("index_bytes", 4, "bytes per index of rowptr and col", choices=(4, 8)),
    *layout_params("type of val, x and y"),
)

register_kernel(
    Kernel(
        "spmv",
        "CSR sparse matrix-vector product y = A x (2 flops a nonzero)",
        PARAMS,
        _build,
        notes="2 flops per stored nonzero (a multiply and an add)",
    )
)
