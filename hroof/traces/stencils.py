"""Jacobi stencil sweeps: the 2D 5-point, 3D 7-point and 3D 27-point stencils.

Each kernel reads the grid ``old`` and writes the grid ``new``; a grid is the
interior (``nx x ny`` or ``nx x ny x nz`` points) plus a one-point halo, stored
with ``i`` (x) the fastest index. Point ``(i, j, k)``, each from 0 (halo) to
``n + 1`` (halo), is element ``i + j*jS + k*kS`` of its array, where

* ``jS = nx + 2 + pad_row`` (elements per row, ``pad_row`` unused ones at its end),
* ``kS = jS * (ny + 2) + pad_plane`` (elements per plane, 3D only).

Padding (``pad_row``, ``pad_plane``) moves rows and planes off power-of-two
strides, which removes the conflict misses that such strides cause. An array
holds ``jS * (ny + 2)`` (2D) or ``kS * (nz + 2)`` (3D) elements; ``old`` comes
first, then ``new``, ``align`` bytes aligned and ``gap`` bytes apart.

Per interior point ``c``, in program order, the loads, then the store of
``new[c]``:

==========  ===========================================  =====  ======  =====
kernel      loads of ``old`` (element offsets from c)     loads  stores  flops
==========  ===========================================  =====  ======  =====
stencil5    0, -1, +1, -jS, +jS                          5      1       5
stencil7    0, -1, +1, -jS, +jS, -kS, +kS                7      1       7
stencil27   all ``dk*kS + dj*jS + di`` with dk, dj, di   27     1       30
            in -1..1, lexicographic (dk outer, di inner)
==========  ===========================================  =====  ======  =====

Flop conventions (one of each operation counts one flop):

* stencil5: ``new = -4*c + w + e + s + n``: 1 multiply + 4 adds = 5;
* stencil7: ``new = -6*c + w + e + s + n + b + t`` (the lecture's 7 flops per
  point): 1 multiply + 6 adds = 7;
* stencil27: one weight per distance class, ``new = w0*c + w1*(6 faces) +
  w2*(12 edges) + w3*(8 corners)``: 4 multiplies + 26 adds = 30.

Loops run ``k`` (outer), ``j``, ``i`` (inner) over the interior. stencil7 can
block ``j`` and ``k`` (``bj``, ``bk``; 0 = no blocking)::

    for kk in range(1, nz + 1, bk):
        for jj in range(1, ny + 1, bj):
            for k in range(kk, min(kk + bk, nz + 1)):
                for j in range(jj, min(jj + bj, ny + 1)):
                    for i in range(1, nx + 1):
                        point(i, j, k)

With ``cores = P`` (docs/cache-model.md, "Several cores") the outermost loop of
that nest is split statically across P threads: ``kk`` when ``bk`` is set,
else ``jj`` when ``bj`` is set, else ``k`` (``j`` for stencil5).

``warmup + sweeps`` time steps run one after the other, each swapping ``old``
and ``new`` (sweep 2 reads ``new`` and writes ``old``). The ``warmup`` ones are
simulated but not counted (steady state: the caches hold what the previous
time step left); flops count the ``sweeps`` counted ones. The footprint counts the
elements actually touched: both interiors, the halo elements of ``old`` that
are read (the faces for stencil5 and stencil7, the faces, edges and corners
for stencil27), and with two sweeps or more the same halo elements of ``new``.

>>> from hroof.traces import plan_kernel
>>> p = plan_kernel("stencil7", n=4)
>>> p.flops, p.accesses, p.footprint // 8    # 64 points; 64 + 6*16 + 64 elements
(448, 512, 224)
"""

from __future__ import annotations

from functools import partial

import numpy as np

from hroof._base.errors import HroofError
from hroof._base.jit import GEN, lazy_njit
from hroof._base.kinds import LOAD, STORE
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
def _decode(pos, nx, ny, nz, bj, bk):
    """Point ``pos`` (over all sweeps, program order) as ``(sweep, i, j, k, jj, kk,
    j_end, k_end)``: 0-based interior coordinates, the block's first row and plane
    and its ends."""
    plane = nx * ny
    points = plane * nz
    sweep = pos // points
    r = pos - sweep * points
    kb = r // (bk * plane)
    kk = kb * bk
    r -= kb * bk * plane
    hk = min(bk, nz - kk)
    jb = r // (hk * bj * nx)
    jj = jb * bj
    r -= jb * hk * bj * nx
    hj = min(bj, ny - jj)
    kl = r // (hj * nx)
    r -= kl * hj * nx
    jl = r // nx
    i = r - jl * nx
    return sweep, i, jj + jl, kk + kl, jj, kk, jj + hj, kk + hk


@lazy_njit(**GEN)
def _next_row(j, k, jj, kk, j_end, k_end, ny, nz, bj, bk):
    """The row after ``(j, k)``: of this block, of the next block, or of the next sweep
    (then ``swap`` is True). Returns ``(j, k, jj, kk, j_end, k_end, swap)``."""
    swap = False
    j += 1
    if j == j_end:
        j = jj
        k += 1
        if k == k_end:
            k = kk
            jj += bj
            if jj >= ny:
                jj = 0
                kk += bk
                if kk >= nz:
                    kk = 0
                    swap = True
                k = kk
                k_end = min(kk + bk, nz)
            j_end = min(jj + bj, ny)
            j = jj
    return j, k, jj, kk, j_end, k_end, swap


@lazy_njit(**GEN)
def _stencil_gen(pos, stop, addr, size, kind, args):
    """Whole points of a (blocked) stencil sweep: the loads of ``old``, then the store.

    ``pos`` counts points over all sweeps in program order. It is decoded once
    into (sweep, block, k, j, i); the loop then steps the counters, writing a
    row segment at a time.
    """
    offs, a_base, b_base, elem, origin, js, ks, nx, ny, nz, bj, bk = args
    nl = offs.shape[0]
    per = nl + 1
    cap = addr.shape[0]
    n = 0
    if pos >= stop or n + per > cap:
        return n, pos
    sweep, i, j, k, jj, kk, j_end, k_end = _decode(pos, nx, ny, nz, bj, bk)
    if sweep % 2 == 0:
        src = a_base
        dst = b_base
    else:
        src = b_base
        dst = a_base

    while pos < stop and n + per <= cap:
        # One row segment: as many points of this row as fit.
        cnt = min(nx - i, (cap - n) // per, stop - pos)
        c = (origin + i + j * js + k * ks) * elem
        for _ in range(cnt):
            for t in range(nl):
                addr[n] = src + c + offs[t]
                size[n] = elem
                kind[n] = LOAD
                n += 1
            addr[n] = dst + c
            size[n] = elem
            kind[n] = STORE
            n += 1
            c += elem
        pos += cnt
        i += cnt
        if i == nx:
            i = 0
            j, k, jj, kk, j_end, k_end, swap = _next_row(j, k, jj, kk, j_end, k_end, ny, nz,
                                                         bj, bk)  # fmt: skip
            if swap:
                src, dst = dst, src
    return n, pos


@lazy_njit(**GEN)
def _stencil_sampled_gen(pos, stop, addr, size, kind, group, pc, core, args, fargs):
    """:func:`_stencil_gen` set-sampled (:mod:`hroof.traces.sampled`): the kept pieces
    of whole points, a row segment at a time, and the counts of every access covered.

    A row's streams (the loads, then the store) are the row run of stream 0 (the
    first load) at ``src + c + offs[0]``; parity 0 reads ``a``, parity 1 ``b``.
    """
    offs, a_base, b_base, elem, origin, js, ks, nx, ny, nz, bj, bk = args
    n = 0
    if pos >= stop:
        return n, pos
    sweep, i, j, k, jj, kk, j_end, k_end = _decode(pos, nx, ny, nz, bj, bk)
    par = sweep % 2
    while pos < stop:
        cnt = min(nx - i, stop - pos)
        b0 = (a_base if par == 0 else b_base) + (origin + i + j * js + k * ks) * elem + offs[0]
        n, done = _emit_run(b0, cnt, elem, par, fargs, addr, size, kind, group, n)
        _count_streams(b0, done, elem, par, fargs, pc, core)
        pos += done
        i += done
        if done < cnt:  # the buffers are full
            return n, pos
        if i == nx:
            i = 0
            j, k, jj, kk, j_end, k_end, swap = _next_row(j, k, jj, kk, j_end, k_end, ny, nz,
                                                         bj, bk)  # fmt: skip
            if swap:
                par = 1 - par
    return n, pos


def _sampled(args: tuple, filt: SetFilter):
    """The set-sampled generator of a stencil plan's ``args`` for ``filt`` (or None)."""
    offs, a_base, b_base, elem = args[:4]
    loads = offs - offs[0]
    deltas = np.array([[*loads, src_dst] for src_dst in (b_base - a_base - offs[0],
                                                         a_base - b_base - offs[0])])  # fmt: skip
    kinds = [LOAD] * len(offs) + [STORE]
    rho = np.array([(a_base + offs[0]) % elem, (b_base + offs[0]) % elem])
    fargs = row_filter_args(deltas, kinds, rho, elem, filt)
    return None if fargs is None else (_stencil_sampled_gen, args, fargs)


def _outer_start(unit: int, count: int, per_unit: int, u: int) -> int:
    """Where unit ``u`` of an outer loop of ``count`` iterations, ``unit`` at a time
    (a block of ``unit`` planes or rows, or 1), starts: ``per_unit`` points a step."""
    return min(u * unit, count) * per_unit


def _outer_loop(three_d: bool, nx: int, ny: int, nz: int, bj: int, bk: int):
    """(units, start) of the outermost loop of one sweep (docs: "Several cores").

    Blocked in k: the ``kk`` loop (blocks of ``bk`` planes); blocked in j only: the
    ``jj`` loop (blocks of ``bj`` rows, each over all planes); else the ``k`` loop
    (planes), or for a 2D stencil the ``j`` loop (rows).
    """
    if bk:
        return -(-nz // bk), partial(_outer_start, bk, nz, nx * ny)
    if bj:
        return -(-ny // bj), partial(_outer_start, bj, ny, nx * nz)
    if three_d:
        return nz, partial(_outer_start, 1, nz, nx * ny)
    return ny, partial(_outer_start, 1, ny, nx)


def _params(three_d: bool, blocking: bool) -> tuple[Param, ...]:
    ps = [
        Param("n", 64, "interior points per dimension (unless nx, ny, nz say)", minimum=1),
        Param("nx", 0, "interior points along x, the fastest index (0: n)", minimum=0),
        Param("ny", 0, "interior points along y (0: n)", minimum=0),
    ]
    if three_d:
        ps.append(Param("nz", 0, "interior points along z, the slowest index (0: n)", minimum=0))
    ps.append(Param("pad_row", 0, "unused elements at the end of each row", minimum=0))
    if three_d:
        ps.append(Param("pad_plane", 0, "unused elements at the end of each plane", minimum=0))
    if blocking:
        ps += [
            Param("bj", 0, "block size of the j loop, rows (0: no blocking)", minimum=0),
            Param("bk", 0, "block size of the k loop, planes (0: no blocking)", minimum=0),
        ]
    ps += [
        Param("sweeps", 1, "time steps counted; each swaps old and new", minimum=1),
        Param(
            "warmup",
            0,
            "time steps simulated first and not counted (steady state; 0: cold, from empty caches)",
            minimum=0,
        ),
        *layout_params(),
    ]
    return tuple(ps)


def _offsets(kind: str, js: int, ks: int) -> list[int]:
    """Element offsets of the loads from the centre, in program order."""
    if kind == "stencil5":
        return [0, -1, 1, -js, js]
    if kind == "stencil7":
        return [0, -1, 1, -js, js, -ks, ks]
    return [dk * ks + dj * js + di for dk in (-1, 0, 1) for dj in (-1, 0, 1) for di in (-1, 0, 1)]


def _builder(name: str, three_d: bool, flops_per: int):
    def build(p: dict) -> Plan:
        elem = DTYPES[p["dtype"]]
        nx = p["nx"] or p["n"]
        ny = p["ny"] or p["n"]
        nz = (p["nz"] or p["n"]) if three_d else 1
        bj = p.get("bj", 0)
        bk = p.get("bk", 0)
        if bj > ny:
            raise HroofError(f"{name} parameter bj must be at most ny = {ny} (or 0), got {bj}")
        if bk > nz:
            raise HroofError(f"{name} parameter bk must be at most nz = {nz} (or 0), got {bk}")
        js = nx + 2 + p["pad_row"]
        if three_d:
            ks = js * (ny + 2) + p["pad_plane"]
            count = ks * (nz + 2)
            origin = 1 + js + ks
        else:
            ks = js * (ny + 2)
            count = ks
            origin = 1 + js
        old, new = layout(
            [("old", elem, count), ("new", elem, count)], align=p["align"], gap=p["gap"]
        )
        offs = _offsets(name, js, ks)
        points = nx * ny * nz
        interior = points
        if name == "stencil5":
            halo = 2 * (nx + ny)
        elif name == "stencil7":
            halo = 2 * (nx * ny + ny * nz + nx * nz)
        else:
            halo = (nx + 2) * (ny + 2) * (nz + 2) - interior
        sweeps, warm = p["sweeps"], p["warmup"]
        touched = 2 * interior + halo if sweeps + warm == 1 else 2 * (interior + halo)
        args = (
            np.array(offs, dtype=np.int64) * elem,
            old.base,
            new.base,
            elem,
            origin,
            js,
            ks,
            nx,
            ny,
            nz,
            bj or ny,
            bk or nz,
        )
        units, start = _outer_loop(three_d, nx, ny, nz, bj, bk)
        return Plan(
            outer_units=units,
            outer_start=start,
            arrays=(old, new),
            flops=flops_per * points * sweeps,
            iterations=points * (warm + sweeps),
            per_iteration=len(offs) + 1,
            accesses=(len(offs) + 1) * points * (warm + sweeps),
            warmup=points * warm,
            sweeps=sweeps,
            warmup_sweeps=warm,
            footprint=elem * touched,
            gen=_stencil_gen,
            args=args,
            sampled=partial(_sampled, args),
        )

    return build


register_kernel(
    Kernel(
        "stencil5",
        "2D 5-point Jacobi: new = -4*c + w + e + s + n (5 loads, 1 store, 5 flops a point)",
        _params(three_d=False, blocking=False),
        _builder("stencil5", False, 5),
        notes="5 flops a point: 1 multiply + 4 adds",
    )
)
register_kernel(
    Kernel(
        "stencil7",
        "3D 7-point Jacobi: new = -6*c + 6 neighbours (7 loads, 1 store, 7 flops a point)",
        _params(three_d=True, blocking=True),
        _builder("stencil7", True, 7),
        notes="7 flops a point: 1 multiply + 6 adds",
    )
)
register_kernel(
    Kernel(
        "stencil27",
        "3D 27-point Jacobi, one weight per distance class (27 loads, 1 store, 30 flops a point)",
        _params(three_d=True, blocking=False),
        _builder("stencil27", True, 30),
        notes="30 flops a point: 4 multiplies (centre, faces, edges, corners) + 26 adds",
    )
)
