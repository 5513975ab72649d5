"""The analytic kernel table as a study: ``hroof table``'s document, simulated or not."""

from __future__ import annotations

from collections.abc import Callable

from hroof.cachesim import SimResult
from hroof.machine.model import Machine
from hroof.roofline.table import (
    DEFAULT_MAX_ACCESSES,
    DEFAULT_NNZ_PER_ROW,
    KERNELS,
    build_table,
    finish_simulation,
    fp64_peak,
    get_table_kernel,
    plan_simulation,
)
from hroof.studies.executor import Executor, PointsFailed, simulate_point, track
from hroof.studies.runs import simulate_kernel
from hroof.studies.sweep import point_label


def table_doc(
    kernels: list[str] | None,
    ns: list[int],
    machine: Machine,
    *,
    nnz_per_row: int = DEFAULT_NNZ_PER_ROW,
    simulate: bool = False,
    max_accesses: int = DEFAULT_MAX_ACCESSES,
    progress: Callable[[int], None] | None = None,
    executor: Executor | None = None,
) -> dict:
    """The ``hroof.table/1`` document: the analytic rows of ``kernels`` (default: all) at
    each N on ``machine``, and with ``simulate`` each row hroof has a kernel for simulated
    at the matching size (up to ``max_accesses`` accesses); ``progress`` counts accesses.

    The simulations run in this process, one after the other, unless an ``executor``
    (:mod:`hroof.studies.executor`) is given; then ``progress`` counts each point's
    accesses when it finishes, and a point that fails raises :class:`PointsFailed`
    once the others are done."""
    explicit = kernels is not None
    names = list(kernels) if explicit else list(KERNELS)
    for name in names:
        get_table_kernel(name)  # unknown names first, with a suggestion
    rows, notes = build_table(names, ns, nnz_per_row=nnz_per_row, machine=machine,
                              strict=explicit)  # fmt: skip
    sims: list = [None] * len(rows)
    if simulate:
        todo = []
        for i, row in enumerate(rows):
            stub, plan = plan_simulation(row, max_accesses)
            sims[i] = stub
            if plan is not None:
                todo.append((i, stub, plan))
        if any(r.kernel == "spmv" for r in rows) and nnz_per_row != 7:
            notes.append(
                "spmv not simulated: hroof simulates it on poisson3d, 7 nonzeros a row "
                f"(--nnz-per-row is {nnz_per_row})"
            )
        if progress is not None and hasattr(progress, "total"):
            progress.total = sum(plan.accesses for _, _, plan in todo)
        if executor is None:
            for i, stub, plan in todo:
                result = simulate_kernel(plan, machine.hierarchy, progress=progress)
                sims[i] = finish_simulation(stub, result)
        else:  # the same simulation, sent as (kernel, params) and back as hroof.result/1
            argsets = [(plan.kernel, plan.params, machine.hierarchy, {}) for _, _, plan in todo]
            weights = [plan.accesses for _, _, plan in todo]
            failed = []
            for out in track(executor, simulate_point, argsets, progress, weights):
                i, stub, plan = todo[out.index]
                if out.ok:
                    sims[i] = finish_simulation(stub, SimResult.from_dict(out.value))
                else:
                    failed.append((point_label(plan.kernel, plan.params), out.error))
            if failed:
                raise PointsFailed(failed, len(todo))
    mem = machine.memory_bandwidth
    peak = fp64_peak(machine)
    return {
        "schema": "hroof.table/1",
        "machine": {
            "name": machine.name,
            "peak_gflop_s": peak,
            "precision": "fp64",
            "memory_bandwidth_gb_s": mem,
            "ridge_point": peak / mem if peak and mem else None,
        },
        "rows": [
            {**row.to_dict(), "simulated": None if sim is None else sim.to_dict()}
            for row, sim in zip(rows, sims, strict=True)
        ],
        "notes": notes,
        "simulate": bool(simulate),
        "explain": {n: KERNELS[n].doc for n in dict.fromkeys(r.kernel for r in rows)},
    }
