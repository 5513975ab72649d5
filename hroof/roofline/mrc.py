"""Reading a miss-ratio curve against the roofline: knees, layer conditions, AI at any capacity.

A miss-ratio curve (:mod:`hroof.cachesim.mrc`) gives the LRU misses of every
cache size. Its steep drops, the *knees*, are the locality walls seen from
the cache-size axis: the capacity at which a reuse of the kernel starts to
hit. For the Jacobi stencils, the layer conditions of
:mod:`hroof.roofline.layers` (at ``safety = 1``, the exact LRU rule) predict
where they are (3 planes, 3 rows of the grid); the machine's level sizes say
on which side of each knee every level sits.

The traffic below a level of capacity ``C`` is ``(misses(C) + writebacks) x
line``: the fills come from the curve, the writebacks (which a stack-distance
pass does not model) are held at what the simulator counted at the level's
real size. Dividing the flops by it gives the arithmetic intensity the next
level down (or memory) would see with that capacity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hroof._base.errors import HroofError
from hroof.cachesim.config import HierarchyConfig
from hroof.cachesim.mrc import MissRatioCurve


@dataclass(frozen=True)
class Knee:
    """A steep drop of the miss ratio.

    Attributes
    ----------
    lines, bytes : int
        The capacity at which the drop is (90 %) complete: the cache size the
        reuse behind it needs.
    start_bytes : int
        The capacity at which the drop starts.
    before, after : float
        Miss ratios before and after the drop.
    """

    lines: int
    bytes: int
    start_bytes: int
    before: float
    after: float

    @property
    def drop(self) -> float:
        return self.before - self.after

    def to_dict(self) -> dict:
        return {
            "lines": self.lines,
            "bytes": self.bytes,
            "start_bytes": self.start_bytes,
            "miss_ratio_before": self.before,
            "miss_ratio_after": self.after,
        }


def find_knees(
    curve: MissRatioCurve, *, per_octave: int = 8, min_drop: float = 0.02, steep: float = 0.0025
) -> list[Knee]:
    """The capacities where the miss ratio falls sharply, smallest first.

    The curve is read on a grid of ``per_octave`` capacities per doubling;
    a run of consecutive steps that each drop the miss ratio by at least
    ``steep`` is one knee if together they drop it by at least ``min_drop``.
    The knee's capacity is then found exactly (on whole lines) as the
    smallest capacity at which 90 % of the drop is done. A sampled curve is
    read only from its resolution (``1/R`` lines) up.

    Parameters
    ----------
    curve : MissRatioCurve
    per_octave : int
        Grid points per doubling of the capacity.
    min_drop, steep : float
        Miss-ratio drops (absolute, 0..1) of a knee and of each of its steps.

    Returns
    -------
    list of Knee

    >>> import numpy as np
    >>> from hroof.cachesim.mrc import miss_ratio_curve
    >>> addr = np.tile(np.arange(100) * 64, 10); z = np.zeros_like(addr)
    >>> [k.lines for k in find_knees(miss_ratio_curve([(addr, z + 8, z)]))]
    [100]
    """
    if per_octave < 1 or not 0 < min_drop <= 1 or not 0 < steep <= min_drop:
        raise HroofError("find_knees needs per_octave >= 1 and 0 < steep <= min_drop <= 1")
    if not curve.lookups:
        return []
    top = max(2, int(curve.tail.shape[0]), int(curve.distinct_lines) + 1)
    first = 0
    if curve.sampled:  # the first step past the resolution is the resolution's own
        first = math.ceil(math.log2(curve.sample["resolution_lines"]) * per_octave) + 1
    k = np.arange(first, int(math.log2(top) * per_octave) + 2)
    grid = np.unique(np.round(2.0 ** (k / per_octave)).astype(np.int64))
    mr = np.asarray(curve.miss_ratio(grid), dtype=np.float64)
    step = mr[:-1] - mr[1:]  # drop from grid[i] to grid[i + 1]
    knees = []
    i = 0
    while i < step.shape[0]:
        if step[i] < steep:
            i += 1
            continue
        j = i
        while j < step.shape[0] and step[j] >= steep:
            j += 1
        before, after = float(mr[i]), float(mr[j])
        if before - after >= min_drop:
            goal = after + 0.1 * (before - after)
            lo, hi = int(grid[i]), int(grid[j])
            while hi - lo > 1:  # smallest capacity with miss ratio <= goal
                mid = (lo + hi) // 2
                lo, hi = (lo, mid) if curve.miss_ratio(mid) <= goal else (mid, hi)
            knees.append(Knee(hi, hi * curve.line, int(grid[i]) * curve.line, before, after))
        i = j
    return knees


def ai_at(
    curve: MissRatioCurve, capacity_bytes, flops: int | None, *, writebacks: int = 0
) -> float | None:
    """Flops per byte below a cache of ``capacity_bytes`` fed the curve's stream.

    The bytes are ``(misses(C) + writebacks) x line``; ``writebacks`` is
    held fixed (the simulator's count at the level's real size).
    """
    if not flops:
        return None
    moved = (float(curve.misses_at_bytes(capacity_bytes)) + writebacks) * curve.line
    return flops / moved if moved > 0 else math.inf


@dataclass(frozen=True)
class LevelMark:
    """A level of the machine on the curve's capacity axis.

    ``misses`` is the curve at the level's capacity (fully associative);
    ``simulated_misses`` the simulator's count for the real level (set
    associative), for the level whose stream the curve is and every level
    below it; ``simulated_miss_ratio`` is that count per lookup of the
    curve's stream (for the curve's own level, its miss ratio; for a level
    below, the fraction of the stream's lookups that miss down to it, which
    the curve at that capacity approximates: the level sees only the misses
    of the levels above, in its own LRU order). Levels above the curve's
    have neither.
    """

    name: str
    bytes: int
    miss_ratio: float
    misses: float
    simulated_misses: int | None = None
    simulated_miss_ratio: float | None = None

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "bytes": self.bytes,
            "misses": self.misses,
            "miss_ratio": self.miss_ratio,
            "simulated_misses": self.simulated_misses,
            "simulated_miss_ratio": self.simulated_miss_ratio,
        }


@dataclass(frozen=True)
class MrcReport:
    """A curve with its knees, the machine's levels and layer conditions, and AIs at capacities.

    Attributes
    ----------
    curve : MissRatioCurve
    level : str
        The level whose input stream the curve is.
    below : str
        The level (or memory) the traffic below it goes to.
    knees : tuple of Knee
    levels : tuple of LevelMark
        Every cache level's capacity on the curve (the curve is of ``level``'s
        stream, so only that one has a simulated point).
    layer_conditions : dict
        Condition name -> bytes it needs (stencils only, exact LRU rule, for
        the first level's stream; empty otherwise).
    ai_rows : tuple of dict
        ``capacity`` bytes, ``misses``, ``bytes_below`` and ``ai`` of ``below``.
    writebacks : int or None
        The writebacks held fixed in ``ai_rows`` (None: no simulation).
    flops : int or None
    """

    curve: MissRatioCurve
    level: str
    below: str
    knees: tuple[Knee, ...]
    levels: tuple[LevelMark, ...]
    layer_conditions: dict
    ai_rows: tuple[dict, ...]
    writebacks: int | None
    flops: int | None

    def to_dict(self) -> dict:
        out = self.curve.to_dict()
        out.update(
            level=self.level,
            below=self.below,
            flops=self.flops,
            knees=[k.to_dict() for k in self.knees],
            levels=[m.to_dict() for m in self.levels],
            layer_conditions=dict(self.layer_conditions),
            writebacks_held=self.writebacks,
            ai=[dict(r) for r in self.ai_rows],
        )
        return out


def layer_capacities(kernel: str | None, params: dict, hierarchy: HierarchyConfig) -> dict:
    """Bytes each layer condition needs (exact LRU rule), or {} for a kernel without them."""
    from hroof.roofline.layers import STENCILS, stencil_layer_conditions

    if kernel not in STENCILS:
        return {}
    lc = stencil_layer_conditions(params, hierarchy, kernel=kernel, safety=1.0)[0]
    return {name: req for name, req in lc.requirements.items() if req is not None}


def report(
    curve: MissRatioCurve,
    hierarchy: HierarchyConfig,
    *,
    level: int = 0,
    flops: int | None = None,
    simulated=None,
    layer_conditions: dict | None = None,
    knee_options: dict | None = None,
) -> MrcReport:
    """Knees, the machine's levels, layer conditions and AI at capacities for ``curve``.

    Parameters
    ----------
    curve : MissRatioCurve
        The curve of the stream reaching ``hierarchy.levels[level]``.
    hierarchy : HierarchyConfig
    level : int
        Index of that level.
    flops : int, optional
        The kernel's flops (for the AIs).
    simulated : SimResult, optional
        A simulation of the same trace on ``hierarchy``: the level's simulated
        point and the writebacks held in the AIs.
    layer_conditions : dict, optional
        From :func:`layer_capacities`.
    """
    levels = hierarchy.levels
    names = [lv.name for lv in levels] + [hierarchy.memory_name]
    marks = []
    for i, lv in enumerate(levels):
        sim_m = sim_r = None
        if simulated is not None and i >= level:
            sl = simulated.levels[i]
            sim_m = sl.misses
            per = simulated.levels[level].lookups  # the curve's stream, as simulated
            sim_r = sl.misses / per if per else 0.0
        marks.append(
            LevelMark(
                lv.name,
                lv.size,
                float(curve.miss_ratio(lv.lines)),
                _num(curve.misses(lv.lines)),
                sim_m,
                sim_r,
            )
        )
    wb = simulated.levels[level].writebacks if simulated is not None else None
    size = levels[level].size
    caps = sorted({size // 4, size // 2, size, size * 2, size * 4, size + 2 * 2**20})
    rows = []
    for cap in caps:
        misses = curve.misses_at_bytes(cap)
        moved = (float(misses) + (wb or 0)) * curve.line
        rows.append(
            {
                "capacity": int(cap),
                "misses": _num(misses),
                "bytes_below": moved,
                "ai": ai_at(curve, cap, flops, writebacks=wb or 0),
            }
        )
    return MrcReport(
        curve=curve,
        level=levels[level].name,
        below=names[level + 1],
        knees=tuple(find_knees(curve, **(knee_options or {}))),
        levels=tuple(marks),
        layer_conditions=dict(layer_conditions or {}),
        ai_rows=tuple(rows),
        writebacks=wb,
        flops=flops,
    )


def _num(x):
    x = float(x)
    return int(x) if x.is_integer() else x


__all__ = ["Knee", "LevelMark", "MrcReport", "ai_at", "find_knees", "layer_capacities", "report"]
