"""Miss-ratio curves: the LRU misses of every cache size from one pass (Mattson et al., 1970).

An LRU cache of ``C`` lines holds the ``C`` most recently used lines, so a
reference hits in it exactly when fewer than ``C`` distinct lines were used
since the previous reference to the same line: its *stack distance*. One pass
that records the histogram of stack distances therefore gives the misses of
every capacity at once: ``misses(C) = cold + #{distance >= C}``.

Architecture
------------
The fully-associative pass (``_mrc_kernels.fa_pass``) keeps

* ``table``: an open-addressing hash table of (line, time of its last access)
  pairs (time ``-1``: not in the stack, i.e. never allocated or invalidated),
  hashed by groups of 8 consecutive lines so that a stream walking an array
  reads it nearly sequentially (``_mrc_kernels._slot``); the pass prefetches
  the slot of the event 16 ahead and the bitmap word of the one 8 ahead;
* ``words``: a bitmap over access times with a 1 at the time of every *entry*
  of the LRU stack, and ``btree``, a Fenwick tree of the counts of its 64-time
  blocks, so the stack distance of a line last used at time ``t`` (the number
  of entries after ``t``) is two popcounts and a Fenwick range: O(log T), on
  a tree 64 times smaller than one over the times themselves. Moving an entry
  from time ``t`` to now walks the two Fenwick update chains only until they
  meet (``_mrc_kernels._move``): a reuse within one block updates no node;
* ``heap``: a max-heap of the times of the stack's *holes*.

For example, after references to lines 7, 9, 7, 5 at times 0-3 the entries
are at times 1 (9), 2 (7) and 3 (5): ``words[0] = 0b1110``; a reference to 9
now has distance 2 (the entries at times 2 and 3), its entry moves from time
1 to time 4: ``0b11100``.

Holes make non-temporal stores exact. A non-temporal store invalidates the
line in every cache, which frees a slot: the caches stop being the top ``C``
lines of one LRU stack. Keeping the invalidated line's entry as a hole does
restore a single stack: a cache of ``C`` lines holds the lines among the top
``C`` entries, a reference that finds a hole above its line (or has no line)
fills the topmost hole instead of pushing the stack down below it (the hole
was a free slot in every cache deeper than it), and the line's old entry
becomes the hole. A worked example after references to C, B, A; stack top
first, ``_`` a hole::

    A B C      reference D (a miss everywhere): D A B C
    D A B C    invalidate A:                    D _ B C
    D _ B C    reference C (distance 3):        C D B _   (the hole moved to C's place)

In the 1-line cache, ``C`` missed; in the 2-line cache (``D _``: one line, one
free slot) ``C`` missed and took the free slot, as in the 3-line cache; in
caches of 4 lines it hit. The distance counts holes: 3.

Times grow without bound, so when the bitmap is full the live times are
renumbered ``0..live-1`` (``_mrc_state.FAState._compact``): memory stays
O(distinct lines) for any stream length, as the simulator's does.

The set-associative pass (``_mrc_kernels.sa_pass``) keeps, per set, the top
``max_ways`` entries of the set's own LRU stack (with holes), which gives the
misses of every associativity up to ``max_ways`` exactly at that number of
sets: O(max_ways) per reference.

SHARDS (Waldspurger et al., "Efficient MRC construction with SHARDS", FAST
2015) samples the stream spatially: a line is kept when a hash of its address
falls below a threshold ``T`` (rate ``R = T / 2**24``); the stack distances
of the sampled stream, divided by ``R``, estimate the full stream's, and the
first bucket is adjusted by the difference between the expected ``N R`` and
the actual sampled references (SHARDS-adj). ``sample_size`` is the paper's
fixed-size variant: the threshold is lowered as needed to keep at most that
many distinct sampled lines (those with the largest hashes are dropped and the
histogram is rescaled by the rate's ratio).

What the curve models is the simulator's fully-associative shadow of
``docs/cache-model.md``: lookups (loads, stores, RFOs) allocate, arriving
writebacks allocate without counting as lookups, non-temporal stores
invalidate. So at a write-allocate level's capacity the curve's misses equal
the level's compulsory + capacity misses, and the set-associative curve at
the level's ways equals its misses.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import numpy as np

from hroof._base.errors import HroofError
from hroof._base.kinds import SIZE_DTYPE
from hroof.cachesim import _mrc_kernels as MK
from hroof.cachesim import _mrc_scan as MSC
from hroof.cachesim._kernels import EV_BITS, EV_MASK
from hroof.cachesim._mrc_curve import SCHEMA, MissRatioCurve, default_capacities
from hroof.cachesim._mrc_kernels import (
    M_DROPPED,
    M_LOOKUPS,
    M_NKEYS,
    M_THRESH,
    M_WRITES,
    SAMPLE_P,
    SUBSAMPLES,
)
from hroof.cachesim._mrc_state import IDENTITY, FAState
from hroof.cachesim._mrc_threads import TwoThreads, _worker
from hroof.cachesim._stream_kernels import addr_limit_bits
from hroof.cachesim.config import HierarchyConfig, LevelConfig

# ------------------------------------------------------------------ driver
#: Below this many distinct sampled lines a SHARDS curve carries a warning: the sample's
#: own line count varies by about 1/sqrt(lines), over 1 %, and on a curve that falls
#: steadily with capacity (uniform random reuse) that stretch alone moves the miss ratio
#: by up to about 0.01 (``bench/RESULTS.md``: uniform random streams).
MIN_SAMPLED_LINES = 10_000

#: Sampled events held before they are fed to the samplers (:meth:`StackDistances._flush`):
#: few enough that the buffers they fill stay in pages already touched (at 64 Ki a SHARDS
#: pass of stencil7 n=128 took 900 page faults and 21.1 ms, at 16 Ki 230 and 19.0 ms).
PENDING = 1 << 14

#: With ``threads=2``, a trace chunk of at least this many accesses is checked and
#: hashed on both threads, in stripes: from the front on the caller's, from the back on
#: the other once that has fed the samplers the events kept from the chunks before
#: (handed over as each such chunk ends, however few). A batch of at least
#: :data:`SPLIT_BATCH_FROM` sampled events fed otherwise (after smaller chunks, at the
#: end) feeds the sample and its sub-samples at once. Below these sizes, handing work to
#: the other thread (tens of microseconds) costs more than it saves.
SPLIT_FROM = 1 << 16
SPLIT_BATCH_FROM = 1 << 12
_MASKS: dict[bytes, np.uint64] = {}


def _lookup_mask(opmap: np.ndarray) -> np.uint64:
    """Bit ``k`` set when ``opmap[k]`` is a counted lookup (kinds below 64)."""
    key = opmap[:64].tobytes()
    if key not in _MASKS:
        bits = sum(1 << k for k, op in enumerate(opmap[:64]) if op == MK.OP_LOOKUP)
        _MASKS[key] = np.uint64(bits)
    return _MASKS[key]


def sampling_key(seed: int) -> int:
    """The key XORed into every line before the SHARDS hash: 0 for seed 0, else a
    splitmix64 mix of the seed (a non-negative int64), so that each seed samples an
    independent-looking set of lines."""
    if seed == 0:
        return 0
    z = (seed + 0x9E3779B97F4A7C15) & (2**64 - 1)
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & (2**64 - 1)
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & (2**64 - 1)
    return (z ^ (z >> 31)) >> 1


class StackDistances(TwoThreads):
    """Accumulate a miss-ratio curve from a stream of line events, batch by batch.

    Parameters
    ----------
    line : int
        Line size in bytes (for the result's byte capacities only).
    sets : int, optional
        With ``sets``, also the set-associative misses at 1..``max_ways`` ways.
    max_ways : int
        Deepest associativity counted exactly (O(max_ways) per reference).
    rate : float, optional
        SHARDS sampling rate in (0, 1]; None for the exact curve.
    sample_size : int, optional
        Fixed-size SHARDS: hold at most this many distinct sampled lines
        (starting at ``rate`` or 1).
    seed : int
        Key of the sampling hash, ``0 <= seed < 2**32`` (:func:`sampling_key`).
    threads : int
        1, or 2 to use a second thread (the same curve). A sampled curve checks and
        hashes each trace chunk on both (:mod:`hroof.cachesim._mrc_threads`), and feeds
        its sample beside its sub-samples. A set-associative curve runs beside the fully
        associative one: whole beside an exact pass, half its sets on each thread with a
        sampled one. The exact fully associative pass itself is one chain of dependent
        updates and stays on one thread (without ``sets``, 2 is taken as 1).

    Notes
    -----
    Exact: O(log T) per reference with T <= 2 * (distinct lines + 65536),
    memory O(distinct lines). The set-associative curve is exact at every
    associativity, sampling does not apply to it.
    """

    def __init__(self, line: int = 64, *, sets: int | None = None, max_ways: int = 32,
                 rate: float | None = None, sample_size: int | None = None,
                 seed: int = 0, threads: int = 1):  # fmt: skip
        if isinstance(line, bool) or not isinstance(line, int) or line < 1 or line & (line - 1):
            raise HroofError(f"line must be a power of two number of bytes, got {line!r}")
        if sets is not None and (isinstance(sets, bool) or not isinstance(sets, int) or sets < 1):
            raise HroofError(f"sets must be a positive whole number, got {sets!r}")
        if isinstance(max_ways, bool) or not isinstance(max_ways, int) or not 1 <= max_ways <= 4096:
            raise HroofError(f"max_ways must be a whole number in 1..4096, got {max_ways!r}")
        if rate is not None and not (isinstance(rate, (int, float)) and 0 < rate <= 1):
            raise HroofError(f"the sampling rate must be in (0, 1], got {rate!r}")
        if sample_size is not None and (
            isinstance(sample_size, bool) or not isinstance(sample_size, int) or sample_size < 16
        ):
            raise HroofError(
                f"the sample size must be a whole number >= 16 lines, got {sample_size!r}"
            )
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
            raise HroofError(f"the sampling seed must be a whole number below 2**32, got {seed!r}")
        if threads not in (1, 2) or isinstance(threads, bool):
            raise HroofError(f"threads must be 1 or 2, got {threads!r}")
        if sample_size is not None and rate is None:
            rate = 1.0
        self.seed = seed
        self.threads = threads if rate is not None or sets is not None else 1
        self.key = sampling_key(seed)
        self.line = line
        self.sets = sets
        self.max_ways = max_ways
        self.rate = rate
        self.sample_size = sample_size
        self.thresh = SAMPLE_P if rate is None else max(1, round(rate * SAMPLE_P))
        self.lookups = 0
        if rate is None:
            self.fa = FAState()
            self.subs = []
        else:
            scale = SAMPLE_P / self.thresh
            cap = sample_size or 0
            self.fa = FAState(scale, self.thresh, cap, self.key)
            sub_cap = max(16, cap // SUBSAMPLES) if cap else 0
            self.subs = [
                FAState(scale * SUBSAMPLES, self.thresh, sub_cap, self.key, SUBSAMPLES)
                for _ in range(SUBSAMPLES)
            ]
        self._buf = self._alt = self._out = self._out2 = None
        self._init_threads()
        self._pending = self._pending_thresh = 0  # sampled events not yet fed (``_flush``)
        self._starts = np.zeros(SUBSAMPLES + 1, dtype=np.int64)
        self._flags = np.zeros(MK.PREFILTER_BLOCK, dtype=np.uint8)
        self.sa_stk = self.sa_hist = self.sa_hist2 = None
        if sets is not None:
            if sets * max_ways > 1 << 31:
                raise HroofError(f"sets x max_ways = {sets * max_ways} is too many entries")
            self.sa_stk = np.full(sets * max_ways, -1, dtype=np.int64)
            self.sa_hist = np.zeros(max_ways + 1, dtype=np.int64)
            # the other thread's, 256 bytes away from anything else: the two threads add to
            # their counts at every event, and counts sharing a host cache line with the
            # other's would bounce it between the cores at every event
            pad = np.zeros(max_ways + 1 + 64, dtype=np.int64)
            self.sa_hist2 = pad[32 : 32 + max_ways + 1]

    def feed(self, lines, ops) -> None:
        """Add a batch: ``lines`` (int64 line addresses, >= 0) and ``ops`` (``OP_*``)."""
        lines = np.ascontiguousarray(lines, dtype=np.int64)
        ops = np.ascontiguousarray(ops, dtype=np.uint8)
        if ops.shape[0] and int(ops.max()) > MK.OP_INVAL_SEEN:
            raise HroofError(f"operations must be 0..{MK.OP_INVAL_SEEN}, got {int(ops.max())}")
        self.feed_events(lines, 0, ops, IDENTITY)

    def feed_events(self, src, shift: int, kinds, opmap) -> None:
        """Add a batch of events: lines ``src >> shift``, operations ``opmap[kinds]``.

        With ``threads=2`` and a set-associative curve, a batch of :data:`SPLIT_FROM`
        events or more runs the set-associative pass on the other thread beside the
        fully associative one: all of it beside an exact pass, its odd sets beside a
        sampled pass (which takes the even sets first). Each set's stack sees the same
        references in the same order either way.
        """
        other = None
        try:
            if self.sa_stk is not None:
                sa = (src, shift, kinds, opmap, self.sets, self.sa_stk)
                if self.threads == 2 and src.shape[0] >= SPLIT_FROM:
                    exact = self.rate is None
                    other = _worker().submit(MK.sa_pass, *sa, self.sa_hist2, -1 if exact else 1)
                    if not exact:
                        MK.sa_pass(*sa, self.sa_hist, 0)
                else:
                    MK.sa_pass(*sa, self.sa_hist, -1)
            # (a flush would queue the sample's feed behind the other thread's part)
            self._feed_fa(src, shift, kinds, opmap, flush=other is None)
        finally:
            if other is not None:
                other.result()
        if other is not None and self._pending >= PENDING:
            self._flush()

    def _feed_fa(self, src, shift: int, kinds, opmap, flush: bool = True) -> None:
        """The fully associative pass (exact, or SHARDS's filter) of a batch of events;
        ``flush``: as :meth:`_add_pending`."""
        if self.rate is None:
            self.fa.feed(src, kinds, src, shift, opmap)
            return
        thresh = max(int(st.meta[M_THRESH]) for st in (self.fa, *self.subs))
        p = self._pending
        self._reserve(p + src.shape[0])
        k, nlookups = MK.prefilter(
            src, shift, kinds, opmap, _lookup_mask(opmap), self.key, thresh, self._flags,
            *(b[p:] for b in self._buf),
        )  # fmt: skip
        self._add_pending(k, nlookups, thresh, flush)

    def feed_trace(self, addr, size, kind, line_bits: int) -> bool:
        """Sample a raw trace chunk (the stream into the first level) in one pass that also
        checks it as the simulator does; return False, having fed nothing, when the chunk
        is not of the plain kind (dtypes int64 or uint64, uint32, uint8, one-dimensional: a
        chunk's, or a trace file's, whose uint64 addresses are viewed as int64), holds an
        access the simulator would reject or split across lines, or when this pass is exact
        or set-associative: the caller then sends it the simulator's way."""
        if self.rate is None or self.sa_stk is not None:
            return False
        arrays = (addr, size, kind)
        if not all(isinstance(a, np.ndarray) and a.ndim == 1 for a in arrays):
            return False
        if (size.dtype, kind.dtype) != (SIZE_DTYPE, np.uint8) or addr.dtype.kind not in "iu":
            return False
        if addr.dtype.itemsize != 8 or not all(a.flags.c_contiguous for a in arrays):
            return False
        addr = addr.view(np.int64)  # past 2**63 negative: rejected, as the simulator does
        n = addr.shape[0]
        if size.shape[0] != n or kind.shape[0] != n:
            return False
        thresh = max(int(st.meta[M_THRESH]) for st in (self.fa, *self.subs))
        limit = 1 << addr_limit_bits(line_bits)
        args = (line_bits, limit, self.key, thresh)
        if self.threads == 2 and n >= SPLIT_FROM:
            return self._feed_trace2(addr, size, kind, args, thresh)
        p = self._pending
        self._reserve(p + n)
        k, nlookups, rejected = MSC.scan_prefilter(
            addr, size, kind, *args, self._flags, *(b[p:] for b in self._buf)
        )
        if rejected:
            return False
        self._add_pending(k, nlookups, thresh)
        return True

    def _reserve(self, n: int) -> None:
        """Buffers for ``n`` events, the pending ones kept (reused: no page faults per batch)."""
        if self._buf is None or self._buf[0].shape[0] < n:
            old, p = self._buf, self._pending
            n += PENDING  # room for the next batch's pending events too
            self._buf = (np.empty(n, dtype=np.int64), np.empty(n, dtype=np.uint8),
                         np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64))  # fmt: skip
            self._out = (np.empty(n, dtype=np.int64), np.empty(n, dtype=np.uint8),
                         np.empty(n, dtype=np.int64))  # fmt: skip
            self._out2 = tuple(np.empty_like(b) for b in self._out) if self.threads == 2 else None
            # threads=2: the buffer the next chunk is hashed into while this one's pending
            # events are fed (:meth:`_submit_feed` swaps the two)
            self._alt = tuple(np.empty_like(b) for b in self._buf) if self.threads == 2 else None
            if p:
                for new, cur in zip(self._buf, old, strict=True):
                    new[:p] = cur[:p]

    def _add_pending(self, k: int, nlookups: int, thresh: int, flush: bool = True) -> None:
        """Count a prefiltered batch and keep its ``k`` events (those hashing below
        ``thresh``) with the pending ones; hand them over once :data:`PENDING` are held
        (unless ``flush`` is False: :meth:`_feed_trace2` hands them to the other thread)."""
        self.lookups += int(nlookups)
        self._pending += int(k)
        self._pending_thresh = max(self._pending_thresh, thresh)
        if flush and self._pending >= PENDING:
            self._flush()

    def _flush(self) -> None:
        """Feed the pending sampled events to the sample and its sub-samples.

        They are fed in batches of about :data:`PENDING` events, not chunk by chunk:
        each feed costs some Python and array bookkeeping per sampler, the same for a
        chunk of 1,000 accesses as for one of a million. The samplers see the same
        events in the same order either way.
        """
        self._wait_feed()
        k, thresh = self._pending, self._pending_thresh
        self._pending = self._pending_thresh = 0
        if not k:
            return
        sl, so, sh, ss = (b[:k] for b in self._buf)
        if self.threads == 2 and self.subs and k >= SPLIT_BATCH_FROM:
            # The sample on the other thread (its own outputs), the sub-samples here.
            main = _worker().submit(self._feed_main, sl, so, sh, ss, thresh, self._out2)
            try:
                self._feed_subs(sl, so, sh, ss, self._out)
            finally:
                main.result()
            return
        self._feed_main(sl, so, sh, ss, thresh, self._out)
        self._feed_subs(sl, so, sh, ss, self._out)

    def _feed_main(self, sl, so, sh, ss, thresh: int, out) -> None:
        """Feed the sample the pending events (those still below its threshold)."""
        out_l, out_o, out_h = out
        # Thresholds only fall: every pending event hashes below ``thresh`` >= ``t``.
        t = int(self.fa.meta[M_THRESH])
        if t >= thresh:
            self.fa.feed(sl, so, sh)
        else:
            m = MK.filter_sample(sl, so, sh, ss, t, -1, out_l, out_o, out_h)
            if m:
                self.fa.feed(out_l[:m], out_o[:m], out_h[:m])

    def _feed_subs(self, sl, so, sh, ss, out) -> None:
        """Feed each sub-sample its pending events (``out``: scratch arrays)."""
        if not self.subs:
            return
        out_l, out_o, out_h = out
        threshs = np.array([s.meta[M_THRESH] for s in self.subs], dtype=np.int64)
        MK.split_sample(sl, so, sh, ss, threshs, out_l, out_o, out_h, self._starts)
        for j, state in enumerate(self.subs):
            lo, hi = int(self._starts[j]), int(self._starts[j + 1])
            if hi > lo:
                state.feed(out_l[lo:hi], out_o[lo:hi], out_h[lo:hi])

    def reset_counts(self) -> None:
        """Start counting afresh with the stacks as they are: what was fed so far is a
        warm-up (its lines are in the stacks, its references are not counted)."""
        self._flush()
        self.lookups = 0
        for state in (self.fa, *self.subs):
            state.reset_counts()
        if self.sa_hist is not None:
            self.sa_hist[:] = 0
            self.sa_hist2[:] = 0

    def _estimate(self, state: FAState, fraction: float, caps=None):
        """SHARDS-adj estimate of one sampler: ``(tail, cold, reload)`` in full-stream lookups.

        ``tail[c]`` is the estimated misses at ``c`` lines (dense up to the
        largest scaled distance, then ``tail[-1]`` beyond), or at ``caps`` only
        when given. The sampled lookups (weighted by the inverse rate of their
        time in the fixed-size variant) are corrected to their expected number,
        ``N R`` (``N``), by adding the difference to the first bucket
        (Waldspurger et al. 2015, section 3.3): a sample that happens to hold a
        hot line would otherwise count all of its references as a sample of the
        whole.
        """
        hist, lk, cold, rel = state.counts()
        used = int(np.max(np.flatnonzero(hist), initial=0)) + 1
        hist = hist[:used].astype(np.float64)
        if state.size_cap:
            expected = self.lookups * fraction
            scale = 1.0  # binned at their scaled distances already
        else:
            expected = self.lookups * fraction * state.meta[M_THRESH] / SAMPLE_P
            scale = state.scale  # binned at sampled distances: scale them here
        if expected <= 0:
            return np.zeros(1), 0.0, 0.0
        hist[0] += expected - lk
        factor = self.lookups / expected
        tail = np.append(np.cumsum(hist[::-1])[::-1], 0.0)  # sampled distance >= d
        tail = np.minimum((tail + cold + rel) * factor, self.lookups)
        # A cache of c lines misses the references at scaled distance d * scale >= c.
        if caps is None:
            caps = np.arange(math.ceil((tail.shape[0] - 1) * scale) + 1)
        idx = np.minimum(np.ceil(np.asarray(caps) / scale).astype(np.int64), tail.shape[0] - 1)
        return tail[idx], cold * factor, rel * factor

    def finish(self, source: dict | None = None) -> MissRatioCurve:
        """The curve of everything fed so far."""
        self._flush()
        fa = self.fa
        sa = None
        if self.sa_hist is not None:
            hist = self.sa_hist + self.sa_hist2
            sa = np.cumsum(hist[::-1])[::-1][1:].copy()
        if self.rate is None:
            hist, lookups, cold, rel = fa.counts()
            tail = np.cumsum(hist[::-1])[::-1] + cold + rel
            used = int(np.max(np.flatnonzero(hist), initial=-1)) + 2
            tail = tail[: max(used, 1)].astype(np.int64)
            distinct = int(fa.meta[M_NKEYS])
            return MissRatioCurve(
                line=self.line, lookups=lookups, tail=tail, compulsory=cold, reloads=rel,
                distinct_lines=distinct, writes=int(fa.meta[M_WRITES]), sets=self.sets,
                max_ways=self.max_ways if sa is not None else None, sa_misses=sa,
                source=dict(source or {}), state_bytes=self.state_bytes,
            )  # fmt: skip
        tail, cold, rel = self._estimate(fa, 1.0)
        rate = fa.meta[M_THRESH] / SAMPLE_P
        # Below about 1/R lines a sampled distance of 0 cannot be told apart from one
        # of 1/R - 1: the curve is not resolved there.
        resolution = math.ceil(1 / rate)
        caps = None
        errs = []
        if self.lookups:
            lo = math.log2(resolution)
            top = max(lo + 1, math.log2(max(2, tail.shape[0])))
            caps = np.unique(np.round(2.0 ** np.arange(lo, top + 0.25, 0.25))).astype(np.int64)
            subs = []
            for s in self.subs:
                t, _, _ = self._estimate(s, 1.0 / SUBSAMPLES, caps)
                subs.append(t / self.lookups)
            spread = np.std(np.array(subs), axis=0, ddof=1)
            errs = spread / math.sqrt(SUBSAMPLES)
        sampled = int(fa.meta[M_LOOKUPS])
        # Distinct sampled lines: keys seen (rate), lines held at the final threshold (size).
        lines = int(fa.meta[MK.M_SAMPLED] if self.sample_size else fa.meta[M_NKEYS])
        warning = None
        if lines < MIN_SAMPLED_LINES:
            warning = (
                f"only {lines:,} distinct lines sampled (fewer than {MIN_SAMPLED_LINES:,}): the "
                f"sample's own line count varies by about 1/sqrt({lines:,}) = "
                f"{1 / math.sqrt(max(lines, 1)):.1%}, which stretches every estimated distance by "
                "as much (where the curve falls steadily with capacity, the miss ratio can be "
                "off by more than 0.01), and the error estimate, from 4 sub-samples of a "
                "quarter of these lines each, is unreliable; use a higher rate"
            )
        sample = {
            "mode": "size" if self.sample_size else "rate",
            "rate": float(rate),
            "size": self.sample_size,
            "sampled_lookups": sampled,
            "dropped_lines": int(fa.meta[M_DROPPED]),
            "error_estimate": float(np.mean(errs)) if len(errs) else 0.0,
            "error_method": f"spread of {SUBSAMPLES} disjoint sub-samples / sqrt({SUBSAMPLES}), "
            "mean over capacities from the resolution up",
            "resolution_lines": resolution,
            "seed": self.seed,
            "sampled_lines": lines,
            "warning": warning,
        }
        distinct = round(cold)  # each distinct line has one compulsory lookup (estimated)
        return MissRatioCurve(
            line=self.line, lookups=self.lookups, tail=tail, compulsory=cold, reloads=rel,
            distinct_lines=distinct, writes=0, sets=self.sets,
            max_ways=self.max_ways if sa is not None else None, sa_misses=sa, sample=sample,
            source=dict(source or {}), state_bytes=self.state_bytes,
        )  # fmt: skip

    @property
    def state_bytes(self) -> int:
        n = self.fa.state_bytes + sum(s.state_bytes for s in self.subs)
        if self.sa_stk is not None:
            n += self.sa_stk.nbytes + 2 * self.sa_hist.nbytes
        return n


# ------------------------------------------------------------------ the stream of a level
def _tap_class():
    """A :class:`Simulator` that simulates the levels above ``target`` and hands over
    the events reaching ``target`` instead of simulating it (imported lazily)."""
    from hroof.cachesim.simulator import Simulator

    class _Tap(Simulator):
        def __init__(self, hierarchy, target, sink):
            super().__init__(hierarchy, classify=False)
            self._target = target
            self._sink = sink

        def _pass(self, lvl, src, shift, size, kind, out):
            if lvl == self._target:
                if lvl > 0:  # below L1 the events are packed: line << EV_BITS | kind
                    src, kind = src >> EV_BITS, (src & EV_MASK).astype(np.uint8)
                self._sink(src, shift, kind, MK.OPS)
                return 0
            return super()._pass(lvl, src, shift, size, kind, out)

    return _Tap


def level_index(hierarchy: HierarchyConfig, level: str | int | None) -> int:
    """The index of ``level`` (a name, case-insensitive, or an index) in ``hierarchy``."""
    if level is None:
        return 0
    names = [lv.name for lv in hierarchy.levels]
    if isinstance(level, int) and not isinstance(level, bool):
        if 0 <= level < len(names):
            return level
    else:
        low = [n.lower() for n in names]
        if str(level).lower() in low:
            return low.index(str(level).lower())
    raise HroofError(f"no level {level!r} in {hierarchy.name}; levels: {', '.join(names)}")


def miss_ratio_curve(
    chunks: Iterable[tuple[np.ndarray, np.ndarray, np.ndarray]],
    hierarchy: HierarchyConfig | None = None,
    *,
    level: str | int | None = None,
    line: int = 64,
    sets: int | None = None,
    max_ways: int | None = None,
    rate: float | None = None,
    sample_size: int | None = None,
    seed: int = 0,
    source: dict | None = None,
    progress: Callable[[int], None] | None = None,
    warmup: Iterable[tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None,
    threads: int = 1,
) -> MissRatioCurve:
    """The miss-ratio curve of a trace, or of the stream reaching one level of a hierarchy.

    Parameters
    ----------
    chunks : iterable of (addr, size, kind)
        The trace, as :func:`hroof.cachesim.simulate` takes it.
    hierarchy : HierarchyConfig, optional
        With ``level``: the levels above it are simulated and the curve is of
        the stream they send to it (their misses, RFOs, writebacks and NT
        invalidations). Without, the line size is ``line``.
    level : str or int, optional
        The level (default the first: the trace itself, split into lines).
    sets, max_ways : int, optional
        Set-associative misses at ``sets`` sets (default: the level's) and
        every associativity up to ``max_ways`` (default: ``max(32, 2 * ways)``).
    rate, sample_size : optional
        SHARDS sampling rate, fixed sample size (distinct lines).
    seed : int
        Key of the sampling hash (each seed samples another set of lines).
    progress : callable, optional
        Called with each chunk's number of accesses.
    warmup : iterable of (addr, size, kind), optional
        Accesses run before ``chunks`` and not counted (as :func:`hroof.cachesim.simulate`'s
        ``warmup``): the stacks start warm, the curve counts ``chunks`` only.
    threads : int
        2: a sampled or set-associative curve uses a second thread (:class:`StackDistances`);
        the same curve.

    Returns
    -------
    MissRatioCurve

    >>> import numpy as np
    >>> addr = np.array([0, 64, 128, 0, 64, 128]) ; z = np.zeros(6, np.int64)
    >>> c = miss_ratio_curve([(addr, z + 8, z)])
    >>> [c.misses(k) for k in range(5)]
    [6, 6, 6, 3, 3]
    """
    lv_cfg = None
    if hierarchy is None:
        if level not in (None, 0):
            raise HroofError("--level needs a machine (the levels above it are simulated)")
        target = 0
        hierarchy = HierarchyConfig((LevelConfig("L1", line, 1, line),), name="none")
    else:
        if not isinstance(hierarchy, HierarchyConfig):
            raise HroofError(f"expected a HierarchyConfig, got {type(hierarchy).__name__}")
        target = level_index(hierarchy, level)
        lv_cfg = hierarchy.levels[target]
        if any(lv.inclusion != "nine" for lv in hierarchy.levels[: target + 1]) or any(
            lv.prefetch != "none" for lv in hierarchy.levels[:target]
        ):
            raise HroofError(
                f"miss-ratio curves follow the NINE model's stream; {hierarchy.name} has an "
                f"exclusive, victim or inclusive level, or a prefetcher, above or at "
                f"{lv_cfg.name} (hroof mrc --model nine runs every level NINE without "
                "prefetchers)"
            )
        line = hierarchy.line
        if sets is None:
            sets = lv_cfg.sets
        if max_ways is None:
            max_ways = max(32, 2 * lv_cfg.ways)
    if max_ways is None:
        max_ways = 32
    sd = StackDistances(
        line, sets=sets, max_ways=max_ways, rate=rate, sample_size=sample_size, seed=seed,
        threads=threads,
    )  # fmt: skip
    tap = None  # the simulator's way, made when first needed (a few tenths of a millisecond)
    direct = target == 0 and sd.rate is not None and sd.sa_stk is None
    for part in (warmup, chunks):
        if part is None:
            continue
        if part is chunks and warmup is not None:
            sd.reset_counts()
        for addr, size, kind in part:
            if not (direct and sd.feed_trace(addr, size, kind, hierarchy.line_bits)):
                if tap is None:
                    levels = hierarchy.levels[: target + 1]
                    tap = _tap_class()(
                        HierarchyConfig(levels, hierarchy.name, hierarchy.memory_name),
                        target,
                        sd.feed_events,
                    )
                tap.feed(addr, size, kind)
            if progress is not None:
                progress(len(addr))
    if tap is not None:
        tap.finish()
    src = dict(source or {})
    if lv_cfg is not None:
        src.update(machine=hierarchy.name, level=lv_cfg.name)
        if not lv_cfg.write_allocate:
            src["note"] = (
                f"{lv_cfg.name} does not write-allocate: the curve treats its store misses as "
                "allocating, so it is not exact against the simulator there"
            )
    return sd.finish(src)


__all__ = [
    "SCHEMA",
    "MissRatioCurve",
    "StackDistances",
    "default_capacities",
    "level_index",
    "miss_ratio_curve",
]
