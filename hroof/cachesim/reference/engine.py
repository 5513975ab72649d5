"""The reference engine: a kernel's plan simulated by the reference model, as a result
shaped exactly as the simulator's (``hroof simulate --engine reference``).

A small run finishes here before Numba would have loaded: a warm ``hroof simulate triad
n=1000`` on the simulator spends about 0.6 s importing Numba, loading its cached kernels
and setting up their first call; the model simulates its 3,000 accesses in about 0.01 s.
:func:`supports` says which runs it takes (one core, no set sampling, one of hroof's own
kernels); :func:`simulate_plan` runs one.
The counters are the model's, which the tests prove equal to the simulator's; the
result's fields that derive from them (bytes of each level, the traffic split, AI,
memory, the prefetch fields) are computed as :class:`~hroof.cachesim.Simulator` does.
"""

from __future__ import annotations

import time

from hroof._base.guards import check_memory, check_time
from hroof.cachesim.config import HierarchyConfig
from hroof.cachesim.reference.hierarchy import NaiveHierarchy
from hroof.cachesim.result import (
    CoreCounts,
    LevelResult,
    MemoryResult,
    SimResult,
    _ai,
    timing_dict,
)
from hroof.traces.limits import MAX_SECONDS
from hroof.traces.reference import GENERATORS, OWN_MODULES, reference_trace

#: Accesses up to which ``hroof simulate --engine auto`` runs the reference model. It
#: takes 2-3.5 us an access (bench/RESULTS.md, "Start-up": triad slowest, a prefetcher
#: or inclusive level adds up to a third), so 30,000 accesses take about 0.1 s; a run on
#: the simulator pays about 0.6 s more than one on the model before its first access
#: (importing Numba, its first call), so the two cross near 200,000 accesses
#: (``bench/startup.py --crossover``). Set well below that: the model's time grows
#: with the run, the simulator's hardly.
AUTO_MAX_ACCESSES = 30_000

#: Bytes an access takes on the reference engine, at most: the trace is a list of
#: ``(addr, size, kind)`` tuples (about 110 bytes each), and the model keeps a few Python
#: objects for each line it holds or has seen (at most one line an access).
BYTES_PER_ACCESS = 250
#: Accesses a second the model runs, at the least (bench/RESULTS.md: 2-3.5 us each).
PACE = 2e5


def supports(plan, *, cores: int = 1, sample_sets: int = 1) -> str | None:
    """Why the reference engine cannot run ``plan`` with these options, or None if it can.

    It runs one core (``cores=1``), no set sampling, and hroof's own kernels (it writes
    their loop nests out itself, :mod:`hroof.traces.reference`): a kernel registered by
    a user has only its Numba generator."""
    if cores != 1:
        return "cores > 1 runs on the simulator only"
    if int(sample_sets) != 1:
        return "--sample-sets runs on the simulator only"
    if not _has_reference_trace(plan):
        return f"kernel {plan.kernel!r} has no reference loop nest"
    return None


def _has_reference_trace(plan) -> bool:
    own = getattr(plan.gen, "__module__", "") in OWN_MODULES
    return own and (plan.kernel in GENERATORS or plan.kernel == "spmv")


def simulate_plan(
    hierarchy: HierarchyConfig, plan, *, classify: bool = True, flush: bool = True
) -> SimResult:
    """Simulate a bound plan of one of hroof's kernels on the reference model.

    As :func:`hroof.studies.runs.simulate_kernel` with one core: a plan with warm-up
    sweeps runs them first, zeroes the counters (keeping the caches and the 3C state)
    and ends without a flush (the steady state of the counted sweeps). A run the
    machine's memory cannot hold (the whole trace is a list), or that would take more
    than a week, is refused first (``ResourceError``, one line)."""
    what = f"{plan.accesses:,} accesses on the reference engine"
    hint = "; use --engine numba (or auto)"
    check_memory(BYTES_PER_ACCESS * plan.accesses, what, hint=hint)
    check_time(plan.accesses, PACE, MAX_SECONDS, what, hint=hint)
    t0 = time.perf_counter()
    trace = reference_trace(plan)
    if trace is None:
        raise ValueError(f"kernel {plan.kernel!r} has no reference loop nest")
    warm = 0
    if plan.steady:
        per_step, rest = divmod(plan.accesses, plan.steps)
        assert rest == 0, "every time step of a steady-state plan has as many accesses"
        warm = per_step * plan.warmup_sweeps
    t1 = time.perf_counter()
    model = NaiveHierarchy(hierarchy)
    if warm:
        model.run(trace[:warm])
        model.reset_counters()
        flush = False
    model.run(trace[warm:] if warm else trace)
    if flush:
        model.flush()
    t2 = time.perf_counter()
    return result_of(
        model, hierarchy, classify=classify, flush=flush, flops=plan.flops,
        source=plan.source(), timing=timing_dict(t1 - t0, True, 0.0, t2 - t1),
    )  # fmt: skip


def result_of(
    model: NaiveHierarchy, hierarchy: HierarchyConfig, *, classify: bool, flush: bool,
    flops: int | None, source: dict, timing: dict,
) -> SimResult:  # fmt: skip
    """The :class:`SimResult` of a reference model's counters, built as the simulator
    builds its own (``Simulator._result``)."""
    core = CoreCounts(**model.core)
    levels = []
    above = core.bytes_loaded + core.bytes_stored
    pf_above = 0
    for cfg, lv in zip(hierarchy.levels, model.levels, strict=True):
        below = lv.traffic_below()
        pf_below = lv.prefetch_bytes_below()
        by_class = partition = None
        if classify:
            by_class = dict(lv.by_class)
            partition = dict(lv.traffic)
            if hierarchy.prefetching:
                partition["prefetch"] = pf_below
        demand = above - pf_above
        levels.append(
            LevelResult(
                name=cfg.name, size=cfg.size, ways=cfg.ways, line=cfg.line, sets=cfg.sets,
                lookups=lv.lookups, hits=lv.lookups - lv.misses, misses=lv.misses,
                misses_by_class=by_class, write_allocate_fills=lv.write_allocate_fills,
                forwarded_stores=lv.forwarded_stores, forwarded_store_bytes=lv.forwarded_bytes,
                writebacks_in=lv.writebacks_in, writebacks=lv.writebacks,
                invalidations=lv.invalidations, bytes=above, ai=_ai(flops, above),
                traffic_below=partition, traffic_below_bytes=below, inclusion=cfg.inclusion,
                victims=lv.victims, victims_in=lv.victims_in,
                back_invalidations=lv.back_invalidations, prefetch=cfg.prefetch,
                prefetches_issued=lv.pf_issued, prefetches_filled=lv.pf_filled,
                prefetches_useful=lv.pf_useful, prefetches_useless=lv.pf_useless,
                prefetches_unused_at_end=len(lv.pf_lines), prefetch_lookups=lv.pf_lookups,
                prefetch_misses=lv.pf_misses, prefetch_bytes=pf_above,
                prefetch_bytes_below=pf_below,
                ai_demand=None if flops is None or demand == 0 else flops / demand,
            )
        )  # fmt: skip
        above, pf_above = below, pf_below
    last = levels[-1]
    read = last.fills * hierarchy.line + pf_above
    written = last.writebacks * last.line + last.forwarded_store_bytes + core.bytes_nt
    memory = MemoryResult(hierarchy.memory_name, read, written, _ai(flops, read + written),
                          pf_above)  # fmt: skip
    return SimResult(
        source=source, flops=flops, core=core, levels=tuple(levels), memory=memory,
        timing=timing, classified=classify, flushed=flush, machine=hierarchy.name,
        engine="reference",
    )  # fmt: skip
