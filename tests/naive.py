"""The tests' plain-Python twins: the reference model and generators, and one of their own.

The reference model of the cache hierarchy lives in the package,
:mod:`hroof.cachesim.reference` (``hroof simulate`` runs small kernels on it), and the
kernels' loop nests written out in :mod:`hroof.traces.reference`; this module re-exports
both under the names the tests use, so there is one source of truth. The tests compare
the Numba simulator and generators against them, never the reference with itself.
:func:`naive_coalescing` (the GPU coalescing twin) lives here only.
"""

from __future__ import annotations

from hroof.cachesim.reference import *  # noqa: F403
from hroof.cachesim.reference import __all__ as _model
from hroof.traces.reference import *  # noqa: F403
from hroof.traces.reference import __all__ as _kernels

__all__ = [*_model, *_kernels, "naive_coalescing"]


def naive_coalescing(addrs, sizes, per_thread=1, segments=(32, 64, 128), warp=32):
    """Warp transactions the plain way: every group of ``warp * per_thread`` accesses is
    ``warp`` threads of ``per_thread`` accesses; the j-th access of each thread forms one
    warp instruction (a trailing partial group makes shorter warps); per warp, the set of
    aligned segments and the set of bytes its accesses touch.

    Returns (warps, used_bytes, {segment: transactions}).
    """
    addrs, sizes = [int(a) for a in addrs], [int(s) for s in sizes]
    group = warp * per_thread
    warps = []
    for g in range(0, len(addrs), group):
        members = list(range(g, min(g + group, len(addrs))))
        for j in range(per_thread):
            w = [i for i in members if (i - g) % per_thread == j]
            if w:
                warps.append(w)
    count, used, tr = 0, 0, {s: 0 for s in segments}
    for w in warps:
        touched = set()
        for i in w:
            touched.update(range(addrs[i], addrs[i] + sizes[i]))
        if not touched:
            continue
        count += 1
        used += len(touched)
        for s in segments:
            tr[s] += len({b // s for b in touched})
    return count, used, tr
