"""Several cores: private levels per core and shared levels fed by all of them.

The model is the one of ``docs/cache-model.md``, "Several cores". Each core has
its own copy of the private levels (every level above the first shared one); the
shared levels are one copy fed by every core. Within a time step, the cores'
streams are interleaved round-robin in grains of ``grain`` accesses of each
core's own stream: core 0's accesses ``0..G-1``, core 1's ``0..G-1``, ..., then
core 0's ``G..2G-1``, ...; a core whose stream has ended is skipped. A time step
ends when every core's stream has (the barrier of the time loop).

On a plain hierarchy (every level NINE, no prefetcher) a level's behaviour
depends only on the events that reach it, so a core's grain runs through its
private levels with the level passes of the single-core simulator, and the
events that leave its last private level (misses, writebacks, NT
invalidations, in the order the recursive model makes them) go to the shared
levels at once. With an exclusive, victim or inclusive level or a prefetcher,
each grain runs access by access through the core's private levels and the
shared ones in the access engine (:mod:`hroof.cachesim._split_kernels`, the steps
in :mod:`hroof.cachesim._policy_kernels`): an exclusive or victim
shared level takes every core's victims, an inclusive one's eviction drops the
copies in every core's private levels, a private prefetcher acts per core and
a shared one sees the merged stream. Both are exact, and nothing depends on
how the streams are cut into chunks, only on the grain.

>>> import numpy as np
>>> from hroof.cachesim import hierarchy
>>> h = hierarchy({"name": "L1", "size": 128, "ways": 1}, {"name": "L2", "size": 1024, "ways": 4})
>>> sim = MultiSimulator(h, 2, grain=1)
>>> a = (np.array([0, 64]), np.array([8, 8]), np.array([0, 0]))
>>> _ = sim.run_step([[a], [a]])    # both cores load lines 0 and 1
>>> r = sim.finish()
>>> r.levels[0].misses, r.levels[1].lookups, r.levels[1].misses   # L2 misses once a line
(4, 4, 2)
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import replace

import numpy as np

from hroof._base.errors import HroofError
from hroof.cachesim import _kernels as K
from hroof.cachesim import _policy_kernels as PK
from hroof.cachesim import _prefetch_kernels as PFK
from hroof.cachesim import _split_kernels as SPK
from hroof.cachesim.config import HierarchyConfig, LevelConfig
from hroof.cachesim.result import MISS_CLASSES, CoreCounts, SimResult
from hroof.cachesim.simulator import (
    _NO_KIND,
    Chunk,
    Simulator,
    _as_chunk,
    _event_arrays,
    _split_lines,
)

#: Accesses of one core's stream per turn of the round-robin (the default grain).
GRAIN = 1024
#: The most cores a run may simulate.
MAX_CORES = 1024

#: Counters attributed to each core at a shared level (``per_core[c]["shared"]``).
_SHARED_FIELDS = (
    ("lookups", K.C_LOOKUPS),
    ("misses", K.C_MISSES),
    ("write_allocate_fills", K.C_WA_FILLS),
    ("writebacks_in", K.C_WB_IN),
    ("writebacks", K.C_WB_OUT),
    ("invalidations", K.C_INVAL),
)
#: Counters of the inclusion policies, per core (with a level other than NINE).
_POLICY_FIELDS = (
    ("victims", K.C_VICT),
    ("victims_in", K.C_VICT_IN),
    ("back_invalidations", K.C_BINV),
)
#: Prefetch counters of each core's private levels (with a prefetcher).
_PREFETCH_FIELDS = (
    ("prefetches_issued", PFK.PC_ISSUED),
    ("prefetches_filled", PFK.PC_FILLED),
    ("prefetches_useful", PFK.PC_USEFUL),
    ("prefetches_useless", PFK.PC_USELESS),
    ("prefetch_lookups", PFK.PC_LOOKUPS),
    ("prefetch_misses", PFK.PC_MISSES),
)


def _entry(fn, args, src: int = 1, start: int = 5):
    """The compiled specialisation of the Numba dispatcher ``fn`` for ``args``.

    A level pass takes four tuples of arrays, and the dispatcher resolves their
    types on every call (about 20 us); a grain of 1024 accesses is simulated in
    a few microseconds, so several cores call the passes directly: the
    specialisation is looked up once per simulator and level (the callers always
    pass contiguous int64 addresses and events, uint32 sizes and uint8 kinds, as the
    single-core simulator does, so the types never change). Without JIT
    (``NUMBA_DISABLE_JIT=1``) it is ``fn`` itself.
    """
    overloads = getattr(fn, "overloads", None)
    if overloads is None:
        return fn
    # Compiles (or loads) it, from the end of the events: simulates nothing.
    fn(*args[:start], args[src].shape[0], *args[start + 1 :])
    sig = tuple(fn.typeof_pyval(a) for a in args)
    return overloads[sig].entry_point if sig in overloads else fn


class _Passes:
    """A simulator's level passes, called as :meth:`Simulator._pass` does but through
    :func:`_entry`; ``st`` replaces the simulator's state (the shared levels count
    each core's events in that core's own counters)."""

    def __init__(self, sim: Simulator):
        self.sim = sim
        n = len(sim.hierarchy.levels)
        self.emit = [lvl < n - 1 for lvl in range(n)]
        self.fns = [K.LEVEL_PASS[sim.classify, lvl == 0] for lvl in range(n)]
        self.entries: list = [None] * n

    def run(self, lvl: int, src, shift, size, kind, out, st=None) -> int:
        sim = self.sim
        st = sim._st if st is None else st
        n = src.shape[0]
        i = nout = 0
        while i < n:
            args = (lvl, src, shift, size, kind, i, sim._geo, st, sim._fl, sim._sh,
                    self.emit[lvl], sim._carry_new, out, nout)  # fmt: skip
            entry = self.entries[lvl]
            if entry is None:
                entry = self.entries[lvl] = _entry(self.fns[lvl], args)
            i, nout = entry(*args)
            if i < n:
                sim._grow_flags(1)
        return nout


def check_cores(cores, grain=GRAIN) -> tuple[int, int]:
    """``cores`` and ``grain`` as positive integers, or a one-line error."""
    for name, value, top in (("cores", cores, MAX_CORES), ("grain", grain, 1 << 40)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise HroofError(f"{name} must be a positive integer, got {value!r}")
        if value > top:
            raise HroofError(f"{name} must be at most {top}, got {value}")
    return int(cores), int(grain)


class _Policies:
    """The state of several cores on the access-by-access path
    (the access engine, :mod:`hroof.cachesim._split_kernels`): every core's private levels and the
    shared ones in one set of arrays, as *virtual* levels (core 0's private levels,
    core 1's, ..., then the shared levels once)."""

    def __init__(self, hierarchy: HierarchyConfig, cores: int, s: int, classify: bool):
        levels = hierarchy.levels
        nlev = len(levels)
        self.classify = classify
        vlevels = [lv for _ in range(cores) for lv in levels[:s]] + list(levels[s:])
        shared = cores * s + np.arange(nlev - s)
        vlv = np.full((cores + 1, nlev), -1, dtype=np.int64)
        for c in range(cores):
            vlv[c, :s] = c * s + np.arange(s)
            vlv[c, s:] = shared
        vlv[cores, s:] = shared
        slots = np.array([lv.ways * lv.sets for lv in vlevels], dtype=np.int64)
        voff_v = np.concatenate(([0], np.cumsum(slots)[:-1])).astype(np.int64)
        voff = np.where(vlv >= 0, voff_v[np.maximum(vlv, 0)], -1).astype(np.int64)
        self.vlv = vlv
        self.voff_v = voff_v
        self.vlevels = vlevels
        self.mc = PK.Cores(voff, vlv, np.array([cores, s], dtype=np.int64))
        nsets = np.array([lv.sets for lv in levels], dtype=np.int64)
        mask = np.array([n - 1 if n & (n - 1) == 0 else -1 for n in nsets.tolist()], np.int64)
        self.geo = K.Geometry(
            np.array([lv.ways for lv in levels], dtype=np.int64), nsets, voff[0].copy(), mask,
            np.array([1 if lv.write_allocate else 0 for lv in levels], dtype=np.uint8),
            hierarchy.line_bits, nlev,
        )  # fmt: skip
        self.st = K.State(
            tags=np.full(int(slots.sum()), -1, dtype=np.int64),
            ctr=np.zeros((cores + 1, nlev, K.NCTR), dtype=np.int64),
            core=np.zeros(K.NCORE, dtype=np.int64),
        )
        # Flag bits by level: the cores' private flags are apart by their region key.
        if classify:
            self._fl = Simulator._new_flags(pages=64, pt_cap=256, nlevels=nlev)
            self.sh = Simulator._new_shadow([lv.lines for lv in vlevels])
        else:
            self._fl = Simulator._new_flags(pages=1, pt_cap=2, nlevels=1)
            self.sh = Simulator._new_shadow([1] * len(vlevels))
        self.pf = PFK.new_prefetch(vlevels, hierarchy.line_bits)
        self.pol = np.array([PK.POLICY_CODES[lv.inclusion] for lv in levels], dtype=np.int64)
        self.act = np.zeros((2, nlev), dtype=np.int64)
        self.fn = SPK.SPLIT_PASS[classify]
        self.entry = None
        self.room = SPK.room_needed(self.mc)

    def run(self, c: int, addr, shift: int, size, kind) -> None:
        """Core ``c``'s accesses (each within one line) through the hierarchy."""
        n = addr.shape[0]
        ev = SPK.trace_events(addr, shift, kind)
        i = 0
        while i < n:
            args = (c, 0, ev, size, i, self.geo, self.st, self.mc, self._fl, self.sh,
                    self.pol, self.pf, self.act[0], self.act[1])  # fmt: skip
            if self.entry is None:
                self.entry = _entry(self.fn, args, src=2, start=4)
            i = self.entry(*args)
            if i < n:
                self._fl = Simulator._grown(self._fl, self.room)

    def flush(self, cores: int, s: int) -> None:
        """Core by core its private levels from L1 down, then the shared levels."""
        args = (self.geo, self.st, self.mc, self._fl, self.sh, self.pol, self.pf, self.classify)
        for c in range(cores):
            for lvl in range(s):
                PK.engine_flush(c, lvl, *args)
        for lvl in range(s, self.geo.nlevels):
            PK.engine_flush(cores, lvl, *args)

    def pf_rows(self, lvl: int, cores: int, s: int) -> np.ndarray:
        """The prefetch counters of a level: summed over the cores if it is private."""
        rows = self.vlv[:cores, lvl] if lvl < s else self.vlv[:1, lvl]
        return self.pf.ctr[rows].sum(axis=0)

    def unused_at_end(self, lvl: int, cores: int, s: int) -> int:
        """Lines still marked prefetched (never used) at level ``lvl``, every core's copy."""
        lv = self.geo
        total = 0
        for v in set(self.vlv[:cores, lvl].tolist()):
            off = int(self.voff_v[v])
            block = self.st.tags[off : off + int(lv.ways[lvl] * lv.nsets[lvl])]
            total += int(((block >= 0) & ((block & PFK.PF_BIT) != 0)).sum())
        return total


class MultiSimulator:
    """``cores`` copies of a hierarchy's private levels and one of its shared levels.

    Parameters
    ----------
    hierarchy : HierarchyConfig
        Any inclusion policies and prefetchers. The shared levels are those marked
        ``shared`` or, if none is, the last level (:meth:`HierarchyConfig.first_shared`).
    cores : int
        Number of cores (each with its own stream).
    grain : int
        Accesses of a core's stream per turn of the round-robin.
    classify : bool
        3C classification per level and core; a shared level's shadow is fed
        what the level is fed.

    Notes
    -----
    Cost: each core's accesses through its private levels as in the single-core
    simulator (level by level on a plain hierarchy, else access by access), plus
    the shared levels' events, plus a few Python calls per grain (so a small
    grain costs time: ``bench/RESULTS.md``). Memory: the private levels' state
    (and their shadows, prefetch tables and classification flags) once per core.
    """

    def __init__(
        self, hierarchy: HierarchyConfig, cores: int, *, grain: int = GRAIN, classify: bool = True
    ):
        if not isinstance(hierarchy, HierarchyConfig):
            raise HroofError(f"expected a HierarchyConfig, got {type(hierarchy).__name__}")
        cores, grain = check_cores(cores, grain)
        self.hierarchy = hierarchy
        self.cores = cores
        self.grain = grain
        self.classify = bool(classify)
        levels = hierarchy.levels
        self.nlev = len(levels)
        self.first_shared = s = hierarchy.first_shared(cores)
        # The shared levels' result is built by a whole-hierarchy simulator (on the plain
        # path its shared levels run there too, its private levels staying empty).
        self._result_sim = Simulator(hierarchy, classify=classify)
        self._core = np.zeros((cores, K.NCORE), dtype=np.int64)
        self._pol = None if hierarchy.plain else _Policies(hierarchy, cores, s, self.classify)
        if self._pol is None:
            self._init_plain(hierarchy, cores, s, classify)
        self._simulate_s = 0.0
        self._finished = False

    def _init_plain(self, hierarchy, cores, s, classify) -> None:
        """Per-core simulators of the private levels; the shared ones in ``_result_sim``."""
        levels = hierarchy.levels
        if s < self.nlev:
            # A core's own levels, then a one-line level that only makes its last
            # private level send its events down (it is never run).
            sink = LevelConfig("_sink", hierarchy.line, 1, hierarchy.line)
            private = HierarchyConfig((*levels[:s], sink), name=hierarchy.name)
        else:
            private = hierarchy
        self._sims = [Simulator(private, classify=classify) for _ in range(cores)]
        for sim in (*self._sims, self._result_sim):
            # The shared levels see every core's lines: each level keeps its own "seen"
            # bits (_Passes.run passes this on to the level passes).
            sim._carry_new = False
        self._passes = [_Passes(sim) for sim in self._sims]
        self._shared = self._result_sim if s < self.nlev else None
        self._shared_passes = _Passes(self._result_sim)
        # The shared levels' counters, one array per core: each core's events count into
        # its own (its share), the shared levels' own flush into the simulator's.
        sst = self._result_sim._st
        self._attr = [np.zeros_like(sst.ctr) for _ in range(cores)]
        self._core_st = [K.State(sst.tags, a, sst.core) for a in self._attr]

    # ------------------------------------------------------------ feeding
    def _run(self, c: int, lvl: int, src, shift, size, kind) -> None:
        """Events (or, at L1, accesses) of core ``c`` through its private levels from
        ``lvl`` down, then what leaves the last one through the shared levels."""
        sim = self._sims[c]
        passes = self._passes[c]
        s = self.first_shared
        while lvl < s and src.shape[0]:
            out = sim._out_dummy
            if lvl < len(sim._out):
                out = sim._out[lvl]
                if out.ev.shape[0] < 2 * src.shape[0]:
                    out = sim._out[lvl] = K.Events(*_event_arrays(2 * src.shape[0]))
            nout = passes.run(lvl, src, shift, size, kind, out)
            src, size, kind, shift = out.ev[:nout], out.size[:nout], _NO_KIND, 0
            lvl += 1
        if self._shared is not None and src.shape[0]:
            self._run_shared(s, src, size, self._core_st[c])

    def _run_shared(self, lvl: int, src, size, st) -> None:
        """Events through the shared levels from ``lvl`` down (``Simulator._run_levels``),
        counted in ``st``."""
        sh = self._shared
        while lvl < self.nlev and src.shape[0]:
            out = sh._out_dummy
            if lvl < self.nlev - 1:
                out = sh._out[lvl]
                if out.ev.shape[0] < 2 * src.shape[0]:
                    out = sh._out[lvl] = K.Events(*_event_arrays(2 * src.shape[0]))
            nout = self._shared_passes.run(lvl, src, 0, size, _NO_KIND, out, st)
            src, size = out.ev[:nout], out.size[:nout]
            lvl += 1

    def run_step(self, streams: Sequence[Iterable[Chunk]], progress=None) -> float:
        """Simulate one time step: ``streams[c]`` is core ``c``'s chunks ``(addr, size,
        kind)``. Interleaved round-robin in grains; returns the seconds spent producing
        the chunks. ``progress``, if given, is called with each chunk's length."""
        if self._finished:
            raise HroofError("this simulation is finished; start a new MultiSimulator")
        if len(streams) != self.cores:
            raise HroofError(f"expected {self.cores} streams, one per core, got {len(streams)}")
        lb = self.hierarchy.line_bits
        its = [iter(s) for s in streams]
        bufs: list = [None] * self.cores
        active = list(range(self.cores))
        trace_s = 0.0
        t_start = time.perf_counter()
        while active:
            for c in list(active):
                need = self.grain
                while need:
                    buf = bufs[c]
                    if buf is None or buf[4] == buf[0].shape[0]:
                        t0 = time.perf_counter()
                        chunk = next(its[c], None)
                        trace_s += time.perf_counter() - t0
                        if chunk is None:
                            active.remove(c)
                            break
                        addr, size, kind, straddles, core = _as_chunk(*chunk, lb)
                        self._core[c] += core
                        if progress is not None:
                            progress(addr.shape[0])
                        buf = bufs[c] = [addr, size, kind, straddles, 0]
                        continue
                    addr, size, kind, straddles, pos = buf
                    take = min(need, addr.shape[0] - pos)
                    cut = slice(pos, pos + take)
                    a, sz, k = addr[cut], size[cut], kind[cut]
                    if straddles:
                        a, sz, k = _split_lines(a, sz, k, lb)
                    if self._pol is None:
                        self._run(c, 0, a, lb, sz, k)
                    else:
                        self._pol.run(c, a, lb, sz, k)
                    buf[4] = pos + take
                    need -= take
        self._simulate_s += time.perf_counter() - t_start - trace_s
        return trace_s

    def held(self, level: int, core: int = 0) -> list[list[tuple[int, bool]]]:
        """The lines core ``core``'s level ``level`` (index) holds, per set, most recently
        used first, as ``(line, dirty)`` (a shared level: the same for every core)."""
        cfg = self.hierarchy.levels[level]
        if self._pol is not None:
            tags, off = self._pol.st.tags, int(self._pol.mc.voff[core, level])
        elif level < self.first_shared:
            sim = self._sims[core]
            tags, off = sim._st.tags, int(sim._geo.off[level])
        else:
            tags, off = self._result_sim._st.tags, int(self._result_sim._geo.off[level])
        block = tags[off : off + cfg.sets * cfg.ways].reshape(cfg.sets, cfg.ways)
        return [
            [(int((t >> 1) & PFK.LINE_MASK), bool(t & 1)) for t in row if t >= 0] for row in block
        ]

    def reset_counters(self) -> None:
        """Zero every counter, keep the caches (see :meth:`Simulator.reset_counters`)."""
        self._core[:] = 0
        if self._pol is not None:
            self._pol.st.ctr[:] = 0
            self._pol.pf.ctr[:] = 0
            return
        for sim in self._sims:
            sim.reset_counters()
        if self._shared is not None:
            self._shared.reset_counters()
        for a in self._attr:
            a[:] = 0

    def _flush(self) -> None:
        """Core by core, its private levels from L1 down (what they write back goes on
        down through the shared levels at once); then the shared levels from the top."""
        s = self.first_shared
        if self._pol is not None:
            self._pol.flush(self.cores, s)
            return
        for c, sim in enumerate(self._sims):
            for lvl in range(s):
                emit = lvl < len(sim._out)
                out = sim._out_dummy
                if emit:
                    out = K.Events(*_event_arrays(max(K.count_dirty(sim._geo, sim._st, lvl), 1)))
                nout = K.flush_level(lvl, sim._geo, sim._st, sim._fl, self.classify, emit, out)
                if nout:
                    self._run(c, lvl + 1, out.ev[:nout], 0, out.size[:nout], _NO_KIND)
        if self._shared is not None:
            for lvl in range(s, self.nlev):
                emit = lvl < self.nlev - 1
                sh = self._shared
                out = sh._out_dummy
                if emit:
                    out = K.Events(*_event_arrays(max(K.count_dirty(sh._geo, sh._st, lvl), 1)))
                nout = K.flush_level(lvl, sh._geo, sh._st, sh._fl, self.classify, emit, out)
                if nout:
                    self._run_shared(lvl + 1, out.ev[:nout], out.size[:nout], sh._st)

    def finish(
        self,
        *,
        flush: bool = True,
        flops: int | None = None,
        source: dict | None = None,
        trace_s: float = 0.0,
    ) -> SimResult:
        """Flush (unless ``flush=False``) and return the result; ends the simulation.

        ``levels`` are the hierarchy's totals (a private level's counters summed over
        the cores); ``per_core`` has each core's own counts.
        """
        if self._finished:
            raise HroofError("this simulation is finished already")
        if flops is not None and (isinstance(flops, bool) or int(flops) != flops or flops < 0):
            raise HroofError(f"flops must be a non-negative integer, got {flops!r}")
        t0 = time.perf_counter()
        if flush:
            self._flush()
        self._simulate_s += time.perf_counter() - t0
        self._finished = True
        s = self.first_shared
        ctr = np.zeros((self.nlev, K.NCTR), dtype=np.int64)
        pol = self._pol
        if pol is not None:
            ctr[:s] = pol.st.ctr[: self.cores, :s].sum(axis=0)
            ctr[s:] = pol.st.ctr[:, s:].sum(axis=0)
            # The result's prefetch counters: a private level's summed over the cores.
            pf = self._result_sim._pf
            for lvl in range(self.nlev):
                pf.ctr[lvl] = pol.pf_rows(lvl, self.cores, s)
        else:
            for sim in self._sims:
                ctr[:s] += sim._st.ctr[:s]
            if self._shared is not None:
                ctr[s:] = self._shared._st.ctr[s:] + sum(a[s:] for a in self._attr)
        res = self._result_sim._result(
            flush=flush, flops=None if flops is None else int(flops), source=source or {},
            trace_s=trace_s, ctr=ctr, core=self._core.sum(axis=0),
            simulate_s=self._simulate_s,
        )  # fmt: skip
        if pol is not None and self.hierarchy.prefetching:
            # The result simulator's caches are empty: count every core's copies.
            levels = tuple(
                replace(lv, prefetches_unused_at_end=pol.unused_at_end(i, self.cores, s))
                for i, lv in enumerate(res.levels)
            )
            res = replace(res, levels=levels)
        return replace(
            res,
            cores=self.cores,
            grain=self.grain,
            shared_levels=tuple(lv.name for lv in self.hierarchy.levels[s:]),
            per_core=tuple(self._per_core(c) for c in range(self.cores)),
        )

    def _per_core(self, c: int) -> dict:
        """Core ``c``'s counts: what it issued, its private levels, its share of the
        shared levels' counters (the events its stream and its flush caused there)."""
        pol = self._pol
        s = self.first_shared
        policies = any(lv.inclusion != "nine" for lv in self.hierarchy.levels)
        core = CoreCounts(*(int(x) for x in self._core[c]))
        private = []
        for i, lv in enumerate(self.hierarchy.levels[:s]):
            row = self._sims[c]._st.ctr[i] if pol is None else pol.st.ctr[c, i]
            d = {
                "name": lv.name,
                "lookups": int(row[K.C_LOOKUPS]),
                "hits": int(row[K.C_LOOKUPS] - row[K.C_MISSES]),
                "misses": int(row[K.C_MISSES]),
                "write_allocate_fills": int(row[K.C_WA_FILLS]),
                "writebacks_in": int(row[K.C_WB_IN]),
                "writebacks": int(row[K.C_WB_OUT]),
                "invalidations": int(row[K.C_INVAL]),
            }
            if self.classify:
                d["misses_by_class"] = {
                    name: int(row[K.C_COMP + j]) for j, name in enumerate(MISS_CLASSES)
                }
            if policies:
                d |= {f: int(row[k]) for f, k in _POLICY_FIELDS}
            if self.hierarchy.prefetching:
                prow = pol.pf.ctr[pol.vlv[c, i]]
                d |= {f: int(prow[k]) for f, k in _PREFETCH_FIELDS}
            private.append(d)
        shared = []
        for j, lv in enumerate(self.hierarchy.levels[s:]):
            row = self._attr[c][s + j] if pol is None else pol.st.ctr[c, s + j]
            d = {"name": lv.name, **{f: int(row[k]) for f, k in _SHARED_FIELDS}}
            d["hits"] = d["lookups"] - d["misses"]
            if policies:
                d |= {f: int(row[k]) for f, k in _POLICY_FIELDS}
            shared.append(d)
        return {"core": c, "issued": core.to_dict(), "private": private, "shared": shared}


def simulate_cores(
    hierarchy: HierarchyConfig,
    steps: Iterable[Sequence[Iterable[Chunk]]],
    *,
    cores: int,
    grain: int = GRAIN,
    classify: bool = True,
    flush: bool = True,
    flops: int | None = None,
    source: dict | None = None,
    warmup_steps: int = 0,
    progress=None,
) -> SimResult:
    """Simulate time steps, each a list of ``cores`` chunk streams, and return the result.

    The first ``warmup_steps`` steps are simulated and not counted (the result is the
    steady state of the rest, :meth:`MultiSimulator.reset_counters`).
    """
    sim = MultiSimulator(hierarchy, cores, grain=grain, classify=classify)
    trace_s = 0.0
    for i, streams in enumerate(steps):
        if i == warmup_steps and i:
            sim.reset_counters()
        trace_s += sim.run_step(streams, progress)
    return sim.finish(flush=flush, flops=flops, source=source, trace_s=trace_s)
