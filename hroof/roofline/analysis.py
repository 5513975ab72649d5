"""Roofline numbers from a simulation: AI per level, bounds, CARM view, locality walls.

Units: bytes are bytes; bandwidths are GB/s (1e9 bytes/s) as seen by the core;
compute is GFLOP/s (1e9 FLOP/s); arithmetic intensity (AI) is FLOP/byte, so
``AI * bandwidth`` is GFLOP/s. Definitions follow docs/architecture.md ("Bytes and AI per
level", "Traffic partition"):

* hierarchical roofline: each level's AI is flops / that level's bytes, and
  the bound is ``min(peak, min over levels of AI_level * BW_level)``;
* cache-aware roofline (CARM; Ilic, Pratas and Sousa 2014): one AI, flops /
  (L1 bytes + non-temporal store bytes: every byte the core moves), against
  every level's bandwidth;
* locality walls (the LBNL roofline lecture): per cache level, the AIs of the
  traffic below it counting compulsory misses only, then + write allocates,
  + capacity misses, + conflict misses (the total). Non-temporal stores go
  from the core straight to memory: they are a part of their own of the last
  level's traffic to memory, counted from the first (compulsory) wall on, so
  the total wall is always the memory AI. The lines hardware prefetchers fetch
  (docs/cache-model.md, "Prefetchers") count in the total wall only.

Any unknown figure (flops, a bandwidth, the peak) makes the numbers that need
it None; bounds are taken over the known figures only and ``unknown`` lists
what was missing, so a partial bound is never mistaken for a complete one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hroof._base.errors import ConfigError, HroofError
from hroof.cachesim.result import SimResult
from hroof.machine.model import Machine

#: The five regions of a measured point (the roofline introduction (after Williams et al. 2009)).
REGIONS = (
    "unattainable",
    "memory-bound",
    "compute-bound",
    "poor (memory side)",
    "poor (compute side)",
)

#: Relative slack before a point counts as above its roof (float rounding).
_ROOF_TOLERANCE = 1e-9


def _div(num: float | None, den: float | None) -> float | None:
    if num is None or den is None or den == 0:
        return None
    return num / den


def _mul(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a * b


@dataclass(frozen=True)
class LevelRoof:
    """One level of the hierarchical roofline.

    Attributes
    ----------
    name : str
        Cache level or memory name.
    bytes : int
        Bytes this level moves for the level above that take its bandwidth's time
        (at an exclusive or victim level, less the clean lines the level above evicts
        into it: ``LevelResult.timed_bytes``).
    ai : float or None
        FLOP/byte: flops / ``bytes`` (None: flops unknown or no bytes).
    bandwidth : float or None
        GB/s as seen by the core.
    attainable : float or None
        GFLOP/s: ``ai * bandwidth``.
    ridge_point : float or None
        FLOP/byte where this level's roof meets the compute peak: peak / bandwidth.
    """

    name: str
    bytes: int
    ai: float | None
    bandwidth: float | None
    attainable: float | None
    ridge_point: float | None

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "bytes": self.bytes,
            "ai": self.ai,
            "bandwidth_gb_s": self.bandwidth,
            "attainable_gflop_s": self.attainable,
            "ridge_point": self.ridge_point,
        }


@dataclass(frozen=True)
class CarmLevel:
    """One level's roof in the cache-aware view: GFLOP/s = AI_L1 * bandwidth."""

    name: str
    bandwidth: float | None
    attainable: float | None

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "bandwidth_gb_s": self.bandwidth,
            "attainable_gflop_s": self.attainable,
        }


@dataclass(frozen=True)
class CarmView:
    """The cache-aware roofline: one AI (flops / (L1 bytes + non-temporal store bytes),
    FLOP/byte) against all levels.

    ``bound`` (GFLOP/s) and ``binding`` (level name or ``"compute"``) are over
    the known figures, as in :class:`Roofline`.
    """

    ai: float | None
    levels: tuple[CarmLevel, ...]
    bound: float | None
    binding: str | None

    def to_dict(self) -> dict:
        return {
            "ai": self.ai,
            "levels": [lv.to_dict() for lv in self.levels],
            "bound_gflop_s": self.bound,
            "binding": self.binding,
        }


@dataclass(frozen=True)
class LocalityWalls:
    """The locality walls of one cache level, FLOP/byte of the traffic below it.

    They are the AIs of the next level down (``below``) when only part of its
    traffic is counted: ``compulsory`` (compulsory misses), ``write_allocate``
    (+ write-allocate fills), ``capacity`` (+ capacity misses) and ``total``
    (+ conflict misses: every byte). More traffic counted, lower AI, so
    ``compulsory >= write_allocate >= capacity >= total``. A wall is None when
    flops are unknown, the run was not classified, or its traffic is zero.
    """

    level: str
    below: str
    compulsory: float | None
    write_allocate: float | None
    capacity: float | None
    total: float | None
    parts: dict | None = None

    def to_dict(self) -> dict:
        return {
            "level": self.level,
            "below": self.below,
            "compulsory": self.compulsory,
            "write_allocate": self.write_allocate,
            "capacity": self.capacity,
            "total": self.total,
            "parts": None if self.parts is None else dict(self.parts),
        }


@dataclass(frozen=True)
class Roofline:
    """Roofline analysis of one simulation on one machine.

    Attributes
    ----------
    machine : str
        Machine name.
    flops : int or None
        Floating-point operations of the run.
    peak : float or None
        Compute peak, GFLOP/s.
    levels : tuple of LevelRoof
        Each cache level, L1 first, then memory.
    bound : float or None
        GFLOP/s: ``min(peak, min over levels of attainable)`` over the known
        figures (None when none is known).
    binding : str or None
        The level name attaining ``bound``, or ``"compute"``.
    unknown : tuple of str
        Figures the bounds could not use (``"flops"``, ``"L2 bandwidth"``,
        ``"compute peak"``); empty when the bound is complete.
    carm : CarmView
        The cache-aware view.
    walls : tuple of LocalityWalls
        One per cache level.
    """

    machine: str
    flops: int | None
    peak: float | None
    levels: tuple[LevelRoof, ...]
    bound: float | None
    binding: str | None
    unknown: tuple[str, ...]
    carm: CarmView
    walls: tuple[LocalityWalls, ...]

    @property
    def complete(self) -> bool:
        """True when every figure was known, so ``bound`` is the full bound."""
        return not self.unknown

    def level(self, name: str) -> LevelRoof:
        for lv in self.levels:
            if lv.name == name:
                return lv
        raise KeyError(f"no level named {name!r}; levels: {[lv.name for lv in self.levels]}")

    def to_dict(self) -> dict:
        return {
            "machine": self.machine,
            "flops": self.flops,
            "peak_gflop_s": self.peak,
            "levels": [lv.to_dict() for lv in self.levels],
            "bound_gflop_s": self.bound,
            "binding": self.binding,
            "unknown": list(self.unknown),
            "carm": self.carm.to_dict(),
            "walls": [w.to_dict() for w in self.walls],
        }


def _bound(peak: float | None, roofs: list[tuple[str, float | None]]):
    """(min, name) over the known roofs and the peak; (None, None) if none is known."""
    known = [(v, name) for name, v in roofs if v is not None]
    if peak is not None:
        known.append((peak, "compute"))
    if not known:
        return None, None
    value, name = min(known, key=lambda t: t[0])  # first (highest) level wins a tie
    return value, name


def _check(result: SimResult, machine: Machine) -> None:
    if not isinstance(result, SimResult):
        raise HroofError(f"result must be a SimResult, got {type(result).__name__}")
    if not isinstance(machine, Machine):
        raise HroofError(f"machine must be a Machine, got {type(machine).__name__}")
    have = [lv.name for lv in result.levels]
    if have != machine.level_names:
        raise ConfigError(
            f"the result's cache levels {have} do not match machine {machine.name}'s "
            f"{machine.level_names}; simulate on the machine's hierarchy"
        )


def _walls(result: SimResult) -> tuple[LocalityWalls, ...]:
    names = [lv.name for lv in result.levels] + [result.memory.name]
    out = []
    for i, lv in enumerate(result.levels):
        parts = traffic_parts(result, i)
        if parts is None or result.flops is None:
            vals = [None] * 4
        else:
            sums, run = [], parts.get("non_temporal", 0)
            for part in ("compulsory", "write_allocate", "capacity", "conflict"):
                run += parts[part]
                sums.append(run)
            sums[-1] += parts.get("prefetch", 0)  # prefetch requests' lines: in the total only
            vals = [_div(result.flops, s) for s in sums]
        out.append(LocalityWalls(lv.name, names[i + 1], *vals, parts=parts))
    return tuple(out)


def traffic_parts(result: SimResult, index: int) -> dict | None:
    """The traffic from cache level ``index`` to the level below, bytes by cause:
    compulsory, write_allocate, capacity, conflict and, below the last level,
    ``non_temporal`` (the core's non-temporal stores, which bypass every cache).
    The parts sum to the bytes of the level below (memory's included). None when
    the run was not classified.

    >>> from hroof.studies.runs import simulate_kernel
    >>> from hroof.cachesim import hierarchy
    >>> r = simulate_kernel("triad", hierarchy({"name": "L1", "size": 1024, "ways": 2}),
    ...                     n=1024, nt=True)
    >>> sum(traffic_parts(r, 0).values()) == r.memory.bytes
    True
    """
    lv = result.levels[index]
    if lv.traffic_below is None:
        return None
    parts = {k: int(v) for k, v in lv.traffic_below.items()}
    if index == len(result.levels) - 1:
        parts["non_temporal"] = int(result.core.bytes_nt)
    return parts


def roofline(result: SimResult, machine: Machine) -> Roofline:
    """Hierarchical and cache-aware roofline numbers of a simulation on a machine.

    Parameters
    ----------
    result : SimResult
        A simulation on ``machine``'s hierarchy (level names must match).
    machine : Machine
        Bandwidths (GB/s) and compute peak (GFLOP/s); unknown figures are None.

    Returns
    -------
    Roofline
        Per level bytes, AI (FLOP/byte), bandwidth, attainable GFLOP/s and
        ridge point; the bound and binding level; the CARM view; the locality
        walls.

    Raises
    ------
    ConfigError
        If the result's cache levels are not the machine's.

    Examples
    --------
    >>> from hroof.roofline import machine_from_dict
    >>> from hroof.studies.runs import simulate_kernel
    >>> m = machine_from_dict({"compute": {"peak": 10.0}, "memory": {"bandwidth": 12.0},
    ...     "level": [{"name": "L1", "size": 1024, "ways": 2, "bandwidth": 96.0}]})
    >>> r = roofline(simulate_kernel("triad", m.hierarchy, n=4096), m)
    >>> r.level("L1").ai == 2 / 24, r.binding
    (True, 'DRAM')

    A result of ``cores = P`` on a machine of one core's figures is read against the
    P-core figures (:func:`hroof.machine.cores.for_cores`).
    """
    _check(result, machine)
    if result.cores > 1 and machine.cores != result.cores:
        from hroof.machine.cores import for_cores

        machine = for_cores(machine, result.cores)
    flops = result.flops
    unknown = [] if flops is not None else ["flops"]
    # A level's roof divides the bytes its bandwidth times: an exclusive or victim level's
    # clean victims from above ride along (LevelResult.timed_bytes).
    rows = [(lv.name, lv.timed_bytes) for lv in result.levels]
    rows.append((result.memory.name, result.memory.bytes))
    bws = [*machine.bandwidths, machine.memory_bandwidth]
    levels = []
    for (name, nbytes), bw in zip(rows, bws, strict=True):
        if bw is None:
            unknown.append(f"{name} bandwidth")
        ai = _div(flops, nbytes)
        levels.append(
            LevelRoof(
                name=name,
                bytes=nbytes,
                ai=ai,
                bandwidth=bw,
                attainable=_mul(ai, bw),
                ridge_point=_div(machine.peak, bw),
            )
        )
    if machine.peak is None:
        unknown.append("compute peak")
    bound, binding = _bound(machine.peak, [(lv.name, lv.attainable) for lv in levels])

    # The CARM's one AI: every byte the core moves, non-temporal stores included.
    carm_ai = _div(flops, levels[0].bytes + result.core.bytes_nt)
    carm_levels = tuple(CarmLevel(lv.name, lv.bandwidth, _mul(carm_ai, lv.bandwidth))
                        for lv in levels)  # fmt: skip
    c_bound, c_binding = _bound(machine.peak, [(lv.name, lv.attainable) for lv in carm_levels])
    return Roofline(
        machine=machine.name,
        flops=flops,
        peak=machine.peak,
        levels=tuple(levels),
        bound=bound,
        binding=binding,
        unknown=tuple(unknown),
        carm=CarmView(carm_ai, carm_levels, c_bound, c_binding),
        walls=_walls(result),
    )


def region(ai: float, performance: float, machine: Machine, level: str | None = None) -> str:
    """Which of the five roofline regions a *measured* point lies in.

    The regions are those of the roofline introduction (after Williams et al. 2009) (the DRAM
    roofline figure, "5 个区域"): above the roof or left of the bandwidth line
    is unattainable; left of the machine balance (the ridge point) and at 50 %
    or more of the bandwidth roof is a well-performing memory-bound code; right
    of it and at 50 % or more of the peak a well-performing compute-bound code;
    below 50 % of the roof on either side is poor performance. Here, with
    ``roof = min(peak, ai * bandwidth)`` and ``ridge = peak / bandwidth``:

    * ``performance > roof``: ``"unattainable"``;
    * ``performance >= roof / 2``: ``"memory-bound"`` if ``ai < ridge``, else
      ``"compute-bound"`` (the ridge point itself counts as compute-bound);
    * otherwise ``"poor (memory side)"`` or ``"poor (compute side)"``.

    Parameters
    ----------
    ai : float
        Arithmetic intensity at ``level``, FLOP/byte (> 0).
    performance : float
        Measured GFLOP/s (>= 0).
    machine : Machine
        Needs the compute peak and ``level``'s bandwidth.
    level : str, optional
        The level whose bandwidth roof applies (default: memory).

    Returns
    -------
    str
        One of :data:`REGIONS`.

    Examples
    --------
    >>> from hroof.roofline import machine_from_dict
    >>> m = machine_from_dict({"compute": {"peak": 100.0}, "memory": {"bandwidth": 10.0},
    ...     "level": [{"name": "L1", "size": 1024, "ways": 2}]})
    >>> region(1.0, 8.0, m), region(1.0, 2.0, m), region(50.0, 60.0, m), region(1.0, 11.0, m)
    ('memory-bound', 'poor (memory side)', 'compute-bound', 'unattainable')
    """
    if not isinstance(machine, Machine):
        raise HroofError(f"machine must be a Machine, got {type(machine).__name__}")
    for what, value, ok in (("ai", ai, "a positive FLOP/byte"),
                            ("performance", performance, "GFLOP/s >= 0")):  # fmt: skip
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
        ):
            raise HroofError(f"{what} must be {ok}, got {value!r}")
    if ai <= 0:
        raise HroofError(f"ai must be a positive FLOP/byte, got {ai!r}")
    if performance < 0:
        raise HroofError(f"performance must be GFLOP/s >= 0, got {performance!r}")
    level = machine.memory_name if level is None else level
    bw = machine.bandwidth(level)  # ConfigError for an unknown level name
    lacking = [f for f, v in ((f"{level} bandwidth", bw), ("compute peak", machine.peak))
               if v is None]  # fmt: skip
    if lacking:
        raise ConfigError(f"machine {machine.name} has no {' or '.join(lacking)}; "
                          "a point's region needs both")  # fmt: skip
    roof = min(machine.peak, ai * bw)
    side = "memory" if ai < machine.peak / bw else "compute"
    if performance > roof * (1 + _ROOF_TOLERANCE):
        return "unattainable"
    if performance >= roof / 2:
        return f"{side}-bound"
    return f"poor ({side} side)"


__all__ = [
    "REGIONS",
    "CarmLevel",
    "CarmView",
    "LevelRoof",
    "LocalityWalls",
    "Roofline",
    "region",
    "roofline",
    "traffic_parts",
]
