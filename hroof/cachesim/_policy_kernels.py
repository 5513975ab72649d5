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

Several cores (:mod:`hroof.cachesim.multicore`) run the same steps, core ``c``'s
accesses through its private levels and the one copy of the shared levels: every
step takes ``c`` and the map ``mc`` (:class:`Cores`) of where each core's levels
are. One core is the map :func:`one_core`. With several, two things differ:

* an **inclusive shared level's eviction** drops the line from every core's
  private levels (core 0 first, each from L1 down, a dirty copy carried down
  to the first shared level as a writeback of that core), then from the shared
  levels above it (the carried copies arriving as one writeback each there:
  :func:`_back_invalidate`);
* state is **per core** for the private levels and once for the shared ones:
  ``tags`` holds core ``c``'s level ``l`` at ``mc.voff[c, l]``; ``ctr`` is
  (cores + 1, levels, NCTR), ``ctr[c, l]`` being core ``c``'s private level
  ``l`` or its share of shared level ``l`` (row ``cores``: the shared levels'
  own flush; one core's simulator passes its (levels, NCTR) counters as one
  such row); shadows and prefetchers are one per *virtual* level
  ``mc.vlv[c, l]``; the flags of core ``c``'s private levels are kept under the
  region key ``region + (c + 1) << _kernels.KEY_SHIFT`` (:func:`_key`; key 0, the plain
  passes' regions, for one core and for shared levels).

The state (tags, counters, flag pages, shadows) is the level-by-level
simulator's, so results build the same way.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from hroof._base.jit import JIT, njit
from hroof.cachesim._kernels import (
    C_BINV,
    C_VICT,
    C_VICT_IN,
    C_WB_FIRST,
    C_WB_IN,
    C_WB_OUT,
    M_WB0,
    SEEN_BIT0,
    _flag_index_b,
    _log2_ceil,
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

#: Where each core's levels are: ``voff`` and ``vlv`` (cores + 1, levels) int64, the slot
#: offset and the *virtual* level (the index of its shadow, prefetcher and, with several
#: cores, its copy) of core ``c``'s level ``l`` (row ``cores``: the shared levels alone,
#: for their flush; -1 where a level is private); ``meta`` [cores, first shared level].
Cores = namedtuple("Cores", ["voff", "vlv", "meta"])


def one_core(geo) -> Cores:
    """The map of one core: every level its own, at the offsets of ``geo``, none shared."""
    nlev = int(geo.nlevels)
    voff = np.full((2, nlev), -1, dtype=np.int64)
    voff[0] = geo.off
    vlv = np.full((2, nlev), -1, dtype=np.int64)
    vlv[0] = np.arange(nlev)
    return Cores(voff, vlv, np.array([1, nlev], dtype=np.int64))


@njit(**JIT)
def _passes(pol, lvl):
    """An exclusive or victim level: a fill passes through it, and it takes the clean
    victims of the level above."""
    return pol[lvl] == P_EXCLUSIVE or pol[lvl] == P_VICTIM


@njit(**JIT)
def _mb(geo, mc, c, lvl, line):
    """Slot base of ``line``'s set at core ``c``'s level ``lvl``."""
    mask = geo.mask[lvl]
    s = line & mask if mask >= 0 else line % geo.nsets[lvl]
    return mc.voff[c, lvl] + s * geo.ways[lvl]


@njit(**JIT)
def _key(mc, c, lvl):
    """The flag region key of core ``c``'s level ``lvl``: ``c + 1`` for a private level of
    several cores, else 0 (one core: the keys of the plain level passes)."""
    if mc.meta[0] > 1 and lvl < mc.meta[1]:
        return np.int64(c + 1)
    return np.int64(0)


@njit(**JIT)
def _fidx(fl, line, key):
    """:func:`hroof.cachesim._kernels._flag_index` of ``line`` under region key ``key``
    (the same word for key 0)."""
    return _flag_index_b(fl, line, _log2_ceil(fl.pt_keys.shape[0]), key)


@njit(**JIT)
def _seen(fl, lvl, line, key):
    """Mark ``line`` seen at ``lvl`` (under ``key``); True if it was not before."""
    fi = _fidx(fl, line, key)
    bit = np.int64(1) << (SEEN_BIT0 + lvl)
    first = (fl.pages[fi] & bit) == 0
    fl.pages[fi] |= bit
    return first


@njit(**JIT)
def _wb(ctr, fl, c, lvl, line, key, classify):
    """A dirty ``line`` leaves core ``c``'s level ``lvl``: count it (first or repeated)."""
    ctr[c, lvl, C_WB_OUT] += 1
    if classify:
        fi = _fidx(fl, line, key)
        bit = np.int64(1) << (fl.meta[M_WB0] + lvl)
        if (fl.pages[fi] & bit) == 0:
            fl.pages[fi] |= bit
            ctr[c, lvl, C_WB_FIRST] += 1


@njit(**JIT)
def _drop(d, lo, hi, n, line, counter, geo, st, mc, fl, sh, pf, classify):
    """Drop ``line`` from core ``d``'s levels ``lo .. hi - 1`` (each copy counted under
    ``counter``); ``n`` writebacks of it arrive at ``lo``, and a dirty copy's data is
    carried down as a writeback from each level below it. Returns the writebacks
    arriving at ``hi`` (0 or 1). An NT store, and an inclusive level's eviction."""
    tags = st.tags
    ctr = st.ctr
    for u in range(lo, hi):
        key = _key(mc, d, u)
        v = mc.vlv[d, u]
        if n:
            ctr[d, u, C_WB_IN] += n
            if classify:
                _seen(fl, u, line, key)
        carry = n > 0
        b = _mb(geo, mc, d, u, line)
        p = find(tags, b, geo.ways[u], line)
        if p >= 0:
            ctr[d, u, counter] += 1
            carry = carry or (tags[b + p] & 1) != 0
            if tags[b + p] & PF_BIT:
                pf.ctr[v, PC_USELESS] += 1
            _remove(tags, b, geo.ways[u], p)
        if classify:
            _sh_drop(sh, v, line)
        if carry:
            _wb(ctr, fl, d, u, line, key, classify)
        n = 1 if carry else 0
    return n


@njit(**JIT)
def _back_invalidate(c, j, line, geo, st, mc, fl, sh, pf, classify):
    """Inclusive level ``j`` evicts ``line`` in core ``c``'s turn (``c == cores``: the shared
    levels' flush): drop the copies above it; return the writebacks arriving at ``j``.

    A private ``j`` drops core ``c``'s copies only. A shared ``j`` drops every core's
    private copies (core 0 first, each from L1 down), then the shared levels'
    above ``j``, where each core's carried dirty copy arrives as a writeback.
    """
    s = mc.meta[1]
    if j < s:
        return _drop(c, 0, j, 0, line, C_BINV, geo, st, mc, fl, sh, pf, classify)
    n = 0
    for d in range(mc.meta[0]):
        n += _drop(d, 0, s, 0, line, C_BINV, geo, st, mc, fl, sh, pf, classify)
    return _drop(c, s, j, n, line, C_BINV, geo, st, mc, fl, sh, pf, classify)


@njit(**JIT)
def _send_down(c, j, v, dirty, evicted, geo, st, mc, fl, sh, pol, pf, classify):
    """Core ``c``'s level ``j`` lets ``v`` go: evicted (``evicted``) or written back by the
    flush.

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
            n = _back_invalidate(c, j, v, geo, st, mc, fl, sh, pf, classify)
            if n:
                ctr[c, j, C_WB_IN] += n
                dirty = True
        evicted = True
        if j + 1 >= nlev:
            if dirty:
                _wb(ctr, fl, c, j, v, _key(mc, c, j), classify)
            return
        if dirty:
            _wb(ctr, fl, c, j, v, _key(mc, c, j), classify)
        elif _passes(pol, j + 1):
            ctr[c, j, C_VICT] += 1
        else:
            return
        j += 1
        if dirty:
            ctr[c, j, C_WB_IN] += 1
        else:
            ctr[c, j, C_VICT_IN] += 1
        if classify:
            _seen(fl, j, v, _key(mc, c, j))
            _sh_touch(sh, mc.vlv[c, j], v, True)
        victim = touch(tags, _mb(geo, mc, c, j, v), geo.ways[j], v, 1 if dirty else 0)
        if victim < 0:
            return
        if victim & PF_BIT:
            pf.ctr[mc.vlv[c, j], PC_USELESS] += 1
        v = (victim >> 1) & LINE_MASK
        dirty = (victim & 1) != 0


@njit(**JIT)
def _insert_up(c, j, line, dirty, geo, st, mc, fl, sh, pol, pf, classify):
    """Core ``c``'s level ``j`` inserts ``line`` (MRU, ``dirty``); its victim, if it goes
    anywhere, is sent down at once. Returns the slot base of the line's set.

    The line is absent at ``j``: every caller inserts it where its lookup (or a
    prefetch's) just missed, and nothing in between moves a line up (the victims
    of the levels below go further down; an inclusive level's eviction only
    removes copies above it), so the set is shifted without comparing."""
    nlev = geo.nlevels
    b = _mb(geo, mc, c, j, line)
    victim = insert(st.tags, b, geo.ways[j], line, 1 if dirty else 0)
    if victim >= 0:
        if victim & PF_BIT:
            pf.ctr[mc.vlv[c, j], PC_USELESS] += 1
        # A clean victim of a level that is not inclusive, above one that keeps no
        # victims, goes nowhere: skip the call.
        if (victim & 1) != 0 or pol[j] == P_INCLUSIVE or (j + 1 < nlev and _passes(pol, j + 1)):
            v = (victim >> 1) & LINE_MASK
            _send_down(c, j, v, (victim & 1) != 0, True, geo, st, mc, fl, sh, pol, pf, classify)
    return b


@njit(**JIT)
def _prefetch(c, u, y, geo, st, mc, fl, sh, pol, pf, classify, act):
    """Core ``c``'s level ``u``'s prefetcher requests ``y``: if absent, fetch it from below
    as a read (prefetch lookups there) and insert it at ``u``, MRU, with its prefetched
    bit."""
    tags = st.tags
    pc = pf.ctr
    nlev = geo.nlevels
    vu = mc.vlv[c, u]
    pc[vu, PC_ISSUED] += 1
    if find(tags, _mb(geo, mc, c, u, y), geo.ways[u], y) >= 0:
        return
    pc[vu, PC_FILLED] += 1
    if classify:
        _seen(fl, u, y, _key(mc, c, u))
        _sh_touch(sh, vu, y, True)
    d = False
    lv = u + 1
    while lv < nlev:
        vl = mc.vlv[c, lv]
        pc[vl, PC_LOOKUPS] += 1
        through = _passes(pol, lv)
        if classify:
            _sh_touch(sh, vl, y, not through)
        b = _mb(geo, mc, c, lv, y)
        p = find(tags, b, geo.ways[lv], y)
        if p >= 0:
            if pol[lv] == P_EXCLUSIVE:
                d = (tags[b + p] & 1) != 0
                if tags[b + p] & PF_BIT:
                    pc[vl, PC_USELESS] += 1
                _remove(tags, b, geo.ways[lv], p)
                if classify:
                    _sh_drop(sh, vl, y)
            else:
                _to_front(tags, b, p, 0)
            break
        pc[vl, PC_MISSES] += 1
        if classify:
            _seen(fl, lv, y, _key(mc, c, lv))
        act[lv] = _A_THROUGH if through else _A_FILL
        lv += 1
    for j in range(lv - 1, u, -1):
        if act[j] == _A_FILL:
            _insert_up(c, j, y, d, geo, st, mc, fl, sh, pol, pf, classify)
            d = False
    b = _insert_up(c, u, y, d, geo, st, mc, fl, sh, pol, pf, classify)
    # The line is the MRU of its set unless an inclusive level's eviction below took it back.
    if ((tags[b] >> 1) & LINE_MASK) == y:
        tags[b] |= PF_BIT


@njit(**JIT)
def _after(c, line, hit_lv, pfhit, geo, st, mc, fl, sh, pol, pf, classify, act):
    """The prefetchers of the levels core ``c``'s demand lookup of ``line`` reached (L1 ..
    the level ``hit_lv`` that hit, or every level), L1 first, train and issue their
    requests."""
    last = min(hit_lv, geo.nlevels - 1)
    for u in range(last + 1):
        vu = mc.vlv[c, u]
        if pf.kind[vu] == 0:
            continue
        trig = T_MISS if u < hit_lv else (T_PF_HIT if pfhit else T_HIT)
        m = targets(pf, vu, line, trig)
        for q in range(m):
            _prefetch(c, u, pf.out[q], geo, st, mc, fl, sh, pol, pf, classify, act)


@njit(**JIT)
def engine_flush(c, lvl, geo, st, mc, fl, sh, pol, pf, classify):
    """Write back core ``c``'s level ``lvl``'s dirty lines (``c == cores`` for a shared level
    of several cores), set by set, LRU to MRU, each sent down at once."""
    tags = st.tags
    ways = geo.ways[lvl]
    off = mc.voff[c, lvl]
    for s in range(geo.nsets[lvl]):
        base = off + s * ways
        for p in range(ways - 1, -1, -1):
            t = tags[base + p]
            if t >= 0 and (t & 1):
                tags[base + p] = t ^ 1
                v = (t >> 1) & LINE_MASK
                _send_down(c, lvl, v, True, False, geo, st, mc, fl, sh, pol, pf, classify)
