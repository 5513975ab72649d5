"""The sparse matrices the SpMV kernels run on: 2D and 3D Poisson, banded, random,
with ``dof`` unknowns per grid point, or a Matrix Market file (CSR arrays, their cost
checked before they are built)."""

from __future__ import annotations

import os

import numpy as np

from hroof._base.errors import HroofError, suggest
from hroof._base.guards import check_memory
from hroof.traces.mtx import read_mtx

#: The matrices a ``matrix=`` parameter names (or a path to a .mtx file).
MATRICES = ("poisson2d", "poisson3d", "random", "banded")


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


def dof_blocks(rowptr: np.ndarray, col: np.ndarray, dof: int) -> tuple[np.ndarray, np.ndarray]:
    """Replace every entry of a CSR pattern by a dense ``dof x dof`` block.

    Entry ``(i, j)`` becomes entries ``(i * dof + a, j * dof + b)`` for all
    ``a, b < dof`` (the Kronecker product with a ``dof x dof`` block of ones);
    columns stay sorted within each row.

    >>> rowptr, col = dof_blocks(np.array([0, 1, 2]), np.array([1, 0]), 2)
    >>> rowptr.tolist(), col.tolist()
    ([0, 2, 4, 6, 8], [2, 3, 2, 3, 0, 1, 0, 1])
    """
    if dof == 1:
        return rowptr, col
    # The expanded pattern and its index temporaries: about 40 bytes a new entry.
    check_memory(40 * len(col) * dof * dof + 16 * len(rowptr) * dof, f"spmv dof={dof:,}")
    lengths = np.diff(rowptr)
    nrows = len(lengths)
    new_len = np.repeat(lengths * dof, dof)
    new_rowptr = np.zeros(nrows * dof + 1, dtype=np.int64)
    np.cumsum(new_len, out=new_rowptr[1:])
    expanded = (col[:, None] * dof + np.arange(dof)).reshape(-1)  # each row's block columns
    # New row (i, a) is original row i's slice of ``expanded``, for every a < dof.
    starts = np.repeat(rowptr[:-1] * dof, dof) - new_rowptr[:-1]
    idx = np.repeat(starts, new_len) + np.arange(new_rowptr[-1], dtype=np.int64)
    new_col = expanded[idx]
    return new_rowptr, np.ascontiguousarray(new_col, dtype=np.int64)


def _check_matrix_cost(p: dict) -> None:
    """Refuse a generated matrix whose pattern would not fit in memory (one line)."""
    m = p["matrix"]
    if m == "poisson2d":
        rows, k, what = p["n"] ** 2, 5, f"n={p['n']:,}"
    elif m == "poisson3d":
        rows, k, what = p["n"] ** 3, 7, f"n={p['n']:,}"
    elif m == "banded":
        rows = p["rows"]
        k, what = 2 * min(p["band"], rows - 1) + 1, f"rows={rows:,} band={p['band']:,}"
    elif m == "random":
        rows, k = p["rows"], min(p["nnz_per_row"], p["rows"])
        what = f"rows={rows:,} nnz_per_row={p['nnz_per_row']:,}"
    else:
        return
    # Candidates (8 B) and mask (1 B) per slot, the columns kept (8 B), row temporaries.
    check_memory(rows * (17 * k + 48), f"spmv matrix={m} {what}")


def matrix_csr(p: dict) -> tuple[int, int, np.ndarray, np.ndarray]:
    """The matrix that the ``spmv`` parameters ``p`` name: ``(nrows, ncols, rowptr, col)``.

    ``p`` needs ``matrix`` and the parameters that matrix takes (``n``;
    ``rows``, ``nnz_per_row``, ``seed``; ``rows``, ``band``) and may give
    ``dof`` (default 1).
    """
    m = p["matrix"]
    dof = p.get("dof", 1)
    _check_matrix_cost(p)  # before any array of the pattern is built
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
        rowptr, col = dof_blocks(rowptr, col, dof)
        return nrows * dof, ncols * dof, rowptr, col
    else:
        raise HroofError(
            f"spmv parameter matrix must be one of {', '.join(MATRICES)} or a .mtx file, "
            f"got {m!r}{suggest(m, MATRICES)}"
        )
    rowptr, col = dof_blocks(rowptr, col, dof)
    return len(rowptr) - 1, len(rowptr) - 1, rowptr, col
