"""How a SHARDS pass (:class:`hroof.cachesim.mrc.StackDistances`) uses two threads.

With ``threads=2`` each trace chunk of :data:`hroof.cachesim.mrc.SPLIT_FROM` accesses
or more is checked and hashed on both threads: the caller's thread takes the chunk's
first part; the other thread first feeds the samplers the events kept from the chunks
before (handed over as each chunk ends: the sample's feed, then the sub-samples'), then
takes the rest. The split point balances the two threads from the times measured on
earlier chunks. Whatever it is, the samplers see the same events in the same order, so
the curve is the one thread's (``tests/test_mrc.py``). The exact pass stays on one
thread: each reference's distance depends on every reference before it.
"""

from __future__ import annotations

import os
import time

import numpy as np

from hroof.cachesim import _mrc_kernels as MK

_WORKER = None


def _worker():
    """The process's second thread for ``threads=2`` passes: one worker, made when first
    needed and kept (starting and joining a thread costs about 0.3 ms a curve). Passes
    that run at once share it, which orders their work but changes none of it."""
    global _WORKER
    if _WORKER is None:
        from concurrent.futures import ThreadPoolExecutor

        _WORKER = ThreadPoolExecutor(1, thread_name_prefix="hroof-mrc")
    return _WORKER


def _forget_worker() -> None:
    """A forked child has no worker thread: it makes its own when it needs one."""
    global _WORKER
    _WORKER = None


os.register_at_fork(after_in_child=_forget_worker)


class TwoThreads:
    """The two-thread schedule of :class:`hroof.cachesim.mrc.StackDistances` (a mixin:
    its buffers, samplers and feeds are the pass's own)."""

    def _init_threads(self) -> None:
        # seconds to feed one sampled event and to hash one access, as last measured
        # (:meth:`_split_point` splits chunks by them); first guesses here
        self._cost = [30e-9, 1e-9]
        self._feeding = []  # (future, function, arguments) handed to the other thread
        self._feeding_at = (0.0, 0)  # ... since when, and how many events
        self._fed = [0.0]  # seconds the other thread spent feeding them
        self._skew = 0.0  # accesses added to the split point (how late the other thread was)
        self._rest_done = 0.0  # when the other thread last finished its part of a chunk

    def _feed_trace2(self, addr, size, kind, args, thresh: int) -> bool:
        """:meth:`feed_trace` on two threads. The events kept from the chunk before are
        already being fed to the samplers on the other thread (:meth:`_submit_feed`);
        this thread checks and hashes the chunk's first part, the other the rest once it
        has fed them, the split point balancing the two (from the times measured on
        earlier chunks). The samplers see the same events in the same order wherever
        it falls."""
        n = addr.shape[0]
        if self._pending:  # left by another path (a small chunk, the simulator's way)
            self._submit_feed()
        self._reserve(n)  # pending is 0: the events fed meanwhile are in ``self._alt``
        h = self._split_point(n, self._backlog())
        if self._half is None or self._half[0].shape[0] < n - h:
            self._half = tuple(np.empty(n - n // 2, dtype=b.dtype) for b in self._buf)
        other = _worker().submit(self._scan_rest, addr[h:], size[h:], kind[h:], args)
        try:
            t0 = time.perf_counter()
            k, nlookups, rejected = MK.scan_prefilter(
                addr[:h], size[:h], kind[:h], *args, self._flags, *self._buf
            )
            t1 = time.perf_counter()
        finally:
            try:
                self._wait_feed()
            finally:
                k2, nlookups2, rejected2 = other.result()
        if h:
            self._cost[1] = max(t1 - t0, 1e-9) / h
            # The other thread finished this much later: move the next split by half of it.
            late = (self._rest_done - t1) / self._cost[1] / 2
            self._skew = min(n / 2, max(-n / 2, self._skew + late))
        if rejected or rejected2:
            return False
        if k2:
            for b, half in zip(self._buf, self._half, strict=True):
                b[k : k + k2] = half[:k2]
        self._add_pending(k + k2, nlookups + nlookups2, thresh, flush=False)
        if self._pending:
            self._submit_feed()
        return True

    def _scan_rest(self, addr, size, kind, args):
        """The other thread's part of a chunk in :meth:`_feed_trace2`: check and hash
        ``addr, size, kind`` into ``self._half``."""
        out = (0, 0, 0)
        if addr.shape[0]:
            out = MK.scan_prefilter(addr, size, kind, *args, self._flags2, *self._half)
        self._rest_done = time.perf_counter()
        return out

    def _submit_feed(self) -> None:
        """``threads=2``: hand the pending events to the other thread, the sample's feed
        then the sub-samples' (:meth:`_wait_feed` collects them), and take the other
        buffer for the next ones."""
        self._wait_feed()
        k = self._pending
        sl, so, sh, ss = (b[:k] for b in self._buf)
        jobs = [(self._feed_main, (sl, so, sh, ss, self._pending_thresh, self._out2))]
        if self.subs:
            jobs.append((self._feed_subs, (sl, so, sh, ss, self._out)))
        self._buf, self._alt = self._alt, self._buf
        self._pending = self._pending_thresh = 0
        pool = _worker()
        self._feeding = [(pool.submit(self._timed, fn, args), fn, args) for fn, args in jobs]
        self._feeding_at = (time.perf_counter(), k)

    def _timed(self, fn, args) -> None:
        """Run ``fn(*args)`` and add its seconds to the feeding time measured."""
        t0 = time.perf_counter()
        fn(*args)
        self._fed[0] += time.perf_counter() - t0

    def _wait_feed(self) -> None:
        """Wait for the feeding handed to the other thread; a job it has not started yet
        (the sub-samples' while it feeds the sample) is taken back and run here, at once
        with the rest. Its measured cost per event goes to :meth:`_split_point`."""
        jobs, self._feeding = self._feeding, []
        if not jobs:
            return
        try:
            for fut, fn, args in jobs[1:]:
                if fut.cancel():
                    fn(*args)
        finally:
            for fut, _, _ in jobs:
                if not fut.cancelled():
                    fut.result()
        events = self._feeding_at[1]
        if events and self._fed[0] > 0:
            self._cost[0] = self._fed[0] / events
        self._fed[0] = 0.0

    def _backlog(self) -> float:
        """Seconds of feeding the other thread still has to do, as expected."""
        if not self._feeding:
            return 0.0
        t0, events = self._feeding_at
        return max(0.0, events * self._cost[0] - (time.perf_counter() - t0))

    def _split_point(self, n: int, backlog: float) -> int:
        """Accesses of an ``n``-access chunk that this thread hashes (``n // 2 .. n``)
        while the other, with ``backlog`` seconds of feeding still to do, hashes the
        rest: half the chunk plus half the backlog in accesses hashed (the cost of an
        access as measured on earlier chunks), corrected by how late the other thread
        finished on the chunks before."""
        extra = backlog / self._cost[1]
        return min(n, max(n // 2, int((n + extra) / 2 + self._skew)))
