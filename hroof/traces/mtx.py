"""A streaming Matrix Market reader: the sparsity pattern of a coordinate file as CSR.

Only what a trace needs is kept: the positions of the stored entries, not
their values (an SpMV trace's addresses depend on positions only). The file
is read line by line, so memory grows with the number of entries (two int64
indices each while reading, one column index each in the result), never with
the file's text.

Supported (the Matrix Market exchange format, Boisvert, Pozo and Remington,
NIST 1996, https://math.nist.gov/MatrixMarket/formats.html)::

    %%MatrixMarket matrix coordinate {real | integer | pattern} {general | symmetric}
    % comment lines, and blank lines, anywhere after the banner
    M N NNZ
    i j [value]        (NNZ lines; 1-based indices; no value for pattern)

A symmetric file stores one triangle; its off-diagonal entries are mirrored.
An entry given twice (or given in both triangles of a symmetric file) is kept
once: duplicates are summed, and the pattern has one entry per position.
Array (dense) files and complex, hermitian and skew-symmetric matrices are
not supported. Every problem raises :class:`~hroof._base.errors.TraceFormatError`
naming the file, the line number and what is wrong.

>>> import os, tempfile
>>> text = "%%MatrixMarket matrix coordinate real general\\n2 3 3\\n1 1 1.0\\n2 3 -2\\n1 2 5\\n"
>>> with tempfile.NamedTemporaryFile("w", suffix=".mtx", delete=False) as f:
...     _ = f.write(text)
>>> nrows, ncols, rowptr, col = read_mtx(f.name)
>>> nrows, ncols, rowptr.tolist(), col.tolist()
(2, 3, [0, 2, 3], [0, 1, 2])
>>> os.unlink(f.name)
"""

from __future__ import annotations

import os
from array import array

import numpy as np

from hroof._base.errors import TraceFormatError
from hroof._base.guards import check_memory

#: The fields and symmetries this reader accepts.
FIELDS = ("real", "integer", "pattern")
SYMMETRIES = ("general", "symmetric")
_UNSUPPORTED = {
    "array": "array (dense) format is not supported; convert it to coordinate format",
    "complex": "complex matrices are not supported",
    "hermitian": "hermitian matrices are not supported",
    "skew-symmetric": "skew-symmetric matrices are not supported",
}


def read_mtx(path: str | os.PathLike) -> tuple[int, int, np.ndarray, np.ndarray]:
    """Read the sparsity pattern of a Matrix Market coordinate file as CSR.

    Parameters
    ----------
    path : str or path-like
        A ``.mtx`` file (see the module docstring for what is supported).

    Returns
    -------
    nrows, ncols : int
        The matrix's dimensions.
    rowptr : numpy.ndarray of int64, shape (nrows + 1,)
        Row ``i``'s entries are ``col[rowptr[i]:rowptr[i + 1]]``.
    col : numpy.ndarray of int64, shape (nnz,)
        0-based column indices, sorted within each row, one per position.

    Raises
    ------
    TraceFormatError
        The file is missing or unreadable, its banner is bad or names an
        unsupported format, or a line is malformed, has an index out of range,
        or the number of entries differs from the size line's.

    Notes
    -----
    Runtime O(L + nnz log nnz) for L lines; memory O(nnz).
    """
    name = os.fspath(path)
    try:
        f = open(path, encoding="utf-8", errors="replace")  # noqa: SIM115 (closed below)
    except FileNotFoundError:
        raise TraceFormatError(f"matrix file not found: {name}") from None
    except IsADirectoryError:
        raise TraceFormatError(f"matrix file {name} is a directory, not a file") from None
    except OSError as e:
        raise TraceFormatError(f"cannot read matrix file {name}: {e.strerror or e}") from None
    with f:
        return _read(f, name)


def _read(lines, name: str) -> tuple[int, int, np.ndarray, np.ndarray]:
    def fail(lineno: int, problem: str):
        return TraceFormatError(f"{name}, line {lineno}: {problem}")

    field, symmetry = _banner(next(lines, ""), fail)
    lineno = 1

    # The size line: the first line after the banner that is neither a comment nor blank.
    size_line = 0
    for text in lines:
        lineno += 1
        words = text.split()
        if words and not words[0].startswith("%"):
            size_line = lineno
            break
    if not size_line:
        raise fail(lineno, "the file ends before the size line 'M N NNZ'")
    if len(words) != 3:
        raise fail(size_line, f"the size line must be 'M N NNZ' (3 integers), got {text.strip()!r}")
    try:
        nrows, ncols, nnz = (int(w) for w in words)
    except ValueError:
        raise fail(
            size_line, f"the size line must be 'M N NNZ' (3 integers), got {text.strip()!r}"
        ) from None
    if min(nrows, ncols, nnz) < 0:
        raise fail(size_line, f"sizes must be non-negative, got {text.strip()!r}")
    if symmetry == "symmetric" and nrows != ncols:
        raise fail(size_line, f"a symmetric matrix must be square, got {nrows} x {ncols}")
    # What the size line asks for, checked before reading on: the row pointers (8 B a row,
    # twice) and, per entry, its coordinates and their sort (about 64 B, twice if symmetric).
    per_entry = 128 if symmetry == "symmetric" else 64
    check_memory(16 * (nrows + 1) + per_entry * nnz, f"{name}: a {nrows:,} x {ncols:,} matrix "
                 f"with {nnz:,} entries (line {size_line})")  # fmt: skip

    n_words = 2 if field == "pattern" else 3
    value = float if field == "real" else int
    rows = array("q")
    cols = array("q")
    count = 0
    for text in lines:
        lineno += 1
        words = text.split()
        if not words or words[0].startswith("%"):
            continue
        if count == nnz:
            raise fail(
                lineno,
                f"more entries than the {nnz} that the size line (line {size_line}) declares",
            )
        if len(words) != n_words:
            what = "'i j'" if field == "pattern" else "'i j value'"
            raise fail(
                lineno,
                f"a {field} entry is {what} ({n_words} numbers), got {text.strip()!r}",
            )
        try:
            i = int(words[0])
            j = int(words[1])
        except ValueError:
            raise fail(lineno, f"indices must be integers, got {text.strip()!r}") from None
        if n_words == 3:
            try:
                value(words[2])
            except ValueError:
                raise fail(lineno, f"the value must be {field}, got {words[2]!r}") from None
        if not (1 <= i <= nrows and 1 <= j <= ncols):
            raise fail(
                lineno,
                f"index ({i}, {j}) out of range: rows are 1..{nrows}, columns 1..{ncols}",
            )
        rows.append(i - 1)
        cols.append(j - 1)
        count += 1
    if count < nnz:
        raise fail(
            lineno,
            f"the file ends after {count} entries; the size line (line {size_line}) declares {nnz}",
        )

    r = np.frombuffer(rows, dtype=np.int64) if count else np.zeros(0, dtype=np.int64)
    c = np.frombuffer(cols, dtype=np.int64) if count else np.zeros(0, dtype=np.int64)
    if symmetry == "symmetric":
        off = r != c
        r, c = np.concatenate([r, c[off]]), np.concatenate([c, r[off]])
    rowptr, col = _to_csr(nrows, r, c)
    return nrows, ncols, rowptr, col


def _banner(text: str, fail) -> tuple[str, str]:
    """Check the banner line; return its (field, symmetry)."""
    words = text.lower().split()
    if not words or words[0] != "%%matrixmarket":
        got = repr(text.strip()[:60]) if text.strip() else "an empty line"
        raise fail(1, f"not a Matrix Market file: expected a '%%MatrixMarket' banner, got {got}")
    if len(words) != 5:
        raise fail(
            1,
            f"the banner must be '%%MatrixMarket matrix FORMAT FIELD SYMMETRY', "
            f"got {text.strip()!r}",
        )
    _, obj, fmt, field, symmetry = words
    if obj != "matrix":
        raise fail(1, f"only 'matrix' objects are supported, got {obj!r}")
    for word in (fmt, field, symmetry):
        if word in _UNSUPPORTED:
            raise fail(1, _UNSUPPORTED[word])
    if fmt != "coordinate":
        raise fail(1, f"unknown format {fmt!r}; expected coordinate")
    if field not in FIELDS:
        raise fail(1, f"unknown field {field!r}; expected one of {', '.join(FIELDS)}")
    if symmetry not in SYMMETRIES:
        raise fail(1, f"unknown symmetry {symmetry!r}; expected one of {', '.join(SYMMETRIES)}")
    return field, symmetry


def _to_csr(nrows: int, rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sort 0-based coordinates by (row, column), keep one per position, build CSR."""
    order = np.lexsort((cols, rows))
    rows = rows[order]
    cols = cols[order]
    if len(rows):
        keep = np.ones(len(rows), dtype=bool)
        keep[1:] = (rows[1:] != rows[:-1]) | (cols[1:] != cols[:-1])
        rows = rows[keep]
        cols = cols[keep]
    rowptr = np.zeros(nrows + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=nrows), out=rowptr[1:])
    return rowptr, np.ascontiguousarray(cols, dtype=np.int64)
