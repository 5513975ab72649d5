"""How a SHARDS pass (:class:`hroof.cachesim.mrc.StackDistances`) uses two threads.

With ``threads=2`` each trace chunk of :data:`hroof.cachesim.mrc.SPLIT_FROM` accesses
or more is checked and hashed on both threads: the caller's thread takes the chunk's
stripes from the front; the other thread first feeds the samplers the events kept from
the chunks before (handed over as each chunk ends: the sample's feed, then the
sub-samples'), then takes stripes from the back until the two meet
(``_mrc_scan.scan_claim``). However the work falls, the samplers see the same events in
the same order, so the curve is the one thread's (``tests/test_mrc.py``). The exact pass
stays on one thread: each reference's distance depends on every reference before it.
"""

from __future__ import annotations

import os
import threading

import numpy as np

from hroof.cachesim import _mrc_kernels as MK
from hroof.cachesim import _mrc_scan as MSC

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
        # the feeding handed to the other thread: (future, buffers, events, threshold,
        # merge, state), see :meth:`_submit_feed`
        self._feeding = None
        self._lock = threading.Lock()  # guards the state of the feeding
        self.stripe = MSC.STRIPE  # accesses of a stripe (``_mrc_scan.scan_claim``)
        self._claims = np.zeros(2, dtype=np.int64)  # see ``_mrc_scan.scan_claim``
        self._ends = self._stripe_lookups = None
        self._half = None  # outputs of the stripes the other thread hashes
        self._flags2 = np.zeros(MK.PREFILTER_BLOCK, dtype=np.uint8)  # its scratch flags

    def _feed_trace2(self, addr, size, kind, args, thresh: int) -> bool:
        """:meth:`feed_trace` on two threads. The events kept from the chunk before are
        already being fed to the samplers on the other thread (:meth:`_submit_feed`);
        this thread checks and hashes the chunk's stripes from the front, the other from
        the back once it has fed them, until the two meet. The samplers see the same
        events in the same order however the stripes fall."""
        n = addr.shape[0]
        if self._pending:  # left by another path (a small chunk, the simulator's way)
            self._submit_feed()
        self._reserve(n)  # pending is 0: the events fed meanwhile are in ``self._alt``
        stripe = self.stripe
        ns = -(-n // stripe)
        if self._half is None or self._half[0].shape[0] < n:
            self._half = tuple(np.empty(n, dtype=b.dtype) for b in self._buf)
        if self._ends is None or self._ends.shape[0] < ns + 1:
            self._ends = np.zeros(ns + 1, dtype=np.int64)
            self._stripe_lookups = np.zeros(ns, dtype=np.int64)
        claims, ends, lookups, half = self._claims, self._ends, self._stripe_lookups, self._half
        claims[0], claims[1], ends[ns] = 0, ns, 0
        tail = (stripe, claims, True, ends, lookups)
        other = _worker().submit(MSC.scan_claim, addr, size, kind, *args, self._flags2, *half,
                                 *tail)  # fmt: skip
        try:
            k, edge, rejected = MSC.scan_claim(
                addr, size, kind, *args, self._flags, *self._buf, stripe, claims, False, ends,
                lookups,
            )  # fmt: skip
        finally:
            try:
                self._wait_feed()
            finally:
                _, _, rejected2 = other.result()
        if rejected or rejected2:
            return False
        # The other thread's stripes are appended to this thread's events there, before
        # they are fed (its own outputs are still in its cache); ``ends`` is copied, the
        # next chunk writes it.
        k_back = int(ends[edge]) if edge < ns else 0
        self._add_pending(k + k_back, int(lookups[:ns].sum()), thresh, flush=False)
        if self._pending:
            self._submit_feed((edge, ns, ends[: ns + 1].copy(), half, k) if k_back else None)
        return True

    def _submit_feed(self, merge=None) -> None:
        """``threads=2``: hand the pending events to the other thread (one job: the
        sample's feed, then the sub-samples', which :meth:`_wait_feed` may take back),
        and take the other buffer for the next ones. ``merge``: ``(edge, stripes, ends,
        outputs, kept)``, the other thread's stripes of a chunk still to be appended to
        the buffer's first ``kept`` events (``_mrc_scan.merge_stripes``)."""
        self._wait_feed()
        job = (self._buf, self._pending, self._pending_thresh, merge, {"merged": merge is None})
        self._buf, self._alt = self._alt, self._buf
        self._pending = self._pending_thresh = 0
        self._feeding = (_worker().submit(self._feed_job, *job), *job)

    def _feed_job(self, bufs, k: int, thresh: int, merge, state: dict) -> None:
        """The other thread's feeding (:meth:`_submit_feed`); ``state["subs"]`` says who
        feeds the sub-samples once the events are merged: this job, or the caller's
        thread, which took them back (:meth:`_wait_feed`)."""
        if merge is not None:
            edge, ns, ends, half, kept = merge
            MSC.merge_stripes(edge, ns, ends, *half, *bufs, kept)
            with self._lock:
                state["merged"] = True
        events = tuple(b[:k] for b in bufs)
        self._feed_main(*events, thresh, self._out2)
        if self.subs:
            with self._lock:
                if state.setdefault("subs", "here") != "here":
                    return
            self._feed_subs(*events, self._out2)

    def _wait_feed(self) -> None:
        """Wait for the feeding handed to the other thread; if it has merged the events but
        not started the sub-samples' feed yet, that feed is taken back and run here, at
        once with the sample's."""
        job, self._feeding = self._feeding, None
        if job is None:
            return
        future, bufs, k, _, _, state = job
        try:
            if self.subs:
                with self._lock:
                    take = state["merged"] and "subs" not in state
                    if take:
                        state["subs"] = "taken back"
                if take:
                    self._feed_subs(*(b[:k] for b in bufs), self._out)
        finally:
            future.result()
