"""Reference access streams for the benchmarks.

The issue's reference workload is the 3D 7-point Jacobi stencil of
``references/roofline-lecture.zh.txt``: for each interior point, in order,
loads of old[ijk], old[ijk-1], old[ijk+1], old[ijk-jStride], old[ijk+jStride],
old[ijk-kStride], old[ijk+kStride], then a store of new[ijk]; double precision,
two arrays of (n+2)^3 elements with a one-point halo, ``new`` placed right after
``old`` (both 64-byte aligned). Until the kernel generators exist this module
builds the stream itself, chunk by chunk.
"""

from __future__ import annotations

import numpy as np
from numba import njit

OLD_BASE = 1 << 20


def stencil_layout(n: int) -> tuple[int, int, int]:
    """Return (old base, new base, points per array) for an n^3 interior."""
    npts = (n + 2) ** 3
    new_base = OLD_BASE + ((npts * 8 + 63) // 64) * 64
    return OLD_BASE, new_base, npts


@njit(cache=True)
def _stencil_fill(n, start_point, npoints, old_base, new_base, load_only, addr, kind):
    js = n + 2
    ks = js * js
    pos = 0
    for p in range(start_point, start_point + npoints):
        i = p % n + 1
        j = (p // n) % n + 1
        k = p // (n * n) + 1
        c = k * ks + j * js + i
        for off in (0, -1, 1, -js, js, -ks, ks):
            addr[pos] = old_base + 8 * (c + off)
            kind[pos] = 0
            pos += 1
        addr[pos] = new_base + 8 * c
        kind[pos] = 0 if load_only else 1
        pos += 1
    return pos


def stencil_chunks(n: int, *, load_only: bool = False, points_per_chunk: int = 1 << 17):
    """Yield (addr, size, kind) chunks of the 7-point stencil stream (8 accesses a point)."""
    old_base, new_base, _ = stencil_layout(n)
    total = n**3
    addr = np.empty(points_per_chunk * 8, dtype=np.int64)
    kind = np.empty(points_per_chunk * 8, dtype=np.uint8)
    size = np.full(points_per_chunk * 8, 8, dtype=np.int64)
    for start in range(0, total, points_per_chunk):
        cnt = min(points_per_chunk, total - start)
        m = _stencil_fill(n, start, cnt, old_base, new_base, load_only, addr, kind)
        yield addr[:m], size[:m], kind[:m]


def stencil_arrays(n: int, *, load_only: bool = False):
    """The whole stream as three arrays (for peers that need it in memory)."""
    parts = list(
        (a.copy(), s.copy(), k.copy()) for a, s, k in stencil_chunks(n, load_only=load_only)
    )
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))
