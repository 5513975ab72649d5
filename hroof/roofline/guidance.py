"""What to optimise next: the ceilings a kernel can still break through at its AI.

The lecture notes (the LBNL roofline lecture, "通用优化指南") name three
ways to raise performance: maximise in-core performance (FMA, SIMD, ILP: the
compute ceilings), maximise memory bandwidth (NUMA-aware placement, software
prefetch: the bandwidth ceilings), and minimise data movement (raise the
arithmetic intensity). Their SpMV walk-through bounds a code that has applied
in-core optimisations 1..i and bandwidth optimisations 1..j by

    GFLOP/s_ij(AI) = min(InCoreGFLOP/s_i, StreamBW_j * AI),

so a ceiling matters only where it lies *below* the kernel's roof at the
kernel's AI: a memory-bound kernel gains nothing from SIMD while even its
scalar ceiling is above what memory can feed. This module applies that rule to
every ceiling of a machine and to the traffic partition of a simulation, and
says, in words a user can act on, which ceilings stand between the kernel and
its bound (with the factor each costs) and which do not matter at this AI.

Data movement is judged from the simulated traffic into the binding level: the
compulsory part is the floor (only another algorithm or a smaller data type
lowers it); capacity misses call for blocking or tiling, conflict misses for
padding, write-allocate fills for non-temporal stores. Each step says how far
the bound would rise if that part of the traffic were gone.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from dataclasses import dataclass

from hroof._base.errors import ConfigError
from hroof.cachesim import SimResult
from hroof.cachesim.config import format_size
from hroof.machine.model import Ceiling, Machine
from hroof.roofline.analysis import roofline

#: The lecture's three strategies, in its order.
STRATEGIES = {
    "in-core": "maximise in-core performance",
    "bandwidth": "maximise memory bandwidth",
    "data movement": "minimise data movement (raise the arithmetic intensity)",
}

#: A part of the traffic smaller than this share of the binding level's bytes
#: is not worth a step of its own.
MIN_SHARE = 0.05


@dataclass(frozen=True)
class Step:
    """One thing a user could do, or need not do.

    Attributes
    ----------
    strategy : str
        A key of :data:`STRATEGIES`.
    what : str
        The ceiling's name, or the part of the traffic ("capacity misses at L2").
    limit : float or None
        GFLOP/s the kernel is held to while this ceiling (or traffic) remains.
    gain : float or None
        The bound divided by ``limit`` for a ceiling (the factor lost under it), or the
        bound without this traffic divided by the bound now.
    matters : bool
        True when breaking through would raise the kernel's performance at its AI.
    text : str
        The advice, one sentence.
    """

    strategy: str
    what: str
    limit: float | None
    gain: float | None
    matters: bool
    text: str

    def to_dict(self) -> dict:
        return {
            "strategy": self.strategy,
            "what": self.what,
            "limit_gflop_s": self.limit,
            "gain": self.gain,
            "matters": self.matters,
            "text": self.text,
        }


@dataclass(frozen=True)
class Guidance:
    """The guidance for one kernel on one machine.

    Attributes
    ----------
    bound : float
        The hierarchical bound, GFLOP/s.
    binding : str
        The level that binds, or ``"compute"``.
    steps : tuple of Step
        What matters, the largest gain first.
    moot : tuple of Step
        Ceilings that do not matter at this AI.
    """

    bound: float
    binding: str
    steps: tuple[Step, ...]
    moot: tuple[Step, ...]

    def lines(self, width: int | None = None) -> list[str]:
        """The guidance as numbered lines for a terminal or a report; with ``width``, each
        item is wrapped to that many columns with a hanging indent."""

        def item(head: str, text: str) -> list[str]:
            if width is None:
                return [head + text]
            return textwrap.wrap(text, width, initial_indent=head,
                                 subsequent_indent=" " * len(head))  # fmt: skip

        where = "compute-bound" if self.binding == "compute" else f"bound by {self.binding}"
        out = [f"Bound {self.bound:.3g} GFLOP/s, {where}."]
        if self.steps:
            out.append("What to optimise next (largest gain first):")
            for i, s in enumerate(self.steps, 1):
                out += item(f"  {i}. ", f"[{s.strategy}] {s.text}")
        else:
            out.append("Nothing left to break through: the kernel's bound is the roof itself.")
        if self.moot:
            why = "these ceilings lie above the kernel's roof at its AI"
            if any(s.strategy == "data movement" for s in self.moot):
                why = "the ceilings lie above the kernel's roof at its AI; the traffic is "
                why += "already at its compulsory floor"
            out += item("", f"Need not ({why}):")
            for s in self.moot:
                out += item("  - ", s.text)
        return out

    def to_dict(self) -> dict:
        return {
            "bound_gflop_s": self.bound,
            "binding": self.binding,
            "steps": [s.to_dict() for s in self.steps],
            "moot": [s.to_dict() for s in self.moot],
        }


def _g(value: float) -> str:
    return f"{value:.3g}"


def _ceiling_steps(ais: Mapping[str, float], machine: Machine, bound: float, binding: str):
    steps = []
    for c in machine.ceilings:
        limit = min(c.value, bound)
        if c.value < bound:
            steps.append(Step("in-core", c.name, limit, bound / c.value, True,
                f"'{c.name}' ceiling ({_g(c.value)} GFLOP/s) is below the kernel's bound "
                f"({_g(bound)}): {c.means}; code stuck under it loses "
                f"{bound / c.value:.3g}x."))  # fmt: skip
        else:
            steps.append(Step("in-core", c.name, limit, 1.0, False,
                f"'{c.name}' ({_g(c.value)} GFLOP/s) lies above the bound: no need to "
                f"{_lower(c.means)} yet; {_limiter(binding)} holds the kernel to "
                f"{_g(bound)} GFLOP/s."))  # fmt: skip
    for c in machine.bandwidth_ceilings:
        steps.append(_bandwidth_step(c, ais[c.level], bound, binding))
    return steps


def _lower(means: str) -> str:
    """``means`` as a verb phrase after "no need to" (its first word lower-cased)."""
    return means[:1].lower() + means[1:]


def _limiter(binding: str) -> str:
    return "the compute peak" if binding == "compute" else f"{binding} bandwidth"


def _bandwidth_step(c: Ceiling, ai: float, bound: float, binding: str) -> Step:
    limit = c.value * ai
    if limit < bound:
        return Step("bandwidth", f"{c.level} {c.name}", limit, bound / limit, True,
            f"{c.level} '{c.name}' ceiling ({_g(c.value)} GB/s) allows only {_g(limit)} "
            f"GFLOP/s at this kernel's {c.level} AI ({_g(ai)} FLOP/byte), below its bound: "
            f"{c.means}; code under it loses {bound / limit:.3g}x.")  # fmt: skip
    return Step("bandwidth", f"{c.level} {c.name}", min(limit, bound), 1.0, False,
        f"{c.level} '{c.name}' ({_g(c.value)} GB/s) allows {_g(limit)} GFLOP/s at "
        f"{_g(ai)} FLOP/byte, above the bound: no need to {_lower(c.means)} yet; "
        f"{_limiter(binding)} holds the kernel to {_g(bound)} GFLOP/s.")  # fmt: skip


def _rebound_by(ais: dict[str, float], machine: Machine, level: str, ai: float):
    """The bound with ``level``'s AI replaced by ``ai``, and what binds then (a level's
    name, or ``"compute"``)."""
    new = dict(ais, **{level: ai})
    roofs = [(new[name] * bw, name) for name, bw in machine.all_bandwidths()]
    return min([(machine.peak, "compute"), *roofs], key=lambda t: t[0])


def _then(binder: str, binding: str) -> str:
    """``"; then L3 bandwidth binds"`` when removing traffic hands the bound to another
    limit (which is why the gain can be small), else nothing."""
    return "" if binder == binding else f"; then {_limiter(binder)} binds"


def _movement_steps(result: SimResult, machine: Machine, ais: dict, bound: float,
                    binding: str) -> list[Step]:  # fmt: skip
    names = [*machine.level_names, machine.memory_name]
    k = names.index(binding)
    if k == 0:
        return [Step("data movement", "L1 traffic", bound, None, True,
            f"{binding} binds: the core's own loads and stores are the traffic, so no cache "
            "can lower it; reuse values in registers (register blocking, unroll and jam) or "
            "load fewer bytes per flop (a smaller data type).")]  # fmt: skip
    above = result.levels[k - 1]
    parts = above.traffic_below
    total = result.memory.bytes if binding == machine.memory_name else result.levels[k].timed_bytes
    if parts is not None and above.victims:
        # Clean victims into an exclusive level are in the capacity part but take no time
        # there (LevelResult.timed_bytes): the part is what the roof divides.
        parts = dict(parts, capacity=parts["capacity"] - above.victims * above.line)
    if parts is None or result.flops is None or not total:
        return [Step("data movement", f"{binding} traffic", bound, None, True,
            f"{binding} binds at AI {_g(ais[binding])} FLOP/byte; raise that AI (reuse data "
            f"while it is in {above.name}); simulate with classification for the "
            "causes.")]  # fmt: skip
    flops = result.flops
    size = format_size(above.size)
    advice = {
        "capacity": ("capacity misses", f"block or tile the loops so the data reused fits "
                     f"in {above.name} ({size}); see the layer conditions"),
        "conflict": ("conflict misses", f"pad the arrays or change the leading dimensions so "
                     f"they stop colliding in {above.name}'s sets"),
        "write_allocate": ("write-allocate fills", "use non-temporal (streaming) stores for "
                           "data written and not read back, so stores need no read first"),
    }  # fmt: skip
    steps = []
    for part, (label, how) in advice.items():
        share = parts[part] / total
        if share < MIN_SHARE:
            continue
        better, binder = _rebound_by(ais, machine, binding, flops / (total - parts[part]))
        steps.append(Step("data movement", f"{label} at {above.name}", bound, better / bound,
            True, f"{label.capitalize()} at {above.name} are {share:.0%} of {binding} traffic: "
            f"{how}; without them the bound rises to {_g(better)} GFLOP/s "
            f"({better / bound:.3g}x{_then(binder, binding)})."))  # fmt: skip
    compulsory = parts["compulsory"] + (result.core.bytes_nt if k == len(names) - 1 else 0)
    if compulsory and compulsory / total >= MIN_SHARE:
        ideal, binder = _rebound_by(ais, machine, binding, flops / compulsory)
        steps.append(Step("data movement", f"compulsory traffic at {binding}", ideal,
            None, ideal > bound * (1 + 1e-9),
            f"Compulsory traffic is {compulsory / total:.0%} of {binding} traffic (AI "
            f"{_g(flops / compulsory)} FLOP/byte, bound {_g(ideal)} GFLOP/s, were it all"
            f"{_then(binder, binding)}): "
            "only another algorithm, fusing loops over the same data, or a smaller data type "
            "lowers it."))  # fmt: skip
    return steps


def guidance_for_ais(ais: Mapping[str, float], machine: Machine) -> Guidance:
    """Guidance from per-level AIs alone (an analytic kernel: no traffic partition).

    Parameters
    ----------
    ais : mapping of str to float
        FLOP/byte at every cache level and memory of ``machine``.
    machine : Machine
        With a peak and every bandwidth.

    Examples
    --------
    >>> from hroof.roofline import load_machine
    >>> g = guidance_for_ais({"L1": 0.08, "L2": 0.1, "L3": 0.1, "DRAM": 0.1},
    ...                      load_machine("teaching"))
    >>> g.binding, [(s.what, s.gain) for s in g.steps][:2], [s.what for s in g.moot][:1]
    ('DRAM', [('DRAM no NUMA-aware placement', 2.5), ('DRAM traffic', 2.5)], ['no FMA'])

    (At DRAM's ridge point, 2 FLOP/byte, L3's roof binds: 0.1 x 25 GB/s = 2.5 GFLOP/s.)
    """
    machine.require("optimisation guidance")
    names = [*machine.level_names, machine.memory_name]
    missing = [n for n in names if n not in ais]
    if missing:
        raise ConfigError(f"no AI for {', '.join(missing)} of machine {machine.name}")
    for name in names:
        if not ais[name] > 0:
            raise ConfigError(f"the AI of {name} must be positive, got {ais[name]!r}")
    roofs = [(ais[n] * bw, n) for n, bw in machine.all_bandwidths()]
    bound, binding = min([*roofs, (machine.peak, "compute")], key=lambda t: t[0])
    steps = _ceiling_steps(ais, machine, bound, binding)
    if binding != "compute":
        ridge = machine.peak / machine.bandwidth(binding)
        # at the ridge point, the bound rises until the peak or another level's roof binds
        better, binder = _rebound_by(dict(ais), machine, binding, ridge)
        steps.append(Step("data movement", f"{binding} traffic", bound, better / bound, True,
            f"{binding} binds at AI {_g(ais[binding])} FLOP/byte, below its ridge point "
            f"{_g(ridge)}: move fewer bytes from {binding} per flop (reuse data in the caches "
            f"above it) to raise the AI; at the ridge point the bound rises to {_g(better)} "
            f"GFLOP/s ({better / bound:.3g}x{_then(binder, binding)})."))  # fmt: skip
    return _assemble(bound, binding, steps)


def _assemble(bound: float, binding: str, steps: list[Step]) -> Guidance:
    order = list(STRATEGIES)
    live = [s for s in steps if s.matters]
    live.sort(key=lambda s: (-(s.gain or 1.0), order.index(s.strategy)))
    moot = [s for s in steps if not s.matters]
    return Guidance(bound, binding, tuple(live), tuple(moot))


def guidance(result: SimResult, machine: Machine) -> Guidance:
    """What to optimise next for a simulated kernel on ``machine``.

    Parameters
    ----------
    result : SimResult
        A simulation on ``machine``'s hierarchy, with flops.
    machine : Machine
        With a peak and every bandwidth (ceilings optional).

    Returns
    -------
    Guidance
        The steps that raise the bound (largest gain first) and the ceilings that do
        not matter at the kernel's AI.

    Raises
    ------
    ConfigError
        When the machine lacks a figure, or the result has no flops.
    """
    machine.require("optimisation guidance")
    if result.flops is None:
        raise ConfigError("optimisation guidance needs the run's flops (pass --flops N)")
    if not result.flops:
        raise ConfigError("optimisation guidance needs flops: the run has no flops, so no AI")
    r = roofline(result, machine)
    ais = {lv.name: lv.ai for lv in r.levels}
    if any(not ai for ai in ais.values()):
        raise ConfigError("optimisation guidance needs traffic at every level")
    steps = _ceiling_steps(ais, machine, r.bound, r.binding)
    if r.binding != "compute":
        steps += _movement_steps(result, machine, ais, r.bound, r.binding)
    return _assemble(r.bound, r.binding, steps)


__all__ = ["STRATEGIES", "Guidance", "Step", "guidance", "guidance_for_ais"]
