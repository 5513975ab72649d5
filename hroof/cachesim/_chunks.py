"""A chunk of a trace as the simulator takes it: checked, or trusted, and cut at line boundaries.

:func:`_as_chunk` checks a chunk a user hands in (API arrays, a file's chunks) in one
Numba pass; :func:`_trusted_chunk` takes a chunk hroof's own kernel generators wrote
(int64 addresses, uint32 sizes, uint8 kinds, every size and kind valid by construction)
and only counts it with the same pass (the core's counters, the accesses that straddle
a line, and the addresses out of range): the two give the same simulation
(``tests/test_fastpath.py``).
"""

from __future__ import annotations

import numpy as np

from hroof._base.errors import HroofError
from hroof._base.kinds import SIZE_DTYPE, SIZE_LIMIT
from hroof.cachesim import _stream_kernels as SK


def _event_arrays(n: int):
    """Empty arrays for ``n`` events: packed ``line << EV_BITS | kind`` (int64) and size
    (a chunk's size dtype, so the passes see one dtype of sizes at every level)."""
    return np.empty(n, dtype=np.int64), np.empty(n, dtype=SIZE_DTYPE)


def _as_int(arr: np.ndarray, dtype) -> np.ndarray:
    """``arr`` as a contiguous array of ``dtype``; same-width integers are viewed, not copied.

    A uint64 address viewed as int64 turns negative past 2**63, which the scan
    of :func:`_as_chunk` then rejects.
    """
    arr = np.ascontiguousarray(arr)
    if arr.dtype == dtype:
        return arr
    if arr.dtype.itemsize == np.dtype(dtype).itemsize:
        return arr.view(dtype)
    return arr.astype(dtype)


def _as_chunk(addr, size, kind, line_bits: int):
    """Validate one chunk.

    Returns it in the kernel's dtypes, whether any access straddles a line
    boundary, and the core's counters of the chunk (loads, stores, NT stores,
    and their bytes).
    """
    addr = np.asarray(addr)
    size = np.asarray(size)
    kind = np.asarray(kind)
    if not (addr.ndim == size.ndim == kind.ndim == 1):
        raise HroofError("addr, size and kind must be one-dimensional arrays")
    if not (addr.shape == size.shape == kind.shape):
        raise HroofError(
            f"addr, size and kind must have equal lengths, got {addr.shape[0]}, "
            f"{size.shape[0]} and {kind.shape[0]}"
        )
    for name, arr in (("addr", addr), ("size", size), ("kind", kind)):
        if arr.dtype.kind not in "ui":
            raise HroofError(f"{name} must be an integer array, got dtype {arr.dtype}")
    n = addr.shape[0]
    if kind.dtype != np.uint8 and n and (kind.min() < 0 or kind.max() > 2):
        raise HroofError("kind must be 0 (load), 1 (store) or 2 (non-temporal store)")
    wide = size.dtype == np.int64  # converted in the check's pass
    if not wide and (size.dtype.itemsize > 4 or size.dtype.kind == "i"):
        size = _as_size(size)
    addr = _as_int(addr, np.int64)
    kind = _as_int(kind, np.uint8) if kind.dtype.itemsize == 1 else kind.astype(np.uint8)
    bits = SK.addr_limit_bits(line_bits)
    if wide:
        out = np.empty(n, dtype=SIZE_DTYPE)
        top, bad_addr, bad_size, bad_kind, straddles, *core = SK.scan_narrow(
            addr, np.ascontiguousarray(size), kind, line_bits, 1 << bits, out
        )
        size = out
    else:
        size = _as_int(size, SIZE_DTYPE)
        bad_addr, bad_size, bad_kind, straddles, *core = SK.scan_chunk(
            addr, size, kind, line_bits, 1 << bits
        )
        top = 0
    if bad_addr:
        raise HroofError(f"{bad_addr} addresses are negative or not below 2**{bits}")
    if bad_size:
        raise HroofError(f"{bad_size} access sizes are not positive")
    if top >= SIZE_LIMIT:
        raise HroofError(f"access sizes must be below 2**32 bytes, got {top}")
    if bad_kind:
        raise HroofError(f"{bad_kind} kinds are not 0 (load), 1 (store) or 2 (non-temporal store)")
    return addr, size, kind, straddles > 0, core


def _as_size(size: np.ndarray) -> np.ndarray:
    """Sizes of a wider or signed dtype (but int64: :func:`_as_chunk` converts those in
    its check's pass) checked to fit a chunk's (positive, below
    :data:`~hroof._base.kinds.SIZE_LIMIT`), as that dtype."""
    out = size.astype(SIZE_DTYPE)
    bad = int(np.count_nonzero(size < 1)) if size.dtype.kind == "i" else int((size == 0).sum())
    hi = int(size.max()) if size.shape[0] else 0
    if bad:
        raise HroofError(f"{bad} access sizes are not positive")
    if hi >= SIZE_LIMIT:
        raise HroofError(f"access sizes must be below 2**32 bytes, got {hi}")
    return out


def _split_lines(addr, size, kind, line_bits):
    """Cut every access that straddles lines into one piece per line, in address order.

    The core's counters are taken before the split, so a piece is one more
    lookup but not one more access.

    >>> a, s, k = _split_lines(np.array([60, 0]), np.array([8, 4]), np.array([0, 1], np.uint8), 6)
    >>> a.tolist(), s.tolist(), k.tolist()
    ([60, 64, 0], [4, 4, 4], [0, 0, 1])
    """
    first = addr >> line_bits
    size = size.astype(np.int64)
    span = ((addr + size - 1) >> line_bits) - first + 1
    idx = np.repeat(np.arange(addr.shape[0]), span)
    piece = np.arange(idx.shape[0]) - np.repeat(np.cumsum(span) - span, span)
    line = first[idx] + piece
    lo = np.maximum(addr[idx], line << line_bits)
    hi = np.minimum(addr[idx] + size[idx], (line + 1) << line_bits)
    return lo, (hi - lo).astype(SIZE_DTYPE), kind[idx]


def _trusted_chunk(addr, size, kind, line_bits: int):
    """A generated chunk as :func:`_as_chunk` returns it, without the dtype, shape, size
    and kind checks (the same one pass counts it: a lighter pass measured no faster).

    The arrays should be int64, uint32 and uint8 (what ``Plan.chunks`` yields); only the
    addresses are checked (a kernel's arrays may end past the limit). Arrays of other
    dtypes are checked and converted as :func:`_as_chunk` does (so the passes are never
    compiled for another dtype).
    """
    if (addr.dtype, size.dtype, kind.dtype) != (np.int64, SIZE_DTYPE, np.uint8):
        return _as_chunk(addr, size, kind, line_bits)
    bits = SK.addr_limit_bits(line_bits)
    bad_addr, _, _, straddles, *core = SK.scan_chunk(addr, size, kind, line_bits, 1 << bits)
    if bad_addr:
        raise HroofError(f"{bad_addr} addresses are negative or not below 2**{bits}")
    return addr, size, kind, straddles > 0, core
