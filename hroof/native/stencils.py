"""Native Jacobi stencils: stencil5, stencil7 (blocked) and stencil27 (hroof.traces.stencils).

Same grids, padding and loops as the trace: the geometry (row and plane
strides, the first interior element, the block sizes) is read from the
plan's generator arguments, so it cannot drift from the trace. A point
``(i, j, k)`` (0-based over the interior) is element
``origin + i + j*jS + k*kS`` of the flat ``old`` and ``new`` arrays; loops run
``k``, ``j``, ``i`` (``i`` innermost) and stencil7 blocks ``j`` and ``k``
exactly as the trace generator does. ``sweeps`` time steps swap ``old`` and
``new``. The expressions, evaluated left to right, are the documented ones:

* stencil5: ``-4*c + w + e + s + n``
* stencil7: ``-6*c + w + e + s + n + b + t``
* stencil27: ``w0*c + w1*faces + w2*edges + w3*corners`` (each sum left to right
  over the offsets in the trace's lexicographic order), with weights
  ``-88/26, 6/26, 3/26, 2/26`` (any weights cost the same flops).

Indices are unsigned (``uint64``): Numba then emits no negative-index
wraparound check on ``a[p - 1]`` and LLVM vectorises the ``i`` loop (about six
times faster on the host measured). The halo is filled once and never written.
With two sweeps or more the run overwrites its own input, so the timed repeats
restore both grids first (untimed), or the values would grow by up to 12x a
sweep towards overflow.
"""

from __future__ import annotations

from numba import uint64

from hroof._base.jit import JIT, njit
from hroof.native.core import FLOATS, Prepared, arena, fill, native, restorer, snapshot
from hroof.traces.kernels import Plan

#: stencil27's weights: centre, faces, edges, corners.
W27 = (-88 / 26, 6 / 26, 3 / 26, 2 / 26)


@njit(**JIT)
def stencil5(old, new, origin, js, nx, ny, sweeps, w):
    one, uj = uint64(1), uint64(js)
    for s in range(sweeps):
        a, b = (old, new) if s % 2 == 0 else (new, old)
        for j in range(ny):
            c = uint64(origin + j * js)
            for i in range(uint64(nx)):
                p = c + i
                b[p] = w * a[p] + a[p - one] + a[p + one] + a[p - uj] + a[p + uj]


@njit(**JIT)
def stencil7(old, new, origin, js, ks, nx, ny, nz, bj, bk, sweeps, w):
    one, uj, uk = uint64(1), uint64(js), uint64(ks)
    for s in range(sweeps):
        a, b = (old, new) if s % 2 == 0 else (new, old)
        for kk in range(0, nz, bk):
            for jj in range(0, ny, bj):
                for k in range(kk, min(kk + bk, nz)):
                    for j in range(jj, min(jj + bj, ny)):
                        c = uint64(origin + j * js + k * ks)
                        for i in range(uint64(nx)):
                            p = c + i
                            b[p] = (w * a[p] + a[p - one] + a[p + one] + a[p - uj] + a[p + uj]
                                    + a[p - uk] + a[p + uk])  # fmt: skip


@njit(**JIT)
def stencil27(old, new, origin, js, ks, nx, ny, nz, sweeps, w0, w1, w2, w3):
    one, uj, uk = uint64(1), uint64(js), uint64(ks)
    for s in range(sweeps):
        a, b = (old, new) if s % 2 == 0 else (new, old)
        for k in range(nz):
            for j in range(ny):
                c = uint64(origin + j * js + k * ks)
                for i in range(uint64(nx)):
                    p = c + i
                    faces = (a[p - uk] + a[p - uj] + a[p - one] + a[p + one] + a[p + uj]
                             + a[p + uk])  # fmt: skip
                    edges = (a[p - uk - uj] + a[p - uk - one] + a[p - uk + one] + a[p - uk + uj]
                             + a[p - uj - one] + a[p - uj + one] + a[p + uj - one] + a[p + uj + one]
                             + a[p + uk - uj] + a[p + uk - one] + a[p + uk + one]
                             + a[p + uk + uj])  # fmt: skip
                    corners = (a[p - uk - uj - one] + a[p - uk - uj + one] + a[p - uk + uj - one]
                               + a[p - uk + uj + one] + a[p + uk - uj - one] + a[p + uk - uj + one]
                               + a[p + uk + uj - one] + a[p + uk + uj + one])  # fmt: skip
                    b[p] = w0 * a[p] + w1 * faces + w2 * edges + w3 * corners


def _prepare(plan: Plan) -> Prepared:
    _offs, _a, _b, elem, origin, js, ks, nx, ny, nz, bj, bk = plan.args
    ftype = FLOATS[elem]
    arrays = arena(plan.arrays, {"old": ftype, "new": ftype}, plan.params["align"])
    fill(arrays, ["old", "new"])
    old, new = arrays["old"], arrays["new"]
    sweeps = plan.params["sweeps"]
    initial = snapshot(arrays, ("old", "new")) if sweeps > 1 else {}
    name = plan.kernel
    if name == "stencil5":
        args = (old, new, origin, js, nx, ny, sweeps, ftype(-4))
        fn = stencil5
    elif name == "stencil7":
        args = (old, new, origin, js, ks, nx, ny, nz, bj, bk, sweeps, ftype(-6))
        fn = stencil7
    else:
        args = (old, new, origin, js, ks, nx, ny, nz, sweeps, *(ftype(w) for w in W27))
        fn = stencil27

    def run():
        fn(*args)

    return Prepared(
        run=run,
        arrays=arrays,
        core_bytes=(plan.accesses - plan.warmup * plan.per_iteration) * elem,
        reset=restorer(arrays, initial, ("old", "new")) if sweeps > 1 else None,
        initial=initial,
    )


for _name in ("stencil5", "stencil7", "stencil27"):
    native(_name)(_prepare)
