"""The access engine: one access at a time through the levels a hierarchy's policies
or prefetchers tie together, after plain level passes on top.

A plain hierarchy (every level NINE, no prefetcher) runs the level passes of
:mod:`hroof.cachesim._kernels` alone. Any other runs here, in one compiled kernel,
:func:`split_pass` (by classification on or off), whatever its policies and
prefetchers (one code and one prefetcher kind per level, read at run time): the
top levels that nothing below can change first run as plain level passes (L1
takes the whole chunk in its tight loop; :func:`split_level` says how many: its
rules are in its docstring and ``docs/cache-model.md``, "Inclusion policies"),
and what the last of them sends down (requests, writebacks of dirty victims, NT
invalidations, in the order of the recursive model) enters :func:`split_pass`,
which runs each event through the remaining levels. When no level can run on
top (an inclusive level anywhere, a prefetcher at L1), the trace's accesses
themselves are the events (:func:`trace_events`) and every level runs here. The
~90 % of accesses that hit L1 never reach it otherwise.

The steps after a lookup (inserting up, sending victims down, prefetching) are
:mod:`hroof.cachesim._policy_kernels`.
"""

from __future__ import annotations

import numpy as np

from hroof._base.jit import JIT, njit
from hroof.cachesim import _kernels as K
from hroof.cachesim._kernels import (
    C_COMP,
    C_FWD,
    C_FWD_BYTES,
    C_FWD_COMP_BYTES,
    C_INVAL,
    C_LOAD_COMP,
    C_LOOKUPS,
    C_MISSES,
    C_WA_FILLS,
    C_WB_IN,
    EV_BITS,
    EV_LOAD,
    EV_MASK,
    EV_NT,
    EV_NTC,
    EV_RFO,
    EV_STORE,
    EV_WB,
    M_NPAGES,
    M_PT_USED,
    PAGE,
    PF_MISS_RATE,
    PF_WINDOW,
    PREFETCH_AHEAD,
    _flag_prefetch,
    _prefetch,
    _remove,
    _sh_drop,
    _sh_prefetch,
    _sh_touch,
    _to_front,
)
from hroof.cachesim._policy_kernels import (
    _A_FILL,
    _A_FORWARD,
    _A_THROUGH,
    _READ,
    _RFO,
    _WRITE,
    P_EXCLUSIVE,
    P_INCLUSIVE,
    _after,
    _drop,
    _insert_up,
    _key,
    _mb,
    _passes,
    _seen,
    _send_down,
)
from hroof.cachesim._prefetch_kernels import (
    HINT_BITS,
    LINE_MASK,
    NO_PF,
    PC_USEFUL,
    PC_USELESS,
    PF_ADJACENT,
    PF_BIT,
    PF_NEXT,
    PF_STRIDE,
    PM_PAGE_BITS,
    PM_PAIR_BITS,
    find,
    touch,
)
from hroof.cachesim._shadow_kernels import _hash
from hroof.cachesim.config import split_level  # noqa: F401 (the simulator's, and tests')

# A trace's kinds are the engine's events of the same meaning (trace_events).
assert (K.KIND_LOAD, K.KIND_STORE, K.KIND_NT) == (EV_LOAD, EV_STORE, EV_NT)


def trace_events(addr: np.ndarray, line_bits: int, kind: np.ndarray) -> np.ndarray:
    """A chunk of trace accesses (byte addresses, each within one line; kinds 0 load,
    1 store, 2 NT store) as the events the access engine takes: ``line << EV_BITS | kind``
    (a trace's kinds are ``EV_LOAD``, ``EV_STORE`` and ``EV_NT``, which the engine takes
    at its top level as a load, a store and an NT store)."""
    ev = addr >> line_bits
    ev <<= EV_BITS
    ev |= kind
    return ev


def room_needed(mc) -> int:
    """The flag pages one event of :func:`split_pass` may open (the driver grows the
    tables by this many when the pass stops for them): its line's page, and with several
    cores its line's under every core's key and the shared one. (A prefetch stays within
    its line's 4 KiB page, inside the line's flag page; a victim's or a
    back-invalidated line's page is open already.)"""
    cores = int(mc.meta[0])
    return cores + 1 if cores > 1 else 1


#: How many events ahead the victim of the top level's fill is read (its set was
#: prefetched ``PREFETCH_AHEAD`` events ahead).
HALF_AHEAD = PREFETCH_AHEAD // 2


@njit(**JIT)
def _writeback_in(c, j, v, geo, st, mc, fl, sh, pol, pf, classify):
    """A writeback of ``v`` (sent and counted by the plain pass above) arrives at core
    ``c``'s level ``j``: as :func:`hroof.cachesim._policy_kernels._send_down` after its
    first step."""
    ctr = st.ctr
    ctr[c, j, C_WB_IN] += 1
    if classify:
        _seen(fl, j, v, _key(mc, c, j))
        _sh_touch(sh, mc.vlv[c, j], v, True)
    victim = touch(st.tags, _mb(geo, mc, c, j, v), geo.ways[j], v, 1)
    if victim >= 0:
        if victim & PF_BIT:
            pf.ctr[mc.vlv[c, j], PC_USELESS] += 1
        dirty = (victim & 1) != 0
        if dirty or pol[j] == P_INCLUSIVE or (j + 1 < geo.nlevels and _passes(pol, j + 1)):
            v = (victim >> 1) & LINE_MASK
            _send_down(c, j, v, dirty, True, geo, st, mc, fl, sh, pol, pf, classify)


@njit(**JIT)
def _guess(pf, lvl, hint, line):
    """The line (virtual) level ``lvl``'s prefetcher would likely request after a lookup of ``line``
    (a hint for reading ahead, never used as a value): the next line, the other line of
    the pair, or the line a stride ahead on the stream of ``line``'s page as it stands."""
    if hint == 1:
        return line + 1
    if hint == 2:
        return line ^ 1
    # The hinted row only (stride_row without its scan): a guess may miss a row, and a
    # lookup of a page without one (a page the table has not seen yet, or lost) would
    # otherwise scan the level's rows.
    page = line >> pf.meta[PM_PAGE_BITS]
    r = pf.hint[lvl, _hash(page, HINT_BITS)]
    if r >= 0 and pf.tab[r, 0] == page:
        return line + pf.dist[lvl] * pf.tab[r, 2]
    return line


@njit(**JIT)
def _hint_victim(c, top, line, victims_below, geo, tags, mc, fl, sh, pt_bits):
    """Start reading, at level ``top + 1``, the state of the line that level ``top`` would
    evict to insert ``line`` (its least recently used line, if that goes down: dirty, or
    clean into an exclusive or victim level). A hint only."""
    v = tags[_mb(geo, mc, c, top, line) + geo.ways[top] - 1]
    if v >= 0 and top + 1 < geo.nlevels and ((v & 1) != 0 or victims_below):
        v = (v >> 1) & LINE_MASK
        _prefetch(tags, _mb(geo, mc, c, top + 1, v))
        _sh_prefetch(sh, mc.vlv[c, top + 1], v)
        _flag_prefetch(fl, v, pt_bits)


@njit(**JIT)
def _read_below(c, top, line, victims_below, geo, tags, mc, fl, sh, pt_bits):
    """Start reading the state of ``line`` below level ``top`` (its sets and shadow pairs),
    and of the victim of its fill at ``top`` (:func:`_hint_victim`): for a lookup or a
    prefetch request that level ``top`` lacks (a hint only)."""
    for u in range(top + 1, geo.nlevels):
        _prefetch(tags, _mb(geo, mc, c, u, line))
        _sh_prefetch(sh, mc.vlv[c, u], line)
    _hint_victim(c, top, line, victims_below, geo, tags, mc, fl, sh, pt_bits)


def _make_split_pass(CLASSIFY):
    """Build :func:`split_pass` with classification on or off (a compile-time constant)."""

    @njit(**JIT)
    def split_pass(c, top, ev, size, start, geo, st, mc, fl, sh, pol, pf, act, akind):
        """Run core ``c``'s events ``start..`` through its levels ``top ..``: what level
        ``top - 1``'s plain pass sent down, or (``top`` 0) the trace's accesses as events
        (:func:`trace_events`); packed ``line << EV_BITS | kind``, ``size`` the bytes of
        forwarded stores (at the top level, the accesses' sizes).

        ``mc`` maps each core's levels (:class:`hroof.cachesim._policy_kernels.Cores`;
        one core: ``one_core``), ``st.ctr`` is (cores + 1, levels, NCTR). ``act`` and
        ``akind`` are scratch arrays of one slot per level. Returns the index reached:
        ``len(ev)`` unless the classification tables must grow first (the driver grows
        them by ``room_needed(mc)`` pages and calls again from there).
        """
        n = ev.shape[0]
        tags = st.tags
        ctr = st.ctr
        pc = pf.ctr
        nlev = geo.nlevels
        pages_cap = fl.pages.shape[0] // PAGE
        pt_cap = fl.pt_keys.shape[0]
        # The flag pages one event may open: its line's, under its core's key and the
        # shared one, and through an inclusive shared level's eviction every other core's.
        room = mc.meta[0] + 1 if mc.meta[0] > 1 else 1
        vtop = mc.vlv[c, top]
        pf_first = nlev
        for u in range(nlev - 1, -1, -1):
            if pf.kind[mc.vlv[c, u]] != 0:
                pf_first = u
        vfirst = mc.vlv[c, pf_first] if pf_first < nlev else 0
        victims_below = top + 1 < nlev and _passes(pol, top + 1)
        # Which line the first prefetcher requests, to read ahead (_guess): 1 next-line,
        # 2 the other line of the pair (adjacent, 64-byte lines), 3 stride, 0 none.
        pf_hint = 0
        if pf_first < nlev and pf.kind[vfirst] == PF_NEXT:
            pf_hint = 1
        elif pf_first < nlev and pf.kind[vfirst] == PF_ADJACENT and pf.meta[PM_PAIR_BITS] == 1:
            pf_hint = 2
        elif pf_first < nlev and pf.kind[vfirst] == PF_STRIDE:
            pf_hint = 3
        pt_bits = 0
        while (1 << pt_bits) < pt_cap:
            pt_bits += 1
        # Whether the top level's lookups miss often (more than one in PF_MISS_RATE of the
        # last PF_WINDOW events): only then are a later event's state below the top level,
        # and that of the victim of its fill, read ahead (if the top level lacks its line).
        # Behind a prefetcher at the top level the lookups mostly hit, and a line the top
        # level lacks HALF_AHEAD events ahead is then mostly one that a prefetch of the
        # events just before inserts in time: reading those below (sets and shadow pairs
        # of the largest level) only took the host's memory bandwidth and cache (measured,
        # stencil7 behind a stride L2: split kernel 166 -> 198 ms).
        deep = True
        top_misses = 0
        window = start
        window_misses = 0
        i = start
        while i < n:
            if CLASSIFY and (
                fl.meta[M_NPAGES] + room > pages_cap or 2 * (fl.meta[M_PT_USED] + room) > pt_cap
            ):
                return i
            if CLASSIFY and i + PREFETCH_AHEAD < n:
                if i - window == PF_WINDOW:
                    deep = (top_misses - window_misses) * PF_MISS_RATE > PF_WINDOW
                    window = i
                    window_misses = top_misses
                # Start the memory reads of a later event (its set and shadow pair at the
                # top level, its flag word), as the classified plain passes do: the shadows
                # are large, and these reads would otherwise miss the host's caches.
                # (Without classification this measured no faster.) A writeback goes no
                # further than the top level, and triggers no prefetcher.
                e_ahead = ev[i + PREFETCH_AHEAD]
                ahead = e_ahead >> EV_BITS
                demand = (e_ahead & EV_MASK) != EV_WB
                _prefetch(tags, _mb(geo, mc, c, top, ahead))
                _sh_prefetch(sh, vtop, ahead)
                _flag_prefetch(fl, ahead, pt_bits)
                if pf_hint != 0 and demand:
                    # The line the first prefetcher would request for it.
                    # Where the top level prefetches, its set only: the request touches
                    # the shadows, and the levels below, only if the top level lacks the
                    # line, which is checked HALF_AHEAD events ahead in the set read here
                    # (the shadow pair and the state below are read then). Below a
                    # prefetching level under the top nothing checks: every level's set
                    # and shadow pair are read here.
                    y = _guess(pf, vfirst, pf_hint, ahead)
                    if y != ahead:  # a stride guess without a row or stride: read above
                        if pf_first == top:
                            _prefetch(tags, _mb(geo, mc, c, top, y))
                        else:
                            for u in range(pf_first, nlev):
                                _prefetch(tags, _mb(geo, mc, c, u, y))
                                _sh_prefetch(sh, mc.vlv[c, u], y)
                if i + HALF_AHEAD < n:
                    # A nearer event, and the line its prefetch would request: where the
                    # top level lacks them (in its set, read PREFETCH_AHEAD events ahead),
                    # start reading their state below, and that of the victims of their
                    # fills at the top level, where those go. Only there: most lookups and
                    # requests stop at the top level.
                    e_soon = ev[i + HALF_AHEAD]
                    soon = e_soon >> EV_BITS
                    t_soon = e_soon & EV_MASK
                    if t_soon != EV_WB:
                        # A miss at the top level as the set stands, or an NT store (it
                        # looks at every level).
                        b_soon = _mb(geo, mc, c, top, soon)
                        miss = deep and find(tags, b_soon, geo.ways[top], soon) < 0
                        if miss or t_soon == EV_NT or t_soon == EV_NTC:  # noqa: SIM109
                            _read_below(c, top, soon, victims_below, geo, tags, mc, fl, sh, pt_bits)
                        if pf_hint != 0 and pf_first == top:
                            y = _guess(pf, vfirst, pf_hint, soon)
                            b_y = _mb(geo, mc, c, top, y)
                            if y != soon and find(tags, b_y, geo.ways[top], y) < 0:
                                _sh_prefetch(sh, vtop, y)
                                _read_below(
                                    c, top, y, victims_below, geo, tags, mc, fl, sh, pt_bits
                                )
            e = ev[i]
            line = e >> EV_BITS
            t = e & EV_MASK
            i += 1
            if t == EV_WB:
                _writeback_in(c, top, line, geo, st, mc, fl, sh, pol, pf, CLASSIFY)
                continue
            if t == EV_NT or t == EV_NTC:  # noqa: SIM109 (plain compares for Numba)
                # Every copy of core c's levels dropped, a dirty one carried down.
                carry = 1 if t == EV_NTC else 0
                _drop(c, top, nlev, carry, line, C_INVAL, geo, st, mc, fl, sh, pf, CLASSIFY)
                continue
            k = _READ if t == EV_LOAD else (_RFO if t == EV_RFO else _WRITE)
            # Down: look the line up at top, top + 1, ... until a level holds it.
            d = False
            pfhit = False
            lv = top
            while lv < nlev:
                through = _passes(pol, lv)
                forwards = k == _WRITE and (geo.wa[lv] == 0 or through)
                allocates = not forwards and not through
                vl = mc.vlv[c, lv]
                ctr[c, lv, C_LOOKUPS] += 1
                sh_hit = False
                if CLASSIFY:
                    sh_hit = _sh_touch(sh, vl, line, allocates)
                b = _mb(geo, mc, c, lv, line)
                ways = geo.ways[lv]
                p = find(tags, b, ways, line)
                if p >= 0:
                    if lv >= pf_first and tags[b + p] & PF_BIT:
                        pfhit = True
                        tags[b + p] &= NO_PF
                        pc[vl, PC_USEFUL] += 1
                    if k == _WRITE:
                        _to_front(tags, b, p, 1)
                    elif pol[lv] == P_EXCLUSIVE:
                        d = (tags[b + p] & 1) != 0
                        _remove(tags, b, ways, p)
                        if CLASSIFY:
                            _sh_drop(sh, vl, line)
                    else:
                        _to_front(tags, b, p, 0)
                    break
                ctr[c, lv, C_MISSES] += 1
                if lv == top:
                    top_misses += 1
                cls = 0
                if CLASSIFY:
                    if _seen(fl, lv, line, _key(mc, c, lv)):
                        cls = 0
                    elif sh_hit:
                        cls = 2
                    else:
                        cls = 1
                    ctr[c, lv, C_COMP + cls] += 1
                if forwards:
                    sz = np.int64(size[i - 1])
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
            # Up: the levels that missed insert the line, deepest first.
            for j in range(lv - 1, top - 1, -1):
                if act[j] != _A_FILL:
                    continue
                dirty = akind[j] == _WRITE or d
                _insert_up(c, j, line, dirty, geo, st, mc, fl, sh, pol, pf, CLASSIFY)
                d = False
            if lv >= pf_first:
                # The prefetchers run after the whole access: after the writeback of the
                # victim of L1's fill, the event right after (split_level: top is 1).
                if i < n and (ev[i] & EV_MASK) == EV_WB:
                    v = ev[i] >> EV_BITS
                    _writeback_in(c, top, v, geo, st, mc, fl, sh, pol, pf, CLASSIFY)
                    i += 1
                _after(c, line, lv, pfhit, geo, st, mc, fl, sh, pol, pf, CLASSIFY, act)
        return n

    return split_pass


#: The split kernel, by classification on (True) or off.
SPLIT_PASS = {c: _make_split_pass(c) for c in (False, True)}

_WARM: set[bool] = set()


def warm_up(classify: bool) -> None:
    """Compile (or load from Numba's cache) the access engine once per process and mode:
    on a hierarchy that runs every level in it (an inclusive L3), so that nothing else
    compiles; the same kernel then runs every other hierarchy's levels below its plain
    passes, and several cores' (the state's types are the same)."""
    from hroof.cachesim.config import HierarchyConfig, LevelConfig
    from hroof.cachesim.simulator import Simulator

    if classify not in _WARM:
        _WARM.add(classify)
        levels = (
            LevelConfig("L1", 128, 1, 64, prefetch="next-line"),
            LevelConfig("L2", 128, 1, 64, inclusion="exclusive"),
            LevelConfig("L3", 512, 2, 64, inclusion="inclusive"),
        )
        sim = Simulator(HierarchyConfig(levels), classify=classify)
        sim.feed(np.array([0, 64, 4096]), np.array([8, 8, 8]), np.array([1, 0, 2]))
        sim.finish()
