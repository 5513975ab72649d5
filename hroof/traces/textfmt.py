"""Text trace formats: Dinero din and valgrind lackey, read a block of whole lines at a time.

:func:`_iter_text` reads a text trace (gzip or plain) in blocks of :data:`_BLOCK_BYTES`
whole lines and parses each block in one Numba pass (:mod:`hroof.traces._text_kernels`,
into preallocated arrays; the partial last line is carried over to the next block); the
line a block parser finds malformed is re-parsed with the plain-Python line parsers
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
# Text formats: block parsers (Numba, one pass over the bytes)
# --------------------------------------------------------------------------


def _parse_din_block(buf: np.ndarray, access_size: int) -> TraceChunk:
    from hroof.traces import _text_kernels as TK

    cap = buf.shape[0] // 4 + 1  # a din access takes 4 bytes at least ("0 0\n")
    addr, size, kind = np.empty(cap, np.uint64), np.empty(cap, np.uint32), np.empty(cap, np.uint8)
    n, bad = TK.din_block(buf, access_size, addr, size, kind)
    if bad >= 0:
        raise _BadLineAt(int(bad))
    return TraceChunk(addr[:n], size[:n], kind[:n])


def _parse_lackey_block(buf: np.ndarray) -> TraceChunk:
    from hroof.traces import _text_kernels as TK

    cap = 2 * (buf.shape[0] // 7) + 1  # " M 0,1\n": 7 bytes, two accesses
    addr, size, kind = np.empty(cap, np.uint64), np.empty(cap, np.uint32), np.empty(cap, np.uint8)
    n, bad = TK.lackey_block(buf, addr, size, kind)
    if bad >= 0:
        raise _BadLineAt(int(bad))
    return TraceChunk(addr[:n], size[:n], kind[:n])


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
