"""Generation feeds L1 directly: a kernel's generator writes a block at a time into the
count and the L1 pass, L1's output piling up for the levels below (the part of
:class:`~hroof.cachesim.Simulator` that takes hroof's own generated traces).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from hroof._base.errors import HroofError
from hroof._base.kinds import SIZE_DTYPE
from hroof.cachesim import _kernels as K
from hroof.cachesim._chunks import _event_arrays, _split_lines, _trusted_chunk

#: Accesses a kernel's generator writes at a time in :meth:`Simulator.feed_generated`:
#: 13 bytes each (address, size, kind), 0.85 MB, within a server core's L2, where a chunk
#: of 1 Mi accesses (13 MB) went out to L3 or DRAM between the generator, the count and
#: the L1 pass. Measured (``bench/gen_l1_pass.py``): 32 Ki to 256 Ki alike, 4 Ki
#: slower (about 6 us of Python and dispatch a block).
BLOCK = 1 << 16

_NO_KIND = np.zeros(1, dtype=np.uint8)  # the kind argument of the passes below L1


class GeneratedFeed:
    """:meth:`feed_generated` and its helpers, for :class:`~hroof.cachesim.Simulator`
    (which has the state and the passes they use)."""

    def feed_generated(
        self, gen, args, start: int, stop: int, per_iteration: int, chunk_size: int,
        progress: Callable[[int], None] | None = None, *, block: int | None = None,
    ) -> float:  # fmt: skip
        """Generate iterations ``start .. stop`` of one of hroof's own kernels straight into
        the simulation; return the seconds spent generating.

        ``gen(pos, stop, addr, size, kind, args) -> (n, pos)`` is the kernel's generator
        (:class:`hroof.traces.Plan`). It writes ``block`` accesses at a time (default
        :data:`BLOCK`; at least ``per_iteration``) into buffers that stay in the host's
        L2: each block is counted (the core's counters, straddling accesses, the address
        limit: the same pass as :meth:`feed` with ``trusted=True``) and run through L1
        while it is still there, L1's output piling up for the levels below, which run
        once a chunk of at most ``chunk_size`` accesses is done (or when that output fills
        its buffer); ``progress`` is called then, with the accesses of the chunk. The same
        simulation as feeding ``plan.chunks(chunk_size)`` with :meth:`feed`
        (``tests/test_gen_l1.py``).
        """
        if self._finished:
            raise HroofError("this simulation is finished; start a new Simulator")
        lb = self.hierarchy.line_bits
        chunk = max(int(chunk_size), 1)
        cap = max(min(int(BLOCK if block is None else block), chunk), int(per_iteration), 1)
        addr = np.empty(cap, dtype=np.int64)
        size = np.empty(cap, dtype=SIZE_DTYPE)
        kind = np.empty(cap, dtype=np.uint8)
        core = self._st.core
        gen_s = 0.0
        pos, end = int(start), int(stop)
        nout = 0
        while pos < end:
            done = 0
            while pos < end and (done == 0 or chunk - done >= cap):  # as Plan.chunks cuts
                t0 = time.perf_counter()
                n, pos = gen(pos, end, addr, size, kind, args)
                t1 = time.perf_counter()
                gen_s += t1 - t0
                if n == 0:
                    raise RuntimeError(f"generator made no progress at {pos}")
                a, sz, k, straddles, counts = _trusted_chunk(addr[:n], size[:n], kind[:n], lb)
                core += counts
                if straddles:
                    a, sz, k = _split_lines(a, sz, k, lb)
                t0 = time.perf_counter()
                self._check_s += t0 - t1
                nout = self._top_block(a, sz, k, nout, chunk)
                self._simulate_s += time.perf_counter() - t0
                done += n
            t0 = time.perf_counter()
            nout = self._below_blocks(nout)
            self._simulate_s += time.perf_counter() - t0
            if progress is not None:
                progress(done)
        return gen_s

    def _top_out(self):
        """The buffer L1's output piles up in between :meth:`_below_blocks` (None: L1 is the
        only level, or the policy path runs every level access by access)."""
        if len(self.hierarchy.levels) == 1 or (not self._nine and not self._split):
            return None
        return self._l1_out[self._flip] if self._pool is not None else self._out[0]

    def _set_top_out(self, out) -> None:
        if self._pool is not None:
            self._l1_out[self._flip] = out
        else:
            self._out[0] = out

    def _top_block(self, addr, size, kind, nout: int, chunk: int) -> int:
        """Run one block of accesses (each within one line) through L1, its output appended
        to :meth:`_top_out` from ``nout`` on (every level, when there is no such buffer);
        return the events that buffer holds then."""
        lb = self.hierarchy.line_bits
        out = self._top_out()
        if out is None:
            if self._nine:
                self._pass(0, addr, lb, size, kind, self._out_dummy)
            else:
                self._run_policies(addr, size, kind)
            return 0
        need = 2 * addr.shape[0]  # a request and a writeback at most per access
        if out.ev.shape[0] - nout < need:
            if nout:
                nout = self._below_blocks(nout)
                out = self._top_out()
            if out.ev.shape[0] < need:
                out = K.Events(*_event_arrays(max(need, 2 * chunk)))
                self._set_top_out(out)
        return self._pass(0, addr, lb, size, kind, out, nout)

    def _below_blocks(self, nout: int) -> int:
        """Run the ``nout`` events L1 piled up through the levels below (on the worker
        thread with ``threads=2``); return 0, the events left in the buffer."""
        out = self._top_out()
        if out is None or nout == 0:
            return 0
        ev, size = out.ev[:nout], out.size[:nout]
        if self._pool is not None:
            self._submit(ev, size)
        elif not self._nine:
            self._run_split(1, ev, 0, size, _NO_KIND)
        else:
            self._run_levels(1, ev, 0, size, _NO_KIND)
        return 0
