"""Numba kernels of several cores with inclusion policies or prefetchers.

Several cores on a plain hierarchy (every level NINE, no prefetcher) run level
by level (:mod:`hroof.cachesim.multicore`). With an exclusive, victim or
inclusive level, or a prefetcher, a level no longer depends only on the events
that reach it, so each core's grain runs here access by access through its own
private levels and the one copy of the shared levels, in exactly the order of
the single-core access-by-access kernel (:mod:`hroof.cachesim._policy_kernels`,
``docs/cache-model.md``, "Several cores"), with two additions:

* an **inclusive shared level's eviction** drops the line from every core's
  private levels (core 0 first, each from L1 down, a dirty copy carried down
  to the first shared level as a writeback of that core), then from the shared
  levels above it (the carried copies arriving as one writeback each there);
* state is **per core** for the private levels and once for the shared ones:

``tags``
    One array; core ``c``'s level ``l`` starts at ``mc.voff[c, l]`` (the shared
    levels at the same offset for every core).
``ctr`` (cores + 1, levels, NCTR)
    ``ctr[c, l]``: core ``c``'s private level ``l``, or its share of shared level
    ``l`` (the events its accesses and its flush caused there); row ``cores``
    holds the shared levels' own final flush.
shadows, prefetchers
    One per *virtual* level ``mc.vlv[c, l]``: each core's private levels, then
    the shared levels once (a shared prefetcher sees the merged stream).
flag pages
    One table; the flags of core ``c``'s private levels are kept under the
    region key ``region + (c + 1) << 52`` (a line's region is below ``2**52``),
    those of the shared levels under ``region``; bit ``l`` as for one core.

With one core and nothing shared this is the single-core kernel, event for
event (tested bit for bit). The rarer steps (a back-invalidation, a prefetch)
are compiled functions called from the pass, not inlined into it: inlining them
as well multiplies the kernel's size (and its compile time and memory) several
times over. Sending a victim down is inlined: a call passes every state array
(about 0.1 us), and a stencil writes back a dirty line every few accesses.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from hroof._base.jit import JIT, njit
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
    C_WB_FIRST,
    C_WB_IN,
    C_WB_OUT,
    KIND_NT,
    KIND_STORE,
    M_NPAGES,
    M_PT_USED,
    M_WB0,
    PAGE,
    PAGE_BITS,
    RCACHE,
    SEEN_BIT0,
    _hash,
    _remove,
    _sh_drop,
    _sh_touch,
    _to_front,
)
from hroof.cachesim._policy_kernels import P_EXCLUSIVE, P_INCLUSIVE, P_VICTIM
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
    targets,
    touch,
)

#: The cores' maps: ``voff`` and ``vlv`` (cores + 1, levels) int64, ``meta`` [cores,
#: first shared level].
Cores = namedtuple("Cores", ["voff", "vlv", "meta"])
#: The region key bit of a core's private flags.
KEY_SHIFT = 52

_READ = 0
_WRITE = 1
_RFO = 6
_A_FILL = 1
_A_THROUGH = 2
_A_FORWARD = 3


@njit(**JIT)
def _passes(pol, lvl):
    return pol[lvl] == P_EXCLUSIVE or pol[lvl] == P_VICTIM


@njit(**JIT)
def _mb(geo, mc, c, lvl, line):
    """Slot base of ``line``'s set at core ``c``'s level ``lvl``."""
    mask = geo.mask[lvl]
    s = line & mask if mask >= 0 else line % geo.nsets[lvl]
    return mc.voff[c, lvl] + s * geo.ways[lvl]


@njit(**JIT)
def _key(mc, c, lvl):
    """The flag region key of core ``c``'s level ``lvl`` (0 for a shared level)."""
    return np.int64(c + 1) if lvl < mc.meta[1] else np.int64(0)


@njit(**JIT)
def _fidx(fl, line, key):
    """:func:`hroof.cachesim._kernels._flag_index` of ``line`` under region key ``key``."""
    region = (line >> PAGE_BITS) + (key << KEY_SHIFT)
    rc = fl.rcache
    slot = region & (RCACHE - 1)
    if rc[slot] == region:
        return rc[RCACHE + slot] * PAGE + (line & (PAGE - 1))
    meta = fl.meta
    keys = fl.pt_keys
    cap = keys.shape[0]
    bits = 0
    while (1 << bits) < cap:
        bits += 1
    h = _hash(region, bits)
    while True:
        k = keys[h]
        if k == region:
            page = fl.pt_vals[h]
            break
        if k == -1:
            page = meta[M_NPAGES]
            meta[M_NPAGES] = page + 1
            meta[M_PT_USED] += 1
            keys[h] = region
            fl.pt_vals[h] = page
            break
        h = (h + 1) & (cap - 1)
    rc[slot] = region
    rc[RCACHE + slot] = page
    return page * PAGE + (line & (PAGE - 1))


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
    arriving at ``hi`` (0 or 1)."""
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
    """Core ``c``'s level ``j`` lets ``v`` go (``_policy_kernels._send_down``)."""
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
    """Core ``c``'s level ``j`` inserts ``line`` (MRU); its victim is sent down at once.
    Returns the slot base of the line's set."""
    nlev = geo.nlevels
    b = _mb(geo, mc, c, j, line)
    victim = touch(st.tags, b, geo.ways[j], line, 1 if dirty else 0)
    if victim >= 0:
        if victim & PF_BIT:
            pf.ctr[mc.vlv[c, j], PC_USELESS] += 1
        if (victim & 1) != 0 or pol[j] == P_INCLUSIVE or (j + 1 < nlev and _passes(pol, j + 1)):
            v = (victim >> 1) & LINE_MASK
            _send_down(c, j, v, (victim & 1) != 0, True, geo, st, mc, fl, sh, pol, pf, classify)
    return b


@njit(**JIT)
def _prefetch(c, u, y, geo, st, mc, fl, sh, pol, pf, classify, act):
    """Core ``c``'s level ``u``'s prefetcher requests ``y`` (``_policy_kernels._prefetch``)."""
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
    if ((tags[b] >> 1) & LINE_MASK) == y:
        tags[b] |= PF_BIT


@njit(**JIT)
def _after(c, line, hit_lv, pfhit, geo, st, mc, fl, sh, pol, pf, classify, act):
    """The prefetchers of the levels core ``c``'s demand lookup reached, L1 first."""
    last = min(hit_lv, geo.nlevels - 1)
    for u in range(last + 1):
        vu = mc.vlv[c, u]
        if pf.kind[vu] == 0:
            continue
        trig = T_MISS if u < hit_lv else (T_PF_HIT if pfhit else T_HIT)
        m = targets(pf, vu, line, trig)
        for q in range(m):
            _prefetch(c, u, pf.out[q], geo, st, mc, fl, sh, pol, pf, classify, act)


def _make_pass(CLASSIFY):
    @njit(**JIT)
    def cores_pass(c, src, shift, size, kind, start, geo, st, mc, fl, sh, pol, pf, act, akind):
        """Run core ``c``'s accesses ``start..`` (byte addresses, each within one line)
        through its private levels and the shared ones; return the index reached
        (``len(src)`` unless the flag tables must grow first)."""
        n = src.shape[0]
        tags = st.tags
        ctr = st.ctr
        pc = pf.ctr
        nlev = geo.nlevels
        # An access may open a flag page under its core's key, the shared key and, through
        # an inclusive shared level's eviction, every other core's.
        room = mc.meta[0] + 1
        pages_cap = fl.pages.shape[0] // PAGE
        pt_cap = fl.pt_keys.shape[0]
        l1_lookups = 0
        off0 = mc.voff[c, 0]
        mask0 = geo.mask[0]
        nsets0 = geo.nsets[0]
        ways0 = geo.ways[0]
        wa0 = geo.wa[0] != 0
        v0 = mc.vlv[c, 0]
        key0 = _key(mc, c, 0)
        pf_first = nlev
        for u in range(nlev - 1, -1, -1):
            if pf.kind[mc.vlv[c, u]] != 0:
                pf_first = u
        for i in range(start, n):
            if CLASSIFY and (
                fl.meta[M_NPAGES] + room > pages_cap or 2 * (fl.meta[M_PT_USED] + room) > pt_cap
            ):
                ctr[c, 0, C_LOOKUPS] += l1_lookups
                return i
            line = src[i] >> shift
            t = np.int64(kind[i])
            if t == KIND_NT:
                _drop(c, 0, nlev, 0, line, C_INVAL, geo, st, mc, fl, sh, pf, CLASSIFY)
                continue
            k = _WRITE if t == KIND_STORE else _READ
            l1_lookups += 1
            sh_hit = False
            if CLASSIFY:
                sh_hit = _sh_touch(sh, v0, line, k == _READ or wa0)
            b = off0 + (line & mask0 if mask0 >= 0 else line % nsets0) * ways0
            cur = tags[b]
            p = 0 if ((cur >> 1) & LINE_MASK) == line else find(tags, b, ways0, line)
            pfhit = False
            lv = 0
            if p >= 0:
                if p == 0:
                    tags[b] = cur | k
                else:
                    _to_front(tags, b, p, k)
                if pf_first != 0:
                    continue
                pfhit = (tags[b] & PF_BIT) != 0
                if pfhit:
                    tags[b] &= NO_PF
                    pc[v0, PC_USEFUL] += 1
            else:
                d = False
                while lv < nlev:
                    through = _passes(pol, lv)
                    forwards = k == _WRITE and (geo.wa[lv] == 0 or through)
                    allocates = not forwards and not through
                    key = key0
                    if lv > 0:
                        key = _key(mc, c, lv)
                        ctr[c, lv, C_LOOKUPS] += 1
                        sh_hit = False
                        if CLASSIFY:
                            sh_hit = _sh_touch(sh, mc.vlv[c, lv], line, allocates)
                        b = _mb(geo, mc, c, lv, line)
                        p = find(tags, b, geo.ways[lv], line)
                    ways = geo.ways[lv]
                    if p >= 0:
                        if lv >= pf_first and tags[b + p] & PF_BIT:
                            pfhit = True
                            tags[b + p] &= NO_PF
                            pc[mc.vlv[c, lv], PC_USEFUL] += 1
                        if k == _WRITE:
                            _to_front(tags, b, p, 1)
                        elif pol[lv] == P_EXCLUSIVE:
                            d = (tags[b + p] & 1) != 0
                            _remove(tags, b, ways, p)
                            if CLASSIFY:
                                _sh_drop(sh, mc.vlv[c, lv], line)
                        else:
                            _to_front(tags, b, p, 0)
                        break
                    ctr[c, lv, C_MISSES] += 1
                    cls = 0
                    if CLASSIFY:
                        if _seen(fl, lv, line, key):
                            cls = 0
                        elif sh_hit:
                            cls = 2
                        else:
                            cls = 1
                        ctr[c, lv, C_COMP + cls] += 1
                    if forwards:
                        sz = np.int64(size[i])
                        ctr[c, lv, C_FWD] += 1
                        ctr[c, lv, C_FWD_BYTES] += sz
                        if CLASSIFY:
                            ctr[c, lv, C_FWD_COMP_BYTES + cls] += sz
                        act[lv] = _A_FORWARD
                        lv += 1
                        continue
                    if k == _READ:
                        if CLASSIFY:
                            ctr[c, lv, C_LOAD_COMP + cls] += 1
                    else:
                        ctr[c, lv, C_WA_FILLS] += 1
                    act[lv] = _A_THROUGH if through else _A_FILL
                    akind[lv] = k
                    k = _READ if k == _READ else _RFO
                    lv += 1
                for j in range(lv - 1, -1, -1):
                    if act[j] != _A_FILL:
                        continue
                    dirty = akind[j] == _WRITE or d
                    _insert_up(c, j, line, dirty, geo, st, mc, fl, sh, pol, pf, CLASSIFY)
                    d = False
            if lv >= pf_first:
                _after(c, line, lv, pfhit, geo, st, mc, fl, sh, pol, pf, CLASSIFY, act)
        ctr[c, 0, C_LOOKUPS] += l1_lookups
        return n

    return cores_pass


#: The per-core access-by-access kernel, by classification on (True) or off.
CORES_PASS = {c: _make_pass(c) for c in (False, True)}


@njit(**JIT)
def cores_flush(c, lvl, geo, st, mc, fl, sh, pol, pf, classify):
    """Write back core ``c``'s level ``lvl``'s dirty lines (``c == cores`` for a shared
    level), set by set, LRU to MRU, each sent down at once."""
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
