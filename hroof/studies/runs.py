"""Runs that join the layers: a kernel's generated trace fed to the simulator."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hroof.cachesim import HierarchyConfig, SimResult, simulate
from hroof.machine.model import resolve_machine
from hroof.traces.kernels import CHUNK, Plan, plan_kernel


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
    **params: Any,
) -> SimResult:
    """Generate a kernel's trace chunk by chunk straight into the simulator.

    ``kernel`` is a registered name (its parameters as keywords) or a bound
    :class:`~hroof.traces.Plan`; ``machine`` a hierarchy, a bundled machine
    name or a machine file (default: the default machine). The result's
    source names the kernel and its parameters, and its flops are the
    kernel's exact count. ``sample_sets=K`` simulates 1/K of the sets
    exactly and scales by K (see :mod:`hroof.cachesim.sampling`).

    >>> r = simulate_kernel("triad", n=4096)
    >>> r.flops, r.levels[0].bytes // 4096      # 2 flops, 24 bytes an element
    (8192, 24)
    """
    plan = kernel if isinstance(kernel, Plan) else plan_kernel(kernel, **params)
    if isinstance(kernel, Plan) and params:
        raise TypeError("give parameters to plan_kernel, not with a Plan")
    if not isinstance(machine, HierarchyConfig):
        machine = resolve_machine(machine)
    return simulate(
        machine,
        plan.chunks(chunk_size),
        classify=classify,
        flush=flush,
        flops=plan.flops,
        source=plan.source(),
        progress=progress,
        threads=threads,
        sample_sets=sample_sets,
    )
