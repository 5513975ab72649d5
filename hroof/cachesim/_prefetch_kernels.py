"""Numba helpers of the hardware prefetchers (docs/cache-model.md, "Prefetchers").

A hierarchy with a prefetcher runs access by access in
:mod:`hroof.cachesim._policy_kernels`, which calls these helpers. Here:

* the **prefetched bit** of a line: bit ``PF_BIT`` (62) of its tag slot, set
  when a prefetch inserts the line and cleared by the first demand hit. Tags
  are ``line << 1 | dirty`` with lines below ``2**61`` (addresses below
  ``2**62``), so the bit is free, and an empty slot (``-1``) stays negative.
  Every lookup on the access-by-access path compares ``(tag >> 1) & LINE_MASK``
  (:func:`find`, :func:`touch`); the plain path never sees the bit;
* the **stride table** of a level (:func:`stride_train`);
* the **targets** of a trigger (:func:`targets`).

State (:class:`Prefetch`, flat arrays):

``kind`` (per level)
    0 none, 1 next-line, 2 adjacent, 3 stride (``PREFETCH_CODES``).
``dist``, ``soff``, ``ssz`` (per level)
    The stride distance and the level's rows ``soff .. soff + ssz`` of ``tab``.
``tab`` (rows x 5: page, last line, stride in lines, confirmed, stamp)
    Stride streams of every level; the stamp (``meta[3]``, a clock, at the
    row's last use) orders them by recency; an empty row is all ``-1``.
``hint`` (levels x ``2**HINT_BITS``)
    Where a page's stride row likely is: a direct-mapped cache of rows keyed by a
    hash of the page (``-1``: none), checked against the row before use, so
    that a lookup finds the row the scan of the level's rows would find (a
    page is in at most one row) without scanning (:func:`stride_row`).
``ctr`` (levels x ``NPCTR``)
    The prefetch counters, indices ``PC_*``.
``meta``
    ``[0]`` 1 if any level prefetches; ``[1]`` log2 of the lines in a 4 KiB
    page; ``[2]`` log2 of the lines in a 128-byte pair block; ``[3]`` the
    stride tables' clock.
``out``
    Scratch: the targets of one trigger.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from hroof._base.jit import JIT, njit
from hroof.cachesim._shadow_kernels import _hash

PF_BIT = np.int64(1) << np.int64(62)
LINE_MASK = (np.int64(1) << np.int64(61)) - np.int64(1)  # of ``tag >> 1``
NO_PF = ~PF_BIT

# Prefetcher codes (``kind``, one per level).
PF_NONE = 0
PF_NEXT = 1
PF_ADJACENT = 2
PF_STRIDE = 3
PREFETCH_CODES = {
    "none": PF_NONE,
    "next-line": PF_NEXT,
    "adjacent": PF_ADJACENT,
    "stride": PF_STRIDE,
}

# Per-level prefetch counters.
PC_ISSUED = 0  # requests this level's prefetcher issued (within the page)
PC_FILLED = 1  # of those, lines not present here: fetched from below and inserted
PC_USEFUL = 2  # prefetched lines here that a demand lookup hit before they left
PC_USELESS = 3  # prefetched lines here that left (evicted, invalidated, moved) unused
PC_LOOKUPS = 4  # prefetch lookups arriving from a prefetching level above
PC_MISSES = 5  # of those, misses (fetched from the level below)
NPCTR = 6

# Meta slots.
PM_ANY = 0
PM_PAGE_BITS = 1
PM_PAIR_BITS = 2
PM_CLOCK = 3  # stamps of the stride tables' rows
NPMETA = 4

# What a demand lookup did at a level (the trigger).
T_MISS = 1
T_HIT = 2
T_PF_HIT = 3  # a hit on a line whose prefetched bit was set

#: log2 of the stride row hints per level (``hint``): 256 slots, so that the pages of
#: the streams a table follows (16 rows by default) rarely share one. With 32 (5 bits),
#: a quarter of the stencil7 stream's 1.07 M lookups behind a stride L2 found a slot
#: holding another page's row and scanned the level's rows, and the split kernel's
#: read-ahead made no guess for them (a replay of the table; 8 bits: 0.2 %).
HINT_BITS = 8

Prefetch = namedtuple("Prefetch", "kind dist soff ssz tab hint ctr meta out")


def new_prefetch(levels, line_bits: int) -> Prefetch:
    """The prefetch state of a hierarchy's levels (``LevelConfig`` objects)."""
    nlev = len(levels)
    kind = np.array([PREFETCH_CODES[lv.prefetch] for lv in levels], dtype=np.int64)
    ssz = np.array(
        [lv.prefetch_streams if lv.prefetch == "stride" else 0 for lv in levels], dtype=np.int64
    )
    soff = np.concatenate(([0], np.cumsum(ssz)[:-1])).astype(np.int64)
    tab = np.full((max(1, int(ssz.sum())), 5), -1, dtype=np.int64)
    meta = np.zeros(NPMETA, dtype=np.int64)
    meta[PM_ANY] = 1 if kind.any() else 0
    meta[PM_PAGE_BITS] = max(0, 12 - line_bits)
    meta[PM_PAIR_BITS] = max(0, 7 - line_bits)
    return Prefetch(
        kind=kind,
        dist=np.array([lv.prefetch_distance for lv in levels], dtype=np.int64),
        soff=soff,
        ssz=ssz,
        tab=tab,
        hint=np.full((nlev, 1 << HINT_BITS), -1, dtype=np.int64),
        ctr=np.zeros((nlev, NPCTR), dtype=np.int64),
        meta=meta,
        out=np.zeros(max(2, 1 << int(meta[PM_PAIR_BITS])), dtype=np.int64),
    )


@njit(**JIT)
def find(tags, base, ways, line):
    """The way holding ``line`` (its prefetched bit ignored), or -1."""
    for p in range(ways):
        if ((tags[base + p] >> 1) & LINE_MASK) == line:
            return p
    return -1


@njit(**JIT)
def touch(tags, base, ways, line, dirty):
    """:func:`hroof.cachesim._kernels._touch` that ignores (and keeps) the prefetched bit.

    Makes ``line`` MRU, inserting it if absent; returns -2 on a hit, else the
    evicted slot value (-1 if none), prefetched bit included.
    """
    new = (line << 1) | dirty
    carry = new
    for p in range(ways):
        cur = tags[base + p]
        tags[base + p] = carry
        if ((cur >> 1) & LINE_MASK) == line:
            tags[base] = cur | dirty
            return -2
        carry = cur
    return carry


@njit(**JIT)
def insert(tags, base, ways, line, dirty):
    """:func:`touch` of a line known to be absent from its set (a miss), without comparing:
    makes ``line`` MRU (``dirty``) and returns the evicted slot value (-1 if none),
    prefetched bit included. Carries each slot one way down, MRU first, as
    :func:`touch` does (a forward loop: measured faster than a copy from the LRU end)."""
    carry = (line << 1) | dirty
    for p in range(ways):
        cur = tags[base + p]
        tags[base + p] = carry
        carry = cur
    return carry


@njit(**JIT)
def stride_row(pf, lvl, page):
    """The row of level ``lvl``'s stride table holding ``page``, or -1: the hinted row
    if it holds the page, else a scan of the level's rows (whose result becomes the
    hint). A page is in at most one row (a row takes a page only when no row has
    it), so the hint changes no result, only the time to find it."""
    tab = pf.tab
    h = _hash(page, HINT_BITS)
    e = pf.hint[lvl, h]
    if e >= 0 and tab[e, 0] == page:
        return e
    base = pf.soff[lvl]
    for r in range(base, base + pf.ssz[lvl]):
        if tab[r, 0] == page:
            pf.hint[lvl, h] = r
            return r
    return -1


@njit(**JIT)
def stride_train(pf, lvl, line):
    """Train level ``lvl``'s stride table on a demand lookup of ``line``; return the
    line to prefetch, or -1.

    The stream is the row of ``line``'s 4 KiB page (a new page replaces the
    least recently used row, starting with stride 0, unconfirmed). Every lookup
    makes the row most recently used. A lookup of the row's last line changes
    nothing else; otherwise ``delta = line - last``: equal to the row's stride,
    the stream is confirmed, else the stride becomes ``delta``, unconfirmed;
    ``last = line``. A confirmed stream requests ``line + distance * stride``
    if that line is in the same page. Recency is a stamp per row (column 4),
    so a lookup moves no rows.
    """
    tab = pf.tab
    base = pf.soff[lvl]
    pb = pf.meta[PM_PAGE_BITS]
    page = line >> pb
    pf.meta[PM_CLOCK] += 1
    now = pf.meta[PM_CLOCK]
    e = stride_row(pf, lvl, page)
    if e < 0:
        # A new page: the least recently used row (the first of the oldest stamp).
        old = base
        for r in range(base + 1, base + pf.ssz[lvl]):
            if tab[r, 4] < tab[old, 4]:
                old = r
        pf.hint[lvl, _hash(page, HINT_BITS)] = old
        tab[old, 0] = page
        tab[old, 1] = line
        tab[old, 2] = 0
        tab[old, 3] = 0
        tab[old, 4] = now
        return -1
    tab[e, 4] = now
    last = tab[e, 1]
    if line == last:
        return -1
    delta = line - last
    if delta == tab[e, 2]:
        tab[e, 3] = 1
    else:
        tab[e, 2] = delta
        tab[e, 3] = 0
    tab[e, 1] = line
    if tab[e, 3] == 0:
        return -1
    target = line + pf.dist[lvl] * delta
    if target < 0 or (target >> pb) != page:
        return -1
    return target


@njit(**JIT)
def targets(pf, lvl, line, trig):
    """Write into ``pf.out`` the lines level ``lvl``'s prefetcher requests after a demand
    lookup of ``line`` that did ``trig``; return how many.

    next-line: on a miss or a hit on a prefetched line, ``line + 1`` (same 4 KiB
    page only); adjacent: on a miss, the other lines of the aligned 128-byte
    block, in address order; stride: :func:`stride_train` on every lookup.
    """
    k = pf.kind[lvl]
    out = pf.out
    if k == PF_NEXT:
        if trig == T_HIT:
            return 0
        pb = pf.meta[PM_PAGE_BITS]
        if ((line + 1) >> pb) != (line >> pb):
            return 0
        out[0] = line + 1
        return 1
    if k == PF_ADJACENT:
        if trig != T_MISS:
            return 0
        ab = pf.meta[PM_PAIR_BITS]
        first = (line >> ab) << ab
        m = 0
        for y in range(first, first + (np.int64(1) << ab)):
            if y != line:
                out[m] = y
                m += 1
        return m
    if k == PF_STRIDE:
        y = stride_train(pf, lvl, line)
        if y < 0:
            return 0
        out[0] = y
        return 1
    return 0


def result_fields(pf, i, cfg, tags, off, prefetch_bytes, nbytes, flops) -> dict:
    """The prefetch fields of level ``i``'s result (``LevelResult``).

    ``tags`` and ``off`` locate the level's slots (its lines still marked
    prefetched are the ones unused at the end); ``prefetch_bytes`` is the part of
    the level's ``nbytes`` that the prefetch requests moved (the level above's
    ``prefetch_bytes_below``).
    """
    row = [int(x) for x in pf.ctr[i]]
    block = tags[off : off + cfg.sets * cfg.ways]
    demand = nbytes - prefetch_bytes
    return {
        "prefetch": cfg.prefetch,
        "prefetches_issued": row[PC_ISSUED],
        "prefetches_filled": row[PC_FILLED],
        "prefetches_useful": row[PC_USEFUL],
        "prefetches_useless": row[PC_USELESS],
        "prefetches_unused_at_end": int(((block >= 0) & ((block & PF_BIT) != 0)).sum()),
        "prefetch_lookups": row[PC_LOOKUPS],
        "prefetch_misses": row[PC_MISSES],
        "prefetch_bytes": prefetch_bytes,
        "prefetch_bytes_below": (row[PC_FILLED] + row[PC_MISSES]) * cfg.line,
        "ai_demand": None if flops is None or demand == 0 else flops / demand,
    }
