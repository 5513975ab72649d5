"""Native STREAM kernels, DAXPY and DOT: one pass over ``n`` elements
(hroof.traces.stream).

The loops are those of the trace, element by element; the arrays sit at the
trace layout's offsets. ``nt=true`` (non-temporal stores) is accepted but
ignored: Numba cannot emit streaming stores, so the native run makes ordinary
(write-allocate) stores whatever ``nt`` says, while the simulated trace
bypasses the caches. The scalar ``q`` (``a`` for DAXPY) is 3.0. DOT's sum is in the
arrays' float type, in the loop's order (no fast-math, as every native twin: one chain
of adds, not vectorised); ``run()`` returns the last sweep's.
"""

from __future__ import annotations

from hroof._base.jit import JIT, njit
from hroof.native.core import FLOATS, Prepared, arena, fill, native
from hroof.traces.kernels import Plan

#: The scalar of scale, triad and daxpy.
Q = 3.0

NT_NOTE = (
    "nt=true is ignored natively: the stores are ordinary stores (Numba emits no "
    "non-temporal stores), so the run reads the store array's lines before writing them"
)


@njit(**JIT)
def copy(a, c):
    for i in range(a.shape[0]):
        c[i] = a[i]


@njit(**JIT)
def scale(c, b, q):
    for i in range(c.shape[0]):
        b[i] = q * c[i]


@njit(**JIT)
def add(a, b, c):
    for i in range(a.shape[0]):
        c[i] = a[i] + b[i]


@njit(**JIT)
def triad(x, y, z, q):
    for i in range(x.shape[0]):
        z[i] = x[i] + q * y[i]


@njit(**JIT)
def daxpy(x, y, q):
    for i in range(x.shape[0]):
        y[i] = q * x[i] + y[i]


@njit(**JIT)
def dot(x, y, zero):
    s = zero
    for i in range(x.shape[0]):
        s += x[i] * y[i]
    return s


#: kernel -> (native function, its array arguments, its scalar: "q", "zero" or None)
_KERNELS = {
    "copy": (copy, ("a", "c"), None),
    "scale": (scale, ("c", "b"), "q"),
    "add": (add, ("a", "b", "c"), None),
    "triad": (triad, ("x", "y", "z"), "q"),
    "daxpy": (daxpy, ("x", "y"), "q"),
    "dot": (dot, ("x", "y"), "zero"),
}


def _prepare(plan: Plan) -> Prepared:
    fn, names, scalar = _KERNELS[plan.kernel]
    elem = plan.arrays[0].elem
    ftype = FLOATS[elem]
    arrays = arena(plan.arrays, {a.name: ftype for a in plan.arrays}, plan.params["align"])
    fill(arrays, [a.name for a in plan.arrays])
    scalars = {"q": (ftype(Q),), "zero": (ftype(0),), None: ()}[scalar]
    args = tuple(arrays[n] for n in names) + scalars

    sweeps = plan.sweeps  # counted passes; warm-up passes are the timer's own repeats

    def run():
        for _ in range(sweeps):
            out = fn(*args)
        return out  # dot's sum; None for the others

    return Prepared(
        run=run,
        arrays=arrays,
        core_bytes=(plan.accesses - plan.warmup * plan.per_iteration) * elem,
        # daxpy adds 3x to y on every run: linear growth, harmless, so no reset between
        # the timed repeats.
        reset=None,
        notes=NT_NOTE if plan.params.get("nt") else "",
    )


for _name in _KERNELS:
    native(_name)(_prepare)
