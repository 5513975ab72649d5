"""Numba kernels of the fully-associative LRU shadows of the 3C miss classification.

A level's shadow is a fully-associative LRU cache of the level's capacity in
lines, fed the same events as the level (``docs/cache-model.md``, "Miss
classification"): a miss of the level that hits its shadow is a conflict miss.
It is exact LRU kept with **timestamps and a lazy-deletion queue** instead of
a linked list, so that most of its memory traffic is sequential:

``queue`` (int64, ``qcap`` slots a level, ``qcap`` >= 2 x the capacity)
    Every reference appends the line at ``tail``; the slot of the line's
    previous reference is overwritten with ``-1`` (a tombstone). A line's
    timestamp is the queue slot of its latest reference, so the live
    (non-tombstone) slots in ``[head, tail)`` are the shadow's lines, least
    recently used first, and ``live`` counts them.
``tab`` (int64 pairs: a line, then its slot in the queue; ``-1`` if empty)
    An open-addressing table with linear probing, a power of two of at least
    twice the capacity in pairs (load at most one half; four times, load at
    most a quarter, up to ``SPARSE_CAP`` lines), mapping every line
    held by the shadow to its queue slot. Key and value share a host cache
    line, so a lookup reads one line of memory (the probe rarely passes it).

A hit tombstones the line's old slot, appends it and stores its new slot in
the table. A miss that allocates appends the line and inserts it; if that
makes ``live`` exceed the capacity, the head skips tombstones to the oldest
live slot, whose line is evicted (deleted from the table by backward shift).
When ``tail`` reaches ``qcap`` the live slots are moved to the front in order
and their table values rewritten (at most ``capacity`` moves every
``qcap - capacity`` references). Worked example, capacity 2, queue of 6::

    touch A   queue [A . . . . .]   head 0, tail 1, live 1
    touch B   queue [A B . . . .]   tail 2, live 2
    touch A   queue [- B A . . .]   hit: old slot tombstoned, tail 3
    touch C   queue [- - A C . .]   miss: live 3 > 2, head skips to B: evict B; head 2
    touch C   (MRU: nothing to do)
    touch A   queue [- - - C A .]   hit, tail 5
    touch D   queue [- - - - A D]   evicts C; head 4, tail 6 = qcap
    touch B   queue [A D B . . .]   compacted to [A D], then B evicts A: head 1

``meta`` columns (per level): ``S_HEAD``, ``S_TAIL``, ``S_LIVE`` and
``S_MRU``, the line referenced last (``-1`` after a drop), which lets a run
of references to one line skip the table. The level pass keeps these columns
in registers (:func:`_sh_touch_r`, the same operations as :func:`_sh_touch`).
Per line of capacity the shadow costs 32 bytes of table (64 up to
``SPARSE_CAP`` lines; up to twice that, the table being a power of two) and
8 x ``qcap / capacity`` bytes of queue (``qcap`` is 4 x the capacity, and at least
``QUEUE_MIN`` slots from ``QUEUE_MIN_CAP`` lines up).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils, config
from numba.cpython.unsafe.numbers import leading_zeros
from numba.extending import intrinsic

from hroof._base.jit import INLINE, JIT

_GOLDEN = -7046029254386353131  # 0x9E3779B97F4A7C15 as int64

# Shadow meta columns (per level).
S_HEAD = 0  # first queue slot that may be live
S_TAIL = 1  # next queue slot to write
S_LIVE = 2  # lines held
S_MRU = 3  # the line referenced last, -1 if none
NSMETA = 4

#: Queue slots per line of capacity (compaction every ``QUEUE_FACTOR - 1`` x capacity
#: references at most) ...
QUEUE_FACTOR = 4
#: ... but at least ``QUEUE_MIN`` slots for a shadow of ``QUEUE_MIN_CAP`` lines or more
#: (128 KiB: an L1-sized shadow then compacts every 15 000 references or so, not every
#: 2 300; a compaction costs a table lookup per line held).
QUEUE_MIN = 1 << 14
QUEUE_MIN_CAP = 64
#: How many events (or queue slots) ahead the passes start their memory reads.
PREFETCH_AHEAD = 8

#: Shadows of up to ``SPARSE_CAP`` lines (a 2 MiB level of 64-byte lines) get a table
#: of at least 4 pairs a line (load at most 1/4, 2 MiB at most), larger ones 2 (load at
#: most 1/2): at load 1/2 a lookup of an absent line probes 2.5 pairs on average and the
#: probe loop's exit is mispredicted often; at 1/4, 1.4. Measured on the random stream
#: (same run): L1 pass 46 against 70 ns an event, L2 60-68 against 98-106; an L3 table
#: of 4 pairs a line (32 MiB) measured no clear gain over 2.
SPARSE_CAP = 1 << 15


def _table_factor(cap: int) -> int:
    """Table pairs per line of capacity (at least) of a shadow of ``cap`` lines."""
    return 4 if cap <= SPARSE_CAP else 2


Shadow = namedtuple("Shadow", ["tab", "queue", "toff", "tbits", "qoff", "qcap", "ncap", "meta"])


if config.DISABLE_JIT:

    def _prefetch(arr, i):
        """A hint only: nothing to do in plain Python."""

else:

    @intrinsic
    def _prefetch(typingctx, arr, i):
        """Ask the host to fetch ``arr[i]`` into its caches (LLVM's prefetch for a read,
        high locality); a hint that changes no value. Lets a pass start the memory
        reads of an event several events ahead, so that they overlap."""
        if not isinstance(arr, types.Array):
            return None

        def codegen(context, builder, signature, args):
            aryty = signature.args[0]
            ary = context.make_array(aryty)(context, builder, args[0])
            ptr = cgutils.get_item_pointer(
                context, builder, aryty, ary, [args[1]], wraparound=False, boundscheck=False
            )
            i8p = ir.IntType(8).as_pointer()
            i32 = ir.IntType(32)
            fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
            fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
            builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
            return context.get_dummy_value()

        return types.void(arr, i), codegen


if config.DISABLE_JIT:

    def _log2_ceil(n):
        """The least ``b`` with ``2**b >= n`` (``n >= 1``)."""
        return int(n - 1).bit_length()

else:

    @njit(**INLINE)
    def _log2_ceil(n):
        """The least ``b`` with ``2**b >= n`` (``n >= 1``), as the loop ``while (1 << b) <
        n: b += 1`` computes it, in one instruction (a count of leading zeros) instead
        of a loop: the policy kernels derive a table's size this way at every lookup."""
        return 64 - np.int64(leading_zeros(np.int64(n - 1)))


@njit(**INLINE)
def _hash(key, bits):
    """Fibonacci hashing: the top ``bits`` bits of ``key * golden``."""
    return ((key * _GOLDEN) >> (64 - bits)) & ((1 << bits) - 1)


@njit(**INLINE)
def _u(i):
    """An index known not to be negative, as an unsigned integer: Numba then indexes
    without the wraparound of negative indices (a compare and a select an access)."""
    return np.uint64(i)


@njit(**INLINE)
def _sh_slot(sh, lvl, line):
    """The table slot (relative to the level's part) of ``line``, or of the empty pair
    where it would go."""
    tab = sh.tab
    bits = sh.tbits[lvl]
    base = sh.toff[lvl]
    mask = (1 << bits) - 1
    h = _hash(line, bits)
    while True:
        k = tab[_u(2 * (base + h))]
        if k == line or k < 0:
            return h
        h = (h + 1) & mask


@njit(**INLINE)
def _sh_prefetch(sh, lvl, line):
    """Start reading the table pair where a lookup of ``line`` begins."""
    _prefetch(sh.tab, 2 * (sh.toff[lvl] + _hash(line, sh.tbits[lvl])))


@njit(**INLINE)
def _sh_tab_delete(sh, lvl, slot):
    """Backward-shift deletion of pair ``slot`` from the level's linear-probing table."""
    tab = sh.tab
    bits = sh.tbits[lvl]
    base = sh.toff[lvl]
    mask = (1 << bits) - 1
    i = slot
    j = slot
    while True:
        j = (j + 1) & mask
        k = tab[_u(2 * (base + j))]
        if k < 0:
            break
        home = _hash(k, bits)
        # Move pair j into the hole at i unless its home lies cyclically in (i, j].
        if i <= j:
            stays = i < home <= j
        else:
            stays = home > i or home <= j
        if not stays:
            tab[_u(2 * (base + i))] = k
            tab[_u(2 * (base + i) + 1)] = tab[_u(2 * (base + j) + 1)]
            i = j
    tab[_u(2 * (base + i))] = -1


@njit(**JIT)
def _sh_compact(sh, lvl):
    """Move the live queue slots of level ``lvl`` to the front, in order."""
    q = sh.queue
    qo = sh.qoff[lvl]
    meta = sh.meta
    j = 0
    tail = meta[lvl, S_TAIL]
    for p in range(meta[lvl, S_HEAD], tail):
        if p + PREFETCH_AHEAD < tail:
            ahead = q[qo + p + PREFETCH_AHEAD]
            if ahead >= 0:
                _sh_prefetch(sh, lvl, ahead)
        v = q[_u(qo + p)]
        if v >= 0:
            q[_u(qo + j)] = v
            s = _sh_slot(sh, lvl, v)
            sh.tab[_u(2 * (sh.toff[lvl] + s) + 1)] = j
            j += 1
    meta[lvl, S_HEAD] = 0
    meta[lvl, S_TAIL] = j


@njit(**INLINE)
def _sh_touch(sh, lvl, line, allocate):
    """Reference ``line`` in level ``lvl``'s shadow; return True on a hit.

    A miss inserts the line only if ``allocate`` (evicting the least recently
    used line if the shadow is full). O(1) expected: one table lookup, two
    queue writes, and on an eviction a second lookup; compaction is amortised.
    """
    meta = sh.meta
    if meta[lvl, S_MRU] == line:
        return True
    tail = meta[lvl, S_TAIL]
    if tail == sh.qcap[lvl]:
        _sh_compact(sh, lvl)
        tail = meta[lvl, S_TAIL]
    tab = sh.tab
    q = sh.queue
    qo = sh.qoff[lvl]
    pair = 2 * (sh.toff[lvl] + _sh_slot(sh, lvl, line))
    if tab[_u(pair)] == line:
        q[_u(qo + tab[_u(pair + 1)])] = -1
        q[_u(qo + tail)] = line
        tab[_u(pair + 1)] = tail
        meta[lvl, S_TAIL] = tail + 1
        meta[lvl, S_MRU] = line
        return True
    if not allocate:
        return False
    tab[_u(pair)] = line
    tab[_u(pair + 1)] = tail
    q[_u(qo + tail)] = line
    meta[lvl, S_TAIL] = tail + 1
    meta[lvl, S_MRU] = line
    live = meta[lvl, S_LIVE] + 1
    if live > sh.ncap[lvl]:
        head = meta[lvl, S_HEAD]
        while q[_u(qo + head)] < 0:
            head += 1
        victim = q[_u(qo + head)]
        meta[lvl, S_HEAD] = head + 1
        # The next victims are next in the queue: start reading their pairs.
        ahead = q[qo + min(head + PREFETCH_AHEAD, tail)]
        if ahead >= 0:
            _sh_prefetch(sh, lvl, ahead)
        _sh_tab_delete(sh, lvl, _sh_slot(sh, lvl, victim))
        live -= 1
    meta[lvl, S_LIVE] = live
    return False


@njit(**INLINE)
def _sh_touch_r(sh, lvl, tab, q, tbase, bits, qo, qcap, cap, head, tail, live, mru, line, allocate):
    """:func:`_sh_touch` for a pass that keeps level ``lvl``'s meta columns (``head``,
    ``tail``, ``live``, ``mru``) and its table and queue offsets in registers: the
    same operations on the same arrays, returning ``(hit, head, tail, live, mru)``.
    ``sh.meta`` is written only around a compaction; the caller stores the meta
    columns back (:func:`_sh_store_meta`) before anything else reads them.
    """
    if mru == line:
        return True, head, tail, live, mru
    if tail == qcap:
        meta = sh.meta
        meta[lvl, S_HEAD] = head
        meta[lvl, S_TAIL] = tail
        _sh_compact(sh, lvl)
        head = meta[lvl, S_HEAD]
        tail = meta[lvl, S_TAIL]
    mask = (1 << bits) - 1
    h = _hash(line, bits)
    while True:
        k = tab[_u(2 * (tbase + h))]
        if k == line or k < 0:
            break
        h = (h + 1) & mask
    pair = 2 * (tbase + h)
    if tab[_u(pair)] == line:
        q[_u(qo + tab[_u(pair + 1)])] = -1
        q[_u(qo + tail)] = line
        tab[_u(pair + 1)] = tail
        return True, head, tail + 1, live, line
    if not allocate:
        return False, head, tail, live, mru
    tab[_u(pair)] = line
    tab[_u(pair + 1)] = tail
    q[_u(qo + tail)] = line
    live += 1
    if live > cap:
        while q[_u(qo + head)] < 0:
            head += 1
        victim = q[_u(qo + head)]
        # The next victims are next in the queue: start reading their pairs.
        ahead = q[_u(qo + min(head + PREFETCH_AHEAD, tail))]
        if ahead >= 0:
            _prefetch(tab, 2 * (tbase + _hash(ahead, bits)))
        head += 1
        _sh_tab_delete(sh, lvl, _sh_slot(sh, lvl, victim))
        live -= 1
    return False, head, tail + 1, live, line


@njit(**INLINE)
def _sh_store_meta(sh, lvl, head, tail, live, mru):
    """Store the meta columns a pass kept in registers (:func:`_sh_touch_r`)."""
    meta = sh.meta
    meta[lvl, S_HEAD] = head
    meta[lvl, S_TAIL] = tail
    meta[lvl, S_LIVE] = live
    meta[lvl, S_MRU] = mru


@njit(**INLINE)
def _sh_drop(sh, lvl, line):
    """Remove ``line`` from level ``lvl``'s shadow, if there."""
    s = _sh_slot(sh, lvl, line)
    pair = 2 * (sh.toff[lvl] + s)
    if sh.tab[pair] != line:
        return
    sh.queue[sh.qoff[lvl] + sh.tab[pair + 1]] = -1
    _sh_tab_delete(sh, lvl, s)
    sh.meta[lvl, S_LIVE] -= 1
    if sh.meta[lvl, S_MRU] == line:
        sh.meta[lvl, S_MRU] = -1


def new_shadow(caps: list[int]) -> Shadow:
    """Empty shadows of ``caps`` lines, one per level."""
    ncap = np.array(caps, dtype=np.int64)
    if (ncap < 1).any():
        raise ValueError(f"shadow capacities must be positive, got {caps}")
    # At least 2 x capacity pairs (4 x up to SPARSE_CAP lines), and 4: a miss inserts
    # before it evicts, and the backward-shift deletion needs an empty pair to stop at.
    tsize = [1 << max(2, (_table_factor(c) * c - 1).bit_length()) for c in caps]
    tbits = np.array([t.bit_length() - 1 for t in tsize], dtype=np.int64)
    toff = np.concatenate(([0], np.cumsum(tsize)[:-1])).astype(np.int64)
    qcap = np.maximum(QUEUE_FACTOR * ncap, np.where(ncap >= QUEUE_MIN_CAP, QUEUE_MIN, 0))
    qoff = np.concatenate(([0], np.cumsum(qcap)[:-1])).astype(np.int64)
    meta = np.zeros((len(caps), NSMETA), dtype=np.int64)
    meta[:, S_MRU] = -1
    return Shadow(
        tab=np.full(2 * int(sum(tsize)), -1, dtype=np.int64),
        queue=np.full(int(qcap.sum()), -1, dtype=np.int64),
        toff=toff,
        tbits=tbits,
        qoff=qoff,
        qcap=qcap,
        ncap=ncap,
        meta=meta,
    )


def check_shadow(sh: Shadow, lvl: int) -> list[int]:
    """Assert level ``lvl``'s shadow is consistent; return its lines, LRU first.

    The live queue slots hold distinct lines, as many as ``live`` and at most
    the capacity; the table holds exactly those lines, each with its slot.
    """
    meta = sh.meta[lvl]
    qo, head, tail = int(sh.qoff[lvl]), int(meta[S_HEAD]), int(meta[S_TAIL])
    assert 0 <= head <= tail <= sh.qcap[lvl], "shadow queue bounds"
    window = sh.queue[qo + head : qo + tail]
    lines = window[window >= 0].tolist()
    slots = (np.flatnonzero(window >= 0) + head).tolist()
    assert len(lines) == meta[S_LIVE] <= sh.ncap[lvl], "shadow holds too many lines"
    assert len(set(lines)) == len(lines), "shadow duplicate"
    toff, tsize = int(sh.toff[lvl]), 1 << int(sh.tbits[lvl])
    pairs = sh.tab[2 * toff : 2 * (toff + tsize)].reshape(tsize, 2)
    held = pairs[pairs[:, 0] >= 0]
    assert sorted(zip(held[:, 0].tolist(), held[:, 1].tolist(), strict=True)) == sorted(
        zip(lines, slots, strict=True)
    ), "shadow table does not index its queue"
    assert meta[S_MRU] < 0 or (lines and lines[-1] == meta[S_MRU]), "shadow MRU"
    return lines
