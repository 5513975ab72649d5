"""The steps of the access engine (:mod:`hroof.cachesim._split_kernels`) that make
a level's inclusion policy and prefetcher: what happens to a line after the lookups.

The plain model (every level NINE, no prefetcher) runs level by level in
:mod:`hroof.cachesim._kernels`: each level's behaviour depends only on the
events that reach it. The other policies break that: an exclusive level hands a
line's dirty bit back up, and an inclusive level's eviction removes copies
above it. So the levels of a hierarchy with any such level (or a prefetcher)
that the levels below can change run in the access engine, one access at a
time, in exactly the order of the recursive model of ``docs/cache-model.md``
("Inclusion policies"):

1. **down** (the engine's loop): the access looks the line up at each level
   until one hits (or memory serves it), counting each lookup, miss and class;
2. **up**: from the deepest level that missed back up, each allocating level
   inserts the line (:func:`_insert_up`; an exclusive or victim level lets it
   pass), and the victim of each insertion is sent down at once by
   :func:`_send_down`, which may evict in turn, level after level, before the
   next level up inserts;
3. **prefetch**: the prefetchers of the levels the lookup reached train and
   issue their requests (:func:`_after`, :func:`_prefetch`).

The policy of a level is one code per level (``pol``, :data:`POLICY_CODES`), read
where a step differs by policy: :func:`_passes` (exclusive and victim levels let
a fill pass and take the victims of the level above), :func:`_send_down` (an
inclusive level's eviction drops the copies above it) and the engine's hit (an
exclusive level hands the line up and drops it). A new replacement or inclusion
policy is a new code here and a branch in those places, nothing else: every
hierarchy that is not plain runs through them.

The state (tags, counters, flag pages, shadows) is the level-by-level
simulator's, so results build the same way.
"""

from __future__ import annotations

import numpy as np

from hroof._base.jit import JIT, njit
from hroof.cachesim._kernels import (
    C_BINV,
    C_VICT,
    C_VICT_IN,
    C_WB_IN,
    SEEN_BIT0,
    _count_writeback,
    _flag_index,
    _remove,
    _sh_drop,
    _sh_touch,
    _to_front,
)
from hroof.cachesim._prefetch_kernels import (
    LINE_MASK,
    PC_FILLED,
    PC_ISSUED,
    PC_LOOKUPS,
    PC_MISSES,
    PC_USELESS,
    PF_BIT,
    T_HIT,
    T_MISS,
    T_PF_HIT,
    find,
    insert,
    targets,
    touch,
)

# Policy codes (``pol`` array, one per level).
P_NINE = 0
P_EXCLUSIVE = 1
P_VICTIM = 2
P_INCLUSIVE = 3
POLICY_CODES = {
    "nine": P_NINE,
    "exclusive": P_EXCLUSIVE,
    "victim": P_VICTIM,
    "inclusive": P_INCLUSIVE,
}

# Lookup kinds on the way down.
_READ = 0
_WRITE = 1
_RFO = 6
# What a level did on the way down.
_A_FILL = 1
_A_THROUGH = 2
_A_FORWARD = 3


@njit(**JIT)
def _base(geo, lvl, line):
    mask = geo.mask[lvl]
    s = line & mask if mask >= 0 else line % geo.nsets[lvl]
    return geo.off[lvl] + s * geo.ways[lvl]


@njit(**JIT)
def _mark_seen(fl, lvl, line):
    """Mark ``line`` seen at ``lvl``; return True if it was not before."""
    fi = _flag_index(fl, line)
    bit = np.int64(1) << (SEEN_BIT0 + lvl)
    first = (fl.pages[fi] & bit) == 0
    fl.pages[fi] |= bit
    return first


@njit(**JIT)
def _passes(pol, lvl):
    return pol[lvl] == P_EXCLUSIVE or pol[lvl] == P_VICTIM


@njit(**JIT)
def _invalidate_above(tags, ctr, geo, fl, sh, pf, line, lo, stop, carry, counter, classify):
    """Drop ``line`` from levels ``lo .. stop - 1`` (counting each copy under ``counter``),
    carrying a dirty copy's data down as a writeback into each level below it (``carry``:
    dirty data already comes from above ``lo``); return whether dirty data is still being
    carried past level ``stop - 1``."""
    for u in range(lo, stop):
        if carry:
            ctr[u, C_WB_IN] += 1
            if classify:
                _mark_seen(fl, u, line)
        b = _base(geo, u, line)
        p = find(tags, b, geo.ways[u], line)
        if p >= 0:
            ctr[u, counter] += 1
            carry = carry or (tags[b + p] & 1) != 0
            if tags[b + p] & PF_BIT:
                pf.ctr[u, PC_USELESS] += 1
            _remove(tags, b, geo.ways[u], p)
        if classify:
            _sh_drop(sh, u, line)
        if carry:
            _count_writeback(ctr, fl, u, line, classify)
    return carry


@njit(**JIT)
def _send_down(j, v, dirty, evicted, geo, st, fl, sh, pol, pf, classify):
    """Level ``j`` lets ``v`` go: evicted (``evicted``) or written back by the flush.

    An evicting inclusive level first drops the copies above it, L1 first,
    carrying a dirty copy down as an NT store does. Then a dirty line is
    written back to ``j + 1``, and a clean one goes there only if that level is
    exclusive or victim; there it is inserted (MRU, with its dirty bit), and
    the victim of that insertion goes on down the same way.
    """
    tags = st.tags
    ctr = st.ctr
    nlev = geo.nlevels
    while True:
        if evicted and pol[j] == P_INCLUSIVE:
            carry = _invalidate_above(tags, ctr, geo, fl, sh, pf, v, 0, j, False, C_BINV, classify)
            if carry:
                ctr[j, C_WB_IN] += 1
                dirty = True
        evicted = True
        if j + 1 >= nlev:
            if dirty:
                _count_writeback(ctr, fl, j, v, classify)
            return
        if dirty:
            _count_writeback(ctr, fl, j, v, classify)
        elif _passes(pol, j + 1):
            ctr[j, C_VICT] += 1
        else:
            return
        j += 1
        if dirty:
            ctr[j, C_WB_IN] += 1
        else:
            ctr[j, C_VICT_IN] += 1
        if classify:
            _mark_seen(fl, j, v)
            _sh_touch(sh, j, v, True)
        victim = touch(tags, _base(geo, j, v), geo.ways[j], v, 1 if dirty else 0)
        if victim < 0:
            return
        if victim & PF_BIT:
            pf.ctr[j, PC_USELESS] += 1
        v = (victim >> 1) & LINE_MASK
        dirty = (victim & 1) != 0


@njit(**JIT)
def _insert_up(j, line, dirty, geo, st, fl, sh, pol, pf, classify):
    """Level ``j`` inserts ``line`` (MRU, ``dirty``); its victim, if it goes anywhere, is
    sent down at once. Returns the slot base of the line's set.

    The line is absent at ``j``: every caller inserts it where its lookup (or a
    prefetch's) just missed, and nothing in between moves a line up (the victims
    of the levels below go further down; an inclusive level's eviction only
    removes copies above it), so the set is shifted without comparing."""
    nlev = geo.nlevels
    b = _base(geo, j, line)
    victim = insert(st.tags, b, geo.ways[j], line, 1 if dirty else 0)
    if victim >= 0:
        if victim & PF_BIT:
            pf.ctr[j, PC_USELESS] += 1
        # A clean victim of a level that is not inclusive, above one that keeps no
        # victims, goes nowhere: skip the call.
        if (victim & 1) != 0 or pol[j] == P_INCLUSIVE or (j + 1 < nlev and _passes(pol, j + 1)):
            v = (victim >> 1) & LINE_MASK
            _send_down(j, v, (victim & 1) != 0, True, geo, st, fl, sh, pol, pf, classify)
    return b


@njit(**JIT)
def _prefetch(u, y, geo, st, fl, sh, pol, pf, classify, act):
    """Level ``u``'s prefetcher requests ``y``: if absent, fetch it from below as a read
    (prefetch lookups there) and insert it at ``u``, MRU, with its prefetched bit."""
    tags = st.tags
    pc = pf.ctr
    nlev = geo.nlevels
    pc[u, PC_ISSUED] += 1
    if find(tags, _base(geo, u, y), geo.ways[u], y) >= 0:
        return
    pc[u, PC_FILLED] += 1
    # y's flag word, found once: every level the request misses marks y seen there.
    fi = 0
    if classify:
        fi = _flag_index(fl, y)
        fl.pages[fi] |= np.int64(1) << (SEEN_BIT0 + u)
        _sh_touch(sh, u, y, True)
    d = False
    lv = u + 1
    while lv < nlev:
        pc[lv, PC_LOOKUPS] += 1
        through = _passes(pol, lv)
        if classify:
            _sh_touch(sh, lv, y, not through)
        b = _base(geo, lv, y)
        p = find(tags, b, geo.ways[lv], y)
        if p >= 0:
            if pol[lv] == P_EXCLUSIVE:
                d = (tags[b + p] & 1) != 0
                if tags[b + p] & PF_BIT:
                    pc[lv, PC_USELESS] += 1
                _remove(tags, b, geo.ways[lv], p)
                if classify:
                    _sh_drop(sh, lv, y)
            else:
                _to_front(tags, b, p, 0)
            break
        pc[lv, PC_MISSES] += 1
        if classify:
            fl.pages[fi] |= np.int64(1) << (SEEN_BIT0 + lv)
        act[lv] = _A_THROUGH if through else _A_FILL
        lv += 1
    for j in range(lv - 1, u, -1):
        if act[j] == _A_FILL:
            _insert_up(j, y, d, geo, st, fl, sh, pol, pf, classify)
            d = False
    b = _insert_up(u, y, d, geo, st, fl, sh, pol, pf, classify)
    # The line is the MRU of its set unless an inclusive level's eviction below took it back.
    if ((tags[b] >> 1) & LINE_MASK) == y:
        tags[b] |= PF_BIT


@njit(**JIT)
def _after(line, hit_lv, pfhit, geo, st, fl, sh, pol, pf, classify, act):
    """The prefetchers of the levels a demand lookup of ``line`` reached (L1 .. the level
    ``hit_lv`` that hit, or every level), L1 first, train and issue their requests."""
    last = min(hit_lv, geo.nlevels - 1)
    for u in range(last + 1):
        if pf.kind[u] == 0:
            continue
        trig = T_MISS if u < hit_lv else (T_PF_HIT if pfhit else T_HIT)
        m = targets(pf, u, line, trig)
        for q in range(m):
            _prefetch(u, pf.out[q], geo, st, fl, sh, pol, pf, classify, act)


@njit(**JIT)
def policy_flush(lvl, geo, st, fl, sh, pol, pf, classify):
    """Write back level ``lvl``'s dirty lines, set by set, LRU to MRU, each sent down at once."""
    tags = st.tags
    ways = geo.ways[lvl]
    for s in range(geo.nsets[lvl]):
        base = geo.off[lvl] + s * ways
        for p in range(ways - 1, -1, -1):
            t = tags[base + p]
            if t >= 0 and (t & 1):
                tags[base + p] = t ^ 1
                v = (t >> 1) & LINE_MASK
                _send_down(lvl, v, True, False, geo, st, fl, sh, pol, pf, classify)
