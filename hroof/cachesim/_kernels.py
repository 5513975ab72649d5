"""Numba kernels of the cache simulator.

Architecture
------------
The hierarchy is simulated **one level at a time**. A level's behaviour
depends on nothing but the stream of events that reaches it, so
:func:`level_pass` runs a chunk of events through one level and appends what
that level sends down (requests for missing lines, writebacks of dirty
victims, NT invalidations) to a buffer, in the order the level below would see
them in the recursive model of ``docs/cache-model.md``: a request first, then
the writeback of the victim its fill displaced. The driver then runs that
buffer through the next level, and so on. Each pass is a tight loop over one
level's state (L1's fits in the host's L1), and the lower levels see only the
few events the upper ones let through.

All state lives in flat NumPy arrays, bundled in named tuples (see
:mod:`hroof.cachesim.simulator` for how they are built and grown):

``tags`` (int64, one slot per way of every set of every level)
    Level ``l``, set ``s`` occupies ``tags[off[l] + s*ways[l] : ... + ways[l]]``.
    A slot holds ``(line << 1) | dirty`` or ``-1`` (empty). Within a set the
    slots are kept in recency order, MRU first, and valid slots form a prefix.
    A hit at position ``p`` scans ``p + 1`` slots and shifts ``p``; on
    streams with temporal locality ``p`` is almost always 0 or 1 (81 % and
    12 % of the reference stencil's L1 lookups), which is what makes the hit
    path fast: no timestamps to compare.

    Worked example, 1 set x 4 ways, lines A B C loaded then B stored::

        load A   [A  -  -  -]
        load B   [B  A  -  -]
        load C   [C  B  A  -]
        store B  [B* C  A  -]      (* = dirty bit)

``ctr`` (int64, levels x NCTR)
    Per-level counters, indices ``C_*`` below.

Classification state (only when classifying):

flag pages
    One word per distinct line touched (uint8 for up to 4 levels, uint16 up
    to 8, uint32 up to 16: :func:`flag_dtype`): bit ``l`` = seen at level
    ``l``, bit ``wb0 + l`` = written back from level ``l`` at least once
    (``wb0`` is 4, 8 or 16, kept in ``meta[M_WB0]``).
    Lines are grouped in pages of ``PAGE`` lines; an open-addressing hash
    table maps ``line >> PAGE_BITS`` to a page. Dense traces cost 1 byte per
    line touched (up to 4 levels).

shadows
    Per level, a fully-associative LRU cache of the level's capacity in
    lines, exact LRU kept with timestamps and a lazy-deletion queue
    (:mod:`hroof.cachesim._shadow_kernels`): O(1) expected per event whatever
    the capacity (an L3 of 500 000 lines costs the same per event as an L1
    of 768, bar the host's cache misses).

Kernels never allocate. When the flag pages or their hash table run short,
:func:`level_pass` stops before the event that could overflow them and
returns its index; the Python driver grows the arrays and calls again from
there, so results never depend on where that happens.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from hroof._base.jit import JIT, njit
from hroof.cachesim._shadow_kernels import (  # noqa: F401 (re-exported to the policy kernels)
    PREFETCH_AHEAD,
    S_HEAD,
    S_LIVE,
    S_MRU,
    S_TAIL,
    Shadow,
    _hash,
    _log2_ceil,
    _prefetch,
    _sh_drop,
    _sh_prefetch,
    _sh_store_meta,
    _sh_touch,
    _sh_touch_r,
    _u,
)

# Access kinds in traces.
KIND_LOAD = 0
KIND_STORE = 1
KIND_NT = 2

# Events a level sends to the level below (L1's are the trace's accesses, kinds 0-2).
EV_LOAD = 0
EV_STORE = 1  # a store forwarded by a no-write-allocate level, with its bytes
EV_NT = 2  # a non-temporal store: invalidate every copy
EV_RFO = 6  # a read for ownership
EV_WB = 7  # a writeback of a dirty line
EV_NTC = 3  # a non-temporal store carrying a dirty copy from above
#: Added to a lookup's kind (``EV_LOAD``, ``EV_STORE``, ``EV_RFO``) by a classified pass
#: in ``carry_new`` mode: the line's first event at the level below (see :func:`level_pass`).
EV_NEW = 8
# Events below L1 are packed in one int64: ``line << EV_BITS | kind``.
EV_BITS = 4
EV_MASK = (1 << EV_BITS) - 1

# Per-level counters.
C_LOOKUPS = 0
C_MISSES = 1
C_WA_FILLS = 2
C_FWD = 3
C_FWD_BYTES = 4
C_WB_IN = 5
C_WB_OUT = 6
C_WB_FIRST = 7
C_INVAL = 8
C_COMP = 9  # misses by class: +0 compulsory, +1 capacity, +2 conflict
C_LOAD_COMP = 12  # load-caused fills by class
C_FWD_COMP_BYTES = 15  # forwarded-store bytes by class
C_VICT = 18  # clean lines sent down into an exclusive/victim level below (_policy_kernels)
C_VICT_IN = 19  # clean lines arriving from above at an exclusive/victim level
C_BINV = 20  # copies dropped here by an inclusive level's eviction below
NCTR = 21

# Core counters.
K_LOADS = 0
K_STORES = 1
K_NT = 2
K_BYTES_LOADED = 3
K_BYTES_STORED = 4
K_BYTES_NT = 5
NCORE = 6

PAGE_BITS = 9
PAGE = 1 << PAGE_BITS
#: The region key bit of a core's private flags (several cores; :func:`_flag_index_b`).
KEY_SHIFT = 52
#: The classified pass prefetches a level's sets, shadow table or flag pages only if
#: they hold at least this many 8-byte words (256 KiB, a host's L2 or so).
PF_MIN_WORDS = 1 << 15
#: ... and the flag words while more than one event in ``PF_MISS_RATE`` missed in the
#: last ``PF_WINDOW`` events.
PF_MISS_RATE = 8
PF_WINDOW = 256
SEEN_BIT0 = 0


def flag_dtype(nlevels):
    """The flag word of a hierarchy of ``nlevels``, and the bit of level 0's written-back flag.

    Two bits a level: uint8 up to 4 levels, uint16 up to 8, uint32 up to 16.
    """
    for dtype, wb0 in ((np.uint8, 4), (np.uint16, 8), (np.uint32, 16)):
        if nlevels <= wb0:
            return dtype, wb0
    raise ValueError(f"at most 16 levels, got {nlevels}")


# Page-table meta slots.
M_NPAGES = 0
M_PT_USED = 1
M_WB0 = 2  # the bit of level 0's written-back flag (see flag_dtype)
NMETA = 3
# Recent regions cached in front of the page table (a power of two).
RCACHE = 64

Geometry = namedtuple("Geometry", ["ways", "nsets", "off", "mask", "wa", "line_bits", "nlevels"])
State = namedtuple("State", ["tags", "ctr", "core"])
Events = namedtuple("Events", ["ev", "size"])
Flags = namedtuple("Flags", ["pt_keys", "pt_vals", "pages", "meta", "rcache"])


# --------------------------------------------------------------------- sets
@njit(**JIT)
def _find(tags, base, ways, line):
    for p in range(ways):
        if (tags[_u(base + p)] >> 1) == line:
            return p
    return -1


@njit(**JIT)
def _to_front(tags, base, p, dirty):
    t = tags[_u(base + p)] | dirty
    for q in range(p, 0, -1):
        tags[_u(base + q)] = tags[_u(base + q - 1)]
    tags[_u(base)] = t


@njit(**JIT)
def _remove(tags, base, ways, p):
    for q in range(p, ways - 1):
        tags[base + q] = tags[base + q + 1]
    tags[base + ways - 1] = -1


# --------------------------------------------------------------- flag pages
@njit(**JIT)
def _flag_index(fl, line):
    """Index into ``fl.pages`` of ``line``'s flag word, creating its page.

    A direct-mapped cache of ``RCACHE`` recent regions in front of the hash
    table serves kernels that stream through several arrays at once.
    """
    return _flag_index_b(fl, line, _log2_ceil(fl.pt_keys.shape[0]), 0)


@njit(**JIT)
def _flag_index_b(fl, line, bits, key):
    """:func:`_flag_index` given ``bits``, the log2 of the page table's size, under the
    region key ``key`` (0; with several cores, a core's private levels keep their flags
    under ``c + 1``: ``hroof.cachesim._policy_kernels._key``)."""
    region = (line >> PAGE_BITS) + (key << KEY_SHIFT)
    rc = fl.rcache
    slot = region & (RCACHE - 1)
    if rc[_u(slot)] == region:
        return rc[_u(RCACHE + slot)] * PAGE + (line & (PAGE - 1))
    meta = fl.meta
    keys = fl.pt_keys
    cap = keys.shape[0]
    h = _hash(region, bits)
    while True:
        k = keys[_u(h)]
        if k == region:
            page = fl.pt_vals[_u(h)]
            break
        if k == -1:
            page = meta[M_NPAGES]
            meta[M_NPAGES] = page + 1
            meta[M_PT_USED] += 1
            keys[h] = region
            fl.pt_vals[h] = page
            break
        h = (h + 1) & (cap - 1)
    rc[_u(slot)] = region
    rc[_u(RCACHE + slot)] = page
    return page * PAGE + (line & (PAGE - 1))


@njit(**JIT)
def _flag_prefetch(fl, line, pt_bits):
    """Start reading ``line``'s flag word if its page exists (creates nothing).

    ``pt_bits`` is the log2 of the page table's size.
    """
    region = line >> PAGE_BITS
    rc = fl.rcache
    slot = region & (RCACHE - 1)
    if rc[_u(slot)] == region:
        _prefetch(fl.pages, rc[_u(RCACHE + slot)] * PAGE + (line & (PAGE - 1)))
        return
    keys = fl.pt_keys
    mask = keys.shape[0] - 1
    h = _hash(region, pt_bits)
    while True:
        k = keys[_u(h)]
        if k == region:
            _prefetch(fl.pages, fl.pt_vals[_u(h)] * PAGE + (line & (PAGE - 1)))
            return
        if k == -1:
            return
        h = (h + 1) & mask


@njit(**JIT)
def rehash_pages(old_keys, old_vals, new_keys, new_vals):
    """Move every region of a page table into a larger, empty one."""
    cap = new_keys.shape[0]
    bits = 0
    while (1 << bits) < cap:
        bits += 1
    for i in range(old_keys.shape[0]):
        k = old_keys[i]
        if k == -1:
            continue
        h = _hash(k, bits)
        while new_keys[h] != -1:
            h = (h + 1) & (cap - 1)
        new_keys[h] = k
        new_vals[h] = old_vals[i]


# --------------------------------------------------------------- level pass
@njit(**JIT)
def _count_writeback(ctr, fl, lvl, line, classify):
    """A dirty ``line`` leaves level ``lvl``: count it (first or repeated)."""
    ctr[lvl, C_WB_OUT] += 1
    if classify:
        _count_first_writeback(ctr, fl, lvl, _flag_index(fl, line))


@njit(**JIT)
def _count_first_writeback(ctr, fl, lvl, fi):
    """Count the writeback from level ``lvl`` of the line of flag word ``fi`` as a
    first one if the line never left ``lvl`` dirty before."""
    bit = np.int64(1) << (fl.meta[M_WB0] + lvl)
    if (fl.pages[_u(fi)] & bit) == 0:
        fl.pages[_u(fi)] |= bit
        ctr[lvl, C_WB_FIRST] += 1


@njit(**JIT)
def _emit(out, nout, line, kind):
    out.ev[_u(nout)] = (line << EV_BITS) | kind
    return nout + 1


@njit(**JIT)
def _emit_sized(out, nout, line, kind, nbytes):
    out.ev[_u(nout)] = (line << EV_BITS) | kind
    out.size[_u(nout)] = nbytes
    return nout + 1


@njit(**JIT)
def _touch(tags, base, ways, line, dirty):
    """Make ``line`` MRU of its set, inserting it if absent, in one pass over the set.

    Each slot takes its predecessor's value until the line is found (a hit at
    ``p`` shifts ``p`` slots, as :func:`_to_front`) or the set ends (a miss
    shifts them all, as :func:`_insert`). ``dirty`` is OR-ed into the line's
    dirty bit. Returns ``-2`` on a hit, else the evicted slot value (``-1`` if
    none).
    """
    new = (line << 1) | dirty
    cur = tags[_u(base)]
    if (cur >> 1) == line:
        tags[_u(base)] = cur | dirty
        return -2
    carry = new
    for p in range(ways):
        cur = tags[_u(base + p)]
        tags[_u(base + p)] = carry
        if (cur >> 1) == line:
            tags[_u(base)] = new | (cur & 1)
            return -2
        carry = cur
    return carry


def _make_level_pass(CLASSIFY, TOP):
    """Build :func:`level_pass` with classification on or off, for L1 or a lower level.

    Numba compiles the closure's ``CLASSIFY`` and ``TOP`` as constants, so each
    variant carries only its own branches (and caches to disk like any kernel).
    """

    @njit(**JIT)
    def level_pass(lvl, src, shift, size, kind, start, geo, st, fl, sh, emit, carry_new, out, nout):
        """Run events ``start..`` through level ``lvl``; append what it sends below to ``out``.

        At L1 (``TOP``) the events are the trace itself (``src`` holds byte
        addresses, ``shift`` is the line size's log2, ``kind`` the trace's kinds
        0-2, ``size`` the access sizes, each access within one line, the core's
        counters already taken); below, they are what the level above emitted
        (``src`` holds packed events ``line << EV_BITS | kind`` with kinds
        ``EV_*``, ``size`` the bytes of forwarded stores, ``kind`` unused). Each
        event is handled completely, emitting first the request for a missing
        line and then the writeback of the victim it displaced, which is the
        order in which the level below sees them in the recursive model of
        ``docs/cache-model.md``: a level's behaviour depends on nothing but its
        own stream of events, so levels can be simulated one after the other, a
        chunk at a time.

        ``carry_new`` (a classified single-core hierarchy of plain levels, every
        level fed only by the one above): a level's lookups reach the level below
        exactly when they miss, so a line is seen at a level below exactly when it
        has been seen at the one above, and a lookup that is the line's first at
        L1 is its first at every level it reaches. L1 then marks the requests of
        its compulsory misses with ``EV_NEW``, the levels below pass the mark on
        with the request and take a marked miss as compulsory and an unmarked one
        (missing the shadow too) as capacity: only L1 reads and sets the "seen"
        bits. Otherwise every level keeps its own.

        Below L1, a dirty victim's first-writeback test is deferred by four
        victims (its flag word is fetched meanwhile); the tests commute, and every
        pending one is done before the pass returns. At L1 it is made at once: the
        four registers cost the hit path more than the wait saves there.

        Returns ``(index reached, events emitted)``; the index is ``len(src)``
        unless the classification tables must grow first (the driver grows them
        and calls again from there).
        """
        n = src.shape[0]
        tags = st.tags
        ctr = st.ctr
        ways = geo.ways[lvl]
        off = geo.off[lvl]
        mask = geo.mask[lvl]
        nsets = geo.nsets[lvl]
        wa = geo.wa[lvl] != 0
        pages_cap = fl.pages.shape[0] // PAGE
        pt_cap = fl.pt_keys.shape[0]
        pt_bits = 0
        while (1 << pt_bits) < pt_cap:
            pt_bits += 1
        # Prefetch only what may not fit the host's caches: a small level's sets,
        # shadow table or flag pages are there already.
        pf_set = CLASSIFY and nsets * ways >= PF_MIN_WORDS
        pf_sh = CLASSIFY and (2 << sh.tbits[lvl]) >= PF_MIN_WORDS
        # (Below L1 with carry_new, a lookup reads no flag word: nothing to prefetch.)
        big_fl = CLASSIFY and fl.pages.shape[0] >= 8 * PF_MIN_WORDS and (TOP or not carry_new)
        # Flag words are read on misses and writebacks only: prefetch them while the
        # level misses often (more than 1 in PF_MISS_RATE events of the last window).
        pf_fl = False
        window = start
        window_misses = 0
        # Events that may still run before the flag pages or their table must grow
        # (each event creates at most one page): checked again when spent.
        room = 0
        # The shadow's meta columns and offsets live in registers too (stored back
        # around a drop and at the end).
        sh_tab = sh.tab
        sh_q = sh.queue
        sh_tbase = sh.toff[lvl]
        sh_bits = sh.tbits[lvl]
        sh_qo = sh.qoff[lvl]
        sh_qcap = sh.qcap[lvl]
        sh_cap = sh.ncap[lvl]
        sh_head = sh.meta[lvl, S_HEAD]
        sh_tail = sh.meta[lvl, S_TAIL]
        sh_live = sh.meta[lvl, S_LIVE]
        sh_mru = sh.meta[lvl, S_MRU]
        # Hot counters live in registers and are stored once per call.
        lookups = 0
        misses = 0
        wa_fills = 0
        wb_out = 0
        # Flag words of the last dirty victims, newest first, their first-writeback
        # tests pending (-1: none).
        wb0 = wb1 = wb2 = wb3 = -1
        stop = n
        for i in range(start, n):
            if CLASSIFY:
                if room == 0:
                    room = min(pages_cap - fl.meta[M_NPAGES], pt_cap // 2 - fl.meta[M_PT_USED])
                    if room <= 0:
                        stop = i
                        break
                room -= 1
                if big_fl and i - window == PF_WINDOW:
                    pf_fl = (misses - window_misses) * PF_MISS_RATE > PF_WINDOW
                    window = i
                    window_misses = misses
                # Start the memory reads of a later event (its set, its shadow pair,
                # its flag word) where they may miss the host's caches.
                j = i + PREFETCH_AHEAD
                if j < n and (pf_set or pf_sh or pf_fl):
                    ahead = src[j] >> shift if TOP else src[j] >> EV_BITS
                    if pf_set:
                        _prefetch(tags, off + (ahead & mask if mask >= 0 else ahead % nsets) * ways)
                    if pf_sh:
                        _sh_prefetch(sh, lvl, ahead)
                    if pf_fl:
                        _flag_prefetch(fl, ahead, pt_bits)
            if TOP:
                line = src[_u(i)] >> shift
                t = np.int64(kind[_u(i)])
            else:
                e = src[_u(i)]
                line = e >> EV_BITS
                t = e & EV_MASK
            new = 0
            if CLASSIFY and not TOP and t >= EV_NEW:
                new = EV_NEW
                t -= EV_NEW
            base = off + (line & mask if mask >= 0 else line % nsets) * ways
            if t == EV_LOAD or t == EV_STORE or t == EV_RFO:  # noqa: SIM109 (plain compares for Numba)
                lookups += 1
                fills = t != EV_STORE or wa
                dirty = 1 if t == EV_STORE else 0
                sh_hit = False
                if CLASSIFY:
                    sh_hit, sh_head, sh_tail, sh_live, sh_mru = _sh_touch_r(
                        sh, lvl, sh_tab, sh_q, sh_tbase, sh_bits, sh_qo, sh_qcap, sh_cap,
                        sh_head, sh_tail, sh_live, sh_mru, line, fills,
                    )  # fmt: skip
                if fills:
                    victim = _touch(tags, base, ways, line, dirty)
                    if victim == -2:
                        continue
                else:
                    p = _find(tags, base, ways, line)
                    if p >= 0:
                        _to_front(tags, base, p, 1)
                        continue
                    victim = -1
                misses += 1
                cls = 0
                if CLASSIFY:
                    if sh_hit:
                        # The shadow holds only lines this level has seen: a conflict.
                        cls = 2
                    elif carry_new and not TOP:
                        cls = 0 if new else 1
                    else:
                        fi = _flag_index_b(fl, line, pt_bits, 0)
                        bit = np.int64(1) << (SEEN_BIT0 + lvl)
                        if (fl.pages[_u(fi)] & bit) == 0:
                            fl.pages[_u(fi)] |= bit
                            if carry_new:
                                new = EV_NEW
                        else:
                            cls = 1
                    ctr[lvl, C_COMP + cls] += 1
                if not fills:
                    # No-write-allocate store miss: forward the bytes, fill nothing.
                    sz = np.int64(size[i])
                    ctr[lvl, C_FWD] += 1
                    ctr[lvl, C_FWD_BYTES] += sz
                    if CLASSIFY:
                        ctr[lvl, C_FWD_COMP_BYTES + cls] += sz
                    if emit:
                        nout = _emit_sized(out, nout, line, EV_STORE + new, sz)
                    continue
                if t == EV_LOAD:
                    if CLASSIFY:
                        ctr[lvl, C_LOAD_COMP + cls] += 1
                    if emit:
                        nout = _emit(out, nout, line, EV_LOAD + new)
                else:
                    wa_fills += 1
                    if emit:
                        nout = _emit(out, nout, line, EV_RFO + new)
                if victim >= 0 and (victim & 1):
                    wb_out += 1
                    if CLASSIFY:
                        fi = _flag_index_b(fl, victim >> 1, pt_bits, 0)
                        if TOP:
                            _count_first_writeback(ctr, fl, lvl, fi)
                        else:
                            _prefetch(fl.pages, fi)
                            if wb3 >= 0:
                                _count_first_writeback(ctr, fl, lvl, wb3)
                            wb3, wb2, wb1, wb0 = wb2, wb1, wb0, fi
                    if emit:
                        nout = _emit(out, nout, victim >> 1, EV_WB)
            elif t == EV_WB:
                # A writeback from above: a write, not a lookup; allocates without a fill.
                ctr[lvl, C_WB_IN] += 1
                if CLASSIFY:
                    if not carry_new:
                        fi = _flag_index_b(fl, line, pt_bits, 0)
                        fl.pages[fi] |= np.int64(1) << (SEEN_BIT0 + lvl)
                    _, sh_head, sh_tail, sh_live, sh_mru = _sh_touch_r(
                        sh, lvl, sh_tab, sh_q, sh_tbase, sh_bits, sh_qo, sh_qcap, sh_cap,
                        sh_head, sh_tail, sh_live, sh_mru, line, True,
                    )  # fmt: skip
                victim = _touch(tags, base, ways, line, 1)
                if victim >= 0 and (victim & 1):
                    wb_out += 1
                    if CLASSIFY:
                        fi = _flag_index_b(fl, victim >> 1, pt_bits, 0)
                        _prefetch(fl.pages, fi)  # (no writeback reaches L1: never TOP)
                        if wb3 >= 0:
                            _count_first_writeback(ctr, fl, lvl, wb3)
                        wb3, wb2, wb1, wb0 = wb2, wb1, wb0, fi
                    if emit:
                        nout = _emit(out, nout, victim >> 1, EV_WB)
            else:
                # A non-temporal store (EV_NTC: a dirty copy above is being carried down).
                carry = t == EV_NTC
                if carry:
                    ctr[lvl, C_WB_IN] += 1
                    if CLASSIFY and not carry_new:
                        fi = _flag_index_b(fl, line, pt_bits, 0)
                        fl.pages[fi] |= np.int64(1) << (SEEN_BIT0 + lvl)
                p = _find(tags, base, ways, line)
                if p >= 0:
                    ctr[lvl, C_INVAL] += 1
                    carry = carry or (tags[base + p] & 1) != 0
                    _remove(tags, base, ways, p)
                if CLASSIFY:
                    _sh_store_meta(sh, lvl, sh_head, sh_tail, sh_live, sh_mru)
                    _sh_drop(sh, lvl, line)
                    sh_live = sh.meta[lvl, S_LIVE]
                    sh_mru = sh.meta[lvl, S_MRU]
                if carry:
                    _count_writeback(ctr, fl, lvl, line, CLASSIFY)
                if emit:
                    nout = _emit(out, nout, line, EV_NTC if carry else EV_NT)
        if CLASSIFY:
            _sh_store_meta(sh, lvl, sh_head, sh_tail, sh_live, sh_mru)
            for fi in (wb0, wb1, wb2, wb3):
                if fi >= 0:
                    _count_first_writeback(ctr, fl, lvl, fi)
        ctr[lvl, C_LOOKUPS] += lookups
        ctr[lvl, C_MISSES] += misses
        ctr[lvl, C_WA_FILLS] += wa_fills
        ctr[lvl, C_WB_OUT] += wb_out
        return stop, nout

    return level_pass


#: ``LEVEL_PASS[classify, top]``: the level pass with classification on or off, for L1
#: (``top``: the trace's byte addresses and kinds) or a lower level (packed events).
LEVEL_PASS = {(c, top): _make_level_pass(c, top) for c in (False, True) for top in (False, True)}


@njit(**JIT)
def flush_level(lvl, geo, st, fl, classify, emit, out):
    """Write back level ``lvl``'s dirty lines: set by set, LRU to MRU.

    Returns the number of writebacks emitted into ``out`` for the level below
    (which the driver runs through the lower levels before flushing the next).
    """
    tags = st.tags
    ways = geo.ways[lvl]
    nout = 0
    for s in range(geo.nsets[lvl]):
        base = geo.off[lvl] + s * ways
        for p in range(ways - 1, -1, -1):
            t = tags[base + p]
            if t >= 0 and (t & 1):
                tags[base + p] = t ^ 1
                _count_writeback(st.ctr, fl, lvl, t >> 1, classify)
                if emit:
                    nout = _emit(out, nout, t >> 1, EV_WB)
    return nout


@njit(**JIT)
def count_dirty(geo, st, lvl):
    """Dirty lines held by level ``lvl`` (sizes the flush's output buffer)."""
    tags = st.tags
    start = geo.off[lvl]
    end = start + geo.ways[lvl] * geo.nsets[lvl]
    n = 0
    for i in range(start, end):
        if tags[i] >= 0 and (tags[i] & 1):
            n += 1
    return n
