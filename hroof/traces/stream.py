"""STREAM kernels (McCalpin), DAXPY and DOT: one pass over ``n`` elements.

Per element ``i``, in program order, the loads of the right-hand side (in the
order the expression names them), then the store (none for dot: its sum lives in a
register):

=======  ===========================  ======  =====  =====
kernel   statement                    loads   store  flops
=======  ===========================  ======  =====  =====
copy     ``c[i] = a[i]``              a       c      0
scale    ``b[i] = q * c[i]``          c       b      1
add      ``c[i] = a[i] + b[i]``       a, b    c      1
triad    ``z[i] = x[i] + q * y[i]``   x, y    z      2
daxpy    ``y[i] = a * x[i] + y[i]``   x, y    y      2
dot      ``s += x[i] * y[i]``         x, y    -      2
=======  ===========================  ======  =====  =====

Arrays are laid out in the order of the table's columns (loads, then the
store array if new), ``align`` bytes aligned and ``gap`` bytes apart.
``nt=true`` makes the stores non-temporal (streaming) stores (dot, storing nothing,
has no ``nt``). ``warmup``
passes run first and are not counted, then ``sweeps`` counted passes (STREAM's
repeated timing loop: with the arrays in a cache, the steady state moves no
bytes below it).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from hroof._base.jit import GEN, lazy_njit
from hroof._base.kinds import LOAD, NT_STORE, STORE
from hroof.traces.kernels import (
    DTYPES,
    Kernel,
    Param,
    Plan,
    layout,
    layout_params,
    register_kernel,
)
from hroof.traces.sampled import SetFilter, _count_streams, _emit_run, row_filter_args


@lazy_njit(**GEN)
def _stream_gen(pos, stop, addr, size, kind, args):
    """Whole elements of a STREAM-like loop: the loads, then the store (none when the
    store's base is -1)."""
    loads, store, elem, store_kind, count = args
    nl = loads.shape[0]
    per = nl + (store >= 0)
    cap = addr.shape[0]
    n = 0
    while pos < stop and n + per <= cap:
        off = (pos % count) * elem
        for j in range(nl):
            addr[n] = loads[j] + off
            size[n] = elem
            kind[n] = LOAD
            n += 1
        if store >= 0:
            addr[n] = store + off
            size[n] = elem
            kind[n] = store_kind
            n += 1
        pos += 1
    return n, pos


@lazy_njit(**GEN)
def _stream_sampled_gen(pos, stop, addr, size, kind, group, pc, core, args, fargs):
    """:func:`_stream_gen` set-sampled (:mod:`hroof.traces.sampled`): the kept pieces of
    whole elements, a pass at a time, and the counts of every access covered."""
    loads, elem, count = args[0], args[2], args[4]
    n = 0
    while pos < stop:
        i = pos % count
        cnt = min(count - i, stop - pos)
        b0 = loads[0] + i * elem
        n, done = _emit_run(b0, cnt, elem, 0, fargs, addr, size, kind, group, n)
        _count_streams(b0, done, elem, 0, fargs, pc, core)
        pos += done
        if done < cnt:  # the buffers are full
            break
    return n, pos


def _sampled(args: tuple, filt: SetFilter):
    """The set-sampled generator of a STREAM plan's ``args`` for ``filt`` (or None)."""
    loads, store, elem, store_kind, _ = args
    stored = [store - loads[0]] if store >= 0 else []
    deltas = np.array([[*(loads - loads[0]), *stored]], dtype=np.int64)
    kinds = [LOAD] * loads.shape[0] + [store_kind] * len(stored)
    fargs = row_filter_args(deltas, kinds, np.array([loads[0] % elem]), elem, filt)
    return None if fargs is None else (_stream_sampled_gen, args, fargs)


def _identity(u: int) -> int:
    return u


def _params(default_n: int, nt: bool = True) -> tuple[Param, ...]:
    return (
        Param("n", default_n, "elements per array", minimum=1),
        *([Param("nt", False, "non-temporal (streaming) stores: bypass the caches")] if nt else []),
        Param("sweeps", 1, "passes over the arrays counted", minimum=1),
        Param(
            "warmup",
            0,
            "passes simulated first and not counted (steady state; 0: cold, from empty caches)",
            minimum=0,
        ),
        *layout_params(),
    )


def _builder(loads: tuple[str, ...], store: str | None, flops_per: int):
    """The plan builder of a STREAM-like kernel (``store`` None: no store)."""
    names = list(dict.fromkeys((*loads, *([store] if store else []))))
    per = len(loads) + (store is not None)

    def build(p: dict) -> Plan:
        elem = DTYPES[p["dtype"]]
        n = p["n"]
        arrays = layout([(a, elem, n) for a in names], align=p["align"], gap=p["gap"])
        by_name = {a.name: a for a in arrays}
        sweeps, warm = p["sweeps"], p["warmup"]
        args = (
            np.array([by_name[a].base for a in loads], dtype=np.int64),
            by_name[store].base if store else -1,
            elem,
            NT_STORE if p.get("nt") else STORE,
            n,
        )
        return Plan(
            arrays=arrays,
            flops=flops_per * n * sweeps,
            iterations=n * (warm + sweeps),
            per_iteration=per,
            accesses=per * n * (warm + sweeps),
            warmup=n * warm,
            sweeps=sweeps,
            warmup_sweeps=warm,
            footprint=len(names) * elem * n,
            outer_units=n,  # the loop over i, split into blocks of elements
            outer_start=_identity,
            gen=_stream_gen,
            args=args,
            sampled=partial(_sampled, args),
        )

    return build


for _name, _summary, _loads, _store, _flops in (
    ("copy", "STREAM copy: c[i] = a[i] (0 flops)", ("a",), "c", 0),
    ("scale", "STREAM scale: b[i] = q*c[i] (1 flop)", ("c",), "b", 1),
    ("add", "STREAM add: c[i] = a[i] + b[i] (1 flop)", ("a", "b"), "c", 1),
    ("triad", "STREAM triad: z[i] = x[i] + q*y[i] (2 flops)", ("x", "y"), "z", 2),
    ("daxpy", "DAXPY: y[i] = a*x[i] + y[i] (2 flops)", ("x", "y"), "y", 2),
):
    register_kernel(Kernel(_name, _summary, _params(1 << 20), _builder(_loads, _store, _flops)))
register_kernel(Kernel("dot", "dot product: s += x[i]*y[i] (2 flops)", _params(1 << 20, nt=False),
                       _builder(("x", "y"), None, 2)))  # fmt: skip
