"""Numba kernels of the inclusion policies (exclusive, victim, inclusive levels).

The plain model (every level NINE) runs level by level in
:mod:`hroof.cachesim._kernels`: each level's behaviour depends only on the
events that reach it. The other policies break that: an exclusive level hands a
line's dirty bit back up, and an inclusive level's eviction removes copies
above it. So a hierarchy with any such level (or a prefetcher) runs here
instead, one access at a time through the whole hierarchy, or, when the top
levels cannot depend on the ones below, those as plain passes and the rest in
:mod:`hroof.cachesim._split_kernels` (which reuses these helpers), in exactly
the order of the recursive model of ``docs/cache-model.md`` ("Inclusion
policies"):

1. **down**: the access looks the line up at L1, L2, ... until a level hits
   (or memory serves it), counting each lookup, miss and class on the way;
2. **up**: from the deepest level that missed back to L1, each allocating
   level inserts the line (an exclusive or victim level lets it pass), and the
   victim of each insertion is sent down at once by :func:`_send_down`, which
   may evict in turn, level after level, before the next level up inserts.

The state (tags, counters, flag pages, shadows) is the level-by-level
simulator's, so results build the same way. The plain path never calls these
kernels; it costs nothing more than before.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hroof._base.jit import JIT
from hroof.cachesim._kernels import (
    C_BINV,
    C_COMP,
    C_FWD,
    C_FWD_BYTES,
    C_FWD_COMP_BYTES,
    C_INVAL,
    C_LOAD_COMP,
    C_LOOKUPS,
    C_MISSES,
    C_VICT,
    C_VICT_IN,
    C_WA_FILLS,
    C_WB_IN,
    KIND_NT,
    KIND_STORE,
    M_NPAGES,
    M_PT_USED,
    PAGE,
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
    NO_PF,
    PC_FILLED,
    PC_ISSUED,
    PC_LOOKUPS,
    PC_MISSES,
    PC_USEFUL,
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


def _make_policy_pass(CLASSIFY):
    """Build :func:`policy_pass` with classification on or off (a compile-time constant, as
    :func:`hroof.cachesim._kernels._make_level_pass` does it)."""

    @njit(**JIT)
    def policy_pass(src, shift, size, kind, start, geo, st, fl, sh, pol, pf, act, akind):
        """Run trace accesses ``start..`` (byte addresses, each within one line) through
        the hierarchy.

        ``act`` and ``akind`` are scratch arrays of one slot per level. Returns the
        index reached: ``len(src)`` unless the classification tables must grow
        first (the driver grows them and calls again from there).
        """
        n = src.shape[0]
        tags = st.tags
        ctr = st.ctr
        pc = pf.ctr
        nlev = geo.nlevels
        pages_cap = fl.pages.shape[0] // PAGE
        pt_cap = fl.pt_keys.shape[0]
        l1_lookups = 0  # in a register, stored once per call
        off0 = geo.off[0]
        mask0 = geo.mask[0]
        nsets0 = geo.nsets[0]
        ways0 = geo.ways[0]
        wa0 = geo.wa[0] != 0
        # The first level with a prefetcher (nlev if none): a lookup that stops above it
        # triggers nothing, and only levels with a prefetcher hold prefetched lines.
        pf_first = nlev
        for u in range(nlev - 1, -1, -1):
            if pf.kind[u] != 0:
                pf_first = u
        for i in range(start, n):
            if CLASSIFY and (
                fl.meta[M_NPAGES] + 1 > pages_cap or 2 * (fl.meta[M_PT_USED] + 1) > pt_cap
            ):
                ctr[0, C_LOOKUPS] += l1_lookups
                return i
            line = src[i] >> shift
            t = np.int64(kind[i])
            if t == KIND_NT:
                # A non-temporal store: invalidate every copy, carrying a dirty one down.
                _invalidate_above(
                    tags, ctr, geo, fl, sh, pf, line, 0, nlev, False, C_INVAL, CLASSIFY
                )
                continue
            k = _WRITE if t == KIND_STORE else _READ
            # L1 (always NINE) first, as the level pass does it: most accesses end here.
            l1_lookups += 1
            sh_hit = False
            if CLASSIFY:
                sh_hit = _sh_touch(sh, 0, line, k == _READ or wa0)
            b = off0 + (line & mask0 if mask0 >= 0 else line % nsets0) * ways0
            cur = tags[b]
            p = 0 if ((cur >> 1) & LINE_MASK) == line else find(tags, b, ways0, line)
            pfhit = False
            lv = 0
            if p >= 0:
                if p == 0:
                    tags[b] = cur | k  # k is 1 for a store: the dirty bit
                else:
                    _to_front(tags, b, p, k)
                if pf_first != 0:
                    continue
                pfhit = (tags[b] & PF_BIT) != 0
                if pfhit:
                    tags[b] &= NO_PF
                    pc[0, PC_USEFUL] += 1
            else:
                d = False
                while lv < nlev:
                    through = _passes(pol, lv)
                    forwards = k == _WRITE and (geo.wa[lv] == 0 or through)
                    allocates = not forwards and not through
                    if lv > 0:
                        ctr[lv, C_LOOKUPS] += 1
                        sh_hit = False
                        if CLASSIFY:
                            sh_hit = _sh_touch(sh, lv, line, allocates)
                        b = _base(geo, lv, line)
                        p = find(tags, b, geo.ways[lv], line)
                    ways = geo.ways[lv]
                    if p >= 0:
                        if lv >= pf_first and tags[b + p] & PF_BIT:
                            pfhit = True
                            tags[b + p] &= NO_PF
                            pc[lv, PC_USEFUL] += 1
                        if k == _WRITE:
                            _to_front(tags, b, p, 1)
                        elif pol[lv] == P_EXCLUSIVE:
                            d = (tags[b + p] & 1) != 0
                            _remove(tags, b, ways, p)
                            if CLASSIFY:
                                _sh_drop(sh, lv, line)
                        else:
                            _to_front(tags, b, p, 0)
                        break
                    ctr[lv, C_MISSES] += 1
                    cls = 0
                    if CLASSIFY:
                        if _mark_seen(fl, lv, line):
                            cls = 0
                        elif sh_hit:
                            cls = 2
                        else:
                            cls = 1
                        ctr[lv, C_COMP + cls] += 1
                    if forwards:
                        sz = np.int64(size[i])
                        ctr[lv, C_FWD] += 1
                        ctr[lv, C_FWD_BYTES] += sz
                        if CLASSIFY:
                            ctr[lv, C_FWD_COMP_BYTES + cls] += sz
                        act[lv] = _A_FORWARD
                        lv += 1
                        continue
                    if k == _READ:
                        if CLASSIFY:
                            ctr[lv, C_LOAD_COMP + cls] += 1
                    else:
                        ctr[lv, C_WA_FILLS] += 1
                    act[lv] = _A_THROUGH if through else _A_FILL
                    akind[lv] = k
                    k = _READ if k == _READ else _RFO
                    lv += 1
                # Back up: the levels that missed insert the line, deepest first.
                for j in range(lv - 1, -1, -1):
                    if act[j] != _A_FILL:
                        continue
                    _insert_up(j, line, akind[j] == _WRITE or d, geo, st, fl, sh, pol, pf, CLASSIFY)
                    d = False
            # Then the prefetchers of the levels the lookup reached (one call site: inlined).
            if lv >= pf_first:
                _after(line, lv, pfhit, geo, st, fl, sh, pol, pf, CLASSIFY, act)
        ctr[0, C_LOOKUPS] += l1_lookups
        return n

    return policy_pass


#: The access-by-access kernel, by classification on (True) or off.
POLICY_PASS = {c: _make_policy_pass(c) for c in (False, True)}


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


_WARM: set[bool] = set()


def warm_up(classify: bool) -> None:
    """Compile (or load from Numba's cache) these kernels once per process and mode, so
    that a simulator's ``timing.simulate_s`` measures simulation, not compilation."""
    from hroof.cachesim.config import HierarchyConfig, LevelConfig
    from hroof.cachesim.simulator import Simulator

    if classify not in _WARM:
        _WARM.add(classify)
        pols = ("nine", "exclusive", "inclusive")
        pfs = ("next-line", "stride", "adjacent")
        levels = tuple(
            LevelConfig(f"L{i}", 128, 1, 64, inclusion=p, prefetch=f)
            for i, (p, f) in enumerate(zip(pols, pfs, strict=True))
        )
        sim = Simulator(HierarchyConfig(levels), classify=classify)
        sim.feed(np.array([0, 64, 4096]), np.array([8, 8, 8]), np.array([1, 0, 2]))
        sim.finish()
