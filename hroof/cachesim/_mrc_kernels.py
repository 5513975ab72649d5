"""The Numba kernels of the miss-ratio curves (:mod:`hroof.cachesim.mrc` drives them).

The data structures (a hash table of last-access times, a bitmap of the
stack's entries over time with a Fenwick tree of its 64-time blocks, a
max-heap of holes) are described in the notes of :mod:`hroof.cachesim.mrc`.
Every kernel is a pure function over flat arrays; ``tests/naive_mrc.py``
holds the plain-Python twins.
"""

from __future__ import annotations

import numpy as np
from numba.core import config

from hroof._base.jit import JIT, njit
from hroof.cachesim import _kernels as K
from hroof.cachesim._shadow_kernels import PREFETCH_AHEAD, _prefetch, _u

if config.DISABLE_JIT:

    def _ctz(x):
        """Trailing zero bits of a non-zero uint64 (plain Python)."""
        x = int(x)
        return (x & -x).bit_length() - 1

else:
    from numba.cpython.unsafe.numbers import trailing_zeros as _ctz

#: Operations of the passes: a counted lookup that allocates, a write that
#: allocates uncounted (an arriving writeback), an invalidation (NT store), and
#: an invalidation that also marks the line seen (an NT store carrying a dirty copy).
OP_LOOKUP = 0
OP_WRITE = 1
OP_INVAL = 2
OP_INVAL_SEEN = 3

#: Simulator event kind (trace kinds 0-2 at L1, ``EV_*`` below) -> operation.
OPS = np.full(16, OP_LOOKUP, dtype=np.uint8)
OPS[K.EV_LOAD] = OP_LOOKUP
OPS[K.EV_STORE] = OP_LOOKUP
OPS[K.EV_RFO] = OP_LOOKUP
OPS[K.EV_WB] = OP_WRITE
OPS[K.EV_NT] = OP_INVAL
OPS[K.EV_NTC] = OP_INVAL_SEEN

#: Hash space of SHARDS sampling: a line is sampled when ``hash(line) < T``, ``T <= P``.
SAMPLE_BITS = 24
SAMPLE_P = 1 << SAMPLE_BITS
#: Disjoint sub-samples whose spread estimates the sampling error.
SUBSAMPLES = 4

# meta slots of the fully-associative state
M_NOW = 0  # next access time
M_LIVE = 1  # entries in the stack (lines and holes)
M_NKEYS = 2  # keys in the hash table
M_NHOLES = 3
M_LOOKUPS = 4
M_COLD = 5  # lookups of lines never seen before
M_RELOAD = 6  # lookups of seen lines not in the stack (invalidated earlier)
M_WRITES = 7
M_INVALS = 8  # invalidations that removed a line
M_THRESH = 9  # sampling threshold (fixed-size variant lowers it)
M_HBITS = 10  # log2 of the hash table size
M_DROPPED = 11  # lines dropped by the fixed-size variant
M_SAMPLED = 12  # distinct sampled lines held (fixed-size variant)
NMETA = 13


# ------------------------------------------------------------------ kernels
@njit(**JIT)
def _mix(x):
    """splitmix64's finaliser (as int64 arithmetic): a well-mixed 64-bit hash."""
    z = np.uint64(x) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(**JIT)
def _mix_top(x):
    """:func:`_mix` without its last step: ``z ^ (z >> 31)`` keeps ``z``'s top 33 bits, so
    the two agree on the top :data:`SAMPLE_BITS` bits, all the sampling test reads (two
    vector operations fewer per access in the filters' first loop)."""
    z = np.uint64(x) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    return (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)


@njit(**JIT)
def _top(thresh):
    """``hash >> 40 < thresh`` as ``hash <= top`` (``thresh = 2**24`` wraps to ``2**64 - 1``:
    keep all)."""
    return (np.uint64(thresh) << np.uint64(64 - SAMPLE_BITS)) - np.uint64(1)


@njit(**JIT)
def sample_hash(lines, key, out_hash, out_sub):
    """The SHARDS hash of each line (``[0, 2**24)``) and its sub-sample (``0..3``):
    the top 24 bits and the low 2 bits of ``_mix(line ^ key)`` (``key`` from the seed)."""
    for i in range(lines.shape[0]):
        z = _mix(lines[i] ^ key)
        out_hash[i] = np.int64(z >> np.uint64(64 - SAMPLE_BITS))
        out_sub[i] = np.int64(z & np.uint64(SUBSAMPLES - 1))


#: Lines hashed together: a group of ``2**GROUP_BITS`` consecutive lines has consecutive
#: home slots (see :func:`_slot`).
GROUP_BITS = 3


@njit(**JIT)
def _home(line, hbits):
    """The home slot of ``line`` in a table of ``2**hbits`` slots (see :func:`_slot`)."""
    g = np.uint64(GROUP_BITS)
    h = ((np.uint64(line) >> g) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(64 - hbits)
    return np.int64(((h >> g) << g) | (np.uint64(line) & ((np.uint64(1) << g) - np.uint64(1))))


@njit(**JIT)
def _slot(table, line, hbits):
    """The slot holding ``line`` in ``table`` (pairs key, value), or the empty slot where
    it would go (linear probing; ``table[2 s]`` is the key, ``table[2 s + 1]`` the value).

    The home slot is a Fibonacci hash of ``line >> GROUP_BITS`` with the line's low
    ``GROUP_BITS`` bits kept: the 8 lines of an aligned group sit in 128 consecutive
    bytes of the table, so a stream walking an array reads the table nearly
    sequentially instead of taking a host cache miss per line. A stride of 8 lines or
    more uses one home slot in 8; the table's load of at most one half keeps those
    probe runs short, and they stay in contiguous memory."""
    mask = (table.shape[0] >> 1) - 1
    s = _home(line, hbits)
    while True:
        k = table[_u(2 * s)]
        if k == line or k < 0:
            return s
        s = (s + 1) & mask


@njit(**JIT)
def _popcount(x):
    """Set bits of a uint64 (SWAR)."""
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@njit(**JIT)
def _mark(words, btree, t, v):
    """Set (``v = 1``) or clear (``v = -1``) the entry at time ``t``."""
    b = t >> 6
    words[_u(b)] ^= np.uint64(1) << np.uint64(t & 63)
    i = b + 1
    n = btree.shape[0]
    while i < n:
        btree[_u(i)] += v
        i += i & (-i)


@njit(**JIT)
def _move(words, btree, t, now):
    """Clear the entry at time ``t`` and set the one at ``now`` (``t < now``): the two
    Fenwick updates walk up from their blocks only until their chains meet, where the
    -1 and the +1 cancel (a reuse within one 64-time block touches no tree node)."""
    words[_u(t >> 6)] ^= np.uint64(1) << np.uint64(t & 63)
    words[_u(now >> 6)] ^= np.uint64(1) << np.uint64(now & 63)
    i = (t >> 6) + 1
    j = (now >> 6) + 1
    n = btree.shape[0]
    while i != j:
        if i < j:
            if i >= n:
                break
            btree[_u(i)] -= 1
            i += i & (-i)
        else:
            if j >= n:
                break
            btree[_u(j)] += 1
            j += j & (-j)


@njit(**JIT)
def _after(words, btree, t, now):
    """Entries at times ``t+1 .. now-1``: bits of the two end words, and the Fenwick range
    of the blocks between (walking both prefix chains only down to where they meet, so
    short distances cost few steps)."""
    bt = t >> 6
    bn = now >> 6
    if bt == bn:
        w = words[_u(bt)] >> np.uint64(t & 63) >> np.uint64(1)
        return _popcount(w & ((np.uint64(1) << np.uint64(now - t - 1)) - np.uint64(1)))
    s = _popcount(words[_u(bt)] >> np.uint64(t & 63) >> np.uint64(1))
    s += _popcount(words[_u(bn)] & ((np.uint64(1) << np.uint64(now & 63)) - np.uint64(1)))
    i = bn
    j = bt + 1
    while i != j:
        if i > j:
            s += btree[_u(i)]
            i -= i & (-i)
        else:
            s -= btree[_u(j)]
            j -= j & (-j)
    return s


@njit(**JIT)
def _heap_push(heap, n, v):
    i = n
    heap[i] = v
    while i > 0:
        parent = (i - 1) >> 1
        if heap[parent] >= v:
            break
        heap[i] = heap[parent]
        heap[parent] = v
        i = parent
    return n + 1


@njit(**JIT)
def _heap_pop(heap, n):
    """Remove the largest; return the new size (the largest was ``heap[0]``)."""
    n -= 1
    v = heap[n]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and heap[c + 1] > heap[c]:
            c += 1
        if heap[c] <= v:
            break
        heap[i] = heap[c]
        i = c
    if n > 0:
        heap[i] = v
    return n


@njit(**JIT)
def _pairs_sift_down(ph, pl, n):
    j = 0
    while True:
        c = 2 * j + 1
        if c >= n:
            break
        if c + 1 < n and ph[c + 1] > ph[c]:
            c += 1
        if ph[c] <= ph[j]:
            break
        ph[c], ph[j] = ph[j], ph[c]
        pl[c], pl[j] = pl[j], pl[c]
        j = c


@njit(**JIT)
def fa_pass(src, shift, kinds, opmap, hashes, scale, table, words, btree, heap, hist, fhist,
            fmeta, meta, pairs_h, pairs_l):  # fmt: skip
    """Run the events (lines ``src >> shift``, operations ``opmap[kinds]``) through the
    fully-associative stack; histogram lookups by distance.

    ``hist[d]`` counts the lookups at (sampled) stack distance ``d``; the
    driver scales it by ``1/R`` when sampling. With ``pairs_h`` of
    positive length (the fixed-size SHARDS variant), events whose hash is not
    below ``meta[M_THRESH]`` are skipped, the threshold is lowered whenever
    more than ``len(pairs_h) - 1`` distinct lines would be held, and lookups
    go to ``fhist``/``fmeta`` weighted by the inverse of the rate at their
    time (the paper's rescaling of the histogram, done as weights). Returns
    the index reached: the whole batch unless the histogram or the hash table
    must grow (the driver grows it and calls again). The driver sizes every
    other array for the whole batch beforehand.
    """
    hbits = meta[M_HBITS]
    now = meta[M_NOW]
    live = meta[M_LIVE]
    nkeys = meta[M_NKEYS]
    nholes = meta[M_NHOLES]
    lookups = meta[M_LOOKUPS]
    cold = meta[M_COLD]
    reload = meta[M_RELOAD]
    writes = meta[M_WRITES]
    invals = meta[M_INVALS]
    thresh = meta[M_THRESH]
    fixed = pairs_h.shape[0] > 0
    hlen = fhist.shape[0] if fixed else hist.shape[0]
    nsampled = meta[M_SAMPLED]
    kmax = table.shape[0] >> 2  # keys at most half the table's slots: probes stay short
    n = src.shape[0]
    stop = n
    for i in range(n):
        line = src[i] >> shift
        op = opmap[kinds[i]]
        if i + 2 * PREFETCH_AHEAD < n:
            # Start the memory reads of later events now, so that they overlap: the table
            # slot of the event 16 ahead, the time bitmap word of the one 8 ahead (its slot
            # was fetched 8 events ago; a probe past the home slot just misses the hint).
            _prefetch(table, 2 * _home(src[i + 2 * PREFETCH_AHEAD] >> shift, hbits))
            a = src[i + PREFETCH_AHEAD] >> shift
            ha = _home(a, hbits)
            if table[_u(2 * ha)] == a and table[_u(2 * ha + 1)] >= 0:
                _prefetch(words, table[_u(2 * ha + 1)] >> 6)
        if fixed:
            if hashes[i] >= thresh:
                continue
            scale = SAMPLE_P / thresh
        if (live + 1) * (scale if fixed else 1.0) + 1 >= hlen or nkeys >= kmax:
            stop = i  # the histogram or the table must grow first
            break
        s = _slot(table, line, hbits)
        fresh = False
        if table[_u(2 * s)] != line:
            if op == OP_INVAL:
                continue
            table[_u(2 * s)] = line
            table[_u(2 * s + 1)] = -1
            nkeys += 1
            fresh = True
            if fixed:
                # A max-heap of (hash, line) of the lines held.
                j = nsampled
                pairs_h[j] = hashes[i]
                pairs_l[j] = line
                while j > 0:
                    p = (j - 1) >> 1
                    if pairs_h[p] >= pairs_h[j]:
                        break
                    pairs_h[p], pairs_h[j] = pairs_h[j], pairs_h[p]
                    pairs_l[p], pairs_l[j] = pairs_l[j], pairs_l[p]
                    j = p
                nsampled += 1
        t = table[_u(2 * s + 1)]
        if op >= OP_INVAL:
            if t >= 0:
                nholes = _heap_push(heap, nholes, t)
                table[_u(2 * s + 1)] = -1
                invals += 1
        else:
            if op == OP_LOOKUP:
                if fixed:
                    fmeta[0] += scale
                    if t < 0:
                        fmeta[1 if fresh else 2] += scale
                lookups += 1
                if t < 0:
                    if fresh:
                        cold += 1
                    else:
                        reload += 1
            else:
                writes += 1
            if t < 0 or t != now - 1:
                if t >= 0 and op == OP_LOOKUP:
                    d = _after(words, btree, t, now)
                    if fixed:
                        fhist[np.int64(d * scale)] += scale
                    else:
                        hist[_u(d)] += 1
                if nholes > 0 and (t < 0 or heap[0] > t):
                    h = heap[0]
                    nholes = _heap_pop(heap, nholes)
                    if t >= 0:
                        nholes = _heap_push(heap, nholes, t)
                    _move(words, btree, h, now)
                elif t >= 0:
                    _move(words, btree, t, now)
                else:
                    live += 1
                    _mark(words, btree, now, 1)
                table[_u(2 * s + 1)] = now
                now += 1
            elif op == OP_LOOKUP:
                if fixed:
                    fhist[0] += scale
                else:
                    hist[0] += 1
        if fixed and nsampled >= pairs_h.shape[0]:
            # Lower the threshold to the largest hash held and drop every line at it.
            thresh = pairs_h[0]
            while nsampled > 0 and pairs_h[0] >= thresh:
                victim = pairs_l[0]
                nsampled -= 1
                pairs_h[0] = pairs_h[nsampled]
                pairs_l[0] = pairs_l[nsampled]
                _pairs_sift_down(pairs_h, pairs_l, nsampled)
                vs = _slot(table, victim, hbits)
                tv = table[2 * vs + 1]
                if tv >= 0:
                    _mark(words, btree, tv, -1)
                    live -= 1
                    table[2 * vs + 1] = -1
                meta[M_DROPPED] += 1
    meta[M_NOW] = now
    meta[M_LIVE] = live
    meta[M_NKEYS] = nkeys
    meta[M_NHOLES] = nholes
    meta[M_LOOKUPS] = lookups
    meta[M_COLD] = cold
    meta[M_RELOAD] = reload
    meta[M_WRITES] = writes
    meta[M_INVALS] = invals
    meta[M_THRESH] = thresh
    meta[M_SAMPLED] = nsampled
    return stop


@njit(**JIT)
def sa_pass(src, shift, kinds, opmap, nsets, stk, hist, half):
    """Per-set LRU stacks (top ``W`` entries, ``-1`` a hole or empty slot) of the events
    (lines ``src >> shift``, operations ``opmap[kinds]``): of every set for ``half``
    -1, else of the even (0) or the odd (1) sets only (the others' events are skipped:
    two threads can each take half the sets, with a ``hist`` each).

    ``hist[d]`` counts the lookups at per-set stack distance ``d < W``;
    ``hist[W]`` those at ``W`` or beyond, or cold: they miss at every
    associativity up to ``W``.
    """
    w = stk.shape[0] // nsets
    # a power of two of sets: the set is a mask away (a division costs more than the rest
    # of a skipped event)
    mask = nsets - 1 if nsets & (nsets - 1) == 0 else -1
    for i in range(src.shape[0]):
        line = src[i] >> shift
        op = opmap[kinds[i]]
        s = line & mask if mask >= 0 else line % nsets
        if half >= 0 and (s & 1) != half:
            continue
        base = s * w
        p = w
        h = w
        for j in range(w):
            e = stk[base + j]
            if e == line:
                p = j
                break
            if e < 0 and h == w:
                h = j
        if op >= OP_INVAL:
            if p < w:
                stk[base + p] = -1
            continue
        if op == OP_LOOKUP:
            hist[p] += 1
        if h < p:
            for j in range(h, 0, -1):
                stk[base + j] = stk[base + j - 1]
            if p < w:
                stk[base + p] = -1
        else:
            top = p if p < w else w - 1
            for j in range(top, 0, -1):
                stk[base + j] = stk[base + j - 1]
        stk[base] = line


#: Events hashed per block of :func:`prefilter` (its ``flags`` scratch array's length):
#: few enough that the block's inputs are still in L1 when the second loop rereads the
#: kept ones (13 B an access at L1: 6.5 KiB). With 4096 (68 KiB) the fused L1 pass on the
#: stencil7 n=128 stream took 15 ms, with 512 it takes 12 ms (``bench/mrc.py``).
PREFILTER_BLOCK = 512


#: The operation of a trace's kinds at L1: loads and stores look up, NT stores invalidate.
TRACE_OPS = np.array([OP_LOOKUP, OP_LOOKUP, OP_INVAL], dtype=np.uint8)


@njit(**JIT)
def _take_flagged(words, nwords, src, shift, kinds, opmap, key, out_lines, out_ops, out_hash,
                  out_sub, k):  # fmt: skip
    """The second loop of :func:`prefilter` and :func:`scan_prefilter`: append the events
    flagged in the first ``nwords`` words of the block's flags (bytes 0 or 1: bit 8 b of a
    word is flag b) to the outputs from ``k`` on, rehashing their lines; return the new
    ``k``. At R = 0.01, 92 % of the words are 0."""
    for w in range(nwords):
        wv = words[w]
        while wv != np.uint64(0):
            j = 8 * w + np.int64(_ctz(wv) >> 3)
            wv &= wv - np.uint64(1)
            line = src[j] >> shift
            z = _mix(line ^ key)
            out_lines[k] = line
            out_ops[k] = opmap[kinds[j]]
            out_hash[k] = np.int64(z >> np.uint64(64 - SAMPLE_BITS))
            out_sub[k] = np.int64(z & np.uint64(SUBSAMPLES - 1))
            k += 1
    return k


@njit(**JIT)
def prefilter(src, shift, kinds, opmap, lookup_mask, key, thresh, flags, out_lines, out_ops,
              out_hash, out_sub):  # fmt: skip
    """Keep the events whose line (``src >> shift``) hashes below ``thresh``, in order, with
    their operation (``opmap[kind]``), hash and sub-sample (as :func:`sample_hash`).

    Returns ``(kept, lookups)``: ``lookups`` counts every event whose kind has its bit
    set in ``lookup_mask`` (the kinds that ``opmap`` sends to ``OP_LOOKUP``).

    Two loops per block of ``len(flags)`` events (a multiple of 8): the first hashes
    every line and keeps only a flag (no branch, no data-dependent store: it
    vectorises), the second looks at 8 flags at a time and rehashes the few kept
    lines (at R = 0.01, 92 % of the groups of 8 hold none). Measured on the stencil7
    n=128 stream: 11 ms against 26 ms for one branchy loop (``bench/RESULTS.md``).
    """
    n = src.shape[0]
    blk = flags.shape[0]
    top = _top(thresh)
    words = flags.view(np.uint64)
    k = 0
    lookups = np.uint64(0)
    for lo in range(0, n, blk):
        m = min(blk, n - lo)
        s = src[lo : lo + m]
        kd = kinds[lo : lo + m]
        for j in range(m):
            lookups += (lookup_mask >> np.uint64(kd[j] & 63)) & np.uint64(1)
            flags[j] = _mix_top((s[j] >> shift) ^ key) <= top
        for j in range(m, (m + 7) // 8 * 8):
            flags[j] = 0
        k = _take_flagged(words, (m + 7) // 8, s, shift, kd, opmap, key, out_lines, out_ops,
                          out_hash, out_sub, k)  # fmt: skip
    return k, np.int64(lookups)


@njit(**JIT)
def filter_sample(lines, ops, hashes, subs, thresh, want_sub, out_lines, out_ops, out_hash):
    """Keep the events with ``hash < thresh`` (and ``sub == want_sub`` unless it is -1)."""
    k = 0
    for i in range(lines.shape[0]):
        if hashes[i] < thresh and (want_sub < 0 or subs[i] == want_sub):
            out_lines[k] = lines[i]
            out_ops[k] = ops[i]
            out_hash[k] = hashes[i]
            k += 1
    return k


@njit(**JIT)
def split_sample(lines, ops, hashes, subs, threshs, out_lines, out_ops, out_hash, starts):
    """Sort the events into the sub-samples, in order within each: those of sub-sample
    ``j`` with ``hash < threshs[j]`` go to ``out_*[starts[j]:starts[j + 1]]`` (``starts``
    has ``len(threshs) + 1`` entries, filled here). One pass to count, one to place."""
    nsub = threshs.shape[0]
    for j in range(nsub + 1):
        starts[j] = 0
    for i in range(lines.shape[0]):
        j = subs[i]
        if hashes[i] < threshs[j]:
            starts[j + 1] += 1
    for j in range(nsub):
        starts[j + 1] += starts[j]
    # starts[j] is sub-sample j's cursor, and ends at the segment's end (= starts[j + 1])
    for i in range(lines.shape[0]):
        j = subs[i]
        if hashes[i] < threshs[j]:
            k = starts[j]
            out_lines[k] = lines[i]
            out_ops[k] = ops[i]
            out_hash[k] = hashes[i]
            starts[j] = k + 1
    for j in range(nsub, 0, -1):
        starts[j] = starts[j - 1]
    starts[0] = 0


@njit(**JIT)
def renumber(words, now, table, heap, nholes, base):
    """Give every live time (a set bit of ``words`` below ``now``) its rank among them, in
    the table's values and the first ``nholes`` entries of the holes heap (order kept:
    the heap stays a heap); return the live times counted. ``base`` (scratch, at least
    ``(now + 63) // 64 + 1`` entries) gets the live times before each word. The bitmap
    itself is rebuilt by the caller."""
    nw = (now + 63) >> 6
    c = 0
    for w in range(nw):
        base[w] = c
        c += _popcount(words[w])
    base[nw] = c
    for i in range(1, table.shape[0], 2):
        v = table[i]
        if v >= 0:
            w = v >> 6
            below = words[w] & ((np.uint64(1) << np.uint64(v & 63)) - np.uint64(1))
            table[i] = base[w] + _popcount(below)
    for i in range(nholes):
        v = heap[i]
        w = v >> 6
        below = words[w] & ((np.uint64(1) << np.uint64(v & 63)) - np.uint64(1))
        heap[i] = base[w] + _popcount(below)
    return c


@njit(**JIT)
def rehash(keys, vals, table, hbits):
    for i in range(keys.shape[0]):
        s = _slot(table, keys[i], hbits)
        table[2 * s] = keys[i]
        table[2 * s + 1] = vals[i]
