"""Memory coalescing: the transactions a warp's accesses need, and the bytes they waste.

Device memory is accessed in aligned 32-, 64- or 128-byte transactions
(the accelerator analysis article, after the CUDA C Programming Guide): when a
warp executes a load or store, its 32 threads' addresses are served by one transaction
per aligned segment they touch. The *efficiency* of a warp instruction is the bytes its
threads use (the union of the byte ranges they access) over the bytes the transactions
move (transactions x segment size); its inverse is the waste factor. Scattered 4-byte
accesses, one per segment, use 4 of every 32 bytes (8x waste) with 32-byte transactions
and 4 of every 128 (32x) with 128-byte ones; 32 consecutive 4-byte accesses use all of
one 128-byte segment.

On a trace, accesses are grouped into warps: with ``per_thread = P`` (default 1), every
``32 P`` consecutive accesses are 32 consecutive threads (loop iterations) issuing ``P``
accesses each, and the j-th access of each thread forms one warp instruction; so a
kernel's plan, whose iterations make ``per_iteration`` accesses each, is analysed with
``per_thread = per_iteration`` (consecutive iterations on consecutive threads). A
trailing partial group forms shorter warps. The counts stream chunk by chunk (memory
stays bounded) through a Numba kernel; ``tests/naive.py`` has a set-based twin.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from hroof._base.errors import HroofError
from hroof._base.jit import GEN, njit
from hroof.accel.device import positive_int

#: The transaction sizes of the article and the CUDA guide (bytes).
SEGMENTS = (32, 64, 128)
WARP = 32
#: Addresses and sizes are int64 in the kernel: their sum must not overflow.
_ADDRESS_BITS = 62


@njit(**GEN)
def _union_count(lo, hi, n):
    """Size of the union of the half-open integer intervals ``[lo[i], hi[i])``, i < n."""
    order = np.argsort(lo[:n])
    total = 0
    cur_lo = lo[order[0]]
    cur_hi = hi[order[0]]
    for t in range(1, n):
        i = order[t]
        if lo[i] > cur_hi:
            total += cur_hi - cur_lo
            cur_lo = lo[i]
            cur_hi = hi[i]
        elif hi[i] > cur_hi:
            cur_hi = hi[i]
    return total + cur_hi - cur_lo


@njit(**GEN)
def _count_warps(addr, size, offsets, segments, transactions):
    """Add every warp's transactions per segment size to ``transactions``; return the
    bytes used (union of each warp's byte ranges) and the warps with an access."""
    lo = np.empty(WARP * 64, dtype=np.int64)
    hi = np.empty(WARP * 64, dtype=np.int64)
    used = 0
    warps = 0
    for w in range(offsets.shape[0] - 1):
        n = 0
        for i in range(offsets[w], offsets[w + 1]):
            if size[i] > 0:
                if n == lo.shape[0]:  # a caller's warp larger than the buffer
                    lo = np.concatenate((lo, np.empty(n, dtype=np.int64)))
                    hi = np.concatenate((hi, np.empty(n, dtype=np.int64)))
                lo[n] = addr[i]
                hi[n] = addr[i] + size[i]
                n += 1
        if n == 0:
            continue
        warps += 1
        used += _union_count(lo, hi, n)
        for s in range(segments.shape[0]):
            seg = segments[s]
            slo = np.empty(n, dtype=np.int64)
            shi = np.empty(n, dtype=np.int64)
            for i in range(n):
                slo[i] = lo[i] // seg
                shi[i] = (hi[i] - 1) // seg + 1
            transactions[s] += _union_count(slo, shi, n)
    return used, warps


@dataclass(frozen=True)
class Coalescing:
    """Transactions and efficiency of a set of warp instructions.

    Attributes
    ----------
    accesses, warps : int
        Accesses counted and warp instructions they formed.
    used_bytes : int
        Sum over warps of the union of the bytes their threads access.
    segments : tuple of int
        Transaction sizes (bytes).
    transactions : tuple of int
        Transactions per segment size (aligned segments touched, summed over warps).
    """

    accesses: int
    warps: int
    used_bytes: int
    segments: tuple[int, ...]
    transactions: tuple[int, ...]

    def moved_bytes(self, segment: int) -> int:
        return self.transactions[self.segments.index(segment)] * segment

    def efficiency(self, segment: int) -> float | None:
        """Bytes used / bytes moved with ``segment``-byte transactions (None: no access)."""
        moved = self.moved_bytes(segment)
        return self.used_bytes / moved if moved else None

    def waste(self, segment: int) -> float | None:
        """Bytes moved per byte used (1 = perfectly coalesced)."""
        eff = self.efficiency(segment)
        return 1 / eff if eff else None

    def to_dict(self) -> dict:
        return {
            "schema": "hroof.coalesce/1",
            "accesses": self.accesses,
            "warps": self.warps,
            "used_bytes": self.used_bytes,
            "segments": [
                {
                    "size": s,
                    "transactions": t,
                    "moved_bytes": t * s,
                    "efficiency": self.efficiency(s),
                    "waste": self.waste(s),
                }
                for s, t in zip(self.segments, self.transactions, strict=True)
            ],
        }


def _segments(segments: Sequence[int]) -> np.ndarray:
    segs = [positive_int(s, "transaction size (bytes)") for s in segments]
    if not segs:
        raise HroofError("give at least one transaction size, e.g. 32,64,128")
    return np.asarray(segs, dtype=np.int64)


def warp_transactions(
    addresses: Sequence[int], size: int | Sequence[int] = 4, segments: Sequence[int] = SEGMENTS
) -> Coalescing:
    """Transactions of ONE warp instruction: up to 32 byte addresses and access size(s).

    >>> c = warp_transactions([128 * t for t in range(32)], 4)   # scattered 4-byte loads
    >>> c.transactions, c.waste(32), c.waste(128)
    ((32, 32, 32), 8.0, 32.0)
    """
    try:
        addr = np.asarray(addresses, dtype=np.int64).ravel()
        sizes = np.asarray(size, dtype=np.int64)
    except OverflowError:
        raise HroofError(
            f"addresses and access sizes must be below 2**{_ADDRESS_BITS} bytes"
        ) from None
    if addr.size == 0 or addr.size > WARP:
        raise HroofError(f"a warp has 1 to {WARP} addresses, got {addr.size}")
    if (addr < 0).any():
        raise HroofError("addresses must be non-negative byte addresses")
    sizes = np.broadcast_to(sizes, addr.shape).copy()
    if (sizes < 1).any():
        raise HroofError(f"access sizes must be positive bytes, got {size!r}")
    if int(addr.max()) + int(sizes.max()) > 2**_ADDRESS_BITS:
        raise HroofError(
            f"addresses and access sizes must be below 2**{_ADDRESS_BITS} bytes, got "
            f"address {int(addr.max()):,} with size {int(sizes.max()):,}"
        )
    return _count(addr, sizes, np.array([0, addr.size], dtype=np.int64), _segments(segments))


def _count(addr, size, offsets, segs) -> Coalescing:
    tr = np.zeros(segs.shape[0], dtype=np.int64)
    used, warps = _count_warps(addr, size, offsets, segs, tr)
    return Coalescing(
        int(offsets[-1]),
        int(warps),
        int(used),
        tuple(int(s) for s in segs),
        tuple(int(t) for t in tr),
    )


def _merge(a: Coalescing | None, b: Coalescing) -> Coalescing:
    if a is None:
        return b
    return Coalescing(
        a.accesses + b.accesses,
        a.warps + b.warps,
        a.used_bytes + b.used_bytes,
        a.segments,
        tuple(x + y for x, y in zip(a.transactions, b.transactions, strict=True)),
    )


def _full_groups(addr, size, per_thread: int):
    """Reorder whole groups of 32 P accesses so each warp (j-th access of 32 threads) is
    contiguous; return (addr, size, offsets)."""
    g = addr.shape[0] // (WARP * per_thread)
    shape = (g, WARP, per_thread)
    a = addr[: g * WARP * per_thread].reshape(shape).transpose(0, 2, 1).ravel()
    s = size[: g * WARP * per_thread].reshape(shape).transpose(0, 2, 1).ravel()
    return a, s, np.arange(0, a.shape[0] + 1, WARP, dtype=np.int64)


def _tail(addr, size, per_thread: int):
    """A partial group: warps are the j-th accesses of the threads it has."""
    j = np.arange(addr.shape[0]) % per_thread
    order = np.argsort(j, kind="stable")
    js = j[order]
    cuts = np.flatnonzero(np.diff(js)) + 1
    offsets = np.concatenate(([0], cuts, [addr.shape[0]])).astype(np.int64)
    return addr[order], size[order], offsets


def coalesce_chunks(
    chunks: Iterable, segments: Sequence[int] = SEGMENTS, per_thread: int = 1, progress=None
) -> Coalescing:
    """Stream ``(addr, size, kind)`` chunks (a trace or a kernel plan) into a
    :class:`Coalescing`; every access counts (loads, stores, non-temporal stores)."""
    segs = _segments(segments)
    per_thread = positive_int(per_thread, "accesses per thread")
    group = WARP * per_thread
    total: Coalescing | None = None
    carry_a = np.empty(0, dtype=np.int64)
    carry_s = np.empty(0, dtype=np.int64)
    for chunk in chunks:
        addr, size = chunk[0], chunk[1]
        a = np.concatenate((carry_a, np.asarray(addr).astype(np.int64, copy=False)))
        s = np.concatenate((carry_s, np.asarray(size).astype(np.int64, copy=False)))
        whole = (a.shape[0] // group) * group
        if whole:
            total = _merge(total, _count(*_full_groups(a[:whole], s[:whole], per_thread), segs))
        carry_a, carry_s = a[whole:].copy(), s[whole:].copy()
        if progress is not None:
            progress.update(len(addr))
    if carry_a.shape[0]:
        total = _merge(total, _count(*_tail(carry_a, carry_s, per_thread), segs))
    if total is None:
        total = Coalescing(0, 0, 0, tuple(int(s) for s in segs), (0,) * segs.shape[0])
    return total


def coalesce_trace(
    path,
    format: str | None = None,
    *,
    segments=SEGMENTS,
    per_thread: int = 1,
    access_size: int = 8,
    progress=None,
) -> Coalescing:
    """:func:`coalesce_chunks` over a trace file read by :func:`hroof.traces.iter_trace`."""
    from hroof.traces import iter_trace

    chunks = iter_trace(path, format, access_size=access_size)
    return coalesce_chunks(chunks, segments, per_thread, progress)


def coalesce_plan(
    plan, *, segments=SEGMENTS, per_thread: int | None = None, progress=None
) -> Coalescing:
    """:func:`coalesce_chunks` over a kernel's plan; ``per_thread`` defaults to the
    plan's accesses per iteration (one loop iteration per thread)."""
    p = plan.per_iteration if per_thread is None else per_thread
    return coalesce_chunks(plan.chunks(), segments, p, progress)
