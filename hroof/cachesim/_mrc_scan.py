"""The SHARDS filter of a raw trace chunk (the stream into the first level), fused with
the simulator's input check, on one thread (:func:`scan_prefilter`) or two
(:func:`scan_claim`: each thread takes stripes of the chunk from its own end until the
two meet; :func:`merge_stripes` puts the kept events back in trace order).
``tests/test_mrc.py`` holds their checks against the simulator's ``scan_chunk`` and the
plain filter.
"""

from __future__ import annotations

import numpy as np

from hroof._base.jit import JIT, njit
from hroof.cachesim._mrc_kernels import TRACE_OPS, _mix_top, _take_flagged, _top

#: Accesses of a stripe of :func:`scan_claim` (16 Ki: about 10 microseconds of work, so the
#: two threads meet within that of each other; 64 stripes to a chunk of a million).
STRIPE = 1 << 14


@njit(**JIT)
def _scan_range(addr, size, kind, lo, hi, line_bits, key, top, flags, out_lines, out_ops,
                out_hash, out_sub, k):  # fmt: skip
    """Accesses ``lo .. hi`` of the chunk, in blocks of ``len(flags)``: the kept events
    appended to the outputs from ``k`` on. Returns ``(k, lookups, addr_or, size_or,
    kind_max)``: the new ``k``, the loads and stores, and what :func:`_rejected` reads.

    The check accumulates, it does not compare: the address limit and a line are powers
    of two, so every value is below one exactly when their OR is. A negative address
    sets the sign bit; ``size - 1`` is negative for a size below 1 and at least a line
    for a size above one; ``offset + size - 1`` reaches a line when the access straddles.
    """
    blk = flags.shape[0]
    words = flags.view(np.uint64)
    nline = np.int64(1) << line_bits
    lookups = 0
    addr_or = np.int64(0)
    size_or = np.int64(0)
    kind_max = np.uint8(0)
    for b in range(lo, hi, blk):
        m = min(blk, hi - b)
        a = addr[b : b + m]
        sz = size[b : b + m]
        kd = kind[b : b + m]
        for j in range(m):
            x = a[j]
            s1 = sz[j] - 1
            addr_or |= x
            size_or |= ((x & (nline - 1)) + s1) | s1
            flags[j] = _mix_top((x >> line_bits) ^ key) <= top
        c = 0  # a loop of its own over the kinds: 64 bytes to a vector, not 8
        for j in range(m):
            kind_max = max(kind_max, kd[j])
            c += kd[j] < 2
        lookups += c
        for j in range(m, (m + 7) // 8 * 8):
            flags[j] = 0
        k = _take_flagged(words, (m + 7) // 8, a, line_bits, kd, TRACE_OPS, key, out_lines,
                          out_ops, out_hash, out_sub, k)  # fmt: skip
    return k, lookups, addr_or, size_or, kind_max


@njit(**JIT)
def _rejected(addr_or, size_or, kind_max, line_bits, limit):
    """1 when the accumulated values of :func:`_scan_range` hold an address not below
    ``limit``, a size not positive, an access straddling a line or a kind above 2."""
    line = np.uint64(np.int64(1) << line_bits)
    bad = (np.uint64(addr_or) >= np.uint64(limit)) | (np.uint64(size_or) >= line) | (kind_max > 2)
    return np.int64(bad)


@njit(**JIT)
def scan_prefilter(addr, size, kind, line_bits, limit, key, thresh, flags, out_lines, out_ops,
                   out_hash, out_sub):  # fmt: skip
    """``_mrc_kernels.prefilter`` of a raw trace chunk (at L1: kinds 0 load, 1 store, 2 NT
    store), fused with the simulator's input check (``_stream_kernels.scan_chunk``): one
    read of the chunk instead of two.

    Returns ``(kept, lookups, rejected)``; ``rejected`` is not 0 when the chunk holds
    an access that ``scan_chunk`` would reject (address negative or not below
    ``limit``, a power of two; size not positive, kind above 2) or split (straddling a
    line): the outputs are then to be discarded and the chunk sent the simulator's way.
    """
    k, lookups, addr_or, size_or, kind_max = _scan_range(
        addr, size, kind, 0, addr.shape[0], line_bits, key, _top(thresh), flags, out_lines,
        out_ops, out_hash, out_sub, 0,
    )  # fmt: skip
    return k, lookups, _rejected(addr_or, size_or, kind_max, line_bits, limit)


@njit(**JIT)
def scan_claim(addr, size, kind, line_bits, limit, key, thresh, flags, out_lines, out_ops,
               out_hash, out_sub, stripe, claims, back, ends, lookups):  # fmt: skip
    """:func:`scan_prefilter` of the chunk's stripes (``stripe`` accesses each) that this
    thread claims, run on two threads at once over one ``claims`` array: the front thread
    (``back`` False) takes stripes 0, 1, 2, ..., each once ``claims[0]`` says so, while it
    is below ``claims[1]``; the back thread takes the last, then the one before, ...,
    each once ``claims[1]`` says so, while it is at least ``claims[0]``. Start with
    ``claims = [0, stripes]``.

    Each thread announces a stripe before it reads it, so every stripe is taken by at
    least one; when the two read each other's announcement late, both take the same
    stripe, which costs time, never a result (:func:`merge_stripes` takes each stripe
    once). No lock, no atomic operation: whatever the order in which the two threads see
    each other's stores, the result is the same.

    Returns ``(kept, edge, rejected)``. The front thread's kept events for stripes
    ``0 .. edge - 1`` are its outputs ``[0, kept)``, in order. The back thread's for
    stripes ``edge .. stripes - 1`` are in its outputs, stripe ``s``'s at
    ``ends[s + 1] .. ends[s]`` (``ends[stripes]`` must be 0). ``lookups[s]`` is stripe
    ``s``'s loads and stores, from whichever thread took it.
    """
    n = addr.shape[0]
    ns = (n + stripe - 1) // stripe
    top = _top(thresh)
    k = 0
    addr_or = np.int64(0)
    size_or = np.int64(0)
    kind_max = np.uint8(0)
    if back:
        s = ns - 1
        while s >= 0 and s >= claims[0]:
            claims[1] = s
            k, lk, a_or, s_or, k_max = _scan_range(
                addr, size, kind, s * stripe, min(n, (s + 1) * stripe), line_bits, key, top,
                flags, out_lines, out_ops, out_hash, out_sub, k,
            )  # fmt: skip
            ends[s] = k
            lookups[s] = lk
            addr_or |= a_or
            size_or |= s_or
            kind_max = max(kind_max, k_max)
            s -= 1
        edge = s + 1
    else:
        s = 0
        while s < ns and s < claims[1]:
            claims[0] = s + 1
            k, lk, a_or, s_or, k_max = _scan_range(
                addr, size, kind, s * stripe, min(n, (s + 1) * stripe), line_bits, key, top,
                flags, out_lines, out_ops, out_hash, out_sub, k,
            )  # fmt: skip
            lookups[s] = lk
            addr_or |= a_or
            size_or |= s_or
            kind_max = max(kind_max, k_max)
            s += 1
        edge = s
    return k, edge, _rejected(addr_or, size_or, kind_max, line_bits, limit)


@njit(**JIT)
def merge_stripes(edge, ns, ends, src_lines, src_ops, src_hash, src_sub, out_lines, out_ops,
                  out_hash, out_sub, k):  # fmt: skip
    """Append the back thread's kept events of stripes ``edge .. ns - 1`` (its outputs
    ``src_*``, laid out as :func:`scan_claim` says), in trace order, to the front
    thread's ``k``; return the new ``k``."""
    for s in range(edge, ns):
        for i in range(ends[s + 1], ends[s]):
            out_lines[k] = src_lines[i]
            out_ops[k] = src_ops[i]
            out_hash[k] = src_hash[i]
            out_sub[k] = src_sub[i]
            k += 1
    return k
