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
blocks of :data:`_BLOCK_BYTES` whole lines and each block is parsed at once with
NumPy (several million lines per second); a block with a malformed line is
re-read line by line with the plain-Python parsers :func:`_parse_din_line` and
:func:`_parse_lackey_line`, which are also the reference twins of the block
parsers in the tests. Errors name the file, the 1-based line number (every
physical line counts) and the line's content. Text files may be gzip-compressed
(recognised by their first bytes, whatever their name).
"""

from __future__ import annotations

import gzip
import os
import re
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, suppress
from pathlib import Path
from typing import NamedTuple

import numpy as np

from hroof._base.errors import HroofError, TraceFormatError, suggest

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

_MAX_SIZE = (1 << 32) - 1  # an access size must fit in uint32
_BLOCK_BYTES = 1 << 20  # text read per block (whole lines are parsed at once)
_MAX_LINE_BYTES = 1 << 24  # a longer "line" means the file is not a text trace
_WRITE_LINES = 1 << 16  # din lines formatted per write
_GZIP_MAGIC = b"\x1f\x8b"
_NPZ_ARRAYS = ("addr", "size", "kind")
_KIND_NAMES = "0 (load), 1 (store) or 2 (non-temporal store)"
_DIN_UNSUPPORTED = {3: "escape", 4: "cache flush"}


class TraceChunk(NamedTuple):
    """One chunk of a trace: three flat arrays of equal length.

    Unpacks like a plain tuple: ``for addr, size, kind in iter_trace(path)``.
    """

    addr: np.ndarray  #: uint64, byte address of each access
    size: np.ndarray  #: uint32, bytes accessed
    kind: np.ndarray  #: uint8, 0 load, 1 store, 2 non-temporal store


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
                nt = np.flatnonzero(kind == 2)
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
    _check_range(kind, "kind", 0, 2, f"kinds must be {_KIND_NAMES}", where, offset)
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
# Text formats: block reader
# --------------------------------------------------------------------------


class _BadLineAt(Exception):
    """Raised by a block parser: line ``index`` (0-based, in the block) is malformed."""

    def __init__(self, index: int):
        super().__init__(index)
        self.index = index


class _BadLine(Exception):
    """Raised by a line parser with the reason the line is malformed."""


def _open_text(path):
    with open(path, "rb") as f:
        gzipped = f.read(2) == _GZIP_MAGIC
    return gzip.open(path, "rb") if gzipped else open(path, "rb")


def _iter_text(
    path,
    parse_block: Callable[[np.ndarray], TraceChunk],
    parse_line: Callable[[bytes], object],
) -> Iterator[TraceChunk]:
    """Read whole lines in blocks and parse each block at once.

    ``parse_block`` gets a uint8 array of complete lines (the last byte is a
    newline) and raises :class:`_BadLineAt` for a malformed line; ``parse_line``
    then says what is wrong with it.
    """
    name = os.fspath(path)
    lineno = 1  # number of the first line of the next block
    carry = b""
    with _open_text(path) as f:
        while True:
            try:
                block = f.read(_BLOCK_BYTES)
            except (OSError, EOFError, zlib.error) as e:
                raise TraceFormatError(f"cannot read trace file {name}: {e}") from None
            if block:
                data = carry + block
                cut = data.rfind(b"\n") + 1
                data, carry = data[:cut], data[cut:]
                if len(carry) > _MAX_LINE_BYTES:
                    where = lineno + data.count(b"\n")
                    raise TraceFormatError(
                        f"{name}:{where}: line longer than "
                        f"{_MAX_LINE_BYTES} bytes; this is not a text trace"
                    )
                if not data:
                    continue
            elif carry:
                data, carry = carry + b"\n", b""
            else:
                return
            try:
                chunk = parse_block(np.frombuffer(data, np.uint8))
            except _BadLineAt as e:
                raise _line_error(name, data, lineno, e.index, parse_line) from None
            lineno += data.count(b"\n")
            yield chunk


def _line_error(name: str, data: bytes, lineno: int, index: int, parse_line) -> TraceFormatError:
    line = data.split(b"\n", index + 1)[index]
    reason = "malformed line"
    try:
        parse_line(line)
    except _BadLine as e:
        reason = str(e)
    return TraceFormatError(f"{name}:{lineno + index}: {reason}: {_text(line, 80)!r}")


# --------------------------------------------------------------------------
# Text formats: vectorised block parsers
# --------------------------------------------------------------------------

_HEX_DIGIT = np.full(256, 255, np.uint8)
_DEC_DIGIT = np.full(256, 255, np.uint8)
for _i, _c in enumerate(b"0123456789abcdef"):
    _HEX_DIGIT[_c] = _i
    _HEX_DIGIT[bytes([_c]).upper()[0]] = _i
    if _i < 10:
        _DEC_DIGIT[_c] = _i
del _i, _c


class _Tokens(NamedTuple):
    starts: np.ndarray  # first byte of each token
    ends: np.ndarray  # one past its last byte
    count: np.ndarray  # tokens per line
    first: np.ndarray  # index of each line's first token
    newlines: np.ndarray  # position of each line's newline


def _tokenize(buf: np.ndarray, comma: bool = False) -> _Tokens:
    """Split a block of lines into tokens at ASCII whitespace (and commas).

    Whitespace is what :meth:`bytes.split` splits at: space, \\t, \\n, \\v, \\f, \\r.
    """
    sep = (buf == 32) | ((buf - np.uint8(9)) <= np.uint8(4))
    if comma:
        sep |= buf == 44
    start = ~sep
    end = start.copy()
    start[1:] &= sep[:-1]
    end[:-1] &= sep[1:]
    starts = np.flatnonzero(start)
    ends = np.flatnonzero(end) + 1
    newlines = np.flatnonzero(buf == 10)
    count = np.bincount(np.searchsorted(newlines, starts), minlength=len(newlines))
    return _Tokens(starts, ends, count, np.cumsum(count) - count, newlines)


def _parse_uint(buf, starts, ends, digit, base: int, max_digits: int):
    """Parse tokens as unsigned integers; return ``(values uint64, bad bool)``.

    A token is bad if it has a non-digit or more than ``max_digits`` digits.
    """
    lengths = ends - starts
    bad = lengths > max_digits
    values = np.zeros(len(starts), np.uint64)
    if not len(starts):
        return values, bad
    width = min(int(lengths.max()), max_digits)
    skip = width - lengths  # leading columns that lie before the token
    for j in range(width):
        d = digit[buf[np.maximum(ends - (width - j), 0)]]
        inside = skip <= j
        bad |= inside & (d == 255)
        values *= np.uint64(base)
        values += np.where(inside, d, np.uint8(0))
    return values, bad


def _parse_hex(buf, starts, ends):
    """Hex addresses, ``0x`` optional, at most 16 digits."""
    prefixed = (ends - starts > 2) & (buf[starts] == 48) & ((buf[starts + 1] | 32) == 120)
    return _parse_uint(buf, starts + 2 * prefixed, ends, _HEX_DIGIT, 16, 16)


def _parse_size(buf, starts, ends):
    """Decimal sizes in 1..2**32-1."""
    size, bad = _parse_uint(buf, starts, ends, _DEC_DIGIT, 10, 10)
    return size, bad | (size == 0) | (size > _MAX_SIZE)


def _parse_din_block(buf: np.ndarray, access_size: int) -> TraceChunk:
    tok = _tokenize(buf)
    bad = (tok.count == 1) | (tok.count > 3)
    rows = np.flatnonzero((tok.count == 2) | (tok.count == 3))
    t0 = tok.first[rows]
    label, bad_row = _parse_uint(buf, tok.starts[t0], tok.ends[t0], _DEC_DIGIT, 10, 9)
    bad_row |= label > 2
    addr, bad_addr = _parse_hex(buf, tok.starts[t0 + 1], tok.ends[t0 + 1])
    bad_row |= bad_addr
    sized = tok.count[rows] == 3
    size = np.full(len(rows), access_size, np.uint64)
    t2 = t0[sized] + 2
    size[sized], bad_size = _parse_size(buf, tok.starts[t2], tok.ends[t2])
    bad_row[sized] |= bad_size
    bad[rows] |= bad_row
    if bad.any():
        raise _BadLineAt(int(np.argmax(bad)))
    keep = label < 2
    return TraceChunk(addr[keep], size[keep].astype(np.uint32), label[keep].astype(np.uint8))


def _parse_lackey_block(buf: np.ndarray) -> TraceChunk:
    tok = _tokenize(buf, comma=True)
    nl = tok.newlines
    line_start = np.concatenate(([0], nl[:-1] + 1))
    c0 = buf[line_start]
    c1 = buf[np.minimum(line_start + 1, len(buf) - 1)]  # an empty last line has c0 == "\n"
    fetch = (c0 == 73) & (c1 == 32)  # "I "
    record = fetch | ((c0 == 32) & ((c1 == 76) | (c1 == 83) | (c1 == 77)))  # " L", " S", " M"
    commas = np.bincount(np.searchsorted(nl, np.flatnonzero(buf == 44)), minlength=len(nl))
    # A record is exactly: kind letter, whitespace, ADDRESS "," SIZE, optional whitespace.
    bad = record & ((tok.count != 3) | (commas != 1))
    rows = np.flatnonzero(record & ~bad)
    t0 = tok.first[rows]
    a0, a1 = tok.starts[t0 + 1], tok.ends[t0 + 1]
    s0, s1 = tok.starts[t0 + 2], tok.ends[t0 + 2]
    addr, bad_row = _parse_hex(buf, a0, a1)
    size, bad_size = _parse_size(buf, s0, s1)
    bad_row |= bad_size | (tok.ends[t0] - tok.starts[t0] != 1) | (buf[a1] != 44) | (s0 != a1 + 1)
    bad[rows] |= bad_row
    if bad.any():
        raise _BadLineAt(int(np.argmax(bad)))
    mem = ~fetch[rows]
    letter = c1[rows[mem]]
    modify = letter == 77
    repeat = 1 + modify
    kind = np.repeat((letter != 76).astype(np.uint8), repeat)  # L 0; S, M 1
    kind[(np.cumsum(repeat) - repeat)[modify]] = 0  # an M is a load, then a store
    return TraceChunk(
        np.repeat(addr[mem], repeat), np.repeat(size[mem].astype(np.uint32), repeat), kind
    )


# --------------------------------------------------------------------------
# Text formats: line parsers (error reports, and the block parsers' twins)
# --------------------------------------------------------------------------

_HEX_RE = re.compile(rb"(?:0[xX])?([0-9a-fA-F]{1,16})")
_LABEL_RE = re.compile(rb"[0-9]{1,9}")
_SIZE_RE = re.compile(rb"[0-9]{1,10}")


def _line_hex(token: bytes) -> int:
    m = _HEX_RE.fullmatch(token)
    if not m:
        raise _BadLine(f"bad address {_text(token)!r} (want at most 16 hex digits, 0x optional)")
    return int(m.group(1), 16)


def _line_size(token: bytes) -> int:
    if not _SIZE_RE.fullmatch(token) or not 1 <= int(token) <= _MAX_SIZE:
        raise _BadLine(f"bad size {_text(token)!r} (want a decimal number of bytes, 1 to 2**32-1)")
    return int(token)


def _text(token: bytes, limit: int = 40) -> str:
    text = token.decode("utf-8", "backslashreplace")
    return text if len(text) <= limit else text[:limit] + "..."


def _parse_din_line(line: bytes, access_size: int = 8) -> tuple[int, int, int] | None:
    """Parse one din line: ``(kind, addr, size)``, or None for a blank line or ifetch."""
    fields = line.split()
    if not fields:
        return None
    if len(fields) > 3 or len(fields) < 2:
        raise _BadLine(f"expected 'LABEL ADDRESS [SIZE]', got {len(fields)} field(s)")
    if not _LABEL_RE.fullmatch(fields[0]):
        raise _BadLine(
            f"bad label {_text(fields[0])!r}; want 0 (read), 1 (write) or 2 (instruction fetch)"
        )
    label = int(fields[0])
    if label > 2:
        what = _DIN_UNSUPPORTED.get(label, "unknown")
        raise _BadLine(
            f"unsupported din label {label} ({what}); hroof reads 0 (read), 1 (write) "
            "and 2 (instruction fetch, ignored)"
        )
    addr = _line_hex(fields[1])
    size = _line_size(fields[2]) if len(fields) == 3 else access_size
    return None if label == 2 else (label, addr, size)


def _parse_lackey_line(line: bytes) -> list[tuple[int, int, int]]:
    """Parse one lackey line: its accesses as ``(kind, addr, size)`` (an M gives two)."""
    head = line[:2]
    if head == b"I ":
        rest = line[1:]
    elif head in (b" L", b" S", b" M"):
        rest = line[2:]
    else:
        return []  # valgrind's own output, or the program's
    address, comma, size = rest.strip().partition(b",")
    if not rest[:1].isspace() or not comma:
        raise _BadLine(f"expected '{_text(head)} ADDRESS,SIZE'")
    addr, nbytes = _line_hex(address), _line_size(size)
    if head == b"I ":
        return []
    if head == b" M":
        return [(0, addr, nbytes), (1, addr, nbytes)]
    return [(0 if head == b" L" else 1, addr, nbytes)]
