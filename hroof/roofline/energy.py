"""Energy and power of a run: the roofline model of energy, per level of the hierarchy.

The model is Choi, Bedard, Fowler and Vuduc, "A roofline model of energy"
(IPDPS 2013; the longer form is Choi and Vuduc, Georgia Tech technical report
GT-CSE-2012-01), extended from one memory to every level hroof simulates, as
the hierarchical roofline extends the time roofline. A run of ``W`` flops that
moves ``Q_l`` bytes at each level ``l`` (docs/roofline.md, "What hroof computes")
takes, at best, the roofline time

    T = max(W / peak, max over levels of Q_l / bandwidth_l)        (seconds)

(that is ``W`` divided by the hierarchical bound), and costs the energy

    E = W * eps_flop + sum over levels of Q_l * eps_l + pi0 * T    (joules)

where ``eps_flop`` is the energy of one flop (pJ), ``eps_l`` the energy of one
byte moved at level ``l`` (pJ) and ``pi0`` the constant power (W) the machine
draws whatever it does. Times overlap (the max), energies add (the sum): that
is the whole difference between the two rooflines.

From ``E`` and ``T``: the average power ``P = E / T`` (W), the energy
efficiency ``W / E`` (GFLOP/J) and the energy per flop ``E / W`` (pJ/FLOP).

Against one level's arithmetic intensity ``I = W / Q`` (FLOP/byte), with
``tau_flop = 1 / peak`` and ``tau_l = 1 / bandwidth_l`` (Choi et al., section II):

* the *time balance* (the time roofline's ridge) is ``B_tau = peak / bandwidth``;
* the *energy balance* ``B_eps = eps_l / eps_flop`` is the AI at which the
  flops and the bytes cost the same energy;
* the energy per flop is ``E / W = eps_flop + eps_l / I + pi0 * max(tau_flop,
  tau_l / I)``; it is never below ``eps_hat = eps_flop + pi0 * tau_flop``, the
  flop's energy plus the constant energy of the time it takes at the peak, so
  the efficiency is at most ``1 / eps_hat``. The efficiency against ``I`` is the
  energy-roofline *arch*: it bends smoothly through the energy balance instead
  of turning a sharp corner, because the flops' and the bytes' energies add
  where their times overlap;
* the *energy ridge* is the AI at which the efficiency reaches half its
  maximum: with ``eta = eps_flop / eps_hat`` it solves ``I = eta * B_eps +
  (1 - eta) * max(0, B_tau - I)`` (Choi et al.'s effective energy balance;
  without constant power it is ``B_eps`` itself);
* the power is ``P = (eps_flop + eps_l / I) * performance + pi0`` with
  performance ``min(peak, I * bandwidth)``: it climbs with ``I`` while the run
  is bandwidth-bound and falls once it is compute-bound, so it peaks at the time
  ridge ``B_tau`` (Choi et al., section "What the basic model implies about
  power"). Without ``pi0`` this is Ghane et al.'s ``P = W/t * (eps_flop + Q/W *
  eps_mem) = W/t * E_W`` (the energy-roofline article (after Choi et al. 2013)).

A *ceiling* of the machine file replaces a roof by a lower one: a compute
ceiling ("no FMA", "scalar", ...) the peak (:meth:`EnergyModel.with_peak`), so
the flops take longer and compute-bound runs spend more constant energy and
draw less power; a bandwidth ceiling ("no prefetch", "uncoalesced", ...) a
level's bandwidth (:meth:`EnergyModel.with_bandwidth`), so the bytes take
longer and bandwidth-bound runs pay the same way (Ghane et al.'s memory
ceilings: strided access, abandoned threads).

Units: energies per flop and per byte in pJ (1e-12 J), power in W, time in s,
peak in GFLOP/s, bandwidths in GB/s (1e9 bytes/s), AI in FLOP/byte, efficiency
in GFLOP/J (1e9 flops per joule).

The machine's figures come from its ``[energy]`` table (``flop_pj``,
``constant_w``, ``byte_pj = { LEVEL = pJ, ... }``). The model needs the flop
energy, the constant power and the memory's byte energy (the three of Choi et
al.'s model), the peak and the memory bandwidth; a machine without one of them
gets a :class:`~hroof._base.errors.ConfigError` naming what is missing, never a
guess. Cache levels are optional, figure by figure, and the choice is to
compute what is known and say what was left out: a cache level with no
``byte_pj`` is *not charged* (its bytes count for the time but not for the
energy, as in Choi et al., whose fitted flop and memory energies absorb the
caches'), one with no bandwidth is *not timed* (its bytes cost energy but do not
enter the max). Every estimate lists such levels (``uncharged``, ``untimed``)
and the command line prints them, so a partial figure is never mistaken for a
complete one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from hroof._base.errors import ConfigError, HroofError
from hroof.cachesim.result import SimResult
from hroof.machine.model import Ceiling, Machine

#: 1 pJ/flop at 1 GFLOP/s is 1e-3 W; 1 W for 1 / (1 GFLOP/s) is 1e3 pJ per flop.
_MILLI = 1e-3


@dataclass(frozen=True)
class LevelCost:
    """One level's bandwidth (GB/s) and pJ per byte moved; None: unknown (memory needs both)."""

    name: str
    bandwidth: float | None
    byte_pj: float | None


@dataclass(frozen=True)
class EnergyModel:
    """A machine's figures for the roofline model of energy.

    Attributes
    ----------
    machine : str
        Machine name.
    peak : float
        Compute peak, GFLOP/s (the rate the flops run at when compute-bound).
    flop_pj : float
        Energy of one flop, pJ.
    constant_w : float
        Constant power pi0, W.
    levels : tuple of LevelCost
        Every cache level, L1 first, then memory (the last).
    ceilings : tuple of Ceiling
        Compute ceilings below the peak, highest first (GFLOP/s).
    bandwidth_ceilings : tuple of Ceiling
        Bandwidth ceilings under the levels' roofs (GB/s; ``level`` names the level).
    source, unverified : str or None
        Where the energy figures come from (``[energy] source``), and why they are not
        checked against it (``[energy] unverified``; None: checked or not said).
    precision : str
        The precision of ``peak`` and ``flop_pj`` (the machine file's ``[compute]
        precision``, fp64 unless it says otherwise). Flops in another precision are
        charged these figures all the same: see :func:`precision_mismatch`.

    Examples
    --------
    A machine of 10 GFLOP/s and 5 GB/s, 100 pJ a flop, 400 pJ a byte, 2 W constant:
    ridge at 2 FLOP/byte, energy balance at 4; a run of 1e9 flops moving 1e9 bytes
    is bandwidth-bound, takes 0.2 s and costs 0.1 J (flops) + 0.4 J (bytes) + 2 W x
    0.2 s = 0.9 J, an average 4.5 W:

    >>> m = EnergyModel("toy", peak=10.0, flop_pj=100.0, constant_w=2.0,
    ...                 levels=(LevelCost("DRAM", 5.0, 400.0),))
    >>> m.time_balance(), m.energy_balance()
    (2.0, 4.0)
    >>> e = m.estimate(1e9, {"DRAM": 1e9})
    >>> round(e.time_s, 9), e.binding, round(e.total_j, 9), round(e.power_w, 6)
    (0.2, 'DRAM', 0.9, 4.5)
    """

    machine: str
    peak: float
    flop_pj: float
    constant_w: float
    levels: tuple[LevelCost, ...]
    ceilings: tuple[Ceiling, ...] = ()
    bandwidth_ceilings: tuple[Ceiling, ...] = ()
    source: str | None = None
    precision: str = "fp64"
    unverified: str | None = None

    def __post_init__(self):
        for what, value in (("peak", self.peak), ("flop_pj", self.flop_pj)):
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ConfigError(f"{what} must be a positive number, got {value!r}")
        if not (math.isfinite(self.constant_w) and self.constant_w >= 0):
            raise ConfigError(f"constant_w must be a number of W >= 0, got {self.constant_w!r}")
        if not self.levels:
            raise ConfigError("an energy model needs at least the memory level")
        for lv in self.levels:
            if lv.bandwidth is not None and not (math.isfinite(lv.bandwidth) and lv.bandwidth > 0):
                raise ConfigError(
                    f"{lv.name} bandwidth must be positive GB/s, got {lv.bandwidth!r}"
                )
            if lv.byte_pj is not None and not (math.isfinite(lv.byte_pj) and lv.byte_pj >= 0):
                raise ConfigError(f"{lv.name} byte_pj must be pJ >= 0, got {lv.byte_pj!r}")
        if self.memory.byte_pj is None or self.memory.bandwidth is None:
            raise ConfigError(
                f"the memory ({self.memory.name}) needs a bandwidth and an energy per byte"
            )

    # ------------------------------------------------------------------ figures
    @property
    def memory(self) -> LevelCost:
        """The last level: memory."""
        return self.levels[-1]

    @property
    def level_names(self) -> list[str]:
        return [lv.name for lv in self.levels]

    @property
    def uncharged(self) -> tuple[str, ...]:
        """Levels with no energy per byte: their bytes take time but cost no energy here."""
        return tuple(lv.name for lv in self.levels if lv.byte_pj is None)

    @property
    def untimed(self) -> tuple[str, ...]:
        """Levels with no bandwidth: their bytes cost energy but take no time here."""
        return tuple(lv.name for lv in self.levels if lv.bandwidth is None)

    def level(self, name: str | None = None) -> LevelCost:
        """A level by name (default: memory); ConfigError naming the levels otherwise."""
        if name is None:
            return self.memory
        for lv in self.levels:
            if lv.name == name:
                return lv
        raise ConfigError(
            f"machine {self.machine} has no level {name!r}; levels: {', '.join(self.level_names)}"
        )

    def _charged(self, name: str | None) -> LevelCost:
        lv = self.level(name)
        if lv.byte_pj is None:
            raise ConfigError(
                f"machine {self.machine} has no energy per byte for {lv.name}: add it to "
                f"byte_pj in the [energy] table of its machine file"
            )
        return lv

    def _timed(self, name: str | None) -> LevelCost:
        lv = self.level(name)
        if lv.bandwidth is None:
            raise ConfigError(
                f"machine {self.machine} has no {lv.name} bandwidth: add it to the level's "
                "table in its machine file"
            )
        return lv

    @property
    def curve_levels(self) -> tuple[str, ...]:
        """Levels with both figures: those whose arch and power line can be drawn."""
        return tuple(
            lv.name for lv in self.levels if lv.byte_pj is not None and lv.bandwidth is not None
        )

    def with_peak(self, peak: float) -> EnergyModel:
        """The same machine with the flops running at ``peak`` GFLOP/s (a ceiling)."""
        return replace(self, peak=float(peak))

    def with_bandwidth(self, level: str | None, bandwidth: float) -> EnergyModel:
        """The same machine with ``level`` (default memory) at ``bandwidth`` GB/s (a ceiling)."""
        name = self.level(level).name
        levels = tuple(replace(lv, bandwidth=float(bandwidth)) if lv.name == name else lv
                       for lv in self.levels)  # fmt: skip
        return replace(self, levels=levels)

    def time_balance(self, level: str | None = None) -> float:
        """B_tau, FLOP/byte: the time roofline's ridge of ``level`` (default memory)."""
        return self.peak / self._timed(level).bandwidth

    def energy_balance(self, level: str | None = None) -> float:
        """B_eps, FLOP/byte: the AI at which flops and ``level``'s bytes cost equal energy."""
        return self._charged(level).byte_pj / self.flop_pj

    @property
    def flop_power(self) -> float:
        """W drawn by the flops alone at the peak: ``flop_pj * peak``."""
        return self.flop_pj * self.peak * _MILLI

    @property
    def constant_pj_per_flop(self) -> float:
        """pJ of constant energy per flop at the peak: ``pi0 * tau_flop``."""
        return self.constant_w / self.peak / _MILLI

    @property
    def min_pj_per_flop(self) -> float:
        """eps_hat, pJ: the least energy a flop can cost (its own plus pi0 over its time)."""
        return self.flop_pj + self.constant_pj_per_flop

    @property
    def max_efficiency(self) -> float:
        """GFLOP/J: the arch's asymptote ``1 / eps_hat`` (a run with no traffic at all)."""
        return 1 / self.min_pj_per_flop / _MILLI

    def energy_ridge(self, level: str | None = None) -> float:
        """FLOP/byte: the AI at which the efficiency reaches half of :attr:`max_efficiency`.

        Solves ``I = eta * B_eps + (1 - eta) * max(0, B_tau - I)`` with ``eta =
        flop_pj / eps_hat`` (Choi et al.'s effective energy balance); equals
        :meth:`energy_balance` when there is no constant power.
        """
        b_eps, b_tau = self.energy_balance(level), self.time_balance(level)
        eta = self.flop_pj / self.min_pj_per_flop
        below = (eta * b_eps + (1 - eta) * b_tau) / (2 - eta)  # the root if it is < B_tau
        return below if below < b_tau else eta * b_eps

    def power_peak(self, level: str | None = None) -> float:
        """W: the most power a run on ``level`` alone draws, at its time ridge."""
        return float(self.power(self.time_balance(level), level))

    # ------------------------------------------------------------------ curves
    def pj_per_flop(self, ai, level: str | None = None):
        """Energy per flop (pJ) of a run whose only traffic is at ``level``, at AI ``ai``.

        ``ai`` is FLOP/byte (a number or an array, > 0).
        """
        lv = self._charged(level)
        self._timed(level)
        ai = _ai_array(ai)
        time_per_flop = np.maximum(1 / self.peak, 1 / (ai * lv.bandwidth))  # ns per flop
        out = self.flop_pj + lv.byte_pj / ai + self.constant_w * time_per_flop / _MILLI
        return out if out.ndim else float(out)

    def efficiency(self, ai, level: str | None = None):
        """Energy efficiency (GFLOP/J) at AI ``ai`` of ``level`` (the arch)."""
        out = 1 / (np.asarray(self.pj_per_flop(ai, level)) * _MILLI)
        return out if out.ndim else float(out)

    def performance(self, ai, level: str | None = None):
        """GFLOP/s at AI ``ai`` of ``level``: the time roofline ``min(peak, ai * bandwidth)``."""
        out = np.minimum(self.peak, _ai_array(ai) * self._timed(level).bandwidth)
        return out if out.ndim else float(out)

    def power(self, ai, level: str | None = None):
        """Average power (W) at AI ``ai`` of ``level``: energy per flop x flop rate."""
        perf = np.asarray(self.performance(ai, level))
        out = np.asarray(self.pj_per_flop(ai, level)) * perf * _MILLI
        return out if out.ndim else float(out)

    # ------------------------------------------------------------------ runs
    def estimate(self, flops: float, level_bytes: Mapping[str, float],
                 timed_bytes: Mapping[str, float] | None = None) -> EnergyEstimate:  # fmt: skip
        """Time, energy and power of ``flops`` flops moving ``level_bytes`` (name -> bytes),
        of which ``timed_bytes`` (default: all) take time (``LevelResult.timed_bytes``).

        Levels not in ``level_bytes`` move nothing. ``uncharged`` in the result
        names the levels that moved bytes but have no energy per byte, ``untimed``
        those that moved bytes but have no bandwidth (their time is not in the max).
        """
        if isinstance(flops, bool) or not isinstance(flops, (int, float)) or not flops >= 0:
            raise HroofError(f"flops must be a count >= 0, got {flops!r}")
        unknown = [n for n in level_bytes if n not in self.level_names]
        if unknown:
            raise ConfigError(
                f"machine {self.machine} has no level {unknown[0]!r}; levels: "
                f"{', '.join(self.level_names)}"
            )
        flop_time = flops / (self.peak * 1e9)
        times = [("compute", flop_time)]
        parts = [EnergyPart("flops", "flops", flops * self.flop_pj * 1e-12, None, self.flop_pj)]
        uncharged, untimed = [], []
        for lv in self.levels:
            if lv.name not in level_bytes:
                continue
            nbytes = level_bytes[lv.name]
            if isinstance(nbytes, bool) or not isinstance(nbytes, (int, float)) or nbytes < 0:
                raise HroofError(f"bytes of {lv.name} must be a count >= 0, got {nbytes!r}")
            if lv.bandwidth is None:
                if nbytes:
                    untimed.append(lv.name)
            else:
                timed = nbytes if timed_bytes is None else timed_bytes.get(lv.name, nbytes)
                times.append((lv.name, timed / (lv.bandwidth * 1e9)))
            if lv.byte_pj is None:
                if nbytes:
                    uncharged.append(lv.name)
                continue
            parts.append(
                EnergyPart(lv.name, "level", nbytes * lv.byte_pj * 1e-12, nbytes, lv.byte_pj)
            )
        binding, time = max(times, key=lambda t: t[1])  # first (compute, then L1...) wins a tie
        parts.append(EnergyPart("constant", "constant", self.constant_w * time, None, None))
        return EnergyEstimate(
            machine=self.machine,
            flops=flops,
            time_s=time,
            binding=binding if time > 0 else None,
            parts=tuple(parts),
            uncharged=tuple(uncharged),
            untimed=tuple(untimed),
            constant_w=self.constant_w,
        )

    def to_dict(self) -> dict:
        return {
            "machine": self.machine,
            "peak_gflop_s": self.peak,
            "flop_pj": self.flop_pj,
            "constant_w": self.constant_w,
            "levels": [
                {"name": lv.name, "bandwidth_gb_s": lv.bandwidth, "byte_pj": lv.byte_pj}
                for lv in self.levels
            ],
            "ceilings": [
                {"name": c.name, "gflop_s": c.value, "means": c.means} for c in self.ceilings
            ],
            "bandwidth_ceilings": [
                {"level": c.level, "name": c.name, "gb_s": c.value, "means": c.means}
                for c in self.bandwidth_ceilings
            ],
            "source": self.source,
            "unverified": self.unverified,
            "precision": self.precision,
        }


#: A kernel's ``dtype`` parameter -> the precision of its flops.
DTYPE_PRECISIONS = {"float64": "fp64", "float32": "fp32"}


def precision_mismatch(result: SimResult, model: EnergyModel) -> str | None:
    """The precision of a kernel run's flops when it is not the model's, else None.

    A kernel declares its element type with its ``dtype`` parameter (float64 unless
    given); ``flop_pj`` and the peak are figures at the machine's precision, and hroof
    does not rescale them (no per-precision energy is in the machine file), so a float32
    run on an fp64 machine is charged fp64 flops. Runs without a ``dtype`` (a trace)
    give None.
    """
    params = (result.source or {}).get("params") or {}
    precision = DTYPE_PRECISIONS.get(params.get("dtype"))
    return precision if precision and precision != model.precision else None


def _ai_array(ai) -> np.ndarray:
    arr = np.asarray(ai, dtype=float)
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise HroofError(f"arithmetic intensity must be a positive FLOP/byte, got {ai!r}")
    return arr


@dataclass(frozen=True)
class EnergyPart:
    """One term of a run's energy.

    Attributes
    ----------
    name : str
        ``"flops"``, a level's name, or ``"constant"``.
    kind : str
        ``"flops"``, ``"level"`` or ``"constant"``.
    joules : float
        Energy of the term, J.
    bytes : int or float or None
        Bytes moved at the level (levels only).
    pj_each : float or None
        pJ per flop (flops) or per byte (levels); None for the constant term.
    """

    name: str
    kind: str
    joules: float
    bytes: int | float | None
    pj_each: float | None

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "kind": self.kind,
            "joules": self.joules,
            "bytes": self.bytes,
            "pj_each": self.pj_each,
        }


@dataclass(frozen=True)
class EnergyEstimate:
    """Time, energy and power of one run under the roofline model of energy.

    Attributes
    ----------
    machine : str
        Machine name.
    flops : int or float
        Flops of the run.
    time_s : float
        Roofline time, s: ``max(W / peak, max over levels of Q / bandwidth)``.
    binding : str or None
        What sets the time: ``"compute"`` or a level name (None for an empty run).
    parts : tuple of EnergyPart
        The flops' energy, each charged level's, then the constant energy.
    uncharged : tuple of str
        Levels that moved bytes but have no energy per byte (not in ``parts``).
    untimed : tuple of str
        Levels that moved bytes but have no bandwidth (not in the time).
    constant_w : float
        The constant power, W.
    """

    machine: str
    flops: int | float
    time_s: float
    binding: str | None
    parts: tuple[EnergyPart, ...]
    uncharged: tuple[str, ...]
    untimed: tuple[str, ...]
    constant_w: float

    @property
    def complete(self) -> bool:
        """True when every level that moved bytes was charged and timed."""
        return not self.uncharged and not self.untimed

    @property
    def total_j(self) -> float:
        """Energy of the run, J."""
        return sum(p.joules for p in self.parts)

    @property
    def power_w(self) -> float | None:
        """Average power, W (None for a run that takes no time)."""
        return self.total_j / self.time_s if self.time_s > 0 else None

    @property
    def gflop_per_j(self) -> float | None:
        """Energy efficiency, GFLOP/J (None when the run costs no energy)."""
        return self.flops / self.total_j / 1e9 if self.total_j > 0 else None

    @property
    def pj_per_flop(self) -> float | None:
        """Energy per flop, pJ (None for a run without flops)."""
        return self.total_j / self.flops * 1e12 if self.flops else None

    @property
    def performance(self) -> float | None:
        """GFLOP/s: flops / time (the hierarchical bound)."""
        return self.flops / self.time_s / 1e9 if self.time_s > 0 else None

    @property
    def dominant(self) -> EnergyPart:
        """The largest term."""
        return max(self.parts, key=lambda p: p.joules)

    def part(self, name: str) -> EnergyPart:
        for p in self.parts:
            if p.name == name:
                return p
        raise KeyError(f"no energy term {name!r}; terms: {[p.name for p in self.parts]}")

    def to_dict(self) -> dict:
        return {
            "machine": self.machine,
            "flops": self.flops,
            "time_s": self.time_s,
            "binding": self.binding,
            "energy_j": self.total_j,
            "power_w": self.power_w,
            "gflop_per_j": self.gflop_per_j,
            "pj_per_flop": self.pj_per_flop,
            "constant_w": self.constant_w,
            "dominant": self.dominant.name,
            "parts": [p.to_dict() for p in self.parts],
            "uncharged": list(self.uncharged),
            "untimed": list(self.untimed),
        }


# ---------------------------------------------------------------------- from a machine
_HOW = (
    "add an [energy] table to its machine file, e.g. [energy] flop_pj = 10.0, "
    "constant_w = 50.0, byte_pj = {{ {mem} = 20.0 }} (pJ per flop, W, pJ per byte; "
    "see docs/energy.md)"
)


def missing_energy(machine: Machine) -> list[str]:
    """The energy figures ``machine`` lacks, in words (empty: it has what the model needs)."""
    energy = getattr(machine, "energy", None)
    mem = machine.memory_name
    if energy is None:
        return ["flop_pj", "constant_w", f"byte_pj for {mem}"]
    out = []
    if getattr(energy, "flop_pj", None) is None:
        out.append("flop_pj")
    if getattr(energy, "constant_w", None) is None:
        out.append("constant_w")
    if (getattr(energy, "byte_pj", None) or {}).get(mem) is None:
        out.append(f"byte_pj for {mem}")
    return out


def energy_model(machine: Machine, command: str = "an energy estimate") -> EnergyModel:
    """The energy model of a machine: its ``[energy]`` figures, peak, bandwidths, ceilings.

    Parameters
    ----------
    machine : Machine
        Needs ``energy.flop_pj``, ``energy.constant_w``, the memory's
        ``energy.byte_pj``, the compute peak and the memory bandwidth. A cache
        level without an energy per byte is not charged, one without a
        bandwidth is not timed (both are listed in every estimate).
    command : str
        What needs them, for the error message.

    Raises
    ------
    ConfigError
        Naming every missing figure and how to add it.

    """
    if not isinstance(machine, Machine):
        raise HroofError(f"machine must be a Machine, got {type(machine).__name__}")
    where = f" ({machine.source})" if machine.source else ""
    no_energy = missing_energy(machine)
    no_time = [f"{machine.memory_name} bandwidth"] if machine.memory_bandwidth is None else []
    if machine.peak is None:
        no_time.append("compute peak")
    if no_energy:
        also = f" (nor {', '.join(no_time)})" if no_time else ""
        raise ConfigError(
            f"machine {machine.name}{where} has no energy figures {', '.join(no_energy)}{also}; "
            f"{command} needs them: " + _HOW.format(mem=machine.memory_name)
        )
    if no_time:
        raise ConfigError(
            f"machine {machine.name}{where} has no {', '.join(no_time)}; {command} needs "
            "them for the time: add them to its machine file (see docs/roofline.md)"
        )
    energy = machine.energy
    byte_pj = dict(energy.byte_pj or {})
    names = [*machine.level_names, machine.memory_name]
    stray = [n for n in byte_pj if n not in names]
    if stray:
        raise ConfigError(
            f"[energy] byte_pj of machine {machine.name}{where} names {stray[0]!r}, which is not "
            f"one of its levels: {', '.join(names)}"
        )
    levels = tuple(LevelCost(name, bw, byte_pj.get(name)) for name, bw in machine.all_bandwidths())
    return EnergyModel(
        machine=machine.name,
        peak=float(machine.peak),
        flop_pj=float(energy.flop_pj),
        constant_w=float(energy.constant_w),
        levels=levels,
        ceilings=tuple(c for c in machine.ceilings if c.level is None),
        bandwidth_ceilings=tuple(machine.bandwidth_ceilings),
        source=getattr(energy, "source", None),
        precision=getattr(machine, "precision", "fp64"),
        unverified=getattr(energy, "unverified", None),
    )


def level_bytes(result: SimResult) -> dict[str, int]:
    """Bytes of every cache level and of memory (docs/roofline.md, "What hroof computes")."""
    out = {lv.name: lv.bytes for lv in result.levels}
    out[result.memory.name] = result.memory.bytes
    return out


def run_energy(result: SimResult, machine: Machine | EnergyModel) -> EnergyEstimate:
    """Time, energy and power of a simulated run on ``machine``.

    The time is the hierarchical roofline's (``flops / bound``, see
    :func:`hroof.roofline.analysis.roofline`); the energy charges every flop
    and every byte each level moved.

    Raises
    ------
    HroofError
        When the run's flops are unknown (a trace without ``--flops``).
    ConfigError
        When the machine lacks an energy figure, or the run's levels are not its.
    """
    model = machine if isinstance(machine, EnergyModel) else energy_model(machine)
    if not isinstance(result, SimResult):
        raise HroofError(f"result must be a SimResult, got {type(result).__name__}")
    if result.flops is None:
        raise HroofError("the run's flop count is unknown; energy needs it (give --flops N)")
    have = [lv.name for lv in result.levels] + [result.memory.name]
    if have != model.level_names:
        raise ConfigError(
            f"the result's levels {have} do not match machine {model.machine}'s "
            f"{model.level_names}; simulate on the machine's hierarchy"
        )
    timed = {lv.name: lv.timed_bytes for lv in result.levels}
    return model.estimate(result.flops, level_bytes(result), timed)


__all__ = [
    "EnergyEstimate",
    "EnergyModel",
    "EnergyPart",
    "LevelCost",
    "energy_doc",
    "energy_model",
    "energy_sweep_doc",
    "level_bytes",
    "missing_energy",
    "precision_mismatch",
    "run_energy",
]


def energy_doc(result, model, estimate) -> dict:
    """The ``hroof.energy/1`` document of one run: the model, the result, the estimate."""
    return {
        "schema": "hroof.energy/1",
        "model": model.to_dict(),
        "result": result.to_dict(),
        "energy": estimate.to_dict(),
    }


def energy_sweep_doc(points, model, estimates) -> dict:
    """The ``hroof.energy-sweep/1`` document: each point's parameters, footprint, result
    and energy estimate (``points`` are :class:`hroof.studies.sweep.SweepPoint` s)."""
    return {
        "schema": "hroof.energy-sweep/1",
        "model": model.to_dict(),
        "points": [
            {"params": dict(p.params), "footprint": p.footprint,
             "result": p.result.to_dict(), "energy": e.to_dict()}
            for p, e in zip(points, estimates, strict=True)
        ],
    }  # fmt: skip
