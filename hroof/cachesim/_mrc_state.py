"""The state of one fully-associative stack pass (exact, or one SHARDS sampler).

:mod:`hroof.cachesim.mrc` drives it; the notes there describe the arrays
(hash table of last-access times, bitmap of the stack's entries over time with
a Fenwick tree of its 64-time blocks, max-heap of holes), and
:mod:`hroof.cachesim._mrc_kernels` holds the Numba passes over them.
"""

from __future__ import annotations

import numpy as np

from hroof.cachesim import _mrc_kernels as MK
from hroof.cachesim._mrc_kernels import (
    M_COLD,
    M_HBITS,
    M_INVALS,
    M_LIVE,
    M_LOOKUPS,
    M_NHOLES,
    M_NKEYS,
    M_NOW,
    M_RELOAD,
    M_THRESH,
    M_WRITES,
    NMETA,
    SAMPLE_P,
)

#: The operation map of events that are operations already.
IDENTITY = np.arange(256, dtype=np.uint8)


def _pow2_at_least(n: int) -> int:
    return 1 << max(1, int(n - 1).bit_length())


def _times(cap: int, live: int):
    """The entry bitmap of ``cap`` times (``cap`` a multiple of 64) with times
    ``0..live-1`` set, and the Fenwick tree (int32) of its 64-time blocks' counts."""
    words = np.zeros(cap // 64, dtype=np.uint64)
    full, rest = divmod(live, 64)
    words[:full] = np.uint64(2**64 - 1)
    if rest:
        words[full] = np.uint64((1 << rest) - 1)
    counts = np.minimum(np.maximum(live - 64 * np.arange(cap // 64), 0), 64)
    i = np.arange(cap // 64 + 1, dtype=np.int64)
    low = i & -i
    csum = np.concatenate(([0], np.cumsum(counts)))
    btree = csum[i] - csum[i - low]
    btree[0] = 0
    return words, btree.astype(np.int32)


class FAState:
    """One fully-associative stack (exact, or one SHARDS sampler)."""

    BLOCK = 1 << 16  # events per kernel call (bounds what the driver reserves)
    MIN_TREE = 1 << 16  # least times in the tree (at the start and after a compaction)
    #: A compaction sizes the tree for this many times the live entries and the batch:
    #: 1.5 bits a time (bitmap and tree), against the hash table's 32 bytes a line or more,
    #: and a compaction every (TREE_SLACK - 1) x live references at least.
    TREE_SLACK = 8
    HBITS0 = 14  # the hash table's slots at the start: 2**HBITS0 (at least GROUP_BITS)

    def __init__(self, scale: float = 1.0, thresh: int = SAMPLE_P, size_cap: int = 0,
                 key: int = 0, share: int = 1):  # fmt: skip
        self.scale = float(scale)
        self.key = int(key)  # the sampling hash's key (``_mrc_kernels.sample_hash``)
        # Sized for the first tens of thousands of lines (a SHARDS sample's whole run, in
        # 264 KiB): growing from less cost a tenth of the sampled pass in rehashes. A
        # sub-sample (``share`` 4: a quarter of the sample's lines) starts at a quarter:
        # the pages of a table are written when it is made, 0.1 ms a SHARDS pass for four.
        hbits = max(self.HBITS0 - (int(share) - 1).bit_length(), MK.GROUP_BITS)
        self.table = np.full(2 << hbits, -1, dtype=np.int64)
        self.words, self.btree = _times(self.MIN_TREE, 0)
        self.heap = np.zeros(1 << 10, dtype=np.int64)
        self.hist = np.zeros(1 << 10, dtype=np.int64)
        self.meta = np.zeros(NMETA, dtype=np.int64)
        self.meta[M_HBITS] = hbits
        self.meta[M_THRESH] = thresh
        self.size_cap = int(size_cap)
        self.pairs_h = np.zeros(size_cap + 1 if size_cap else 0, dtype=np.int64)
        self.pairs_l = np.zeros(size_cap + 1 if size_cap else 0, dtype=np.int64)
        self.fhist = np.zeros(1 << 10 if size_cap else 1)
        self.fmeta = np.zeros(3)  # fixed size: weighted lookups, cold, reloads

    @property
    def state_bytes(self) -> int:
        arrays = (self.table, self.words, self.btree, self.heap, self.hist, self.fhist,
                  self.pairs_h, self.pairs_l)  # fmt: skip
        return int(sum(a.nbytes for a in arrays))

    def _grow_table(self, need: int) -> None:
        cap = self.table.shape[0] >> 1
        if 2 * need <= cap:
            return
        new = _pow2_at_least(2 * need)
        keys, vals = self.table[0::2], self.table[1::2]
        used = keys >= 0
        self.table = np.full(2 * new, -1, dtype=np.int64)
        self.meta[M_HBITS] = new.bit_length() - 1
        MK.rehash(keys[used], vals[used], self.table, int(self.meta[M_HBITS]))

    def _compact(self, need: int) -> None:
        """Renumber the live times 0..live-1 (order kept) and size the tree for ``need`` more."""
        meta = self.meta
        now = int(meta[M_NOW])
        live = int(meta[M_LIVE])
        nholes = int(meta[M_NHOLES])
        base = np.empty((now + 63) // 64 + 1, dtype=np.int64)
        counted = MK.renumber(self.words, now, self.table, self.heap, nholes, base)
        assert counted == live, "stack entries and tree disagree"
        if self.size_cap:
            # Drop the keys of lines sampled out by the lowered threshold.
            keys = self.table[0::2]
            used = keys >= 0
            hashes = np.empty(int(used.sum()), dtype=np.int64)
            subs = np.empty_like(hashes)
            MK.sample_hash(keys[used], self.key, hashes, subs)
            keep = hashes < meta[M_THRESH]
            vals = self.table[1::2]
            k, v = keys[used][keep], vals[used][keep]
            self.table = np.full(self.table.shape[0], -1, dtype=np.int64)
            MK.rehash(k, v, self.table, int(meta[M_HBITS]))
            meta[M_NKEYS] = int(keep.sum())
        meta[M_NOW] = live
        cap = max(self.MIN_TREE, 128, _pow2_at_least(self.TREE_SLACK * (live + need)))
        self.words, self.btree = _times(cap, live)

    def feed(self, src: np.ndarray, ops: np.ndarray, hashes: np.ndarray, shift: int = 0,
             opmap: np.ndarray | None = None) -> None:  # fmt: skip
        """Feed events: lines ``src >> shift``, operations ``opmap[ops]`` (``ops`` itself
        when ``opmap`` is None), SHARDS hashes ``hashes`` (read by the fixed-size sampler
        only; the exact pass may pass any array of the same length)."""
        if opmap is None:
            opmap = IDENTITY
        for lo in range(0, src.shape[0], self.BLOCK):
            hi = lo + self.BLOCK
            self._feed_block(src[lo:hi], ops[lo:hi], hashes[lo:hi], shift, opmap)

    def _feed_block(self, lines, ops, hashes, shift, opmap) -> None:
        while lines.shape[0]:
            n = lines.shape[0]
            meta = self.meta
            self._grow_table(int(meta[M_NKEYS]) + 1)  # the pass stops when it is full
            if meta[M_NOW] + n >= 64 * self.words.shape[0]:
                self._compact(n)
            if self.heap.shape[0] < meta[M_NHOLES] + n:
                heap = np.zeros(_pow2_at_least(int(meta[M_NHOLES]) + n), dtype=np.int64)
                heap[: self.heap.shape[0]] = self.heap
                self.heap = heap
            scale = SAMPLE_P / int(meta[M_THRESH]) if self.size_cap else 1.0
            need = 2 * int((meta[M_LIVE] + 1) * scale) + 2  # the pass stops when it is short
            name = "fhist" if self.size_cap else "hist"
            old = getattr(self, name)
            if old.shape[0] < need:
                grown = np.zeros(_pow2_at_least(need), dtype=old.dtype)
                grown[: old.shape[0]] = old
                setattr(self, name, grown)
            done = MK.fa_pass(
                lines, shift, ops, opmap, hashes, self.scale, self.table, self.words,
                self.btree, self.heap, self.hist, self.fhist, self.fmeta, meta, self.pairs_h,
                self.pairs_l,
            )  # fmt: skip
            lines, ops, hashes = lines[done:], ops[done:], hashes[done:]

    def reset_counts(self) -> None:
        """Zero the histogram and the counters, keeping the stack (after a warm-up)."""
        self.hist[:] = 0
        self.fhist[:] = 0
        self.fmeta[:] = 0
        for slot in (M_LOOKUPS, M_COLD, M_RELOAD, M_WRITES, M_INVALS):
            self.meta[slot] = 0

    def counts(self):
        """``(hist, lookups, cold, reload)``: exact integers, or (fixed size) weighted floats."""
        meta = self.meta
        if not self.size_cap:
            return self.hist, int(meta[M_LOOKUPS]), int(meta[M_COLD]), int(meta[M_RELOAD])
        lk, cold, rel = (float(x) for x in self.fmeta)
        return self.fhist, lk, cold, rel
