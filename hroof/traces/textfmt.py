"""Text trace formats: Dinero din and valgrind lackey, read a block of whole lines at a time.

:func:`_iter_text` reads a text trace (gzip or plain) in blocks of :data:`_BLOCK_BYTES`
whole lines and parses each block at once with the vectorised block parsers; a block
with a bad line is re-read line by line with the plain-Python line parsers
(:func:`_parse_din_line`, :func:`_parse_lackey_line`), which name the line, and which
are also the twins the tests compare the block parsers against. The public entry is
:func:`hroof.traces.iter_trace`.
"""

from __future__ import annotations

import gzip
import os
import re
import zlib
from collections.abc import Callable, Iterator
from typing import NamedTuple

import numpy as np

from hroof._base.errors import TraceFormatError

_MAX_SIZE = (1 << 32) - 1  # an access size must fit in uint32
_BLOCK_BYTES = 1 << 20  # text read per block (whole lines are parsed at once)
_MAX_LINE_BYTES = 1 << 24  # a longer "line" means the file is not a text trace
_GZIP_MAGIC = b"\x1f\x8b"
_DIN_UNSUPPORTED = {3: "escape", 4: "cache flush"}


class TraceChunk(NamedTuple):
    """One chunk of a trace: three flat arrays of equal length.

    Unpacks like a plain tuple: ``for addr, size, kind in iter_trace(path)``.
    """

    addr: np.ndarray  #: uint64, byte address of each access
    size: np.ndarray  #: uint32, bytes accessed
    kind: np.ndarray  #: uint8, 0 load, 1 store, 2 non-temporal store


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
