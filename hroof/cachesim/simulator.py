"""The streaming cache-hierarchy simulator.

>>> import numpy as np
>>> from hroof.cachesim import Simulator, hierarchy
>>> h = hierarchy({"name": "L1", "size": 256, "ways": 2, "line": 64})
>>> sim = Simulator(h)
>>> sim.feed(np.array([0, 8, 64, 0]), np.array([8, 8, 8, 8]), np.array([0, 0, 1, 0]))
>>> r = sim.finish()
>>> r.levels[0].misses, r.levels[0].hits, r.levels[0].writebacks
(2, 2, 1)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from hroof._base.errors import HroofError
from hroof.cachesim import _kernels as K
from hroof.cachesim import _policy_kernels as PK
from hroof.cachesim import _prefetch_kernels as PFK
from hroof.cachesim import _shadow_kernels as SHK
from hroof.cachesim import _split_kernels as SPK
from hroof.cachesim._chunks import _as_chunk, _event_arrays, _split_lines, _trusted_chunk
from hroof.cachesim._generated import GeneratedFeed
from hroof.cachesim.config import HierarchyConfig, LevelConfig
from hroof.cachesim.result import (
    MISS_CLASSES,
    TRAFFIC_PARTS,
    CoreCounts,
    LevelResult,
    MemoryResult,
    SimResult,
    _ai,
    timing_dict,
)

Chunk = tuple[np.ndarray, np.ndarray, np.ndarray]


def _pow2_at_least(n: int) -> int:
    p = 1
    while p < n:
        p <<= 1
    return p


_WARM: set[bool] = set()


def warm_up(classify: bool | None = None) -> None:
    """Compile the plain level passes (or load them from the cache) once per process.

    :class:`Simulator` calls this (and, for a hierarchy that is not plain, the access
    engine's :func:`hroof.cachesim._split_kernels.warm_up`) before its first timing, so
    that ``timing.simulate_s`` measures simulation, not compilation (``bench/RESULTS.md``,
    "First run"). Only the kernels of one mode (``classify`` on or off) are loaded, unless
    ``classify`` is None (both); a hierarchy that runs every level in the access engine
    (an inclusive level, an L1 prefetcher) never needs the plain passes.
    """
    modes = (True, False) if classify is None else (bool(classify),)
    tiny = HierarchyConfig((LevelConfig("L1", 128, 1, 64), LevelConfig("L2", 128, 1, 64)))
    for mode in modes:
        if mode in _WARM:
            continue
        _WARM.add(mode)
        sim = Simulator(tiny, classify=mode)
        sim.feed(np.array([0, 64, 4096]), np.array([8, 8, 8]), np.array([1, 0, 2]))
        if mode:
            sim._grow_flags(1 << 12)  # compiles the rehash of the flag page table
        sim.finish()


_NO_KIND = np.zeros(1, dtype=np.uint8)  # the kind argument of the passes below L1


class Simulator(GeneratedFeed):
    """A set-associative LRU cache hierarchy fed a trace chunk by chunk.

    The model is the one of ``docs/cache-model.md``: LRU, non-inclusive and
    non-exclusive, write-back with write-allocate (per level switchable),
    non-temporal stores, writebacks that allocate without a fill, and a final
    flush. State persists between :meth:`feed` calls, so a result never
    depends on how the trace was cut into chunks.

    Parameters
    ----------
    hierarchy : HierarchyConfig
        The cache levels.
    classify : bool
        Classify every miss as compulsory, capacity or conflict and split the
        traffic below each level (costs a fully-associative shadow per level
        and 1 byte per distinct line touched, up to 4 levels).
    threads : {1, 2}
        With 2, L1 simulates a chunk while a second thread runs the levels
        below on the previous one, when L1 runs as a plain pass
        (:attr:`HierarchyConfig.pipelines`; otherwise one thread runs). The
        result is exactly the same as with 1. With classification the levels
        below then keep their flag words apart from L1's (at most twice the
        flag bytes).

    Notes
    -----
    Time per access is O(ways) in the worst case and O(1) on hits near the
    MRU end of a set; classification adds O(1) expected per event. Memory is
    the cache state plus, with classification, O(distinct lines touched).
    """

    def __init__(
        self,
        hierarchy: HierarchyConfig,
        *,
        classify: bool = True,
        threads: int = 1,
        _shadow_div: int = 1,
    ):
        if not isinstance(hierarchy, HierarchyConfig):
            raise HroofError(f"expected a HierarchyConfig, got {type(hierarchy).__name__}")
        if threads not in (1, 2):
            raise HroofError(f"threads must be 1 or 2, got {threads!r}")
        self.hierarchy = hierarchy
        self.classify = bool(classify)
        self.threads = threads
        # Two threads pipeline the levels: L1 runs chunk k while L2..Ln run chunk k-1.
        self._pool = None
        self._pending = None
        self._flip = 0
        # Policies other than NINE run access by access, on one thread (_policy_kernels).
        self._nine = hierarchy.plain
        # Plain levels, one core: L1 alone tells a line's first event at every level
        # (K.level_pass, ``carry_new``).
        self._carry_new = self.classify and self._nine
        self._pol = np.array([PK.POLICY_CODES[lv.inclusion] for lv in hierarchy.levels])
        self._act = np.zeros((2, len(hierarchy.levels)), dtype=np.int64)
        self._pf = PFK.new_prefetch(hierarchy.levels, hierarchy.line_bits)  # docs: "Prefetchers"
        # The top levels that no level below can change run as plain passes (_split_kernels).
        self._split = SPK.split_level(hierarchy.levels)
        if self._nine or self._split:
            warm_up(self.classify)  # the plain level passes
        if not self._nine:
            SPK.warm_up(self.classify)  # the access engine
        if threads == 2 and hierarchy.pipelines:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hroof-levels")
            self._l1_out = [K.Events(*_event_arrays(1024)) for _ in range(2)]
        self._threads_used = 1 if self._pool is None else 2
        self._finished = False
        self._simulate_s = 0.0
        self._check_s = 0.0  # checking (or counting) the chunks before they are simulated
        levels = hierarchy.levels
        nlev = len(levels)
        ways = np.array([lv.ways for lv in levels], dtype=np.int64)
        nsets = np.array([lv.sets for lv in levels], dtype=np.int64)
        slots = ways * nsets
        off = np.concatenate(([0], np.cumsum(slots)[:-1])).astype(np.int64)
        mask = np.array([s - 1 if s & (s - 1) == 0 else -1 for s in nsets.tolist()], dtype=np.int64)
        wa = np.array([1 if lv.write_allocate else 0 for lv in levels], dtype=np.uint8)
        self._geo = K.Geometry(ways, nsets, off, mask, wa, hierarchy.line_bits, nlev)
        self._st = K.State(
            tags=np.full(int(slots.sum()), -1, dtype=np.int64),
            ctr=np.zeros((nlev, K.NCTR), dtype=np.int64),
            core=np.zeros(K.NCORE, dtype=np.int64),
        )
        # The access engine's view: one core's map, the counters as its one row (_policy_kernels).
        self._mc = PK.one_core(self._geo)
        self._st3 = K.State(self._st.tags, self._st.ctr.reshape(1, nlev, K.NCTR), self._st.core)
        # Per level, the buffer of events it sends to the level below (grown on demand).
        self._out_dummy = K.Events(*_event_arrays(1))
        self._out = [K.Events(*_event_arrays(1024)) for _ in range(nlev - 1)]
        # The flag words of the levels below L1 (``_flags``): L1's own, unless the levels
        # run on two threads, where each thread writes only its own words.
        self._fl_lo = None
        if self.classify:
            self._fl = self._new_flags(pages=64, pt_cap=256, nlevels=nlev)
            if self._pool is not None:
                self._fl_lo = self._new_flags(pages=64, pt_cap=256, nlevels=nlev)
            # Set sampling feeds 1/_shadow_div of the lines: the shadows shrink alike.
            self._sh = self._new_shadow([max(1, lv.lines // _shadow_div) for lv in levels])
        else:
            self._fl = self._new_flags(pages=1, pt_cap=2, nlevels=1)
            self._sh = self._new_shadow([1] * nlev)

    # ------------------------------------------------------------ state
    @staticmethod
    def _new_flags(pages: int, pt_cap: int, nlevels: int) -> K.Flags:
        rcache = np.full(2 * K.RCACHE, -1, dtype=np.int64)
        dtype, wb0 = K.flag_dtype(nlevels)
        meta = np.zeros(K.NMETA, dtype=np.int64)
        meta[K.M_WB0] = wb0
        return K.Flags(
            pt_keys=np.full(pt_cap, -1, dtype=np.int64),
            pt_vals=np.zeros(pt_cap, dtype=np.int64),
            pages=np.zeros(pages * K.PAGE, dtype=dtype),
            meta=meta,
            rcache=rcache,
        )

    @staticmethod
    def _new_shadow(caps: list[int]) -> K.Shadow:
        if max(caps) >= 2**30:
            raise HroofError("classification supports levels of fewer than 2**30 lines")
        return SHK.new_shadow(caps)

    def _flags(self, lvl: int) -> K.Flags:
        """The flag words level ``lvl`` reads and writes."""
        return self._fl_lo if lvl and self._fl_lo is not None else self._fl

    def _grow_flags(self, need: int, lvl: int = 0) -> None:
        """Make room for ``need`` more flag pages (and their table entries) in the flag
        words of level ``lvl``."""
        if lvl and self._fl_lo is not None:
            self._fl_lo = Simulator._grown(self._fl_lo, need)
        else:
            self._fl = Simulator._grown(self._fl, need)

    @staticmethod
    def _grown(fl: K.Flags, need: int) -> K.Flags:
        """``fl`` with room for ``need`` more pages (the same arrays if they have it)."""
        meta = fl.meta
        pages, keys, vals = fl.pages, fl.pt_keys, fl.pt_vals
        npages = int(meta[K.M_NPAGES])
        cap = pages.shape[0] // K.PAGE
        if npages + need > cap:
            # Grow by half: the flags are most of the state on large traces.
            cap = max(npages + need, cap + cap // 2)
            new_pages = np.zeros(cap * K.PAGE, dtype=pages.dtype)
            new_pages[: pages.shape[0]] = pages
            pages = new_pages
        used = int(meta[K.M_PT_USED])
        tcap = keys.shape[0]
        if 2 * (used + need) > tcap:
            while 2 * (used + need) > tcap:
                tcap *= 2
            new_keys = np.full(tcap, -1, dtype=np.int64)
            new_vals = np.zeros(tcap, dtype=np.int64)
            K.rehash_pages(keys, vals, new_keys, new_vals)
            keys, vals = new_keys, new_vals
        # Page numbers never change, so the region cache stays valid.
        return K.Flags(keys, vals, pages, meta, fl.rcache)

    @property
    def accesses(self) -> int:
        """Accesses simulated so far."""
        return int(self._st.core[: K.K_NT + 1].sum())

    @property
    def state_bytes(self) -> int:
        """Bytes held by the simulator's arrays (cache state and classification)."""
        arrays = [*self._st, *self._fl, *(self._fl_lo or ()), *self._sh]
        return int(sum(a.nbytes for a in arrays if isinstance(a, np.ndarray)))

    def check_invariants(self) -> None:
        """Raise AssertionError if the cache state is inconsistent.

        Checks, per level: valid slots form a prefix of each set (so occupancy
        <= ways), no line twice in a set, every line in the set its address
        maps to, hits + misses == lookups; with classification, the shadow
        holds at most the level's capacity and its hash table indexes exactly
        its listed nodes, and the flag pages opened fit their array.
        """
        self._wait()
        tags = self._st.tags
        for i, lv in enumerate(self.hierarchy.levels):
            off = int(self._geo.off[i])
            block = tags[off : off + lv.sets * lv.ways].reshape(lv.sets, lv.ways)
            valid = block >= 0
            assert not (~valid[:, :-1] & valid[:, 1:]).any(), f"{lv.name}: hole inside a set"
            lines = (block >> 1) & PFK.LINE_MASK  # a prefetched line's bit 62 set
            for s in np.flatnonzero(valid.any(axis=1)):
                row = lines[s][valid[s]]
                assert len(set(row.tolist())) == row.size, f"{lv.name}: duplicate line in set {s}"
                assert (row % lv.sets == s).all(), f"{lv.name}: line in the wrong set {s}"
            ctr = self._st.ctr[i]
            assert ctr[K.C_MISSES] <= ctr[K.C_LOOKUPS]
            if self.classify:
                assert ctr[K.C_COMP : K.C_COMP + 3].sum() == ctr[K.C_MISSES]
                SHK.check_shadow(self._sh, i)
        for fl in (self._fl, self._fl_lo) if self.classify else ():
            if fl is not None:  # the flag pages opened fit their array, the table is half full
                assert fl.meta[K.M_NPAGES] * K.PAGE <= fl.pages.shape[0], "flag pages overrun"
                assert 2 * fl.meta[K.M_PT_USED] <= fl.pt_keys.shape[0], "page table overfull"

    # ------------------------------------------------------------ feeding
    def feed(self, addr, size, kind, *, trusted: bool = False) -> None:
        """Simulate one chunk of accesses.

        Parameters
        ----------
        addr : array of int
            Byte addresses (below 2**62).
        size : array of int
            Access sizes in bytes (positive, below 2**32; uint32 is used as it is,
            other dtypes are converted).
        kind : array of int
            0 load, 1 store, 2 non-temporal store.
        trusted : bool
            The chunk comes from one of hroof's own kernel generators (int64, uint32,
            uint8 arrays, every value in range): counted, not checked. Never for a
            user's arrays.
        """
        if self._finished:
            raise HroofError("this simulation is finished; start a new Simulator")
        t0 = time.perf_counter()
        lb = self.hierarchy.line_bits
        chunk = _trusted_chunk if trusted else _as_chunk
        addr, size, kind, straddles, core = chunk(addr, size, kind, lb)
        self._st.core[:] += core
        if straddles:
            addr, size, kind = _split_lines(addr, size, kind, lb)
        t1 = time.perf_counter()
        self._check_s += t1 - t0
        t0 = t1
        if self._pool is not None:
            self._run_pipelined(addr, size, kind)
        elif not self._nine:
            self._run_policies(addr, size, kind)
        else:
            self._run_levels(0, addr, lb, size, kind)
        self._simulate_s += time.perf_counter() - t0

    def _feed_valid(self, addr, size, kind) -> None:
        """Simulate accesses already checked, each within one line (the core's counts untouched).

        ``addr`` int64, ``size`` int64, ``kind`` uint8, as :func:`_as_chunk` returns them.
        """
        t0 = time.perf_counter()
        if self._pool is not None:
            self._run_pipelined(addr, size, kind)
        elif not self._nine:
            self._run_policies(addr, size, kind)
        else:
            self._run_levels(0, addr, self.hierarchy.line_bits, size, kind)
        self._simulate_s += time.perf_counter() - t0

    def _pass(self, lvl, src, shift, size, kind, out, nout=0) -> int:
        """Run events through level ``lvl`` (growing the tables as needed), appending what
        it sends below to ``out`` from index ``nout``; return the events ``out`` holds then.

        At L1, ``src`` holds the trace's byte addresses and ``kind`` its kinds;
        below, ``src`` holds packed events and ``kind`` is ignored.
        """
        emit = lvl < len(self.hierarchy.levels) - 1
        level_pass = K.LEVEL_PASS[self.classify, lvl == 0]
        i = 0
        while i < src.shape[0]:
            i, nout = level_pass(
                lvl, src, shift, size, kind, i, self._geo, self._st, self._flags(lvl),
                self._sh, emit, self._carry_new, out, nout,
            )  # fmt: skip
            if i < src.shape[0]:
                self._grow_flags(1, lvl)
        return nout

    def _run_levels(self, lvl, src, shift, size, kind) -> None:
        """Run a stream of events through level ``lvl`` and every level below it.

        At L1 the stream is the trace (addresses, sizes, kinds); below, packed
        events and their sizes (``kind`` unused).
        """
        nlev = len(self.hierarchy.levels)
        while lvl < nlev and src.shape[0]:
            out = self._out_dummy
            if lvl < nlev - 1:
                out = self._out[lvl]
                if out.ev.shape[0] < 2 * src.shape[0]:
                    out = self._out[lvl] = K.Events(*_event_arrays(2 * src.shape[0]))
            nout = self._pass(lvl, src, shift, size, kind, out)
            src, size, kind = out.ev[:nout], out.size[:nout], _NO_KIND
            shift = 0
            lvl += 1

    def _run_policies(self, addr, size, kind) -> None:
        """Run accesses through a hierarchy with an exclusive, victim or inclusive level or a
        prefetcher: the top ``_split`` levels as plain passes, then the rest access by access
        in the access engine (all of them if ``_split`` is 0: the accesses become events
        ``line << EV_BITS | kind`` first, a trace's kinds 0-2 being ``EV_LOAD``,
        ``EV_STORE`` and ``EV_NT``)."""
        lb = self.hierarchy.line_bits
        if self._split:
            self._run_split(0, addr, lb, size, kind)
            return
        ev = SPK.trace_events(addr, lb, kind)
        self._run_split(0, ev, 0, size, _NO_KIND)

    def _run_split(self, lvl, src, shift, size, kind) -> None:
        """The split policy path from level ``lvl`` on: the plain passes of levels
        ``lvl .. _split - 1``, then the rest access by access (arguments as
        :meth:`_run_levels`)."""
        i = 0
        for j in range(lvl, self._split):
            out = self._out[j]
            if out.ev.shape[0] < 2 * src.shape[0]:
                out = self._out[j] = K.Events(*_event_arrays(2 * src.shape[0]))
            nout = self._pass(j, src, shift, size, kind, out)
            src, size, kind, shift = out.ev[:nout], out.size[:nout], _NO_KIND, 0
        while i < src.shape[0]:
            i = SPK.SPLIT_PASS[self.classify](
                0, self._split, src, size, i, self._geo, self._st3, self._mc,
                self._flags(self._split), self._sh, self._pol, self._pf, self._act[0],
                self._act[1],
            )  # fmt: skip
            if i < src.shape[0]:
                self._grow_flags(SPK.room_needed(self._mc), self._split)

    def _run_pipelined(self, addr, size, kind) -> None:
        """L1 on this thread; the levels below on the worker, one chunk behind."""
        out = self._l1_out[self._flip]
        if out.ev.shape[0] < 2 * addr.shape[0]:
            # The worker may still be reading the other buffer, never this one.
            out = self._l1_out[self._flip] = K.Events(*_event_arrays(2 * addr.shape[0]))
        nout = self._pass(0, addr, self.hierarchy.line_bits, size, kind, out)
        self._submit(out.ev[:nout], out.size[:nout])

    def _submit(self, ev, size) -> None:
        """Run L1's events ``ev`` (sizes ``size``) through the levels below on the worker,
        once it is done with the previous ones."""
        self._wait()
        below = self._run_levels if self._nine else self._run_split
        self._pending = self._pool.submit(below, 1, ev, 0, size, _NO_KIND)
        self._flip ^= 1

    def _wait(self) -> None:
        if self._pending is not None:
            pending, self._pending = self._pending, None
            pending.result()

    def _flush(self) -> None:
        """Write back every dirty line, level by level from L1 down."""
        nlev = len(self.hierarchy.levels)
        below = self._run_levels if self._nine else self._run_split
        if self._fl_lo is not None and not self._nine:
            # Two threads: the levels below L1 keep their own flag words, and the flush
            # moves only lines they hold, so it opens at most those lines' pages.
            self._grow_flags(self._lacking_pages(range(1, nlev), dirty=False), 1)
        for lvl in range(nlev):
            if not self._nine and lvl >= self._split:
                # Below the policy path's plain top levels (nothing below changes those).
                PK.engine_flush(
                    0, lvl, self._geo, self._st3, self._mc, self._flags(lvl), self._sh,
                    self._pol, self._pf, self.classify,
                )  # fmt: skip
                continue
            nout, out = self._flush_plain(lvl, lvl < nlev - 1)
            if nout:
                below(lvl + 1, out.ev[:nout], 0, out.size[:nout], _NO_KIND)

    def _flush_plain(self, lvl: int, emit: bool) -> tuple[int, K.Events]:
        """Write back level ``lvl``'s dirty lines, a plain level's way; return how many
        writebacks it emitted for the level below (if ``emit``) and their buffer."""
        out = self._out_dummy
        if emit:
            ndirty = K.count_dirty(self._geo, self._st, lvl)
            out = K.Events(*_event_arrays(max(ndirty, 1)))
        if lvl and self._fl_lo is not None and self._nine:
            # The levels below L1 keep their own flag words (two threads), opened by
            # writebacks only (carry_new): the flush's may open pages of their own.
            self._grow_flags(self._lacking_pages([lvl], dirty=True), lvl)
        fl = self._flags(lvl)
        return K.flush_level(lvl, self._geo, self._st, fl, self.classify, emit, out), out

    def _lacking_pages(self, levels, *, dirty: bool) -> int:
        """How many flag pages of the lines ``levels`` hold (only the dirty ones if
        ``dirty``) the lower levels' flag words lack (two threads: ``_fl_lo``)."""
        pages = []
        for lvl in levels:
            off = int(self._geo.off[lvl])
            tags = self._st.tags[off : off + int(self._geo.ways[lvl] * self._geo.nsets[lvl])]
            held = tags[(tags >= 0) & (tags & 1 == 1)] if dirty else tags[tags >= 0]
            pages.append(((held >> 1) & PFK.LINE_MASK) >> K.PAGE_BITS)
        pages = np.unique(np.concatenate(pages))
        return int((~np.isin(pages, self._fl_lo.pt_keys)).sum())

    def reset_counters(self) -> None:
        """Zero every counter but keep the caches' contents: what was fed so far
        (a warm-up) is simulated but not counted, so the result is the steady state
        of what is fed next. The miss classification remembers the lines seen
        before (a line touched in the warm-up is not compulsory after it)."""
        if self._finished:
            raise HroofError("this simulation is finished; start a new Simulator")
        self._wait()
        self._st.ctr[:] = 0
        self._st.core[:] = 0
        self._pf.ctr[:] = 0

    def finish(
        self,
        *,
        flush: bool = True,
        flops: int | None = None,
        source: dict | None = None,
        trace_s: float = 0.0,
        generated: bool = False,
    ) -> SimResult:
        """Flush (unless ``flush=False``) and return the result; ends the simulation.

        ``trace_s`` is the time spent producing the chunks: ``timing.generate_s`` if
        ``generated`` (a kernel's generator), else ``timing.read_s``."""
        if self._finished:
            raise HroofError("this simulation is finished already")
        if flops is not None and (isinstance(flops, bool) or int(flops) != flops or flops < 0):
            raise HroofError(f"flops must be a non-negative integer, got {flops!r}")
        self._end(flush)
        return self._result(
            flush=flush,
            flops=None if flops is None else int(flops),
            source=source or {},
            trace_s=trace_s,
            generated=generated,
        )

    def _end(self, flush: bool) -> None:
        """Wait for the worker, flush (if asked) and mark the simulation finished."""
        t0 = time.perf_counter()
        if self._pool is not None:
            self._wait()
            self._pool.shutdown()
            self._pool = None
        if flush:
            self._flush()
        self._simulate_s += time.perf_counter() - t0
        self._finished = True

    # ------------------------------------------------------------ results
    def _result(
        self, *, flush: bool, flops: int | None, source: dict, trace_s: float,
        ctr=None, core=None, simulate_s=None, sampling=None, generated=False, check_s=None,
    ):  # fmt: skip
        """Build the result from this simulator's counters, or from ``ctr``/``core`` if given."""
        ctr = self._st.ctr if ctr is None else ctr
        c = self._st.core if core is None else core
        core = CoreCounts(*(int(x) for x in c))
        levels = []
        above_bytes = core.bytes_loaded + core.bytes_stored
        pf_bytes = 0
        for i, cfg in enumerate(self.hierarchy.levels):
            row = [int(x) for x in ctr[i]]
            off = int(self._geo.off[i])
            pfx = PFK.result_fields(
                self._pf, i, cfg, self._st.tags, off, pf_bytes, above_bytes, flops
            )
            levels.append(self._level_result(cfg, row, above_bytes, flops, pfx))
            above_bytes, pf_bytes = levels[-1].traffic_below_bytes, pfx["prefetch_bytes_below"]
        last = levels[-1]
        read = last.fills * self.hierarchy.line + pf_bytes
        written = last.writebacks * last.line + last.forwarded_store_bytes + core.bytes_nt
        memory = MemoryResult(
            self.hierarchy.memory_name, read, written, _ai(flops, read + written), pf_bytes
        )
        return SimResult(
            source=source,
            flops=flops,
            core=core,
            levels=tuple(levels),
            memory=memory,
            timing=timing_dict(
                trace_s,
                generated,
                self._check_s if check_s is None else check_s,
                self._simulate_s if simulate_s is None else simulate_s,
            ),
            classified=self.classify,
            flushed=flush,
            machine=self.hierarchy.name,
            sampling=sampling,
            threads=self._threads_used,
        )

    def _level_result(self, cfg: LevelConfig, row: list[int], nbytes: int, flops, pfx: dict):
        line = cfg.line
        misses = row[K.C_MISSES]
        fills = misses - row[K.C_FWD]
        below = (fills + row[K.C_WB_OUT] + row[K.C_VICT]) * line + row[K.C_FWD_BYTES]
        below += pfx["prefetch_bytes_below"]
        by_class = partition = None
        if self.classify:
            by_class = {name: row[K.C_COMP + j] for j, name in enumerate(MISS_CLASSES)}
            first, repeat = row[K.C_WB_FIRST], row[K.C_WB_OUT] - row[K.C_WB_FIRST]
            fwd = [row[K.C_FWD_COMP_BYTES + j] for j in range(3)]
            load = [row[K.C_LOAD_COMP + j] for j in range(3)]
            partition = dict(
                zip(
                    TRAFFIC_PARTS,
                    (
                        (load[0] + first) * line + fwd[0],
                        row[K.C_WA_FILLS] * line,
                        (load[1] + repeat + row[K.C_VICT]) * line + fwd[1],
                        load[2] * line + fwd[2],
                    ),
                    strict=False,
                )
            )
            if self.hierarchy.prefetching:  # a fifth part: the prefetch requests' lines
                partition["prefetch"] = pfx["prefetch_bytes_below"]
            assert sum(partition.values()) == below, "traffic partition does not sum"
            assert sum(by_class.values()) == misses, "miss classes do not sum"
        return LevelResult(
            name=cfg.name,
            size=cfg.size,
            ways=cfg.ways,
            line=line,
            sets=cfg.sets,
            lookups=row[K.C_LOOKUPS],
            hits=row[K.C_LOOKUPS] - misses,
            misses=misses,
            misses_by_class=by_class,
            write_allocate_fills=row[K.C_WA_FILLS],
            forwarded_stores=row[K.C_FWD],
            forwarded_store_bytes=row[K.C_FWD_BYTES],
            writebacks_in=row[K.C_WB_IN],
            writebacks=row[K.C_WB_OUT],
            invalidations=row[K.C_INVAL],
            bytes=nbytes,
            ai=_ai(flops, nbytes),
            traffic_below=partition,
            traffic_below_bytes=below,
            inclusion=cfg.inclusion,
            victims=row[K.C_VICT],
            victims_in=row[K.C_VICT_IN],
            back_invalidations=row[K.C_BINV],
            **pfx,
        )


def feed_all(sim, chunks: Iterable[Chunk], progress, trusted: bool = False) -> float:
    """Feed every chunk to ``sim`` (a :class:`Simulator` or a sampled one); return the
    seconds spent producing the chunks (reading or generating the trace).

    Trusted ``chunks`` that can feed a simulator themselves (``feed_into(sim, progress)``:
    :meth:`hroof.traces.Plan.generated`) go straight into :meth:`Simulator.feed_generated`.
    """
    feed_into = getattr(chunks, "feed_into", None)
    if trusted and feed_into is not None and hasattr(sim, "feed_generated"):
        return feed_into(sim, progress)
    trace_s = 0.0
    it = iter(chunks)
    while True:
        t0 = time.perf_counter()
        try:
            addr, size, kind = next(it)
        except StopIteration:
            trace_s += time.perf_counter() - t0
            break
        trace_s += time.perf_counter() - t0
        sim.feed(addr, size, kind, trusted=trusted)
        if progress is not None:
            progress(len(addr))
    return trace_s


def simulate(
    hierarchy: HierarchyConfig,
    chunks: Iterable[Chunk],
    *,
    classify: bool = True,
    flush: bool = True,
    flops: int | None = None,
    source: dict | None = None,
    progress: Callable[[int], None] | None = None,
    threads: int = 1,
    warmup: Iterable[Chunk] | None = None,
    sample_sets: int = 1,
    generated: bool = False,
    trusted: bool = False,
) -> SimResult:
    """Simulate a stream of chunks ``(addr, size, kind)`` and return the result.

    ``progress``, if given, is called with the number of accesses of each
    chunk after it is simulated. ``timing.trace_s`` is the time spent producing
    the chunks (reading or generating the trace). ``threads=2`` pipelines the
    levels on two threads where the hierarchy allows (same result). ``warmup``
    chunks, when given, are simulated first and not counted
    (:meth:`Simulator.reset_counters`): the result is the steady state of
    ``chunks``. ``sample_sets=K`` simulates 1/K of the sets exactly and scales the
    counts by K (:mod:`hroof.cachesim.sampling`; the result's ``sampling`` holds the
    estimate's standard errors). ``generated``: the chunks come from a kernel's
    generator (``timing.generate_s``, not ``read_s``); ``trusted``: from one of hroof's
    own generators, so counted but not checked (:meth:`Simulator.feed`).
    """
    if sample_sets != 1:
        from hroof.cachesim.sampling import parse_sample, simulate_sampled

        return simulate_sampled(
            hierarchy, chunks, k=parse_sample(sample_sets), classify=classify, flush=flush,
            flops=flops, source=source, progress=progress, threads=threads, warmup=warmup,
            generated=generated, trusted=trusted,
        )  # fmt: skip
    sim = Simulator(hierarchy, classify=classify, threads=threads)
    trace_s = 0.0
    if warmup is not None:
        trace_s += feed_all(sim, warmup, progress, trusted)
        sim.reset_counters()
    trace_s += feed_all(sim, chunks, progress, trusted)
    return sim.finish(flush=flush, flops=flops, source=source, trace_s=trace_s, generated=generated)


def simulate_arrays(hierarchy, addr, size, kind, **kwargs) -> SimResult:
    """Simulate one in-memory trace; keyword arguments as :func:`simulate`."""
    return simulate(hierarchy, [(addr, size, kind)], **kwargs)
