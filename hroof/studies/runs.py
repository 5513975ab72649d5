"""Runs that join the layers: a kernel's generated trace fed to the simulator."""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Callable, Iterator
from typing import Any

from hroof._base.errors import HroofError
from hroof.cachesim import HierarchyConfig, SimResult, simulate
from hroof.machine.model import resolve_machine
from hroof.traces.kernels import CHUNK, Plan, plan_kernel
from hroof.traces.limits import check_plan


def simulate_kernel(
    kernel: str | Plan,
    machine: HierarchyConfig | str | None = None,
    *,
    classify: bool = True,
    flush: bool = True,
    threads: int = 1,
    sample_sets: int = 1,
    chunk_size: int = CHUNK,
    progress: Callable[[int], None] | None = None,
    cores: int = 1,
    grain: int | None = None,
    **params: Any,
) -> SimResult:
    """Generate a kernel's trace chunk by chunk straight into the simulator.

    ``kernel`` is a registered name (its parameters as keywords) or a bound
    :class:`~hroof.traces.Plan`; ``machine`` a hierarchy, a bundled machine
    name or a machine file (default: the default machine). The result's
    source names the kernel and its parameters, and its flops are the
    kernel's exact count. ``sample_sets=K`` simulates 1/K of the sets
    exactly and scales by K (see :mod:`hroof.cachesim.sampling`). ``cores=P`` splits
    the kernel's outer loop across P threads, each on its own core, the shared levels
    fed round-robin in grains of ``grain`` accesses (default 1024; see
    :mod:`hroof.cachesim.multicore`).

    >>> r = simulate_kernel("triad", n=4096)
    >>> r.flops, r.levels[0].bytes // 4096      # 2 flops, 24 bytes an element
    (8192, 24)
    """
    plan = kernel if isinstance(kernel, Plan) else plan_kernel(kernel, **params)
    if isinstance(kernel, Plan) and params:
        raise TypeError("give parameters to plan_kernel, not with a Plan")
    if not isinstance(machine, HierarchyConfig):
        machine = resolve_machine(machine)
    check_plan(plan, machine.line_bits, classify=classify)  # time, classification memory
    if cores != 1 or grain is not None:
        from hroof.cachesim.multicore import GRAIN, check_cores

        cores, grain = check_cores(cores, GRAIN if grain is None else grain)
    if cores > 1:
        return _simulate_threads(
            plan, machine, cores=cores, grain=grain, classify=classify, flush=flush,
            threads=threads, sample_sets=sample_sets, chunk_size=chunk_size, progress=progress,
        )  # fmt: skip
    steady = plan.steady
    if sample_sets != 1 and own_generator(plan):
        from hroof.cachesim.sampling import parse_sample, simulate_plan_sampled

        result = simulate_plan_sampled(
            machine, plan, k=parse_sample(sample_sets), classify=classify, flush=flush,
            progress=progress, threads=threads, chunk_size=chunk_size,
        )  # fmt: skip
        if result is not None:  # else: the plan's full trace, filtered
            return result
    own = own_generator(plan)
    # hroof's own generators write straight into L1 (Plan.generated); a user's are checked
    parts = plan.generated if own else plan.chunks
    return simulate(
        machine,
        parts(chunk_size, start=plan.warmup) if steady else parts(chunk_size),
        warmup=parts(chunk_size, stop=plan.warmup) if steady else None,
        classify=classify,
        flush=flush and not steady,
        flops=plan.flops,
        source=plan.source(),
        progress=progress,
        threads=threads,
        sample_sets=sample_sets,
        generated=True,
        trusted=own,
    )


#: From this many accesses, one simulation runs on two threads by default (``hroof
#: simulate``): measured faster above it in ``bench/threads.py``.
TWO_THREADS_FROM = 3_000_000


def auto_threads(accesses: int | None, machine: HierarchyConfig) -> int:
    """Threads for one simulation: 2 (L1 beside the levels below, the same counts) when
    the hierarchy pipelines (:attr:`~hroof.cachesim.HierarchyConfig.pipelines`: two
    levels or more, L1 a plain pass), the trace has :data:`TWO_THREADS_FROM`
    accesses or more, and a second CPU is free: this process may use two and the
    1-minute load average is below their number less one half (on a busy machine the
    second thread waits for a CPU and the pipeline is slower than one thread); else 1
    (also when the count is unknown, None: a text trace)."""
    return 2 if two_threads_pay(accesses, machine) else 1


def two_threads_pay(accesses: int | None, machine: HierarchyConfig) -> bool:
    """:func:`auto_threads`'s test (with classification on or off alike: it pays from
    about the same size, ``bench/threads.py``)."""
    if not machine.pipelines or accesses is None or accesses < TWO_THREADS_FROM:
        return False
    return second_cpu_free()


def second_cpu_free() -> bool:
    """True when this process may use two CPUs and the 1-minute load average is below
    their number less one half (on a busy machine a second thread waits for a CPU)."""
    try:
        cpus = len(os.sched_getaffinity(0))
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # pragma: no cover (not Linux)
        cpus, load = os.cpu_count() or 1, 0.0
    return cpus >= 2 and load < cpus - 0.5


def own_generator(plan: Plan) -> bool:
    """True if ``plan``'s generator is one of hroof's own (``hroof.traces``): its chunks
    are simulated without the input checks (a kernel a user registers is checked)."""
    return getattr(plan.gen, "__module__", "").startswith("hroof.traces.")


def _simulate_threads(plan: Plan, machine: HierarchyConfig, *, cores, grain, classify, flush,
                      threads, sample_sets, chunk_size, progress) -> SimResult:  # fmt: skip
    """``plan`` on ``cores`` threads, a time step at a time (``simulate_cores``)."""
    from hroof.cachesim.multicore import simulate_cores

    if sample_sets != 1:
        raise HroofError(
            "set sampling (--sample-sets) does not combine with cores > 1 (not implemented: "
            "the grains count every access of a core's stream, so each stream would have to "
            "be cut into grains before the sample drops the other sets' accesses)"
        )
    if threads != 1:
        raise HroofError("threads=2 (the pipelined levels) does not combine with cores > 1")
    plan.thread_ranges(cores, 0)  # a kernel without an outer loop to split says so here

    def steps():
        for step in range(plan.steps):
            yield [plan.chunks(chunk_size, start=a, stop=b)
                   for a, b in plan.thread_ranges(cores, step)]  # fmt: skip

    return simulate_cores(
        machine, steps(), cores=cores, grain=grain, classify=classify,
        flush=flush and not plan.steady, flops=plan.flops, source=plan.source(),
        warmup_steps=plan.warmup_sweeps, progress=progress,
    )  # fmt: skip


#: The member of an npz trace that ``hroof trace`` adds: what made the trace.
TRACE_META = "hroof.json"
#: Bytes per access of an npz trace (addr uint64, size uint32, kind uint8).
NPZ_BYTES_PER_ACCESS = 13
#: ``hroof trace`` warns before writing an npz larger than this (1 GiB).
TRACE_WARN_BYTES = 1 << 30


def trace_meta(plan: Plan) -> dict:
    """What ``hroof trace`` stores beside the arrays (schema ``hroof.trace/1``): the kernel,
    its parameters, the flops of the counted part, the accesses, and the accounting with
    the number of warm-up accesses at the start of the trace."""
    return {
        "schema": "hroof.trace/1",
        **plan.source(),
        "flops": plan.flops,
        "accesses": plan.accesses,
        "warmup_accesses": plan.warmup * plan.per_iteration if plan.warmup else 0,
    }


def add_trace_meta(path, plan: Plan) -> None:
    """Add :func:`trace_meta` to an npz trace as the member ``hroof.json`` (readers of the
    three arrays ignore it)."""
    with zipfile.ZipFile(path, "a") as zf:
        zf.writestr(TRACE_META, json.dumps(trace_meta(plan), indent=1))


def read_trace_meta(path) -> dict | None:
    """The ``hroof.json`` of an npz trace written by ``hroof trace``; None for any other
    file (or a trace without it)."""
    try:
        with zipfile.ZipFile(path) as zf:
            if TRACE_META not in zf.namelist():
                return None
            doc = json.loads(zf.read(TRACE_META))
    except (OSError, zipfile.BadZipFile, ValueError):
        return None
    return doc if isinstance(doc, dict) and doc.get("schema") == "hroof.trace/1" else None


def split_chunks(chunks, first: int) -> tuple[Iterator, Iterator]:
    """Cut a stream of ``(addr, size, kind)`` chunks after ``first`` accesses: the warm-up
    part and the rest (consume them in that order)."""
    it = iter(chunks)
    rest: list = []

    def head():
        left = first
        for addr, size, kind in it:
            if len(addr) <= left:
                left -= len(addr)
                yield addr, size, kind
                if left == 0:
                    return
            else:
                yield addr[:left], size[:left], kind[:left]
                rest.append((addr[left:], size[left:], kind[left:]))
                return

    def tail():
        yield from rest
        yield from it

    return head(), tail()
