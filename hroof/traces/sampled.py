"""Set-sampled generation: a kernel's accesses to 1/K of the line classes, and nothing else.

Set sampling (:mod:`hroof.cachesim.sampling`) simulates the lines whose index is
``residue`` modulo ``k``. The sampler's generic filter takes every access of the
full trace, cuts those that straddle a line into one piece per line, counts each
piece's line class modulo ``m`` (``k`` times the number of error groups) and keeps
the pieces of the sampled class. A kernel whose plan has a ``sampled`` preparer
(the stencils and the STREAM kernels) does the same here without writing the full
trace: it emits, in program order, exactly the kept pieces with their group
``(line mod m) // k``, and returns the per-class piece counts and the core's
counters of the accesses it covered, computed a run at a time.

The accesses of these kernels are *row runs*: ``S`` streams that advance together
by one element a point (a stencil row: its loads and the store; a STREAM pass: the
loads and the store). Whether stream ``t`` has a kept piece at a point depends only
on its address modulo ``k`` lines, and the streams keep fixed distances from the
first one, so a table over the ``P = k * line / elem`` phases of the first stream
gives, per phase, the bitmask of streams with a kept piece, and how many points
to skip to the next phase with any (:func:`phase_tables`). The emitter
(:func:`_emit_run`) jumps over the points where no stream keeps anything and
re-tests every piece it writes, so the table only has to be conservative. The
per-class counts of a run (:func:`_count_run`) take one step per run: the lines
strictly inside the run each hold the same number of pieces, added to a cyclic
range of classes by a difference array.

The result is the full trace filtered by the sampler, element for element
(``tests/test_sampled_gen.py`` checks it against the sampler's own filter).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import numpy as np

from hroof._base.jit import GEN, lazy_njit
from hroof._base.kinds import SIZE_DTYPE

#: Largest phase table (phases x streams) a sampled generator builds; beyond it (a huge
#: K) the kernel falls back to the sampler's generic filter.
MAX_PHASES = 1 << 20

#: The core's counters, as the sampler's chunk scan returns them: loads, stores,
#: NT stores, then their bytes (the kind of an access is its index).
NCORE = 6


class SetFilter(NamedTuple):
    """Which pieces set sampling keeps: lines ``line mod k == residue``; ``m`` (a
    multiple of ``k``) is the modulus of the classes counted and grouped."""

    line_bits: int
    m: int
    k: int
    residue: int


def phase_tables(deltas: np.ndarray, rho: np.ndarray, elem: int, filt: SetFilter):
    """The phase tables of row runs: ``(mask, skip)``, each ``parities x P``.

    ``deltas[p, t]`` is stream ``t``'s byte offset from stream 0 in parity ``p``
    (a stencil swaps its arrays every sweep), ``rho[p]`` stream 0's address
    modulo ``elem``. At phase ``f`` stream 0's address is ``f * elem + rho``
    modulo ``k`` lines; bit ``t`` of ``mask[p, f]`` says stream ``t`` has a piece
    in a kept line; ``skip[p, f]`` is how many points on the next phase with a
    nonzero mask is (at least 1).

    >>> f = SetFilter(6, 4, 2, 1)
    >>> mask, skip = phase_tables(np.array([[0, 64]]), np.array([0]), 8, f)
    >>> mask[0].tolist(), skip[0].tolist()[:4]
    ([2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1])
    """
    lb, k, r = filt.line_bits, filt.k, filt.residue
    q = k << lb
    p = q // elem
    phases = np.arange(p, dtype=np.int64) * elem
    masks = np.zeros((deltas.shape[0], p), dtype=np.int64)
    for par in range(deltas.shape[0]):
        for t in range(deltas.shape[1]):
            x = (phases + rho[par] + deltas[par, t]) % q
            last = (x + elem - 1) % q
            kept = ((x >> lb) == r) | ((last >> lb) == r)
            masks[par] |= kept.astype(np.int64) << t
    skips = np.ones_like(masks)
    for par in range(masks.shape[0]):
        nz = np.flatnonzero(masks[par])
        if nz.size == 0:  # nothing kept in any phase: a whole period at a time
            skips[par] = p
            continue
        # distance from each phase to the next nonzero one at or after it, cyclically
        nxt = np.searchsorted(nz, np.arange(p))
        target = np.where(nxt < nz.size, nz[np.minimum(nxt, nz.size - 1)], nz[0] + p)
        skips[par] = np.maximum(target - np.arange(p), 1)
    return masks, skips


def row_filter_args(deltas, kinds, rho, elem: int, filt: SetFilter) -> tuple | None:
    """The arguments of :func:`_emit_run` for ``filt``, or None when the fast path
    does not apply (an element that does not divide a line, or a table too large).

    Besides the tables of :func:`phase_tables`, each phase gets the list of its
    streams with a kept piece (``order[par, f, :count[par, f]]``), so that the
    emitter loops over those only.
    """
    line = 1 << filt.line_bits
    phases = (filt.k << filt.line_bits) // elem
    s = deltas.shape[1]
    if elem > line or line % elem or phases * max(s, 8) > MAX_PHASES or s > 62:
        return None
    deltas = np.ascontiguousarray(deltas, dtype=np.int64)
    masks, skips = phase_tables(deltas, np.asarray(rho, np.int64), elem, filt)
    bits = (masks[:, :, None] >> np.arange(s)) & 1
    count = bits.sum(axis=2)
    # the streams of each phase, in program order, first
    order = np.argsort(1 - bits, axis=2, kind="stable").astype(np.uint8)
    k, m = filt.k, filt.m
    kbits = k.bit_length() - 1 if (k & (k - 1)) == 0 and (m & (m - 1)) == 0 else -1
    return (filt.line_bits, k, filt.residue, m, deltas, np.asarray(kinds, np.uint8), count,
            skips, kbits, order)  # fmt: skip


@lazy_njit(**GEN)
def _group(line, k, m, kbits):
    """A kept line's group ``(line mod m) // k``: masks and a shift when ``kbits >= 0``
    (``k = 2**kbits``, ``m`` a power of two too), else a division."""
    if kbits >= 0:
        return (line & (m - 1)) >> kbits
    return (line % m) // k


@lazy_njit(**GEN)
def _emit_run(b0, cnt, e, par, fargs, addr, size, kind, group, n):
    """Write the kept pieces of ``cnt`` points of a row run whose stream 0 starts at
    byte ``b0`` (streams ``b0 + deltas[par, t]``, ``e`` bytes each, advancing ``e`` a
    point), in program order, from ``addr[n]`` on while the buffers have room for a
    whole point. Returns ``(n, points done)``.

    A phase's listed streams have a kept piece: an access within one line is
    written untested; the two pieces of one that straddles are tested each.
    """
    lb, k, r, m, deltas, kinds, count, skips, kbits, order = fargs
    s = deltas.shape[1]
    p = count.shape[1]
    cap = addr.shape[0]
    q = k << lb
    phi = (b0 % q) // e
    i = 0
    while i < cnt:
        c = count[par, phi]
        if c == 0:
            d = skips[par, phi]
            i += d
            phi += d
            if phi >= p:
                phi -= p
            continue
        if n + 2 * s > cap:
            return n, i
        a0 = b0 + i * e
        for u in range(c):
            t = order[par, phi, u]
            a = a0 + deltas[par, t]
            l1 = a >> lb
            l2 = (a + e - 1) >> lb
            if l1 == l2:
                addr[n] = a
                size[n] = e
                kind[n] = kinds[t]
                group[n] = _group(l1, k, m, kbits)
                n += 1
            else:  # straddles: one piece per line, in address order
                b = l2 << lb
                if l1 % k == r:
                    addr[n] = a
                    size[n] = b - a
                    kind[n] = kinds[t]
                    group[n] = _group(l1, k, m, kbits)
                    n += 1
                if l2 % k == r:
                    addr[n] = b
                    size[n] = a + e - b
                    kind[n] = kinds[t]
                    group[n] = _group(l2, k, m, kbits)
                    n += 1
        i += 1
        phi += 1
        if phi == p:
            phi = 0
    return n, cnt


@lazy_njit(**GEN)
def _count_run(a, e, cnt, lb, m, pc):
    """Add the line pieces of ``cnt`` contiguous ``e``-byte accesses from byte ``a`` to
    the class counts ``pc``: ``pc[:m]`` direct counts, ``pc[m:2m+1]`` a difference
    array over the classes, ``pc[2m+1]`` a count every class gets (see
    :func:`class_counts`). ``e`` divides the line."""
    if cnt <= 0:
        return
    l0 = a >> lb
    l1 = (a + cnt * e - 1) >> lb
    if l0 == l1:
        pc[l0 % m] += cnt
        return
    y0 = (l0 + 1) << lb
    pc[l0 % m] += (y0 - a + e - 1) // e  # accesses overlapping the first line
    pc[l1 % m] += cnt - ((l1 << lb) - a) // e  # ... and the last
    mid = l1 - l0 - 1
    if mid > 0:
        per = (1 << lb) // e + (1 if (y0 - a) % e else 0)  # each inner line's pieces
        full = mid // m
        pc[2 * m + 1] += per * full
        rem = mid - full * m
        if rem:
            st = (l0 + 1) % m
            end = st + rem
            pc[m + st] += per
            if end <= m:
                pc[m + end] -= per
            else:
                pc[m] += per
                pc[m + end - m] -= per


def class_counts(pc: np.ndarray, m: int) -> np.ndarray:
    """The per-class piece counts (``m`` of them) that :func:`_count_run` accumulated."""
    return pc[:m] + np.cumsum(pc[m : 2 * m]) + pc[2 * m + 1]


@lazy_njit(**GEN)
def _count_streams(b0, cnt, e, par, fargs, pc, core):
    """Count ``cnt`` points of every stream of a row run: class pieces and core."""
    lb, m, deltas, kinds = fargs[0], fargs[3], fargs[4], fargs[5]
    for t in range(deltas.shape[1]):
        _count_run(b0 + deltas[par, t], e, cnt, lb, m, pc)
        kd = kinds[t]
        core[kd] += cnt
        core[3 + kd] += cnt * e


def sampled_chunks(
    plan, filt: SetFilter, chunk_size: int, *, start: int = 0, stop: int | None = None,
    limit: int | None = None,
) -> Iterator[tuple] | None:  # fmt: skip
    """The kept pieces of ``plan``'s iterations ``start..stop`` a chunk at a time, or
    None when the plan has no sampled generator for ``filt`` (or an array reaches
    ``limit``, the simulator's address bound: the generic path then says so).

    Yields ``(addr, size, kind, group, per_class, core, accesses)``: views of reused
    buffers holding up to ``chunk_size`` kept pieces, the ``m`` per-class piece counts
    and the core's ``NCORE`` counters of the accesses covered, and their number.
    """
    if plan.sampled is None:
        return None
    if limit is not None and any(a.base < 0 or a.end > limit for a in plan.arrays):
        return None
    prepared = plan.sampled(filt)
    if prepared is None:
        return None
    gen, args, fargs = prepared
    return _chunks(plan, gen, args, fargs, filt.m, chunk_size, start, stop)


def _chunks(plan, gen, args, fargs, m, chunk_size, start, stop):
    s = fargs[4].shape[1]
    cap = max(int(chunk_size), 2 * s)
    addr = np.empty(cap, dtype=np.int64)
    size = np.empty(cap, dtype=SIZE_DTYPE)
    kind = np.empty(cap, dtype=np.uint8)
    group = np.empty(cap, dtype=np.int64)
    pos = int(start)
    end = plan.iterations if stop is None else int(stop)
    while pos < end:
        pc = np.zeros(2 * m + 2, dtype=np.int64)
        core = np.zeros(NCORE, dtype=np.int64)
        n, nxt = gen(pos, end, addr, size, kind, group, pc, core, args, fargs)
        if nxt == pos:
            raise RuntimeError(f"sampled generator of {plan.kernel} made no progress at {pos}")
        pos = nxt
        yield (addr[:n], size[:n], kind[:n], group[:n], class_counts(pc, m), core,
               int(core[:3].sum()))  # fmt: skip
