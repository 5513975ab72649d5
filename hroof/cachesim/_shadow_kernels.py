"""Numba kernels of the fully-associative LRU shadows of the 3C miss classification.

A level's shadow is a fully-associative LRU cache of the level's capacity in
lines, fed the same events as the level (``docs/cache-model.md``, "Miss
classification"): a miss of the level that hits its shadow is a conflict miss.
It is exact LRU kept with **timestamps and a lazy-deletion queue** instead of
a linked list, so that most of its memory traffic is sequential:

``queue`` (uint32, ``qcap`` slots a level, ``qcap`` >= 2 x the capacity)
    Every reference appends the line (the index of its pair in the table) at
    ``tail``; the slot of the line's previous reference is overwritten with
    ``TOMB`` (a tombstone). A line's timestamp is the queue slot of its latest
    reference, so the live (non-tombstone) slots in ``[head, tail)`` are the
    shadow's lines, least recently used first, and ``live`` counts them.
``tab`` (int64 pairs: a line, then its slot in the queue; key ``-1`` if empty)
    A hash table of **buckets of four pairs**, each bucket one 64-byte line of
    the host's cache, a power of two of at least four times the capacity in
    pairs (load at most a quarter; eight times up to ``SMALL_CAP`` lines, twice
    above ``SPARSE_CAP``). A line
    goes in the first bucket from its home (Fibonacci hashing) with an empty
    pair, and a full bucket it passes counts it in its **overflow count** (kept
    in the high bits of the bucket's last value, above ``V_SHIFT``, so that the
    first pair's value, read on most hits, is a slot alone). A lookup
    compares the keys of the home bucket (the first pair, where most lines sit,
    with a branch; the other three without one, so no loop to mispredict) and
    goes on to the next bucket only while the one it left has a count: at load
    1/4, about 1 % of the buckets have one (measured on random lines). A line
    keeps its pair while it is held, so the queue can name the pair: an
    eviction empties the victim's pair directly (and uncounts it from the
    buckets it passed), with no search and no pair moved.

A hit tombstones the line's old slot, appends it and stores its new slot in
the table. A miss that allocates inserts the line and appends it; if that
makes ``live`` exceed the capacity, the head skips tombstones to the oldest
live slot, whose pair is emptied. When ``tail`` reaches ``qcap`` the live slots
are moved to the front in order and their pairs' values rewritten (at most
``capacity`` moves every ``qcap - capacity`` references, each a write to a
known pair). Worked example, capacity 2, queue of 6 (lines shown in the queue
for their pairs)::

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
in registers (:func:`_sh_touch_r`; :func:`_sh_touch` is the same with the
columns in ``meta``).
Per line of capacity the shadow costs 64 bytes of table (128 up to
``SMALL_CAP`` lines, 32 above ``SPARSE_CAP``; up to twice that, the table
being a power of two) and
4 x ``qcap / capacity`` bytes of queue (``qcap`` is 4 x the capacity, and at
least ``QUEUE_MIN`` slots from ``QUEUE_MIN_CAP`` lines up): 80 bytes a line.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils, config
from numba.cpython.unsafe.numbers import leading_zeros
from numba.extending import intrinsic

from hroof._base.jit import HOT, JIT, njit

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
#: (64 KiB: an L1-sized shadow then compacts every 15 000 references or so, not every
#: 2 300; a compaction costs a write to a pair per line held).
QUEUE_MIN = 1 << 14
QUEUE_MIN_CAP = 64
#: How many events (or queue slots) ahead the passes start their memory reads.
PREFETCH_AHEAD = 8

#: Shadows of up to ``SPARSE_CAP`` lines (a 64 MiB level of 64-byte lines) get a table
#: of at least 4 pairs a line (load at most 1/4), larger ones 2 (load at most 1/2, so that
#: the table of the largest levels stays at 32 bytes a line). At load 1/2 a bucket of four
#: is full (and an absent line's lookup reads the next one) several times as often as at
#: 1/4: measured alone on random lines, 17 against 9 ns a reference for 32 Ki lines, 47
#: against 33 for 512 Ki (``bench/RESULTS.md``, "Classification at 1x on random lines").
SPARSE_CAP = 1 << 20
#: ... and those of up to ``SMALL_CAP`` lines (a 256 KiB level, an L1) 8 pairs a line: more
#: of their lines sit in the first pair of their bucket, where a hit is found with one
#: compare (on the reference stream's lines, alone: 3.6 against 3.9 ns a reference for 768
#: lines), for at most 512 KiB of table.
SMALL_CAP = 1 << 12


#: A table value is a queue slot (below 2**V_SHIFT: a queue holds fewer than 2**32 slots)
#: and, in the last pair of a bucket, the bucket's overflow count above it (how many held
#: lines probed past the bucket, full when they were inserted; below 2**30).
V_SHIFT = 33
V_ONE = 1 << V_SHIFT
V_SLOT = V_ONE - 1
V_COUNT = ~V_SLOT
#: A queue slot holds the index of its line's pair in the level's table (which never
#: moves while the line is held), or ``TOMB``.
TOMB = np.uint32(0xFFFFFFFF)


def _table_factor(cap: int) -> int:
    """Table pairs per line of capacity (at least) of a shadow of ``cap`` lines."""
    return 8 if cap <= SMALL_CAP else 4 if cap <= SPARSE_CAP else 2


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

    @njit(**JIT)
    def _log2_ceil(n):
        """The least ``b`` with ``2**b >= n`` (``n >= 1``), as the loop ``while (1 << b) <
        n: b += 1`` computes it, in one instruction (a count of leading zeros) instead
        of a loop: the policy kernels derive a table's size this way at every lookup."""
        return 64 - np.int64(leading_zeros(np.int64(n - 1)))


@njit(**JIT)
def _hash(key, bits):
    """Fibonacci hashing: the top ``bits`` bits of ``key * golden``."""
    return ((key * _GOLDEN) >> (64 - bits)) & ((1 << bits) - 1)


@njit(**JIT)
def _u(i):
    """An index known not to be negative, as an unsigned integer: Numba then indexes
    without the wraparound of negative indices (a compare and a select an access)."""
    return np.uint64(i)


@njit(**JIT)
def _in_bucket(tab, b, key):
    """The index in ``tab`` of ``key`` among the four keys of the bucket starting at
    ``tab[b]``, or -1: four compares and no branch to mispredict (a key is held once;
    the empty key -1 may be held several times, and any of them will do)."""
    r = -1
    if tab[_u(b + 6)] == key:
        r = b + 6
    if tab[_u(b + 4)] == key:
        r = b + 4
    if tab[_u(b + 2)] == key:
        r = b + 2
    if tab[_u(b)] == key:
        r = b
    return r


@njit(**JIT)
def _line_in_bucket(tab, b, line):
    """:func:`_in_bucket` for a held line: the first pair, where most lines are, with a
    branch (a hit-dominated stream finds it there), then all four without."""
    if tab[_u(b)] == line:
        return b
    return _in_bucket(tab, b, line)


@njit(**JIT)
def _sh_find(tab, base, bits, line):
    """The index in ``tab`` of ``line``'s key in a level's table (``2**bits`` pairs from
    ``tab[base]``), or -1 if the shadow does not hold it: its home bucket, and the next
    ones while the one before has an overflow count."""
    mask = (1 << (bits - 2)) - 1
    h = _hash(line, bits - 2)
    while True:
        b = base + 8 * h
        k = _line_in_bucket(tab, b, line)
        if k >= 0 or tab[_u(b + 7)] < V_ONE:
            return k
        h = (h + 1) & mask


@njit(**JIT)
def _sh_insert(tab, base, bits, line, slot):
    """Put ``line`` (not held) with queue slot ``slot`` in the first bucket from its home
    with an empty pair, counting it in the overflow count of every full bucket it passes;
    return the index in ``tab`` of its key."""
    mask = (1 << (bits - 2)) - 1
    h = _hash(line, bits - 2)
    while True:
        b = base + 8 * h
        k = _in_bucket(tab, b, -1)
        if k >= 0:
            tab[_u(k)] = line
            tab[_u(k + 1)] = (tab[_u(k + 1)] & V_COUNT) | slot
            return k
        tab[_u(b + 7)] += V_ONE
        h = (h + 1) & mask


@njit(**JIT)
def _sh_remove(tab, base, bits, pair):
    """Empty the level's pair ``pair`` (it holds a line), uncounting the line from the
    overflow counts of the buckets between its home and its own: no search, no move."""
    k = base + 2 * pair
    line = tab[_u(k)]
    tab[_u(k)] = -1
    mask = (1 << (bits - 2)) - 1
    h = _hash(line, bits - 2)
    at = pair >> 2
    while h != at:
        tab[_u(base + 8 * h + 7)] -= V_ONE
        h = (h + 1) & mask


@njit(**JIT)
def _sh_prefetch(sh, lvl, line):
    """Start reading the bucket where a lookup of ``line`` begins."""
    _prefetch(sh.tab, 2 * sh.toff[lvl] + 8 * _hash(line, sh.tbits[lvl] - 2))


@njit(**JIT)
def _sh_compact(sh, lvl):
    """Move the live queue slots of level ``lvl`` to the front, in order, and store
    each line's new slot in its pair (found from the queue: no lookup)."""
    q = sh.queue
    qo = sh.qoff[lvl]
    meta = sh.meta
    tab = sh.tab
    base = 2 * sh.toff[lvl]
    j = 0
    tail = meta[lvl, S_TAIL]
    for p in range(meta[lvl, S_HEAD], tail):
        if p + PREFETCH_AHEAD < tail:
            ahead = q[_u(qo + p + PREFETCH_AHEAD)]
            if ahead != TOMB:
                _prefetch(tab, base + 2 * np.int64(ahead))
        v = q[_u(qo + p)]
        if v != TOMB:
            q[_u(qo + j)] = v
            k = base + 2 * np.int64(v) + 1
            tab[_u(k)] = (tab[_u(k)] & V_COUNT) | j
            j += 1
    meta[lvl, S_HEAD] = 0
    meta[lvl, S_TAIL] = j


@njit(**JIT)
def _sh_touch(sh, lvl, line, allocate):
    """Reference ``line`` in level ``lvl``'s shadow; return True on a hit.

    A miss inserts the line only if ``allocate`` (evicting the least recently
    used line if the shadow is full). O(1) expected: one bucket read, two
    queue writes, and on an eviction the victim's pair; compaction is amortised.
    """
    meta = sh.meta
    hit, head, tail, live, mru = _sh_touch_r(
        sh, lvl, sh.tab, sh.queue, sh.toff[lvl], sh.tbits[lvl], sh.qoff[lvl], sh.qcap[lvl],
        sh.ncap[lvl], meta[lvl, S_HEAD], meta[lvl, S_TAIL], meta[lvl, S_LIVE],
        meta[lvl, S_MRU], line, allocate,
    )  # fmt: skip
    _sh_store_meta(sh, lvl, head, tail, live, mru)
    return hit


@njit(**HOT)
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
    base = 2 * tbase
    h = _hash(line, bits - 2)
    b = base + 8 * h
    if tab[_u(b)] == line:
        # The first pair of its home bucket, where most lines are: its value is a slot
        # alone (the overflow count is in the last pair's), and its index 4 h.
        q[_u(qo + tab[_u(b + 1)])] = TOMB
        q[_u(qo + tail)] = np.uint32(4 * h)
        tab[_u(b + 1)] = tail
        return True, head, tail + 1, live, line
    k = _sh_find(tab, base, bits, line)
    if k >= 0:
        v = tab[_u(k + 1)]
        q[_u(qo + (v & V_SLOT))] = TOMB
        q[_u(qo + tail)] = np.uint32((k - base) >> 1)
        tab[_u(k + 1)] = (v & V_COUNT) | tail
        return True, head, tail + 1, live, line
    if not allocate:
        return False, head, tail, live, mru
    k = _sh_insert(tab, base, bits, line, tail)
    q[_u(qo + tail)] = np.uint32((k - base) >> 1)
    live += 1
    if live > cap:
        while q[_u(qo + head)] == TOMB:
            head += 1
        victim = np.int64(q[_u(qo + head)])
        # The next victims are next in the queue: start reading their pairs.
        ahead = q[_u(qo + min(head + PREFETCH_AHEAD, tail))]
        if ahead != TOMB:
            _prefetch(tab, base + 2 * np.int64(ahead))
        head += 1
        _sh_remove(tab, base, bits, victim)
        live -= 1
    return False, head, tail + 1, live, line


@njit(**JIT)
def _sh_store_meta(sh, lvl, head, tail, live, mru):
    """Store the meta columns a pass kept in registers (:func:`_sh_touch_r`)."""
    meta = sh.meta
    meta[lvl, S_HEAD] = head
    meta[lvl, S_TAIL] = tail
    meta[lvl, S_LIVE] = live
    meta[lvl, S_MRU] = mru


@njit(**JIT)
def _sh_drop(sh, lvl, line):
    """Remove ``line`` from level ``lvl``'s shadow, if there."""
    tab = sh.tab
    base = 2 * sh.toff[lvl]
    k = _sh_find(tab, base, sh.tbits[lvl], line)
    if k < 0:
        return
    sh.queue[_u(sh.qoff[lvl] + (tab[_u(k + 1)] & V_SLOT))] = TOMB
    _sh_remove(tab, base, sh.tbits[lvl], (k - base) >> 1)
    sh.meta[lvl, S_LIVE] -= 1
    if sh.meta[lvl, S_MRU] == line:
        sh.meta[lvl, S_MRU] = -1


def _aligned_table(pairs: int) -> np.ndarray:
    """``pairs`` empty pairs (key -1, value 0) whose buckets each fill one 64-byte line
    of the host's cache."""
    raw = np.empty(2 * pairs + 8, dtype=np.int64)
    skip = (-raw.ctypes.data % 64) // 8
    tab = raw[skip : skip + 2 * pairs]
    tab[0::2] = -1
    tab[1::2] = 0
    return tab


def new_shadow(caps: list[int]) -> Shadow:
    """Empty shadows of ``caps`` lines, one per level."""
    ncap = np.array(caps, dtype=np.int64)
    if (ncap < 1).any():
        raise ValueError(f"shadow capacities must be positive, got {caps}")
    # At least 2 x capacity pairs (4 x up to SPARSE_CAP lines), and two buckets: a miss
    # inserts before it evicts, so a full shadow holds one line more for a moment.
    tsize = [1 << max(3, (_table_factor(c) * c - 1).bit_length()) for c in caps]
    tbits = np.array([t.bit_length() - 1 for t in tsize], dtype=np.int64)
    toff = np.concatenate(([0], np.cumsum(tsize)[:-1])).astype(np.int64)
    qcap = np.maximum(QUEUE_FACTOR * ncap, np.where(ncap >= QUEUE_MIN_CAP, QUEUE_MIN, 0))
    qoff = np.concatenate(([0], np.cumsum(qcap)[:-1])).astype(np.int64)
    meta = np.zeros((len(caps), NSMETA), dtype=np.int64)
    meta[:, S_MRU] = -1
    return Shadow(
        tab=_aligned_table(int(sum(tsize))),
        queue=np.full(int(qcap.sum()), TOMB, dtype=np.uint32),
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
    the capacity; the table holds exactly those lines, each with its slot, and
    each bucket's overflow count is the number of held lines whose probe from
    their home bucket passed it.
    """
    meta = sh.meta[lvl]
    qo, head, tail = int(sh.qoff[lvl]), int(meta[S_HEAD]), int(meta[S_TAIL])
    assert 0 <= head <= tail <= sh.qcap[lvl], "shadow queue bounds"
    window = sh.queue[qo + head : qo + tail]
    live = window != TOMB
    at = window[live].astype(np.int64)
    slots = np.flatnonzero(live) + head
    toff, bits = int(sh.toff[lvl]), int(sh.tbits[lvl])
    pairs = sh.tab[2 * toff : 2 * (toff + (1 << bits))].reshape(-1, 2)
    assert len(at) == meta[S_LIVE] <= sh.ncap[lvl], "shadow holds too many lines"
    assert len(set(at.tolist())) == len(at), "shadow duplicate"
    lines = pairs[at, 0].tolist() if len(at) else []
    assert all(x >= 0 for x in lines), "shadow queue points at an empty pair"
    assert ((pairs[at, 1] & V_SLOT) == slots).all(), "shadow table does not index its queue"
    held = np.flatnonzero(pairs[:, 0] >= 0)
    assert sorted(held.tolist()) == sorted(at.tolist()), "shadow table holds other lines"
    keys = pairs[held, 0]
    nb = 1 << (bits - 2)
    counts = [0] * nb
    homes = ((keys * np.int64(_GOLDEN)) >> np.int64(64 - bits + 2)) & (nb - 1)
    for home, bucket in zip(homes.tolist(), (held // 4).tolist(), strict=True):
        while home != bucket:
            counts[home] += 1
            home = (home + 1) % nb
    assert (pairs[3::4, 1] >> V_SHIFT).tolist() == counts, "shadow overflow counts"
    assert not (pairs[:, 1] & V_COUNT)[np.arange(len(pairs)) % 4 != 3].any(), "stray counts"
    assert meta[S_MRU] < 0 or (lines and lines[-1] == meta[S_MRU]), "shadow MRU"
    return lines
