"""Exact set sampling: simulate 1/K of the sets of every level, scale the counts by K.

A line's set at a level with ``S`` sets is ``line mod S``. If ``M`` divides
every level's set count (``M`` is at most the greatest common divisor ``G``
of the set counts), a line's residue ``line mod M`` fixes its set modulo
``M`` at every level, so the lines of one residue class live in sets that
no other line uses, at every level: simulating only those lines gives
*exactly* the counts those sets have in the whole simulation. Set sampling
with ``K`` keeps the lines with ``line mod K == residue`` (K divides G),
simulates them exactly, and multiplies every level's counters by K.

The estimate's uncertainty comes from disjoint residue classes: the sampled
lines are split into ``groups`` sub-classes by ``line mod (K * groups)``,
each simulated exactly on its own (they share no set either). Each gives an
estimate of the total (its counts times ``K * groups``); their spread gives
the standard error of the estimate, with the finite-population correction
``sqrt(1 - 1/K)``. Each sub-class's count is a whole number of lines, so
a stream regular enough that every sub-class counts the same (a standard
error of 0) is still only resolved to ``resolution = K * groups`` lines (a
line more or less at the edge of an array): the estimate's interval is
``estimate +- (3 * stderr + resolution)`` lines (times the line size for
bytes). That is the error of sampling residue classes, and holds
if the classes are alike; a stream whose accesses fall unevenly across the
residue classes mod K (a stride of K lines puts every access in one class) is
too regular for it, and the result says so (``sampling.warning``).

With classification, each sub-class's fully-associative shadows get
``1 / (K * groups)`` of each level's capacity, so the capacity / conflict
split is an estimate (of the stack distances of the sampled lines); the
compulsory misses, and every count without classification, are exact for
the sampled sets.

A kernel plan with a set-sampled generator (the stencils and the STREAM
kernels, :mod:`hroof.traces.sampled`) is simulated by
:func:`simulate_plan_sampled`: the generator writes only the kept pieces, with
their groups, the per-class counts and the core's counters
(:meth:`SampledSimulator.feed_kept`), and the result is :meth:`SampledSimulator.feed`'s
of the full trace, bit for bit.

>>> import numpy as np
>>> from hroof.cachesim import hierarchy
>>> h = hierarchy({"name": "L1", "size": 4096, "ways": 2, "line": 64})
>>> addr = np.arange(0, 1 << 16, 8)
>>> r = simulate_sampled(h, [(addr, np.full(addr.size, 8), np.zeros(addr.size, np.uint8))], k=4)
>>> r.levels[0].misses, r.sampling["k"], r.sampling["groups"]
(1024, 4, 8)
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Iterable

import numpy as np

from hroof._base.errors import HroofError
from hroof._base.kinds import SIZE_DTYPE
from hroof.cachesim import _kernels as K
from hroof.cachesim import _stream_kernels as SK
from hroof.cachesim._chunks import _as_chunk, _split_lines, _trusted_chunk
from hroof.cachesim.config import HierarchyConfig
from hroof.cachesim.result import SimResult
from hroof.cachesim.simulator import Simulator
from hroof.traces.sampled import SetFilter, sampled_chunks

#: Sub-classes the sample is split into for the error estimate (fewer if G / K is smaller).
DEFAULT_GROUPS = 8
#: A residue class whose share of the accesses is off 1/K by more than this (relative)
#: makes the stream "too regular" for the estimate.
REGULARITY_TOLERANCE = 0.25


def set_modulus(hierarchy: HierarchyConfig) -> int:
    """The greatest common divisor of the levels' set counts."""
    return math.gcd(*(lv.sets for lv in hierarchy.levels))


def parse_sample(text: str | int) -> int:
    """``"1/16"`` (or ``16``) -> 16: the K of a ``--sample-sets 1/K`` option."""
    if isinstance(text, int) and not isinstance(text, bool):
        k = text
    else:
        m = re.fullmatch(r"\s*(?:1\s*/\s*)?(\d+)\s*", str(text))
        if not m:
            raise HroofError(f"set sampling must be 1/K with K a positive integer, got {text!r}")
        k = int(m.group(1))
    if k < 1:
        raise HroofError(f"set sampling must be 1/K with K >= 1, got 1/{k}")
    return k


def check_sample(hierarchy: HierarchyConfig, k: int) -> None:
    """Raise :class:`HroofError` unless 1/k set sampling is exact on ``hierarchy``."""
    _check_k(hierarchy, k, 0)


def _check_k(hierarchy: HierarchyConfig, k: int, residue: int) -> int:
    if k > 1 and hierarchy.prefetching:
        names = ", ".join(lv.name for lv in hierarchy.levels if lv.prefetch != "none")
        raise HroofError(
            f"set sampling 1/{k} on {hierarchy.name}: {names} prefetch neighbouring lines, which "
            "fall in other sets, so a sample of the sets is not exact; simulate every set (or "
            "--model nine, which switches the prefetchers off)"
        )
    g = set_modulus(hierarchy)
    if k < 1 or g % k:
        divisors = [d for d in (2, 4, 8, 16, 32, 64, 128, 256) if g % d == 0]
        sets = ", ".join(str(lv.sets) for lv in hierarchy.levels)
        raise HroofError(
            f"set sampling 1/{k} on {hierarchy.name}: K must divide the greatest common divisor "
            f"of the levels' set counts ({g} for {sets}); try one of {divisors or [1]}"
        )
    if not 0 <= residue < k:
        raise HroofError(f"sampled residue must be in 0..{k - 1}, got {residue}")
    return g


class SampledSimulator:
    """A :class:`~hroof.cachesim.Simulator` of the lines in 1/K of the sets.

    Parameters
    ----------
    hierarchy : HierarchyConfig
        The cache levels; ``k`` must divide the gcd of their set counts.
    k : int
        Sample 1/k of the sets (1: every set; the result is then exact).
    residue : int
        Which class: lines with ``line mod k == residue``.
    groups : int, optional
        Sub-classes for the error estimate (default: as many as the set
        counts allow, up to :data:`DEFAULT_GROUPS`).
    classify, threads
        As for :class:`~hroof.cachesim.Simulator`.
    """

    def __init__(
        self,
        hierarchy: HierarchyConfig,
        k: int,
        *,
        residue: int = 0,
        groups: int | None = None,
        classify: bool = True,
        threads: int = 1,
    ):
        g = _check_k(hierarchy, k, residue)
        if groups is None:
            groups = math.gcd(g // k, DEFAULT_GROUPS)
        if groups < 1 or g % (k * groups):
            raise HroofError(
                f"set sampling 1/{k} in {groups} groups: K x groups must divide {g}, the gcd "
                "of the levels' set counts"
            )
        self.hierarchy = hierarchy
        self.k = k
        self.residue = residue
        self.groups = groups
        self.classify = classify
        self._m = k * groups
        self._sims = [
            Simulator(hierarchy, classify=classify, threads=threads, _shadow_div=self._m)
            for _ in range(groups)
        ]
        self._core = np.zeros(K.NCORE, dtype=np.int64)
        self._per_class = np.zeros(self._m, dtype=np.int64)  # line lookups per fine class
        self._filter_s = 0.0
        self._check_s = 0.0
        self._buf = None  # the kept accesses of a chunk (reused)

    def feed(self, addr, size, kind, *, trusted: bool = False) -> None:
        """Simulate the sampled lines of one chunk (arguments as :meth:`Simulator.feed`)."""
        t0 = time.perf_counter()
        lb = self.hierarchy.line_bits
        chunk = _trusted_chunk if trusted else _as_chunk
        addr, size, kind, straddles, core = chunk(addr, size, kind, lb)
        self._core += core
        if straddles:
            addr, size, kind = _split_lines(addr, size, kind, lb)
        t1 = time.perf_counter()
        self._check_s += t1 - t0
        t0 = t1
        n = addr.shape[0]
        if self._buf is None or self._buf[0].shape[0] < n:
            self._buf = (np.empty(n, np.int64), np.empty(n, SIZE_DTYPE), np.empty(n, np.uint8),
                         np.empty(n, np.uint8))  # fmt: skip
        counts = np.zeros(4 * self._m, dtype=np.int64)
        kept = SK.sample_filter(
            addr, size, kind, lb, self._m, self.k, self.residue, counts, *self._buf
        )
        counts = counts.reshape(4, self._m).sum(axis=0)
        self._per_class += counts
        self._scatter(*(x[:kept] for x in self._buf), counts, t0)

    def feed_kept(self, addr, size, kind, group, per_class, core) -> None:
        """Simulate the kept pieces a set-sampled generator wrote
        (:func:`hroof.traces.sampled.sampled_chunks`, for :attr:`filter`): each within one
        sampled line, in program order, with its group; ``per_class`` the pieces of every
        line class modulo ``k * groups`` and ``core`` the core's counters of the full
        accesses they come from. The same as :meth:`feed` of the full chunk."""
        t0 = time.perf_counter()
        self._core += core
        self._per_class += per_class
        self._scatter(addr, size, kind, group, per_class, t0)

    @property
    def filter(self) -> SetFilter:
        """What this simulation keeps, for a set-sampled generator."""
        return SetFilter(self.hierarchy.line_bits, self._m, self.k, self.residue)

    def _scatter(self, a, s, k, grp, counts, t0) -> None:
        """Feed kept accesses (``counts``: pieces per class) to their groups' simulators."""
        kept = a.shape[0]
        if self.groups > 1 and kept:
            sizes = counts[self.residue :: self.k]  # kept accesses per group
            ends = np.cumsum(sizes)
            starts = ends - sizes
            out = (np.empty(kept, np.int64), np.empty(kept, SIZE_DTYPE), np.empty(kept, np.uint8))
            SK.group_scatter(a, s, k, grp, starts.copy(), *out)
            self._filter_s += time.perf_counter() - t0
            for sim, lo, hi in zip(self._sims, starts.tolist(), ends.tolist(), strict=True):
                if hi > lo:
                    sim._feed_valid(out[0][lo:hi], out[1][lo:hi], out[2][lo:hi])
            return
        self._filter_s += time.perf_counter() - t0
        if kept:
            self._sims[0]._feed_valid(a, s, k)

    def reset_counters(self) -> None:
        """Zero every count but keep the caches' contents (a warm-up simulated, not
        counted), as :meth:`Simulator.reset_counters`."""
        for sim in self._sims:
            sim.reset_counters()
        self._core[:] = 0
        self._per_class[:] = 0

    def finish(
        self,
        *,
        flush: bool = True,
        flops: int | None = None,
        source: dict | None = None,
        trace_s: float = 0.0,
        generated: bool = False,
    ) -> SimResult:
        """Flush, and return the estimate (counts times K) with ``sampling`` filled in."""
        for sim in self._sims:
            sim._end(flush)
        ctrs = np.stack([sim._st.ctr for sim in self._sims])  # groups x levels x NCTR
        total = ctrs.sum(axis=0) * self.k
        simulate_s = self._filter_s + sum(sim._simulate_s for sim in self._sims)
        sampling = self._sampling_info(ctrs)
        return self._sims[0]._result(
            flush=flush, flops=flops, source=source or {}, trace_s=trace_s,
            ctr=total, core=self._core, simulate_s=simulate_s, sampling=sampling,
            generated=generated, check_s=self._check_s,
        )  # fmt: skip

    # ------------------------------------------------------------------
    def _sampling_info(self, ctrs: np.ndarray) -> dict:
        k, m = self.k, self._m
        per_k = self._per_class.reshape(self.groups, k).sum(axis=0)  # lookups per class mod k
        n = int(per_k.sum())
        share = per_k / n if n else np.zeros(k)
        warning = None
        if n == 0:
            warning = "the stream is empty"
        elif k > 1 and np.abs(share * k - 1).max() > REGULARITY_TOLERANCE:
            warning = (
                f"the stream is too regular for set sampling at 1/{k}: its accesses fall "
                f"unevenly across the {k} residue classes (from {100 * share.min():.1f} % to "
                f"{100 * share.max():.1f} %, {100 / k:.1f} % each expected), so the estimate "
                "and its error do not hold; sample fewer sets (smaller K) or none"
            )
        stderr = None
        if self.groups > 1:
            line = self.hierarchy.line
            fpc = math.sqrt(1 - 1 / k)

            def se(values) -> float:
                v = np.asarray(values, dtype=np.float64) * m
                return float(v.std(ddof=1) / math.sqrt(v.size) * fpc)

            levels = []
            for lvl, cfg in enumerate(self.hierarchy.levels):
                c = ctrs[:, lvl, :]
                fills = c[:, K.C_MISSES] - c[:, K.C_FWD]
                traffic = (fills + c[:, K.C_WB_OUT] + c[:, K.C_VICT]) * line + c[:, K.C_FWD_BYTES]
                levels.append(
                    {
                        "name": cfg.name,
                        "lookups": se(c[:, K.C_LOOKUPS]),
                        "misses": se(c[:, K.C_MISSES]),
                        "writebacks": se(c[:, K.C_WB_OUT]),
                        "traffic_below_bytes": se(traffic),
                    }
                )
            stderr = {"levels": levels, "memory_bytes": levels[-1]["traffic_below_bytes"]}
        return {
            "k": k,
            "residue": self.residue,
            "groups": self.groups,
            "modulus": set_modulus(self.hierarchy),
            "resolution": m,
            "sampled_lookups": int(self._per_class[self.residue :: k].sum()),
            "class_share": {"min": float(share.min()), "max": float(share.max())},
            "stderr": stderr,
            "warning": warning,
        }


def simulate_sampled(
    hierarchy: HierarchyConfig,
    chunks: Iterable,
    *,
    k: int,
    residue: int = 0,
    groups: int | None = None,
    classify: bool = True,
    flush: bool = True,
    flops: int | None = None,
    source: dict | None = None,
    progress: Callable[[int], None] | None = None,
    threads: int = 1,
    warmup: Iterable | None = None,
    generated: bool = False,
    trusted: bool = False,
) -> SimResult:
    """Like :func:`hroof.cachesim.simulate`, on 1/k of the sets (see the module's notes);
    ``warmup`` chunks are simulated first and not counted; ``generated`` and ``trusted``
    as for :func:`hroof.cachesim.simulate`."""
    from hroof.cachesim.simulator import feed_all

    sim = SampledSimulator(
        hierarchy, k, residue=residue, groups=groups, classify=classify, threads=threads
    )
    trace_s = 0.0
    if warmup is not None:
        trace_s += feed_all(sim, warmup, progress, trusted)
        sim.reset_counters()
    trace_s += feed_all(sim, chunks, progress, trusted)
    return sim.finish(flush=flush, flops=flops, source=source, trace_s=trace_s, generated=generated)


def simulate_plan_sampled(
    hierarchy: HierarchyConfig,
    plan,
    *,
    k: int,
    residue: int = 0,
    groups: int | None = None,
    classify: bool = True,
    flush: bool = True,
    progress: Callable[[int], None] | None = None,
    threads: int = 1,
    chunk_size: int = 1 << 20,
) -> SimResult | None:
    """A kernel's plan (:class:`hroof.traces.Plan`) on 1/k of the sets, its generator
    writing only the sampled lines' pieces (:mod:`hroof.traces.sampled`); the same
    result as :func:`simulate_sampled` of its full trace (steady plans: the warm-up
    simulated, not counted, and no flush). None when the plan has no set-sampled
    generator (the caller then filters the full trace)."""
    sim = SampledSimulator(
        hierarchy, k, residue=residue, groups=groups, classify=classify, threads=threads
    )
    limit = 1 << SK.addr_limit_bits(hierarchy.line_bits)
    parts = [(0, plan.warmup), (plan.warmup, None)] if plan.steady else [(0, None)]
    sources = [sampled_chunks(plan, sim.filter, chunk_size, start=a, stop=b, limit=limit)
               for a, b in parts]  # fmt: skip
    if sources[0] is None:
        return None
    trace_s = 0.0
    for i, chunks in enumerate(sources):
        if i:
            sim.reset_counters()
        it = iter(chunks)
        while True:
            t0 = time.perf_counter()
            item = next(it, None)
            trace_s += time.perf_counter() - t0
            if item is None:
                break
            *kept, accesses = item
            sim.feed_kept(*kept)
            if progress is not None:
                progress(accesses)
    return sim.finish(flush=flush and not plan.steady, flops=plan.flops, source=plan.source(),
                      trace_s=trace_s, generated=True)  # fmt: skip
