"""Layer conditions of any affine loop nest (a kernel file), from the file alone.

:mod:`hroof.roofline.layers` works the conditions of the built-in stencils out by hand;
this module derives them for any nest :mod:`hroof.traces.cfile` reads, following the
idea of Stengel et al., "Quantifying performance bottlenecks of stencil computations
using the execution-cache-memory model" (ICS 2015) and the layer-condition predictor
of Hammer et al., "Kerncraft: A Tool for Analytic Performance Modeling of Loop
Kernels" (2017). The derivation is hroof's own:

*Streams.* The accesses of the innermost body are grouped by array and stride vector
(their byte strides over every loop): the accesses of a group differ by a constant
offset. A group advances ``r`` bytes an innermost iteration (its innermost stride
times the step). It is *streaming* when ``0 < r < line``, *strided* when ``r >= line``
(every iteration a new line: a column walk), *invariant* when ``r = 0`` (the element
stays put in the innermost loop; its traffic, once a row, is left out).

*Reuses*, each with the iteration difference ``delta`` from one use to the next, its
time ``T`` (innermost iterations) and the loop that carries it (the outermost loop
``delta`` moves, named after its index). One step of a loop moves a group by its
*effective stride*: its own stride plus the strides of the inner loops whose lower bound
follows it (``j = jj`` in a blocked nest).

* two neighbouring offsets ``d`` bytes apart in a streaming group: the trailing access
  meets what the leading one touched ``delta`` earlier, ``delta`` taking, loop by loop
  from the largest effective stride down, the nearest whole number of steps (``+kS -
  jS`` is one plane on and one row back, ``(k: +1, j: -1)``); ``T`` is ``delta`` times
  the iterations a step of each loop spans (``d / r`` when ``d`` is no whole number of
  steps);
* a streaming group whose effective stride over an outer loop ``L`` is 0 (``x[j]`` in
  ``s += A[i][j]*x[j]``, ``y[i]`` in ``y[i] += A[i][j]*x[j]`` with ``j`` outer): all of it
  is met again one iteration of ``L`` later, ``T = P(L)`` (the innermost iterations in one
  iteration of ``L``);
* a strided group: its lines are met again when the innermost outer loop ``L`` whose
  effective stride is below a line moves on, ``T = P(L)`` (``A[i][j]`` walked down a
  column: the next column shares the lines).

*Requirement.* Keeping every reuse of time ``<= T`` in a fully associative LRU cache
needs the distinct bytes the nest touches meanwhile. Per streaming group, with ``w`` the
bytes it advances: the union of its accesses' spans, ``sum(d <= w) + w (#(d > w) + 1)``
(the rule :mod:`hroof.roofline.layers` derives for the stencils). ``w`` is the group's
flat advance over ``delta`` when the loops inside the carrying loop have bounds free of
the outer indices, or it is at most ``2 T r`` (a full sweep of rows and planes, halo
included: the stencils' exact figure), else ``T r`` (a blocked walk touches only its
block's rows); ``T r`` too for a group that advances less over ``delta`` than through
its inner loops (one standing still over the carrying loop); at most one ``L``-layer
for a group reused over ``L``. Per strided
group, ``k`` lines an iteration (``k`` offsets) up to ``P(L)`` iterations, then ``k |e_L|``
bytes an iteration; per invariant group ``k`` lines.

*Traffic.* Each broken reuse of a streaming group adds ``r`` bytes an iteration (one
more stream read from below); a group's leading stream is read once (``r``), or not at
all while its reuse over an outer loop holds. A strided group moves ``k`` lines an
iteration while its reuse over ``L`` is broken, ``k |e_L|`` bytes while it holds.
Stores add their write-back (``r``), and a store whose group has no load a
write-allocate fill (at a write-allocate level).

*Conditions.* The reuses carried by one loop form that loop's layer condition; its
requirement is the largest of theirs. Conditions hold from the smallest up while
their requirement fits ``safety`` times the level's capacity (:func:`hroof.roofline.
layers.effective_capacity`); the bytes a level moves below are the traffic with the
conditions that hold.

What it leaves out (and the simulator shows): set conflicts, a cache's other data, the
halo rows at the ends of loops, the first iteration's compulsory misses, statements
outside the innermost loop, the traffic of invariant groups (a few bytes a row), the
real LRU order within a line; triangular bounds are taken at the outer loops' first
indices. For the files of the built-in stencils the requirements, traffic and walls are
those of :mod:`hroof.roofline.layers` (tested); for a blocked nest ``T r`` counts the
block's interior rows only, a little less than the ``(4 bj + 2) jS`` elements
:mod:`~hroof.roofline.layers` counts (1,924 against 2,244 at n = 64, bj = 8).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from hroof._base.errors import HroofError
from hroof._base.units import INT_MAX
from hroof.cachesim.config import HierarchyConfig
from hroof.roofline.layers import PredictedWall, _disjoint, effective_capacity


@dataclass(frozen=True)
class Reuse:
    """One reuse of the nest: its time (innermost iterations), the loop carrying it, the
    group, and the iteration difference (per loop) from one use to the next."""

    time: float
    loop: str
    group: int
    delta: tuple
    outer: bool = False


@dataclass(frozen=True)
class _Group:
    array: str
    stride: tuple  # bytes per unit of each loop index
    rate: int  # bytes an innermost iteration
    offsets: tuple  # sorted distinct byte offsets
    loads: bool
    stores: int  # store accesses in the group
    strided: bool
    outer_loop: int  # -1: none; the loop of its reuse over an outer loop
    outer_time: float
    outer_stride: int  # |effective stride| over that loop, bytes a step


@dataclass(frozen=True)
class NestCondition:
    """One loop's layer condition: ``loop`` (its index name), the bytes a cache must hold
    for it (``requirement``), the bytes an innermost iteration moved below while it
    and every smaller one hold and no larger one (``bytes_per_iteration``, at a
    write-allocate level; ``bytes_no_wa`` without write-allocate)."""

    loop: str
    requirement: int
    bytes_per_iteration: float
    bytes_no_wa: float
    arrays: tuple = ()

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class _Shape:
    """The nest's loops as the model sees them: per loop its step, the innermost
    iterations one step of it spans (``per``, trips taken at the outer loops' first
    indices), and how one step of it moves the inner loops' lower bounds."""

    names: tuple
    step: tuple
    per: tuple
    lo_a: object
    rect: tuple  # rect[l]: the loops inside loop l have bounds free of outer indices


def _shape(b, nest) -> _Shape:
    idx: list[int] = []
    trips = []
    for lv in range(b.depth):
        lo = int(b.lo_c[lv]) + sum(int(b.lo_a[lv, e]) * idx[e] for e in range(lv))
        his = [
            int(b.hi_c[lv, u]) + sum(int(b.hi_a[lv, u, e]) * idx[e] for e in range(lv))
            for u in range(b.hi_c.shape[1])
            if u == 0 or b.hi_c[lv, u] != INT_MAX
        ]
        step = int(b.step[lv])
        trips.append(max(0, -(-(min(his) - lo) // step)))
        idx.append(lo)
    per = tuple(math.prod(trips[lv + 1 :]) for lv in range(b.depth))
    free = [not b.lo_a[m].any() and not b.hi_a[m].any() for m in range(b.depth)]
    rect = tuple(all(free[lv + 1 :]) for lv in range(b.depth))
    return _Shape(tuple(lp.var for lp in nest.loops), tuple(int(x) for x in b.step), per,
                  b.lo_a, rect)  # fmt: skip


def _effective(shape: _Shape, stride: tuple) -> list[int]:
    """Bytes one step of each loop moves a group's accesses, the inner loops' lower bounds
    that follow it included (a blocked loop ``jj`` moves ``j``'s rows)."""
    D = len(stride)
    out = []
    for lv in range(D):
        e = stride[lv] + sum(int(shape.lo_a[m, lv]) * stride[m] for m in range(lv + 1, D))
        out.append(e * shape.step[lv])
    return out


def _groups(b, shape: _Shape, line: int) -> list[_Group]:
    D = b.depth
    body = range(int(b.seg[D - 1]), int(b.seg[D]))
    found: dict = {}
    for t in body:
        acc, _ = b.accesses[t]
        key = (acc.array, tuple(int(x) for x in b.stride[t]))
        found.setdefault(key, []).append(t)
    out = []
    for (array, stride), ts in found.items():
        eff = _effective(shape, stride)
        rate = abs(eff[D - 1])
        offsets = tuple(sorted({int(b.base[t]) for t in ts}))
        loads = any(b.accesses[t][0].kind == "load" for t in ts)
        stores = sum(1 for t in ts if b.accesses[t][0].kind == "store")
        strided = rate >= line
        outer, otime, ostride = -1, 0.0, 0
        for lv in range(D - 2, -1, -1):  # the innermost outer loop of the reuse
            s = abs(eff[lv])
            if (strided and s < line) or (not strided and s == 0):
                outer, otime, ostride = lv, float(shape.per[lv]), s
                break
        out.append(_Group(array, stride, rate, offsets, loads, stores, strided, outer, otime,
                          ostride))  # fmt: skip
    return out


def _decompose(shape: _Shape, g: _Group, d: int) -> tuple[tuple, float]:
    """The iteration difference that moves group ``g``'s accesses by ``d`` bytes: loops by
    decreasing effective stride, each taking the nearest whole number of steps (so a
    reuse one plane on and one row back is ``(k: +1, j: -1)``); and its time."""
    eff = _effective(shape, g.stride)
    order = sorted((lv for lv in range(len(eff)) if eff[lv]), key=lambda lv: -abs(eff[lv]))
    delta = [0] * len(eff)
    rest = d
    for lv in order:
        q = math.floor(rest / eff[lv] + 0.5)
        delta[lv] = q
        rest -= q * eff[lv]
    time = sum(q * p for q, p in zip(delta, shape.per, strict=True))
    if time <= 0 or rest:
        time = d / g.rate  # not a whole number of steps: the even-advance view
    return tuple(delta), float(time)


def _reuses(shape: _Shape, groups: list[_Group]) -> list[Reuse]:
    out = []
    for i, g in enumerate(groups):
        if g.rate and not g.strided:
            for lo, hi in itertools.pairwise(g.offsets):
                delta, time = _decompose(shape, g, hi - lo)
                lv = next((k for k, q in enumerate(delta) if q), len(delta) - 1)
                out.append(Reuse(time, shape.names[lv], i, delta))
        if g.outer_loop >= 0 and g.rate:
            delta = tuple(1 if k == g.outer_loop else 0 for k in range(len(shape.names)))
            out.append(Reuse(g.outer_time, shape.names[g.outer_loop], i, delta, True))
    return out


def _window(g: _Group, shape: _Shape, delta: tuple, T: float, line: int) -> float:
    """Distinct bytes group ``g`` touches while the nest moves by ``delta`` (``T``
    innermost iterations): its flat advance over ``delta`` where the loops inside the
    carrying loop sweep whole rows and planes, else ``T`` times its rate (a blocked walk
    touches only the block's rows; a group that stands still over ``delta`` still
    streams through its inner loops)."""
    if g.rate == 0:
        return float(line * len(g.offsets))
    if g.strided:
        span = min(T, g.outer_time) if g.outer_loop >= 0 else T
        return len(g.offsets) * (line * span + g.outer_stride * max(0.0, T - span))
    eff = _effective(shape, g.stride)
    flat = abs(sum(q * e for q, e in zip(delta, eff, strict=True)))
    carrier = next((lv for lv, q in enumerate(delta) if q), len(delta) - 1)
    whole = shape.rect[carrier] or flat <= 2 * T * g.rate  # (a block as large as the grid)
    w = flat if whole and flat >= T * g.rate else T * g.rate
    if g.outer_loop >= 0:
        w = min(w, g.rate * g.outer_time)
    gaps = [hi - lo for lo, hi in itertools.pairwise(g.offsets)]
    return sum(d for d in gaps if d <= w) + w * (sum(1 for d in gaps if d > w) + 1)


def _traffic(g: _Group, times: list, holds, line: int, write_allocate: bool) -> float:
    """Bytes an innermost iteration group ``g`` moves below; ``times`` its offset reuses'
    times, ``holds(time)`` which reuses hold."""
    if g.rate == 0:
        return 0.0
    if g.strided:
        ok = g.outer_loop >= 0 and holds(g.outer_time)
        per_stream = g.outer_stride if ok else line
        k = len(g.offsets)
        read = per_stream * k if (g.loads or write_allocate) else 0.0
        return read + (per_stream * k if g.stores else 0.0)
    streams = sum(1 for t in times if not holds(t))
    lead = 0 if (g.outer_loop >= 0 and holds(g.outer_time)) else 1
    read = (streams + lead) * g.rate
    if not g.loads and not write_allocate:
        read = 0.0
    write = g.rate * lead if g.stores else 0.0
    return read + write


def nest_conditions(kernel: str, params: dict, line: int) -> list[NestCondition]:
    """The layer conditions of a kernel file with ``params`` (its constants; the others
    default), smallest requirement first, after ``"none"`` (no reuse kept); ``line``
    bytes a cache line."""
    from hroof.traces import get_kernel
    from hroof.traces.affine import bind

    k = get_kernel(kernel)
    nest = getattr(k, "nest", None)
    if nest is None:
        raise HroofError(f"layer conditions of a nest are for kernel files, not {kernel!r}")
    values = {p.name: p.default for p in k.params}
    values.update({key: k.param(key).parse(v, kernel) for key, v in params.items()})
    try:
        b = bind(nest, {c: values[c] for c in nest.constants}, align=values["align"],
                 gap=values["gap"])  # fmt: skip
    except OverflowError:
        raise HroofError(f"{kernel}: sizes beyond the 64-bit range") from None
    shape = _shape(b, nest)
    groups = _groups(b, shape, line)
    reuses = _reuses(shape, groups)
    times = {i: [r.time for r in reuses if r.group == i and not r.outer]
             for i in range(len(groups))}  # fmt: skip
    largest: dict[str, Reuse] = {}
    for r in reuses:
        if r.loop not in largest or r.time > largest[r.loop].time:
            largest[r.loop] = r
    out = []

    def traffic(holds, wa):
        return sum(_traffic(g, times[i], holds, line, wa) for i, g in enumerate(groups))

    for loop, r in sorted(largest.items(), key=lambda kv: kv[1].time):
        need = sum(_window(g, shape, r.delta, r.time, line) for g in groups)

        def holds(t, T=r.time):
            return t <= T * (1 + 1e-12)

        arrays = tuple(dict.fromkeys(groups[x.group].array for x in reuses if x.loop == loop))
        out.append(NestCondition(loop, math.ceil(need), traffic(holds, True),
                                 traffic(holds, False), arrays))  # fmt: skip
    out.insert(0, NestCondition("none", 0, traffic(lambda t: False, True),
                                traffic(lambda t: False, False)))  # fmt: skip
    return out


def nest_walls(kernel: str, fixed: dict, param: str, hierarchy: HierarchyConfig, *,
               steady: bool = False, safety: float = 1.0, cores: int = 1,
               limit: int = 1 << 22) -> list[PredictedWall]:  # fmt: skip
    """Every wall the layer conditions predict for a kernel file as ``param`` grows, the
    other constants ``fixed``: per cache level and condition, the largest value for
    which it still holds (``n`` of the :class:`~hroof.roofline.layers.PredictedWall`;
    None: it holds at every value up to ``limit``). With ``steady`` the whole working set
    (every array) comes first, as for the stencils."""
    from hroof._base.units import format_bytes
    from hroof.traces import get_kernel

    k = get_kernel(kernel)
    line = hierarchy.levels[0].line

    def conds(v: int) -> dict[str, NestCondition]:
        return {c.loop: c for c in nest_conditions(kernel, {**fixed, param: v}, line)}

    def whole(v: int) -> int:
        from hroof.traces.affine import bind

        values = {p.name: p.default for p in k.params}
        values.update({key: k.param(key).parse(x, kernel) for key, x in fixed.items()})
        values[param] = v
        b = bind(k.nest, {c: values[c] for c in k.nest.constants}, align=values["align"],
                 gap=values["gap"])  # fmt: skip
        return sum(a.nbytes for a in b.arrays)

    def largest(need, budget: float) -> int | None:
        """The largest v >= 1 with need(v) <= budget (0: not even 1; None: it holds up to
        ``limit`` or as far as the sizes stay in the 64-bit range)."""

        def fits(v: int) -> bool | None:
            try:
                return need(v) <= budget
            except (HroofError, OverflowError):
                return None  # beyond what can be laid out

        first = fits(1)
        if first is None:
            return None
        if not first:
            return 0
        lo, hi = 1, 2
        while fits(hi):
            lo, hi = hi, hi * 2
            if hi > limit:
                return None
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if fits(mid) else (lo, mid)
        return None if fits(lo + 1) is None else lo

    names: list[str] = []
    carried: dict[str, tuple] = {}
    for v in (16, 64, 8, 4):  # the conditions a nest has do not depend on the sizes
        try:
            found = conds(v)
        except HroofError:
            continue
        names = [n for n in found if n != "none"]
        carried = {n: c.arrays for n, c in found.items()}
        break
    first_shared = hierarchy.first_shared(cores)
    levels = hierarchy.levels
    out = []
    for i, lv in enumerate(levels):
        eff, note = effective_capacity(hierarchy, i)
        chain = range(i - len(_disjoint(levels, i)) + 1, i + 1)
        per_core = sum(levels[j].size / (cores if j >= first_shared else 1) for j in chain)
        total = sum(levels[j].size * (1 if j >= first_shared else cores) for j in chain)
        todo = (["whole"] if steady else []) + names[::-1]
        for name in todo:
            if name == "whole":
                budget = safety * total
                n = largest(whole, budget)
                req = whole(n + 1) if n is not None else None
                text = "the whole working set (every array) no longer fits between sweeps"
            else:
                budget = safety * per_core

                def need(v, name=name):
                    c = conds(v).get(name)
                    return c.requirement if c is not None else 0

                n = largest(need, budget)
                req = need(n + 1) if n is not None else None
                arrays = ", ".join(carried.get(name, ()))
                size = format_bytes(req) if req else "?"
                text = (f"layer condition of loop {name} (the reuse of {arrays} across its "
                        f"iterations): the {size} touched between two uses at "
                        f"{param}={(n or 0) + 1} no longer fit")  # fmt: skip
            if note:
                text += f"; capacity {note}"
            if cores > 1 and i >= first_shared and name != "whole":
                text += f" (in 1/{cores} of the shared {lv.name})"
            out.append(PredictedWall(lv.name, name, n, req, f"{lv.name}: {text}", eff))
    return out


@dataclass(frozen=True)
class NestLevel:
    """The layer condition that holds at one cache level for a kernel file at given sizes:
    the level, where its traffic goes, the capacity that keeps the reused data (under the
    level's inclusion policy), the largest condition that fits (``holds``: a loop's
    index, ``"none"``, or ``"every array"`` when they all fit), its requirement, and the
    predicted bytes an innermost iteration moved below (the level's write-allocate
    counted; None when every array fits: then only compulsory traffic moves)."""

    level: str
    below: str
    capacity: int
    holds: str
    requirement: int
    bytes_per_iteration: float | None

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def _arrays_bytes(kernel: str, params: dict) -> int:
    """Bytes of every array of a kernel file at ``params``, as laid out."""
    from hroof.traces import get_kernel
    from hroof.traces.affine import bind

    k = get_kernel(kernel)
    values = {p.name: p.default for p in k.params}
    values.update({key: k.param(key).parse(v, kernel) for key, v in params.items()})
    b = bind(k.nest, {c: values[c] for c in k.nest.constants}, align=values["align"],
             gap=values["gap"])  # fmt: skip
    return sum(a.nbytes for a in b.arrays)


def nest_layer_conditions(kernel: str, params: dict, hierarchy: HierarchyConfig, *,
                          safety: float = 1.0) -> list[NestLevel]:  # fmt: skip
    """Per cache level, the layer condition of a kernel file that holds with ``params``
    and the bytes an innermost iteration it predicts below (``safety`` times each
    level's effective capacity; 1, the exact LRU rule, by default)."""
    if isinstance(safety, bool) or not isinstance(safety, (int, float)) or not 0 < safety <= 1:
        raise HroofError(f"safety must be a fraction of the capacity in (0, 1], got {safety!r}")
    conds = nest_conditions(kernel, params, hierarchy.levels[0].line)
    total = _arrays_bytes(kernel, params)
    names = [lv.name for lv in hierarchy.levels] + [hierarchy.memory_name]
    out = []
    for i, lv in enumerate(hierarchy.levels):
        eff, _ = effective_capacity(hierarchy, i)
        if total <= safety * eff:  # every array stays: only the first touches move
            out.append(NestLevel(lv.name, names[i + 1], eff, "every array", total, None))
            continue
        c = [x for x in conds if x.requirement <= safety * eff][-1]
        per = c.bytes_per_iteration if lv.write_allocate else c.bytes_no_wa
        out.append(NestLevel(lv.name, names[i + 1], eff, c.loop, c.requirement, per))
    return out
