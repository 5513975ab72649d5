"""Reference access streams for the benchmarks.

The issue's reference workload is the 3D 7-point Jacobi stencil of
the LBNL roofline lecture (the ``stencil7`` kernel of
:mod:`hroof.traces.stencils`): per interior point, loads of old[c], old[c-1],
old[c+1], old[c-jS], old[c+jS], old[c-kS], old[c+kS], then a store of new[c];
doubles, two arrays with a one-point halo.
"""

from __future__ import annotations

import numpy as np

from hroof.traces import plan_kernel


def stencil_chunks(n: int, *, load_only: bool = False, points_per_chunk: int = 1 << 17):
    """Yield (addr, size, kind) chunks of the stencil stream (8 accesses a point).

    ``load_only`` turns the store into a load (the stream on which pycachesim's
    quirks cannot act). The chunks are views of reused buffers.
    """
    for addr, size, kind in plan_kernel("stencil7", n=n).chunks(8 * points_per_chunk):
        if load_only:
            kind[:] = 0
        yield addr, size, kind


def stencil_arrays(n: int, *, load_only: bool = False):
    """The whole stream as three arrays (for peers that need it in memory)."""
    parts = [tuple(x.copy() for x in c) for c in stencil_chunks(n, load_only=load_only)]
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))
