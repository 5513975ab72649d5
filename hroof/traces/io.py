"""Read and write memory-access trace files: ``npz``, Dinero ``din`` and valgrind lackey.

A trace is a stream of core accesses, handed out in chunks of three flat arrays
(see :class:`TraceChunk`): ``addr`` (uint64, byte address), ``size`` (uint32,
bytes) and ``kind`` (uint8: 0 load, 1 store, 2 non-temporal store). The file
formats are fixed in ``docs/architecture.md`` ("Trace files"):

``npz``
    arrays ``addr``, ``size`` and ``kind`` of equal length, as written by
    :func:`numpy.savez` (stored or deflated members both work).
``din``
    Dinero's text format, one access per line: ``LABEL ADDRESS [SIZE]``; label
    0 read, 1 write, 2 instruction fetch (ignored); hexadecimal address (``0x``
    optional); decimal size in bytes, ``access_size`` when absent.
``lackey``
    the output of ``valgrind --tool=lackey --trace-mem=yes``: `` L addr,size``,
    `` S addr,size``, `` M addr,size`` (a load, then a store), ``I  addr,size``
    (instruction fetch, ignored); every other line is skipped.

Readers stream: memory does not grow with the file. Text files are read in
blocks of :data:`_BLOCK_BYTES` whole lines and each block is parsed in one Numba
pass into preallocated arrays (40-200 MB/s of text measured; ``bench/readers.py``); the
malformed line a block parser stops at is re-parsed with the plain-Python parsers
:func:`_parse_din_line` and :func:`_parse_lackey_line`, which are also the reference
twins of the block parsers in the tests. Errors name the file, the 1-based line number (every
physical line counts) and the line's content. Text files may be gzip-compressed
(recognised by their first bytes, whatever their name).
"""

from __future__ import annotations

import gzip
import os
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, suppress
from pathlib import Path
from typing import NamedTuple

import numpy as np

from hroof._base.errors import HroofError, TraceFormatError, suggest
from hroof._base.kinds import LOAD, NT_STORE, STORE
from hroof.traces.textfmt import (
    _GZIP_MAGIC,
    _MAX_SIZE,
    TraceChunk,
    _iter_text,
    _parse_din_block,
    _parse_din_line,
    _parse_lackey_block,
    _parse_lackey_line,
)

__all__ = [
    "DEFAULT_CHUNK",
    "FORMATS",
    "TraceChunk",
    "count_accesses",
    "detect_format",
    "iter_trace",
    "write_din",
    "write_npz",
]

#: Trace file formats hroof reads.
FORMATS = ("npz", "din", "lackey")

#: Accesses per chunk that :func:`iter_trace` yields unless told otherwise.
DEFAULT_CHUNK = 1 << 20

#: File-name extensions :func:`detect_format` knows (after a trailing ``.gz``).
EXTENSIONS = {
    ".npz": "npz",
    ".din": "din",
    ".dinero": "din",
    ".lackey": "lackey",
    ".trace": "lackey",
    ".log": "lackey",
    ".out": "lackey",
}

_WRITE_LINES = 1 << 16  # din lines formatted per write
_NPZ_ARRAYS = ("addr", "size", "kind")
_KIND_NAMES = f"{LOAD} (load), {STORE} (store) or {NT_STORE} (non-temporal store)"


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------


def detect_format(path: str | os.PathLike) -> str:
    """Tell a trace file's format from its name.

    A trailing ``.gz`` is ignored, then the extension decides (case-insensitive):
    ``.npz`` is npz; ``.din`` and ``.dinero`` are din; ``.lackey``, ``.trace``,
    ``.log`` and ``.out`` are lackey.

    Parameters
    ----------
    path : str or os.PathLike
        The trace file; it need not exist.

    Returns
    -------
    str
        One of :data:`FORMATS`.

    Raises
    ------
    TraceFormatError
        If the extension is not one of the above.

    Examples
    --------
    >>> detect_format("run.din.gz"), detect_format("stencil.NPZ"), detect_format("ls.out")
    ('din', 'npz', 'lackey')
    """
    name = Path(path).name.lower()
    if name.endswith(".gz"):
        name = name[: -len(".gz")]
    ext = os.path.splitext(name)[1]
    if ext in EXTENSIONS:
        return EXTENSIONS[ext]
    known = ", ".join(EXTENSIONS)
    raise TraceFormatError(
        f"cannot tell the trace format of {os.fspath(path)} from its name "
        f"({f'extension {ext!r}' if ext else 'no extension'}); name the format explicitly "
        f"(npz, din or lackey) or use one of the extensions {known}"
    )


def iter_trace(
    path: str | os.PathLike,
    format: str | None = None,
    *,
    chunk_size: int = DEFAULT_CHUNK,
    access_size: int = 8,
) -> Iterator[TraceChunk]:
    """Stream a trace file as chunks of ``(addr, size, kind)`` arrays.

    The file is checked when this function is called (it exists, is a file, the
    format is known, an npz has the right arrays), so those errors are raised
    here; a malformed line or value is found while reading and raised from the
    iteration, possibly after earlier chunks were yielded.

    Memory stays bounded by ``chunk_size`` accesses plus one read block,
    whatever the file's length. An empty text file (0 bytes) yields nothing; a
    0-byte ``.npz`` is an error (no archive), while an archive of empty arrays
    yields nothing.

    Parameters
    ----------
    path : str or os.PathLike
        The trace file. Text formats may be gzip-compressed.
    format : {"npz", "din", "lackey"}, optional
        The file format; by default :func:`detect_format` tells it from the name.
    chunk_size : int, optional
        The most accesses per chunk. Every chunk but the last holds exactly this
        many (a lackey ``M`` record may be split across two chunks).
    access_size : int, optional
        Bytes per access for din lines without a SIZE field (default 8).

    Yields
    ------
    TraceChunk
        ``addr`` (uint64, byte address), ``size`` (uint32, bytes) and ``kind``
        (uint8: 0 load, 1 store, 2 non-temporal store), fresh writable arrays.
        Instruction fetches are dropped; a lackey ``M`` becomes a load followed
        by a store of the same bytes.

    Raises
    ------
    TraceFormatError
        If the file is missing or unreadable, the format is unknown, or the
        contents are malformed (the message names the file and, for text
        formats, the line number and content).
    HroofError
        If ``chunk_size`` or ``access_size`` is not a positive integer.

    Examples
    --------
    >>> from importlib.resources import files
    >>> path = files("hroof") / "data" / "example.din"
    >>> sum(len(chunk.addr) for chunk in iter_trace(path, chunk_size=4096))
    12696
    """
    fmt = _resolve_format(path, format)
    chunk_size = _positive_int(chunk_size, "chunk_size")
    access_size = _positive_int(access_size, "access_size", _MAX_SIZE)
    nbytes = _check_file(path)
    if nbytes == 0:
        if fmt == "npz":
            # A 0-byte .npz is no archive (an interrupted write, say), not an empty trace.
            raise TraceFormatError(f"{path} is empty (0 bytes), not an npz archive")
        return iter(())
    if fmt == "npz":
        layout = _npz_layout(path)
        return _iter_npz(path, layout, chunk_size)
    if fmt == "din":
        blocks = _iter_text(
            path,
            lambda buf: _parse_din_block(buf, access_size),
            lambda line: _parse_din_line(line, access_size),
        )
    else:
        blocks = _iter_text(path, _parse_lackey_block, _parse_lackey_line)
    return _rechunk(blocks, chunk_size)


def count_accesses(
    path: str | os.PathLike,
    format: str | None = None,
    access_size: int = 8,
) -> int | None:
    """Count a trace's accesses when that is cheap, for progress bars.

    Parameters
    ----------
    path : str or os.PathLike
        The trace file.
    format : {"npz", "din", "lackey"}, optional
        The file format; by default told from the name.
    access_size : int, optional
        Accepted for symmetry with :func:`iter_trace`; sizes do not change the count.

    Returns
    -------
    int or None
        The number of accesses :func:`iter_trace` will yield for an npz file (its
        array length, read from the header) or an empty file (0); ``None`` for a
        text trace, whose count is only known after reading it.

    Raises
    ------
    TraceFormatError
        As :func:`iter_trace` does for a missing file, an unknown format or a
        malformed npz layout.
    """
    fmt = _resolve_format(path, format)
    _positive_int(access_size, "access_size", _MAX_SIZE)
    if fmt == "npz":
        if _check_file(path) == 0:
            raise TraceFormatError(f"{path} is empty (0 bytes), not an npz archive")
        return _npz_layout(path)["addr"].length
    if _check_file(path) == 0:
        return 0
    return None


def write_npz(path: str | os.PathLike, chunks) -> None:
    """Write a trace as an uncompressed ``.npz`` with arrays addr, size and kind.

    :func:`numpy.savez` needs whole arrays, so the chunks are concatenated in
    memory first (13 bytes per access); use :func:`write_din` to stream a trace
    that does not fit. The file is written at exactly ``path`` (no ``.npz`` is
    appended).

    Parameters
    ----------
    path : str or os.PathLike
        The file to write (overwritten if it exists).
    chunks : iterable of (addr, size, kind)
        The trace, chunk by chunk; a single ``(addr, size, kind)`` tuple of
        arrays is taken as one chunk. Addresses and sizes must be non-negative
        integers (sizes 1 to 2**32 - 1), kinds 0, 1 or 2.

    Raises
    ------
    TraceFormatError
        If a chunk is malformed; nothing is written then.
    """
    parts = [
        _as_chunk(chunk, f"{os.fspath(path)}: chunk {i}", 0)
        for i, chunk in enumerate(_chunk_iterable(chunks))
    ]
    arrays = {
        name: np.concatenate([p[j] for p in parts]) if parts else np.empty(0, dtype)
        for j, (name, dtype) in enumerate(
            zip(_NPZ_ARRAYS, (np.uint64, np.uint32, np.uint8), strict=True)
        )
    }
    with open(path, "wb") as f:
        np.savez(f, **arrays)


def write_din(path: str | os.PathLike, chunks) -> None:
    """Write a trace in Dinero ``din`` format, streaming chunk by chunk.

    Each access becomes one line ``LABEL HEXADDR SIZE`` (label 0 load, 1 store;
    lower-case hex without ``0x``; decimal size). A path ending in ``.gz`` is
    written gzip-compressed.

    Parameters
    ----------
    path : str or os.PathLike
        The file to write (overwritten if it exists).
    chunks : iterable of (addr, size, kind)
        The trace, chunk by chunk; a single ``(addr, size, kind)`` tuple of
        arrays is taken as one chunk.

    Raises
    ------
    TraceFormatError
        If a chunk is malformed or holds a non-temporal store (kind 2), which din
        cannot express (write npz instead). The partial file is removed.
    """
    opener = gzip.open if os.fspath(path).lower().endswith(".gz") else open
    created = done = False
    try:
        with opener(path, "wb") as f:
            created = True
            offset = 0
            for i, chunk in enumerate(_chunk_iterable(chunks)):
                addr, size, kind = _as_chunk(chunk, f"{os.fspath(path)}: chunk {i}", offset)
                nt = np.flatnonzero(kind == NT_STORE)
                if len(nt):
                    raise TraceFormatError(
                        f"{os.fspath(path)}: access {offset + int(nt[0])} is a non-temporal "
                        "store (kind 2), which the din format cannot express; write npz instead"
                    )
                for lo in range(0, len(addr), _WRITE_LINES):
                    hi = lo + _WRITE_LINES
                    lines = map(
                        "{} {:x} {}\n".format,
                        kind[lo:hi].tolist(),
                        addr[lo:hi].tolist(),
                        size[lo:hi].tolist(),
                    )
                    f.write("".join(lines).encode("ascii"))
                offset += len(addr)
        done = True
    finally:
        if created and not done:
            with suppress(OSError):
                os.remove(path)


# --------------------------------------------------------------------------
# Argument and file checks
# --------------------------------------------------------------------------


def _resolve_format(path, format) -> str:
    if format is None:
        return detect_format(path)
    name = format.lower() if isinstance(format, str) else format
    if name not in FORMATS:
        hint = suggest(format, FORMATS) if isinstance(format, str) else ""
        raise TraceFormatError(f"unknown trace format {format!r}; choose npz, din or lackey{hint}")
    return name


def _positive_int(value, what: str, largest: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise HroofError(f"{what} must be a positive integer, got {value!r}")
    if largest is not None and value > largest:
        raise HroofError(f"{what} must be at most {largest}, got {value!r}")
    return int(value)


def _check_file(path) -> int:
    """Raise TraceFormatError unless ``path`` is a readable file; return its size."""
    name = os.fspath(path)
    try:
        with open(path, "rb") as f:
            return os.fstat(f.fileno()).st_size
    except FileNotFoundError:
        raise TraceFormatError(f"trace file not found: {name}") from None
    except IsADirectoryError:
        raise TraceFormatError(f"trace file {name} is a directory, not a file") from None
    except OSError as e:
        raise TraceFormatError(f"cannot read trace file {name}: {e.strerror or e}") from None


# --------------------------------------------------------------------------
# Chunks: validation and re-chunking
# --------------------------------------------------------------------------


def _chunk_iterable(chunks) -> Iterable:
    """Let a bare ``(addr, size, kind)`` tuple of arrays stand for one chunk."""
    if (
        isinstance(chunks, tuple)
        and len(chunks) == 3
        and all(isinstance(a, np.ndarray) for a in chunks)
    ):
        return (chunks,)
    return chunks


def _as_chunk(chunk, where: str, offset: int) -> TraceChunk:
    """Validate one chunk and convert it to the canonical dtypes.

    ``where`` starts every message; ``offset`` is the index of the chunk's first
    access in the whole trace, so that a bad value is reported by its index.
    """
    try:
        addr, size, kind = chunk
    except (TypeError, ValueError):
        raise TraceFormatError(
            f"{where}: a chunk must be a tuple (addr, size, kind) of arrays, got {type(chunk)}"
        ) from None
    arrays = [np.asarray(a) for a in (addr, size, kind)]
    for name, a in zip(_NPZ_ARRAYS, arrays, strict=True):
        if a.ndim != 1:
            raise TraceFormatError(f"{where}: {name} must be 1-D, got shape {a.shape}")
        if a.dtype.kind not in "iu":
            raise TraceFormatError(
                f"{where}: {name} has dtype {a.dtype}; it must be an unsigned integer type"
            )
    lengths = [len(a) for a in arrays]
    if len(set(lengths)) > 1:
        raise TraceFormatError(
            f"{where}: arrays have different lengths: "
            + ", ".join(f"{n} {k}" for n, k in zip(_NPZ_ARRAYS, lengths, strict=True))
        )
    addr, size, kind = arrays
    _check_range(addr, "addr", 0, None, "addresses must be non-negative", where, offset)
    _check_range(size, "size", 1, _MAX_SIZE, f"sizes must be 1 to {_MAX_SIZE} bytes", where, offset)
    _check_range(kind, "kind", LOAD, NT_STORE, f"kinds must be {_KIND_NAMES}", where, offset)
    return TraceChunk(addr.astype(np.uint64), size.astype(np.uint32), kind.astype(np.uint8))


def _check_range(a, name, lo, hi, rule, where, offset) -> None:
    if not len(a):
        return
    bad = None
    if a.min() < lo:
        bad = a < lo
    elif hi is not None and a.max() > hi:
        bad = a > hi
    if bad is not None:
        i = int(np.argmax(bad))
        raise TraceFormatError(f"{where}: {name}[{offset + i}] is {a[i]}; {rule}")


def _rechunk(pieces: Iterable[TraceChunk], chunk_size: int) -> Iterator[TraceChunk]:
    """Regroup a stream of arrays into chunks of exactly ``chunk_size`` (the last may be short)."""
    held: list[TraceChunk] = []
    count = 0
    for piece in pieces:
        if not len(piece.addr):
            continue
        held.append(piece)
        count += len(piece.addr)
        if count < chunk_size:
            continue
        whole = [np.concatenate(cols) for cols in zip(*held, strict=True)]
        full = count - count % chunk_size
        for lo in range(0, full, chunk_size):
            yield TraceChunk(*(a[lo : lo + chunk_size] for a in whole))
        held = [TraceChunk(*(a[full:] for a in whole))] if full < count else []
        count -= full
    if count:
        yield TraceChunk(*(np.concatenate(cols) for cols in zip(*held, strict=True)))


# --------------------------------------------------------------------------
# npz
# --------------------------------------------------------------------------


class _NpyMember(NamedTuple):
    member: str  # name inside the zip archive
    dtype: np.dtype
    length: int


def _npz_layout(path) -> dict[str, _NpyMember]:
    """Read the three array headers of an npz trace and check them."""
    name = os.fspath(path)
    with open(path, "rb") as f:
        if f.read(2) == _GZIP_MAGIC:
            raise TraceFormatError(
                f"{name} is gzip-compressed; an npz trace is already a zip archive "
                "(use numpy.savez or savez_compressed, not gzip)"
            )
    try:
        with zipfile.ZipFile(path) as zf:
            members = set(zf.namelist())
            found = {}
            for array in _NPZ_ARRAYS:
                for member in (f"{array}.npy", array):
                    if member in members:
                        found[array] = member
                        break
            missing = [a for a in _NPZ_ARRAYS if a not in found]
            if missing:
                have = ", ".join(sorted(m.removesuffix(".npy") for m in members)) or "none"
                raise TraceFormatError(
                    f"{name}: missing array(s) {', '.join(missing)}; an npz trace needs "
                    f"addr, size and kind (found: {have})"
                )
            layout = {}
            for array, member in found.items():
                with zf.open(member) as f:
                    dtype, length = _read_npy_header(f, name, array)
                layout[array] = _NpyMember(member, dtype, length)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as e:
        raise TraceFormatError(f"{name} is not a valid npz file ({e})") from None
    lengths = {array: m.length for array, m in layout.items()}
    if len(set(lengths.values())) > 1:
        raise TraceFormatError(
            f"{name}: arrays have different lengths: "
            + ", ".join(f"{a} {n}" for a, n in lengths.items())
        )
    return layout


def _read_npy_header(f, name: str, array: str) -> tuple[np.dtype, int]:
    """Read a member's .npy header, leaving ``f`` at the first data byte."""
    try:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, _fortran, dtype = np.lib.format.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, _fortran, dtype = np.lib.format.read_array_header_2_0(f)
        else:
            version = f"{version[0]}.{version[1]}"
            shape = dtype = None
    except ValueError as e:
        raise TraceFormatError(f"{name}: array '{array}' is not a valid .npy array ({e})") from None
    if dtype is None:
        raise TraceFormatError(
            f"{name}: array '{array}' uses .npy format version {version}, which hroof "
            "does not read (versions 1.0 and 2.0)"
        )
    if len(shape) != 1:
        raise TraceFormatError(f"{name}: array '{array}' must be 1-D, got shape {shape}")
    if dtype.kind not in "iu":
        raise TraceFormatError(
            f"{name}: array '{array}' has dtype {dtype}; it must be an unsigned integer type"
        )
    return dtype, shape[0]


def _iter_npz(path, layout: dict[str, _NpyMember], chunk_size: int) -> Iterator[TraceChunk]:
    """Stream the three members of an npz in slices (stored or deflated alike)."""
    name = os.fspath(path)
    total = layout["addr"].length
    try:
        with ExitStack() as stack:
            zf = stack.enter_context(zipfile.ZipFile(path))
            files = []
            for array in _NPZ_ARRAYS:
                f = stack.enter_context(zf.open(layout[array].member))
                _read_npy_header(f, name, array)
                files.append(f)
            for lo in range(0, total, chunk_size):
                n = min(chunk_size, total - lo)
                arrays = [
                    _read_npy_slice(f, layout[array].dtype, n, name, array)
                    for f, array in zip(files, _NPZ_ARRAYS, strict=True)
                ]
                yield _as_chunk(arrays, name, lo)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as e:
        raise TraceFormatError(f"{name}: corrupt npz data ({e})") from None


def _read_npy_slice(f, dtype: np.dtype, n: int, name: str, array: str) -> np.ndarray:
    want = n * dtype.itemsize
    data = f.read(want)
    while len(data) < want:
        more = f.read(want - len(data))
        if not more:
            raise TraceFormatError(f"{name}: array '{array}' is truncated")
        data += more
    return np.frombuffer(data, dtype)


# --------------------------------------------------------------------------
