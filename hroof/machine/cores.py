"""A machine's roofline figures for a run on ``cores = P`` of its cores.

A machine file's figures are for ``[machine] cores`` cores (1 unless it says): its
peak, and per level the bandwidth one core sees. For a run on P cores
(docs/cache-model.md, "Several cores") the compute peak and its ceilings are P
times one core's; a private level's bandwidth is P times one core's (each core has
its own); a shared level's, and memory's, is P times one core's but at most the
socket's (``bandwidth_socket``: all the cores together), when the file gives it.
Bandwidth ceilings are per core figures and are left out.
"""

from __future__ import annotations

from dataclasses import replace

from hroof._base.errors import ConfigError
from hroof.machine.model import Machine


def max_cores(machine: Machine) -> int:
    """The most cores a run on ``machine`` may use (``socket_cores``, else ``cores``)."""
    return machine.socket_cores or machine.cores


def check_cores(machine: Machine, cores: int) -> None:
    """A one-line error when ``machine`` has fewer than ``cores`` cores."""
    limit = max_cores(machine)
    if cores > 1 and machine.cores not in (1, cores):
        raise ConfigError(
            f"cores={cores}: machine {machine.name}'s figures are for {machine.cores} cores "
            "([machine] cores); a cores = P run needs a machine file of one core's figures"
        )
    if cores > limit:
        where = f" ({machine.source})" if machine.source else ""
        raise ConfigError(
            f"cores={cores}: machine {machine.name}{where} has {limit} core"
            f"{'s' if limit != 1 else ''} ([machine] socket_cores in its file)"
        )


def _scaled(bw: float | None, cores: int, socket: float | None) -> float | None:
    if bw is None:
        return None
    return min(cores * bw, socket) if socket is not None else cores * bw


def for_cores(machine: Machine, cores: int) -> Machine:
    """``machine``'s figures for a run on ``cores`` of its cores (itself for 1).

    >>> from hroof.machine.model import load_machine
    >>> m = for_cores(load_machine("skylake-sp"), 4)
    >>> m.peak, m.bandwidth("L1"), m.bandwidth("DRAM")
    (307.2, 1023.56, 57.28)
    """
    check_cores(machine, cores)
    if cores == 1 or machine.cores == cores:
        return machine
    first = machine.hierarchy.first_shared(cores)
    socket = list(machine.socket_bandwidths) + [None] * len(machine.bandwidths)
    bws = tuple(
        _scaled(bw, cores, socket[i] if i >= first else None)
        for i, bw in enumerate(machine.bandwidths)
    )
    return replace(
        machine,
        name=f"{machine.name}, {cores} cores",
        bandwidths=bws,
        memory_bandwidth=_scaled(machine.memory_bandwidth, cores, machine.memory_bandwidth_socket),
        peak=None if machine.peak is None else cores * machine.peak,
        peaks={k: cores * v for k, v in machine.peaks.items()},
        ceilings=tuple(replace(c, value=cores * c.value) for c in machine.ceilings),
        bandwidth_ceilings=(),
        cores=cores,
    )
