"""Any affine loop nest's exact access stream, from one compiled generator.

A kernel file (:mod:`hroof.traces.cfile`) bound to its constants becomes a
:class:`Bound` nest: per loop its lower bound, upper bounds and step as affine
coefficient arrays over the outer indices; per access its base address, byte strides
over the loop indices, size and kind. :func:`_nest_gen`, compiled once, interprets
those arrays: no kernel file generates or compiles code, so the hundredth file costs
no compile time.

Program order. The generator's unit (an iteration) is one iteration of the innermost
loop; a *row* is one run of the innermost loop. The statements before an inner loop
(``pre`` of level ``l``) run with the first iteration of it, those after it (``post``)
with the last: at the start of a row, ``pre(l)`` for every level ``l`` whose inner
loops (``l + 1 .. D - 2``) all stand at their first index, outermost first; at the
end, ``post(l)`` for every level whose inner loops all stand at their last, innermost
first. So an inner loop that runs no iteration would lose the statements around it: a
nest where that happens at the given sizes is refused. Rows whose innermost loop is
empty are skipped.

Where a call starts. Plan time walks every row once (:func:`_walk`, compiled) and
keeps a checkpoint (iteration, outer indices) at least every :data:`CHECK_EVERY` rows
or iterations; a call finds its start from the checkpoint before it, so resuming costs
at most that many rows. The same walk counts the iterations and each access's lowest
and highest index in every dimension, which :func:`bind` checks against the declared
sizes before anything is simulated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hroof._base.errors import HroofError
from hroof._base.guards import check_memory
from hroof._base.jit import GEN, lazy_njit
from hroof._base.kinds import LOAD, STORE
from hroof._base.units import INT_MAX
from hroof.traces.cfile import Nest
from hroof.traces.kernels import Array, layout

#: A checkpoint at least every this many rows or innermost iterations.
CHECK_EVERY = 1024
#: Upper bound standing for "no bound" in the padded bound arrays.
_NONE = INT_MAX


# --------------------------------------------------------------------------- evaluation
def evaluate(node, consts: dict, levels: dict, depth: int, path: str) -> tuple[int, list[int]]:
    """An integer expression (checked affine by the parser) as ``(constant, coefficients
    of the loop indices)``; C's truncating ``/`` and ``%`` between constants."""
    from pycparser import c_ast

    from hroof.traces.cfile import _int_literal, _where

    def ev(n):
        if isinstance(n, c_ast.Constant):
            return _int_literal(n, path), [0] * depth
        if isinstance(n, c_ast.ID):
            if n.name in levels:
                co = [0] * depth
                co[levels[n.name]] = 1
                return 0, co
            return consts[n.name], [0] * depth
        if isinstance(n, c_ast.UnaryOp):
            c, co = ev(n.expr)
            return (-c, [-x for x in co]) if n.op == "-" else (c, co)
        a, ca = ev(n.left)
        b, cb = ev(n.right)
        if n.op == "+":
            return a + b, [x + y for x, y in zip(ca, cb, strict=True)]
        if n.op == "-":
            return a - b, [x - y for x, y in zip(ca, cb, strict=True)]
        if n.op == "*":
            if any(ca):
                return a * b, [x * b for x in ca]
            return a * b, [a * y for y in cb]
        if b == 0:
            raise HroofError(f"{_where(path, n)}: division by zero in '{_expr_text(n)}'")
        q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
        return (q, [0] * depth) if n.op == "/" else (a - q * b, [0] * depth)

    return ev(node)


def _expr_text(node) -> str:
    from hroof.traces.cfile import _text

    return _text(node)


# --------------------------------------------------------------------------- bound nest
@dataclass(frozen=True)
class Bound:
    """A nest with its constants bound: the arrays the generator interprets.

    Loops (``D`` of them): ``lo_c[l] + lo_a[l] . idx`` is loop ``l``'s first index;
    its exclusive upper bound is the smallest over ``u`` of ``hi_c[l, u] + hi_a[l, u] .
    idx``; ``step[l]``. Accesses (``A``), in emission order: ``base[t]`` bytes plus
    ``stride[t] . idx``; ``asize``, ``akind``. ``seg``: accesses ``seg[s] .. seg[s+1]``
    form slot ``s``: ``pre(0) .. pre(D-2)``, body, ``post(D-2) .. post(0)``. ``dim_c``,
    ``dim_a``: each access's index in each dimension (padded to 4), for the bounds
    check; ``dims``: the declared sizes.
    """

    depth: int
    lo_c: np.ndarray
    lo_a: np.ndarray
    hi_c: np.ndarray
    hi_a: np.ndarray
    step: np.ndarray
    base: np.ndarray
    stride: np.ndarray
    asize: np.ndarray
    akind: np.ndarray
    seg: np.ndarray
    dim_c: np.ndarray
    dim_a: np.ndarray
    ndims: np.ndarray
    accesses: tuple  # (Access, Statement) in emission order
    arrays: tuple[Array, ...]
    dims: dict
    flops_per: list  # (Statement, flops) per slot order


def _slots(depth: int) -> list[tuple[int, str]]:
    """Emission order of the slots: pre(0..D-2), body, post(D-2..0)."""
    return ([(lv, "pre") for lv in range(depth - 1)] + [(depth - 1, "body")]
            + [(lv, "post") for lv in range(depth - 2, -1, -1)])  # fmt: skip


def bind(nest: Nest, consts: dict, *, align: int = 64, gap: int = 0) -> Bound:
    """Evaluate every bound, size and index of ``nest`` with ``consts`` (name -> int)."""
    path = nest.path
    D = len(nest.loops)
    levels = {lp.var: i for i, lp in enumerate(nest.loops)}
    dims = {}
    for a in nest.arrays:
        ds = [evaluate(d, consts, {}, D, path)[0] for d in a.dims]
        for k, d in enumerate(ds):
            if d < 1:
                raise HroofError(f"{a.where}: array {a.name}: dimension {k + 1} has size {d} "
                                 "at these constants (it must be at least 1)")  # fmt: skip
        dims[a.name] = ds
    arrays = layout([(a.name, a.elem, math.prod(dims[a.name])) for a in nest.arrays],
                    align=align, gap=gap)  # fmt: skip
    by_name = {a.name: a for a in arrays}
    H = max(len(lp.his) for lp in nest.loops)
    lo_c = np.zeros(D, np.int64)
    lo_a = np.zeros((D, D), np.int64)
    hi_c = np.full((D, H), _NONE, np.int64)
    hi_a = np.zeros((D, H, D), np.int64)
    step = np.zeros(D, np.int64)
    for i, lp in enumerate(nest.loops):
        c, co = evaluate(lp.lo, consts, levels, D, path)
        lo_c[i], lo_a[i] = c, co
        for u, (node, inclusive) in enumerate(lp.his):
            c, co = evaluate(node, consts, levels, D, path)
            hi_c[i, u], hi_a[i, u] = c + (1 if inclusive else 0), co
        s = evaluate(lp.step, consts, {}, D, path)[0]
        if s < 1:
            raise HroofError(f"{lp.where}: loop {lp.var} has step {s} at these constants "
                             "(it must be at least 1)")  # fmt: skip
        step[i] = s
    order = []
    seg = [0]
    flops_per = []
    for level, slot in _slots(D):
        for st in nest.statements:
            if st.level == level and st.slot == slot:
                order += [(acc, st) for acc in st.accesses]
                flops_per.append((st, st.flops))
        seg.append(len(order))
    A = len(order)
    base = np.zeros(A, np.int64)
    stride = np.zeros((A, D), np.int64)
    asize = np.zeros(A, np.uint32)
    akind = np.zeros(A, np.uint8)
    dim_c = np.zeros((A, 4), np.int64)
    dim_a = np.zeros((A, 4, D), np.int64)
    ndims = np.zeros(A, np.int64)
    for t, (acc, _st) in enumerate(order):
        arr = by_name[acc.array]
        ds = dims[acc.array]
        ndims[t] = len(ds)
        flat_c = 0
        flat_a = [0] * D
        for k, node in enumerate(acc.index):
            c, co = evaluate(node, consts, levels, D, path)
            dim_c[t, k], dim_a[t, k] = c, co
            row = math.prod(ds[k + 1 :])
            flat_c += c * row
            flat_a = [x + y * row for x, y in zip(flat_a, co, strict=True)]
        base[t] = arr.base + flat_c * arr.elem
        stride[t] = [x * arr.elem for x in flat_a]
        asize[t] = arr.elem
        akind[t] = STORE if acc.kind == "store" else LOAD
    return Bound(D, lo_c, lo_a, hi_c, hi_a, step, base, stride, asize, akind,
                 np.array(seg, np.int64), dim_c, dim_a, ndims, tuple(order), arrays, dims,
                 flops_per)  # fmt: skip


# --------------------------------------------------------------------------- compiled
@lazy_njit(**GEN)
def _lo(lvl, idx, lo_c, lo_a):
    v = lo_c[lvl]
    for e in range(lvl):
        v += lo_a[lvl, e] * idx[e]
    return v


@lazy_njit(**GEN)
def _hi(lvl, idx, hi_c, hi_a):
    best = hi_c[lvl, 0]
    for e in range(lvl):
        best += hi_a[lvl, 0, e] * idx[e]
    for u in range(1, hi_c.shape[1]):
        if hi_c[lvl, u] == 9223372036854775807:
            continue
        v = hi_c[lvl, u]
        for e in range(lvl):
            v += hi_a[lvl, u, e] * idx[e]
        if v < best:
            best = v
    return best


@lazy_njit(**GEN)
def _advance(idx, lvl, lo_c, lo_a, hi_c, hi_a, step, depth):
    """Step loop ``lvl`` and descend to the next row (loops ``0 .. depth-2`` set; the
    innermost loop is not touched). Returns ``(found, deepest empty loop level)``: found
    is False when the nest is done; an empty loop met on the way is reported (-1: none)."""
    empty = -1
    while lvl >= 0:
        idx[lvl] += step[lvl]
        if idx[lvl] >= _hi(lvl, idx, hi_c, hi_a):
            lvl -= 1
            continue
        m = lvl + 1
        ok = True
        while m <= depth - 2:
            idx[m] = _lo(m, idx, lo_c, lo_a)
            if idx[m] >= _hi(m, idx, hi_c, hi_a):
                ok = False
                if m > empty:
                    empty = m
                break
            m += 1
        if ok:
            return True, empty
        lvl = m - 1
    return False, empty


@lazy_njit(**GEN)
def _first_row(idx, lo_c, lo_a, hi_c, hi_a, step, depth):
    """Set ``idx`` to the first row; ``(found, deepest empty loop met)``."""
    if depth == 1:
        return True, -1
    idx[0] = _lo(0, idx, lo_c, lo_a) - step[0]
    return _advance(idx, 0, lo_c, lo_a, hi_c, hi_a, step, depth)


@lazy_njit(**GEN)
def _trip(idx, lo_c, lo_a, hi_c, hi_a, step, depth):
    """First index and iterations of the innermost loop in the row ``idx``."""
    d = depth - 1
    lo = _lo(d, idx, lo_c, lo_a)
    hi = _hi(d, idx, hi_c, hi_a)
    if hi <= lo:
        return lo, 0
    return lo, (hi - lo + step[d] - 1) // step[d]


@lazy_njit(**GEN)
def _at_first(lv, idx, lo_c, lo_a, depth):
    """Whether loops ``lv + 1 .. depth - 2`` stand at their first iteration (a row that
    starts an iteration of loop ``lv``)."""
    for e in range(lv + 1, depth - 1):  # noqa: SIM110 (a plain loop for Numba)
        if idx[e] != _lo(e, idx, lo_c, lo_a):
            return False
    return True


@lazy_njit(**GEN)
def _emit_seg(t0, t1, lv, idx, base, stride, asize, akind, addr, size, kind, n):
    """Emit accesses ``t0 .. t1 - 1`` (a pre or post segment of loop ``lv``: their addresses
    depend on loops ``0 .. lv`` only) at ``n``; return the new ``n``."""
    for t in range(t0, t1):
        a = base[t]
        for e in range(lv + 1):
            a += stride[t, e] * idx[e]
        addr[n] = a
        size[n] = asize[t]
        kind[n] = akind[t]
        n += 1
    return n


@lazy_njit(**GEN)
def _walk(lo_c, lo_a, hi_c, hi_a, step, depth, dim_c, dim_a, ndims, every, ck_pos, ck_idx,
          dmin, dmax, counts, outer):  # fmt: skip
    """Every row of the nest once: the iterations, the rows, checkpoints (while
    ``ck_pos`` has room; -1 if it ran out), the deepest empty loop, each access's
    lowest and highest index per dimension into ``dmin``, ``dmax``, and into
    ``counts[l]`` the iterations of loop ``l`` that reach the innermost loop, and into
    ``outer[u]`` the iteration where the ``u``-th of those of loop 0 starts (while it
    has room)."""
    idx = np.zeros(depth, np.int64)
    found, empty = _first_row(idx, lo_c, lo_a, hi_c, hi_a, step, depth)
    total = 0
    rows = 0
    nck = 0
    since = every
    while found:
        lo, trip = _trip(idx, lo_c, lo_a, hi_c, hi_a, step, depth)
        if trip == 0:
            empty = depth - 1
        for lv in range(depth - 1):
            if _at_first(lv, idx, lo_c, lo_a, depth):
                if lv == 0 and counts[0] < outer.shape[0]:
                    outer[counts[0]] = total
                counts[lv] += 1
        if since >= every:
            if nck == ck_pos.shape[0]:
                return total, rows, -1, empty
            ck_pos[nck] = total
            for e in range(depth):
                ck_idx[nck, e] = idx[e]
            nck += 1
            since = 0
        if trip > 0:
            last = lo + (trip - 1) * step[depth - 1]
            for t in range(dim_c.shape[0]):
                for k in range(ndims[t]):
                    v = dim_c[t, k]
                    for e in range(depth - 1):
                        v += dim_a[t, k, e] * idx[e]
                    a = dim_a[t, k, depth - 1]
                    v0 = v + a * lo
                    v1 = v + a * last
                    if v1 < v0:
                        v0, v1 = v1, v0
                    if v0 < dmin[t, k]:
                        dmin[t, k] = v0
                    if v1 > dmax[t, k]:
                        dmax[t, k] = v1
        total += trip
        rows += 1
        since += max(trip, 1)
        if depth == 1:
            break
        found, e2 = _advance(idx, depth - 2, lo_c, lo_a, hi_c, hi_a, step, depth)
        if e2 > empty:
            empty = e2
    return total, rows, nck, empty


@lazy_njit(**GEN)
def _nest_gen(pos, stop, addr, size, kind, args):
    """Whole innermost iterations of an affine nest (:class:`Bound`), a row segment at a
    time, with the statements around inner loops at the first and last of a row."""
    (lo_c, lo_a, hi_c, hi_a, step, depth, base, stride, asize, akind, seg, units, ck_pos,
     ck_idx, per) = args  # fmt: skip
    cap = addr.shape[0]
    n = 0
    if pos >= stop or n + per > cap:
        return n, pos
    D = depth
    nslot = 2 * D - 1
    b0 = seg[D - 1]
    b1 = seg[D]
    nbody = b1 - b0
    npost = seg[nslot] - b1
    cur = np.empty(base.shape[0], np.int64)
    inc = np.empty(base.shape[0], np.int64)
    for t in range(base.shape[0]):
        inc[t] = stride[t, D - 1] * step[D - 1]
    uniform = nbody > 0
    inc0 = inc[b0] if nbody > 0 else 0
    usize = asize[b0] if nbody > 0 else 0
    for t in range(b0, b1):
        if inc[t] != inc0 or asize[t] != usize:
            uniform = False
    idx = np.zeros(D, np.int64)
    # Decode: the checkpoint at or before this sweep's iteration r, then row by row.
    sweep_start = (pos // units) * units
    r = pos - sweep_start
    c = np.searchsorted(ck_pos, r, side="right") - 1
    p = ck_pos[c]
    for e in range(D):
        idx[e] = ck_idx[c, e]
    lo, trip = _trip(idx, lo_c, lo_a, hi_c, hi_a, step, D)
    while p + trip <= r:
        p += trip
        _advance(idx, D - 2, lo_c, lo_a, hi_c, hi_a, step, D)
        lo, trip = _trip(idx, lo_c, lo_a, hi_c, hi_a, step, D)
    i_in = r - p
    while pos < stop:
        if n + per > cap:
            break
        if i_in == 0:  # the row starts: pre(l) where loops l+1 .. D-2 stand at their first
            for lv in range(D - 1):
                if _at_first(lv, idx, lo_c, lo_a, D):
                    n = _emit_seg(seg[lv], seg[lv + 1], lv, idx, base, stride, asize, akind,
                                  addr, size, kind, n)  # fmt: skip
        k = min(trip - i_in, stop - pos)
        if nbody > 0:
            k = min(k, (cap - n - npost) // nbody)
        x = lo + i_in * step[D - 1]
        for t in range(b0, b1):
            a = base[t] + stride[t, D - 1] * x
            for e in range(D - 1):
                a += stride[t, e] * idx[e]
            cur[t] = a
        if uniform:  # every body access moves alike (a stencil, STREAM): column by column
            for t in range(b0, b1):
                a = cur[t]
                kd = akind[t]
                j = n + t - b0
                for _ in range(k):
                    addr[j] = a
                    size[j] = usize
                    kind[j] = kd
                    a += inc0
                    j += nbody
            n += k * nbody
        else:
            for _ in range(k):
                for t in range(b0, b1):
                    addr[n] = cur[t]
                    size[n] = asize[t]
                    kind[n] = akind[t]
                    n += 1
                    cur[t] += inc[t]
        i_in += k
        pos += k
        if i_in == trip:  # the row ends: post(l) where loops l+1 .. D-2 stand at their last
            for s in range(D - 1):
                lv = D - 2 - s
                last = True
                for e in range(lv + 1, D - 1):
                    if idx[e] + step[e] < _hi(e, idx, hi_c, hi_a):
                        last = False
                        break
                if last:
                    n = _emit_seg(seg[D + s], seg[D + s + 1], lv, idx, base, stride, asize,
                                  akind, addr, size, kind, n)  # fmt: skip
            i_in = 0
            trip = 0
            while trip == 0:
                found = False
                if D > 1:
                    found, _ = _advance(idx, D - 2, lo_c, lo_a, hi_c, hi_a, step, D)
                if not found:  # the next sweep starts at the first row
                    _first_row(idx, lo_c, lo_a, hi_c, hi_a, step, D)
                lo, trip = _trip(idx, lo_c, lo_a, hi_c, hi_a, step, D)
    return n, pos


# --------------------------------------------------------------------------- walk
def upper_counts(b: Bound) -> tuple[int, int]:
    """Upper bounds of the rows and of the innermost iterations of ``b``, from its bounds
    by interval arithmetic over the outer indices' ranges (no walk: to refuse an absurd
    size before walking it)."""
    ranges: list[tuple[int, int]] = []
    trips = []

    def span(c, a):  # the range of c + a . idx over the outer indices' ranges
        lo = hi = int(c)
        for e, (r0, r1) in enumerate(ranges):
            x, y = int(a[e]) * r0, int(a[e]) * r1
            lo, hi = lo + min(x, y), hi + max(x, y)
        return lo, hi

    for lv in range(b.depth):
        lo_min = span(b.lo_c[lv], b.lo_a[lv])[0]
        his = [span(b.hi_c[lv, u], b.hi_a[lv, u]) for u in range(b.hi_c.shape[1])
               if u == 0 or b.hi_c[lv, u] != _NONE]  # fmt: skip
        hi_max = min(h[1] for h in his)
        step = int(b.step[lv])
        trips.append(max(0, -(-(hi_max - lo_min) // step)))
        ranges.append((lo_min, max(lo_min, hi_max - 1)))
    rows = math.prod(trips[:-1])
    return rows, rows * trips[-1]


def _outer_room(b: Bound) -> int:
    """Room for the starts of the outermost loop's iterations: its trip count from its
    bounds (constants only: it has no outer loop), at most 2^24 (more: not split)."""
    if b.depth == 1:
        return 0
    hi = min(int(b.hi_c[0, u]) for u in range(b.hi_c.shape[1]))
    trips = max(0, -(-(hi - int(b.lo_c[0])) // int(b.step[0])))
    return min(trips, 1 << 24)


@dataclass(frozen=True)
class Walked:
    """What one walk of a bound nest found: iterations, rows, checkpoints, the deepest
    empty loop (-1: none), each access's index range per dimension, the iterations of
    each loop that reach the innermost one, and where each of the outermost loop's
    iterations starts (empty for a single loop or one not split)."""

    iterations: int
    rows: int
    ck_pos: np.ndarray
    ck_idx: np.ndarray
    empty: int
    dmin: np.ndarray
    dmax: np.ndarray
    counts: np.ndarray
    outer: np.ndarray


def walk(b: Bound, *, every: int | None = None) -> Walked:
    """Walk every row of ``b`` once (compiled; a few nanoseconds a row); a checkpoint at
    least every ``every`` rows or iterations (default :data:`CHECK_EVERY`)."""
    every = CHECK_EVERY if every is None else every
    D = b.depth
    # Checkpoints: at most one per `every` rows or iterations; the count is not known
    # before the walk, so start with room for a million and grow the stride if short.
    while True:
        cap = 1 << 20
        check_memory(8 * (D + 1) * cap, "the checkpoints of a kernel file's nest")
        ck_pos = np.zeros(cap, np.int64)
        ck_idx = np.zeros((cap, D), np.int64)
        A = b.base.shape[0]
        dmin = np.full((A, 4), _NONE, np.int64)
        dmax = np.full((A, 4), -_NONE, np.int64)
        counts = np.zeros(D, np.int64)
        outer = np.zeros(_outer_room(b), np.int64)
        total, rows, nck, empty = _walk(b.lo_c, b.lo_a, b.hi_c, b.hi_a, b.step, D, b.dim_c,
                                        b.dim_a, b.ndims, every, ck_pos, ck_idx, dmin, dmax,
                                        counts, outer)  # fmt: skip
        if nck >= 0:
            units = int(counts[0]) if D > 1 else 0
            starts = outer[:units] if units <= outer.shape[0] else outer[:0]
            return Walked(int(total), int(rows), ck_pos[:nck].copy(), ck_idx[:nck].copy(),
                          int(empty), dmin, dmax, counts, starts.copy())  # fmt: skip
        every *= 16
