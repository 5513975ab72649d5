"""Numba kernels over a trace chunk as it arrives: the input check and the set-sampling filter.

They run before the level passes of :mod:`hroof.cachesim._kernels`, once per
access of the chunk, and touch no cache state.
"""

from __future__ import annotations

import numpy as np

from hroof._base.jit import JIT, njit
from hroof.cachesim._kernels import EV_BITS, KIND_LOAD, KIND_NT, KIND_STORE


def addr_limit_bits(line_bits):
    """Addresses must be below ``2**addr_limit_bits(line_bits)``.

    2**62, except for lines under 8 bytes, where a line index shifted left by
    ``EV_BITS`` must still fit in an int64 event.
    """
    return min(62, 63 - EV_BITS + line_bits)


@njit(**JIT)
def _scan(addr, size, kind, line_bits, limit, out_size):
    """:func:`scan_chunk`'s pass; also the largest size, and with a non-empty
    ``out_size`` each size copied there (``copy`` never changes within a pass, so its
    test at every access is always predicted)."""
    copy = out_size.shape[0] != 0
    bad_addr = 0
    bad_size = 0
    bad_kind = 0
    straddles = 0
    n_loads = 0
    n_stores = 0
    n_nt = 0
    b_loads = 0
    b_stores = 0
    b_nt = 0
    top = np.int64(0)
    for i in range(addr.shape[0]):
        a = addr[i]
        s = size[i]
        k = kind[i]
        bad_addr += (a < 0) | (a >= limit)
        bad_size += s <= 0
        straddles += (a >> line_bits) != ((a + s - 1) >> line_bits)
        bad_kind += k > 2
        top = max(top, s)
        is_load = k == KIND_LOAD
        is_store = k == KIND_STORE
        is_nt = k == KIND_NT
        n_loads += is_load
        n_stores += is_store
        n_nt += is_nt
        b_loads += s * is_load
        b_stores += s * is_store
        b_nt += s * is_nt
        if copy:
            out_size[i] = s
    counts = (
        bad_addr, bad_size, bad_kind, straddles,
        n_loads, n_stores, n_nt, b_loads, b_stores, b_nt,
    )  # fmt: skip
    return counts, top


@njit(**JIT)
def scan_chunk(addr, size, kind, line_bits, limit):
    """One branch-free (vectorisable) pass over a chunk before anything is simulated.

    Returns the counts of bad addresses, sizes and kinds, of accesses that
    straddle a line boundary, and the core's counters (``K_*`` order: loads,
    stores, NT stores and their bytes), which the driver adds only once the
    chunk is known to be valid.
    """
    counts, _ = _scan(addr, size, kind, line_bits, limit, addr[:0])  # nothing to copy into
    return counts


@njit(**JIT)
def scan_narrow(addr, size, kind, line_bits, limit, out_size):
    """:func:`scan_chunk` of a chunk whose sizes are wider than a chunk's (int64 from the
    API), copying them into ``out_size`` (uint32) in the same pass. Returns the largest
    size, then :func:`scan_chunk`'s counts: the caller rejects the chunk when the largest
    is not below 2**32 (the copy then truncated it) or a size is not positive."""
    counts, top = _scan(addr, size, kind, line_bits, limit, out_size)
    return (np.int64(top),) + counts  # noqa: RUF005 (Numba builds no starred tuple)


@njit(**JIT)
def sample_filter(addr, size, kind, line_bits, m, k, residue, per_class, out_addr, out_size,
                  out_kind, out_group):  # fmt: skip
    """Keep the accesses whose line is ``residue`` modulo ``k``, in order (set sampling).

    Counts every access's line class modulo ``m`` (a multiple of ``k``) into
    ``per_class`` (``4 * m`` counters, summed by the caller: four interleaved
    copies, so that runs of accesses to one line do not wait on one counter),
    copies the kept accesses to the ``out_*`` arrays with their group
    ``(line mod m) // k``, and returns how many were kept. Each access must lie
    within one line.
    """
    if (m & (m - 1)) == 0 and (k & (k - 1)) == 0:  # masks and shifts, no division
        kbits = 0
        while (1 << kbits) < k:
            kbits += 1
        return _filter_pow2(addr, size, kind, line_bits, m - 1, k - 1, kbits, residue,
                            per_class, out_addr, out_size, out_kind, out_group)  # fmt: skip
    j = 0
    for i in range(addr.shape[0]):
        a = addr[i]
        key = (a >> line_bits) % m
        per_class[(i & 3) * m + key] += 1
        if key % k == residue:
            out_addr[j] = a
            out_size[j] = size[i]
            out_kind[j] = kind[i]
            out_group[j] = key // k
            j += 1
    return j


@njit(**JIT)
def _filter_pow2(addr, size, kind, line_bits, mmask, kmask, kbits, residue, per_class,
                 out_addr, out_size, out_kind, out_group):  # fmt: skip
    """:func:`sample_filter` for ``m = mmask + 1`` and ``k = kmask + 1`` powers of two
    (``k = 2**kbits``): 2-3 ns an access, where a division per access cost 15-20."""
    m = mmask + 1
    j = 0
    for i in range(addr.shape[0]):
        a = addr[i]
        key = (a >> line_bits) & mmask
        per_class[(i & 3) * m + key] += 1
        if (key & kmask) == residue:
            out_addr[j] = a
            out_size[j] = size[i]
            out_kind[j] = kind[i]
            out_group[j] = key >> kbits
            j += 1
    return j


@njit(**JIT)
def group_scatter(addr, size, kind, group, starts, out_addr, out_size, out_kind):
    """Reorder kept accesses group by group, keeping their order within a group.

    ``starts[g]`` is where group ``g`` begins in the ``out_*`` arrays (the
    running sum of the group sizes); it is advanced as the group is filled.
    """
    for i in range(addr.shape[0]):
        g = group[i]
        j = starts[g]
        out_addr[j] = addr[i]
        out_size[j] = size[i]
        out_kind[j] = kind[i]
        starts[g] = j + 1
