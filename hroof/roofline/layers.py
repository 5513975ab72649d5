"""Analytic layer conditions of the Jacobi stencils (kerncraft-style).

The simulator measures the bytes a stencil moves between two cache levels;
this module predicts them with pencil and paper, so each checks the other
(STYLE.md: "analytic layer conditions and simulation behind one interface").

Derivation (3D 7-point stencil, ``stencil7``)
---------------------------------------------
Per interior point ``c`` the kernel loads ``old`` at the element offsets
``-kS, -jS, -1, 0, +1, +jS, +kS`` and stores ``new[c]`` (see
:mod:`hroof.traces.stencils` for ``jS`` and ``kS``). An element ``x`` of ``old``
is used five times: as the top neighbour (at point ``x - kS``), as the
``+jS`` neighbour (at ``x - jS``), as centre and ``i`` neighbours (at
``x - 1 .. x + 1``), as the ``-jS`` neighbour and as the bottom neighbour
(at ``x + kS``). Each reuse hits if, in an LRU cache, fewer distinct bytes
than the capacity were touched since the previous use.

Following Hammer et al., "Kerncraft: A tool for analytic performance modeling
of loop kernels" (2017), and Stengel et al., "Quantifying performance
bottlenecks of stencil computations using the ECM model" (ICS 2015), sort the
offsets of ``old`` and take the distances ``d`` between neighbours
(``1, 1, jS-1, jS-1, kS-jS, kS-jS``). To keep every reuse of distance
``<= t``, the cache must hold

    ``sum(d for d <= t) + t * (#(d > t) + 1 + 1)``   elements,

the ``+ 1 + 1`` being the open-ended tails of ``old`` and of ``new`` (each
array's last access in the window). Each distance ``> t`` is a reuse that
misses, so ``old`` is read ``1 + #(d > t)`` times from the level below. That
gives the three walls of the stencil (elements of 8 bytes for doubles):

==========================  =====================================  =============  ==========
condition                   cache requirement (elements)           ``old`` reads  bytes/point
==========================  =====================================  =============  ==========
3D ("k-layers") holds       ``4*kS - 2*jS`` ~ 3 planes old + 1 new  1              24
only 2D ("j-layers") holds  ``6*jS - 4`` ~ 5 rows old + 1 row new   3              40
none                        (the ``i`` neighbours share lines)     5              56
==========================  =====================================  =============  ==========

The bytes per point are ``8 * reads`` of ``old`` plus 8 (read for ownership of
``new``, at a write-allocate level) plus 8 (write-back of ``new``): 24, 40, 56
(16, 32, 48 at a level that does not write-allocate). The requirement is
exactly the LRU stack distance of the reuse: between the top and the centre use
of ``x``, the loads touch ``old[x-2kS .. x+kS]`` (three planes; the bottom plane's
lines are dead but LRU keeps them) and the stores one plane of ``new``. So in a
fully associative LRU cache the condition is sharp at ``safety = 1``.

For a cubic grid of ``n`` interior points, ``jS = n + 2`` and ``kS = (n + 2)**2``
(without padding), so with ``B = safety * C / 8`` elements available:

* 3D condition: ``4 (n+2)**2 - 2 (n+2) <= B``, i.e. ``n <= (1 + sqrt(1 + 4 B)) / 4 - 2``
  (C = 48 KiB, safety 1/2: n <= 25; safety 1: n <= 37);
* 2D condition: ``6 (n+2) - 4 <= B``, i.e. ``n <= (B + 4) / 6 - 2``
  (C = 48 KiB, safety 1/2: n <= 510).

:func:`stencil_layer_conditions` solves these (with padding) numerically.

Blocking. With the ``j`` loop blocked by ``bj`` rows, the ``k`` reuse
distance in execution order is one block-plane, so ``kS`` is replaced by
``(bj + 1) * jS`` in the 3D condition (the requirement becomes
``(4 bj + 2) jS``: ``bj + 2`` rows of the centre plane, ``bj`` of each other
plane of ``old``, ``bj`` of ``new``), independent of ``ny``. Blocking ``k`` by
``bk`` does not change the conditions; it only re-reads the two halo planes of
every block.

Safety factor. ``safety`` scales the capacity. The default, 1/2, is the rule
of thumb of the layer-condition and ECM papers: real caches are not fully
associative LRU and hold other data, so the condition is only trusted with half
of the cache. kerncraft's LC predictor itself (0.8.18) compares a requirement with
the whole cache, as ``safety = 1`` does here: the exact LRU rule that the
simulator follows (up to set conflicts and a few lines), and what hroof's sweeps use.

Inclusion policies. A condition holds when the reused layers fit in the
capacity that keeps them, which depends on the level's ``inclusion`` policy
(docs/cache-model.md, "Inclusion policies"; :func:`effective_capacity`):

* ``nine`` and ``inclusive``: the level's own size. A NINE level is filled on
  every miss, so it holds (almost) everything the level above holds; an
  inclusive one holds all of it by construction (the copies above sit inside it).
* ``exclusive``: its size plus the effective capacity of the level above. The
  two hold disjoint lines (fills go to the level above only, its evictions come
  here, a hit here moves the line up), so a reuse that misses above hits here
  while fewer distinct bytes than both capacities together came in between:
  Skylake-SP's L3 conditions use L2 + L3 = 28.5 MiB, not 27.5 MiB. (Its
  simulated L3 wall lies past both predictions, where its 40,960 sets run out
  of ways for the stencil's streams: docs/cache-model.md, "Layer conditions
  under each policy".)
* ``victim``: the same sum, as an upper bound. A hit keeps a copy here while
  the level above holds it too, so part of the level is spent on duplicates and
  the layers begin to spill before the sum is reached (between the level's own
  size and the sum; docs/cache-model.md shows a measured case).

Halo and padding. The bulk figures (24/40/56) are per point of an infinite
grid; :class:`LayerCondition` also gives ``predicted_bytes_per_point`` for the
given grid: rows are contiguous, so each read of a row of ``old`` and each
write of a row of ``new`` moves ``jS / nx`` times the interior bytes, and the
halo rows and planes of ``old`` add ``2/bj + 2/bk`` of a read when the 3D
condition holds, ``2/bj`` of one of the three reads when only the 2D one does.

``stencil5`` (2D) and ``stencil27`` follow from the same rule: stencil5 has one
condition (``4 jS - 2``: 24 B/point, else ``old`` read 3 times: 40 B/point);
stencil27 has the 3D one (``old`` read once, 24 B/point) and the 2D one
(``old`` read once per plane: 40 B/point), else ``old`` is read once per row
of the 3 x 3: 88 B/point.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from hroof._base.errors import HroofError
from hroof.cachesim.config import HierarchyConfig
from hroof.traces.kernels import DTYPES

#: The stencils with layer conditions here.
STENCILS = ("stencil5", "stencil7", "stencil27")


@dataclass(frozen=True)
class Condition:
    """One layer condition of a stencil on a given grid.

    Attributes
    ----------
    name : str
        ``"3D"`` (k-layers), ``"2D"`` (j-layers) or ``"none"``.
    requirement : int or None
        Bytes the cache must hold (before the safety factor); None for ``"none"``.
    reads : int
        How many times each element of ``old`` is read from the level below.
    """

    name: str
    requirement: int | None
    reads: int


@dataclass(frozen=True)
class LayerCondition:
    """The layer condition that holds at one cache level.

    Attributes
    ----------
    level : str
        Cache level name.
    below : str
        The level (or memory) the predicted bytes go to.
    capacity : int
        The level's size, bytes.
    budget : float
        ``safety * capacity``, bytes.
    holds : str
        The strongest condition that holds: ``"3D"``, ``"2D"`` or ``"none"``.
    requirements : dict
        Condition name -> bytes it needs (``"none"`` needs nothing).
    bytes_per_point : int
        Bulk prediction (infinite grid) of the bytes per interior point moved
        to ``below``: 24, 40, 56 for stencil7 at a write-allocate level.
    predicted_bytes_per_point : float
        The same with the grid's halo and row padding counted.
    max_n : dict
        Condition name -> largest cubic ``n`` (square for stencil5) for which
        it still holds at this level with the given padding and blocking
        (0: not even n = 1; None: always holds).
    effective_capacity : int
        Bytes that keep the reused data at this level under its inclusion
        policy (:func:`effective_capacity`); ``budget`` is ``safety`` times this.
    capacity_note : str
        Which capacity that is, in words (empty for a NINE level: its own size).
    """

    level: str
    below: str
    capacity: int
    budget: float
    holds: str
    requirements: dict[str, int | None]
    bytes_per_point: int
    predicted_bytes_per_point: float
    max_n: dict[str, int | None]
    effective_capacity: int = 0
    capacity_note: str = ""

    def to_dict(self) -> dict:
        return {
            "level": self.level,
            "below": self.below,
            "capacity": self.capacity,
            "budget": self.budget,
            "holds": self.holds,
            "requirements": dict(self.requirements),
            "bytes_per_point": self.bytes_per_point,
            "predicted_bytes_per_point": self.predicted_bytes_per_point,
            "max_n": dict(self.max_n),
            "effective_capacity": self.effective_capacity,
            "capacity_note": self.capacity_note,
        }


def effective_capacity(hierarchy: HierarchyConfig, index: int) -> tuple[int, str]:
    """Bytes that keep reused data at level ``index`` under its inclusion policy, and why.

    ``nine`` and ``inclusive`` levels: their own size (an inclusive level's
    copies of the lines above are inside it). ``exclusive`` and ``victim``: their
    size plus the effective capacity of the level above, since fills bypass them
    and the level above's evictions fill them (for ``victim`` an upper bound: a
    hit keeps a duplicate). See the module notes, "Inclusion policies".

    >>> from hroof.cachesim import hierarchy
    >>> h = hierarchy({"name": "L1", "size": "32 KiB", "ways": 8},
    ...               {"name": "L2", "size": "1 MiB", "ways": 16},
    ...               {"name": "L3", "size": "27.5 MiB", "ways": 11, "inclusion": "exclusive"})
    >>> effective_capacity(h, 2)[0] == (1 + 27.5) * 2**20
    True
    >>> effective_capacity(h, 1)
    (1048576, '')
    >>> effective_capacity(h, 2)[1]
    'L2 + L3 = 28.5 MiB (L3 is exclusive: the levels hold disjoint lines)'
    """
    from hroof._base.units import format_bytes

    levels = hierarchy.levels
    lv = levels[index]
    if lv.inclusion == "inclusive":
        above = levels[index - 1].name
        return lv.size, (f"{lv.name} alone, {format_bytes(lv.size)} ({lv.name} is inclusive: "
                         f"{above}'s copies are inside it)")  # fmt: skip
    if lv.inclusion not in ("exclusive", "victim") or index == 0:
        return lv.size, ""
    total = lv.size + effective_capacity(hierarchy, index - 1)[0]
    names = " + ".join(x.name for x in _disjoint(levels, index))
    if lv.inclusion == "exclusive":
        return total, (f"{names} = {format_bytes(total)} ({lv.name} is exclusive: the levels "
                       "hold disjoint lines)")  # fmt: skip
    return total, (f"at most {names} = {format_bytes(total)} ({lv.name} is a victim cache: a "
                   "hit keeps a copy, so the layers start to spill earlier)")  # fmt: skip


def _disjoint(levels, index: int) -> list:
    """The levels whose capacities add up at ``index`` (itself and the exclusive chain above)."""
    out = [levels[index]]
    while levels[index].inclusion in ("exclusive", "victim") and index > 0:
        index -= 1
        out.insert(0, levels[index])
    return out


def _requirement(distances: list[int], t: int) -> int:
    """Elements to hold so every reuse of distance <= t hits (kerncraft's LC rule)."""
    within = sum(d for d in distances if d <= t)
    beyond = sum(1 for d in distances if d > t)
    return within + t * (beyond + 2)


def _geometry(kernel: str, p: dict) -> dict:
    """Normalised grid parameters (elements), validated."""
    if kernel not in STENCILS:
        raise HroofError(f"layer conditions exist for {', '.join(STENCILS)}, not {kernel!r}")
    known = {"n", "nx", "ny", "nz", "pad_row", "pad_plane", "bj", "bk", "dtype", "sweeps",
             "warmup"}  # fmt: skip
    known |= {"align", "gap"}
    for key in p:
        if key not in known:
            raise HroofError(f"unknown {kernel} parameter {key!r}; known: {sorted(known)}")
    dtype = p.get("dtype", "float64")
    if dtype not in DTYPES:
        raise HroofError(f"dtype must be one of {sorted(DTYPES)}, got {dtype!r}")
    n = p.get("n", 64)
    g = {
        "elem": DTYPES[dtype],
        "nx": p.get("nx") or n,
        "ny": p.get("ny") or n,
        "nz": (p.get("nz") or n) if kernel != "stencil5" else 1,
        "pad_row": p.get("pad_row", 0),
        "pad_plane": p.get("pad_plane", 0) if kernel != "stencil5" else 0,
        "bj": p.get("bj", 0) if kernel == "stencil7" else 0,
        "bk": p.get("bk", 0) if kernel == "stencil7" else 0,
    }
    for key, value in g.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise HroofError(f"{kernel} parameter {key} must be a whole number >= 0, got {value!r}")
    for key in ("nx", "ny", "nz"):
        if g[key] < 1:
            raise HroofError(f"{kernel} parameter {key} must be at least 1, got {g[key]}")
    if g["bj"] > g["ny"] or g["bk"] > g["nz"]:
        raise HroofError(
            f"{kernel} blocking bj={g['bj']}, bk={g['bk']} must be at most ny={g['ny']}, "
            f"nz={g['nz']} (or 0)"
        )
    return g


def _conditions(kernel: str, g: dict) -> list[Condition]:
    """The conditions of ``kernel`` on grid ``g``, strongest (largest) first."""
    elem = g["elem"]
    js = g["nx"] + 2 + g["pad_row"]
    ks = js * (g["ny"] + 2) + g["pad_plane"]
    if kernel == "stencil7" and 0 < g["bj"] < g["ny"]:
        ks = (g["bj"] + 1) * js  # the k reuse distance in blocked execution order
    if kernel == "stencil5":
        offs = [-js, -1, 0, 1, js]
    elif kernel == "stencil7":
        offs = [-ks, -js, -1, 0, 1, js, ks]
    else:
        offs = sorted(dk * ks + dj * js + di for dk in (-1, 0, 1) for dj in (-1, 0, 1)
                      for di in (-1, 0, 1))  # fmt: skip
    dist = [b - a for a, b in itertools.pairwise(offs)]

    def reads(t: int) -> int:
        # Reuses within a row (i +- 1) share lines: never count them as misses.
        return 1 + sum(1 for d in dist if d > t and d > 2)

    out = []
    if kernel != "stencil5":
        t = ks - js if kernel == "stencil7" else max(dist)
        out.append(Condition("3D", _requirement(dist, t) * elem, reads(t)))
    t2 = js - 1 if kernel != "stencil27" else js - 2  # the row-to-row reuse distance
    out.append(Condition("2D", _requirement(dist, t2) * elem, reads(t2)))
    out.append(Condition("none", None, reads(2)))
    return out


def _predicted(kernel: str, g: dict, reads: int, write_allocate: bool) -> float:
    """Bytes per interior point with halo and padding counted (see the module notes)."""
    elem = g["elem"]
    row = (g["nx"] + 2 + g["pad_row"]) / g["nx"]
    bj = g["bj"] or g["ny"]
    bk = g["bk"] or g["nz"]
    if reads == 1:
        halo = 2 / bj + (2 / bk if kernel != "stencil5" else 0.0)
        if kernel == "stencil27":
            halo = (1 + 2 / bj) * (1 + 2 / bk) - 1
        old = 1 + halo
    elif kernel == "stencil5" or (kernel == "stencil27" and reads == 9):
        old = reads
    else:  # the centre plane's read (stencil27: each plane's read) carries the bj + 2 rows
        per_plane_halo = 2 / bj
        old = reads + (per_plane_halo if kernel == "stencil7" else 3 * per_plane_halo)
    new = 2 if write_allocate else 1
    return elem * row * (old + new)


def _max_n(kernel: str, g: dict, name: str, budget: float) -> int | None:
    """Largest cubic (square) n for which condition ``name`` holds within ``budget`` bytes."""
    if name == "none":
        return None

    def need(n: int) -> int:
        h = dict(g, nx=n, ny=n, nz=n if kernel != "stencil5" else 1)
        if h["bj"] > n:
            h["bj"] = 0
        if h["bk"] > n:
            h["bk"] = 0
        cond = {c.name: c for c in _conditions(kernel, h)}[name]
        return cond.requirement

    if need(1) > budget:
        return 0
    lo, hi = 1, 2
    while need(hi) <= budget:
        lo, hi = hi, hi * 2
        if hi > 1 << 40:  # pragma: no cover (blocking makes the 3D condition n-free)
            return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if need(mid) <= budget else (lo, mid)
    return lo


def stencil_layer_conditions(
    params: dict,
    hierarchy: HierarchyConfig,
    *,
    kernel: str = "stencil7",
    safety: float = 0.5,
) -> list[LayerCondition]:
    """Which layer condition holds at each cache level, and the bytes it predicts.

    Parameters
    ----------
    params : dict
        The kernel's parameters as :func:`hroof.traces.plan_kernel` takes them
        (``n`` or ``nx, ny, nz``, ``pad_row``, ``pad_plane``, ``bj``, ``bk``,
        ``dtype``).
    hierarchy : HierarchyConfig
        The cache levels (a :class:`~hroof.roofline.Machine`'s ``hierarchy``).
    kernel : str
        ``"stencil7"`` (default), ``"stencil5"`` or ``"stencil27"``.
    safety : float
        Fraction of each capacity the condition may use, in (0, 1]. Default 1/2
        (the layer-condition papers' rule of thumb); 1 is the exact fully-associative
        LRU rule, and kerncraft's LC predictor's.

    Returns
    -------
    list of LayerCondition
        One per cache level, L1 first; the bytes are those moved to the level
        below, one sweep, per interior point.

    >>> from hroof.cachesim import hierarchy
    >>> h = hierarchy({"name": "L1", "size": "48 KiB", "ways": 12})
    >>> lc = stencil_layer_conditions({"n": 200}, h)[0]
    >>> lc.holds, lc.bytes_per_point, lc.max_n["3D"], lc.max_n["2D"]
    ('2D', 40, 25, 510)
    """
    if not isinstance(hierarchy, HierarchyConfig):
        raise HroofError(f"hierarchy must be a HierarchyConfig, got {type(hierarchy).__name__}")
    if isinstance(safety, bool) or not isinstance(safety, (int, float)) or not 0 < safety <= 1:
        raise HroofError(f"safety must be a fraction of the capacity in (0, 1], got {safety!r}")
    g = _geometry(kernel, dict(params))
    conds = _conditions(kernel, g)
    names = [lv.name for lv in hierarchy.levels] + [hierarchy.memory_name]
    out = []
    for i, lv in enumerate(hierarchy.levels):
        eff, note = effective_capacity(hierarchy, i)
        budget = safety * eff
        holds = next(c for c in conds if c.requirement is None or c.requirement <= budget)
        new = 2 if lv.write_allocate else 1
        out.append(
            LayerCondition(
                level=lv.name,
                below=names[i + 1],
                capacity=lv.size,
                budget=budget,
                holds=holds.name,
                requirements={c.name: c.requirement for c in conds},
                bytes_per_point=g["elem"] * (holds.reads + new),
                predicted_bytes_per_point=_predicted(kernel, g, holds.reads, lv.write_allocate),
                max_n={c.name: _max_n(kernel, g, c.name, budget) for c in conds},
                effective_capacity=eff,
                capacity_note=note,
            )
        )
    return out


#: What breaks at each wall, in words (the condition that stops holding).
WALL_TEXT = {
    "whole": "the whole working set (both grids) no longer fits between iterations",
    "3D": "3D layer condition: the planes the stencil reuses (3 of old, 1 of new) no longer fit",
    "2D": "2D layer condition: the rows the stencil reuses (5 of old, 1 of new) no longer fit",
}
#: Bulk bytes per point below a write-allocate level while each condition holds
#: (stencil7, doubles, steady state): whole 0, 3D 24, 2D 40, none 56.
_BULK = {"whole": 0, "3D": 24, "2D": 40, "none": 56}


@dataclass(frozen=True)
class PredictedWall:
    """Where one layer condition stops holding at one cache level (cubic grids).

    Attributes
    ----------
    level : str
        The cache level that stops holding the data.
    condition : str
        ``"whole"`` (the whole working set, both grids, between iterations:
        steady state only), ``"3D"`` (planes) or ``"2D"`` (rows).
    n : int or None
        The largest ``n`` for which the condition still holds: the wall lies
        between ``n`` and ``n + 1`` (None: it always holds).
    requirement : int or None
        Bytes the condition needs at ``n + 1`` (the first size that breaks it).
    explanation : str
        Which condition broke, in words (with the capacity that held it when the
        level is not NINE: see :func:`effective_capacity`).
    capacity : int or None
        The bytes that held the data under the level's inclusion policy (the
        level's size for a NINE level).
    """

    level: str
    condition: str
    n: int | None
    requirement: int | None
    explanation: str
    capacity: int | None = None

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def _whole(kernel: str, g: dict) -> int:
    """Bytes of both grids, halo and padding included (the steady-state working set)."""
    js = g["nx"] + 2 + g["pad_row"]
    if kernel == "stencil5":
        return 2 * js * (g["ny"] + 2) * g["elem"]
    ks = js * (g["ny"] + 2) + g["pad_plane"]
    return 2 * ks * (g["nz"] + 2) * g["elem"]


def stencil_walls(
    params: dict,
    hierarchy: HierarchyConfig,
    *,
    kernel: str = "stencil7",
    steady: bool = False,
    safety: float = 1.0,
    cores: int = 1,
) -> list[PredictedWall]:
    """Every wall the layer conditions predict for a cubic (square) grid growing in ``n``.

    With ``cores = P`` (the outer loop split across P threads, docs/cache-model.md,
    "Several cores") a shared level's capacity is divided by P for the 3D and 2D
    conditions: each core's layers must fit in its share. The whole working set is
    the cores' shares together, so a shared level keeps its capacity for it and a
    private one holds a P-th of it (its capacity is multiplied by P). Where capacities
    add up (an exclusive or victim level and the levels above it), each level of the
    chain counts as a core sees it: a core's layers get its private levels plus 1/P
    of the shared ones (L2 + L3/P), the whole working set P private copies plus the
    shared ones (P x L2 + L3).

    Per cache level, largest first: with ``steady`` (warm-up sweeps not
    counted) the whole working set first, then the 3D condition (not for
    stencil5), then the 2D one. Padding and blocking (``bj``) in ``params``
    are kept; ``n`` itself is what grows. ``safety`` defaults to 1, the exact
    LRU rule the simulator follows.

    >>> from hroof.cachesim import hierarchy
    >>> h = hierarchy({"name": "L1", "size": "32 KiB", "ways": 8})
    >>> [(w.condition, w.n) for w in stencil_walls({}, h, steady=True)]
    [('whole', 10), ('3D', 30), ('2D', 681)]
    """
    from hroof._base.units import format_bytes

    if not isinstance(hierarchy, HierarchyConfig):
        raise HroofError(f"hierarchy must be a HierarchyConfig, got {type(hierarchy).__name__}")
    g = _geometry(kernel, {k: v for k, v in dict(params).items() if k not in ("warmup",)})
    out = []
    names = ["whole"] if steady else []
    names += ["3D", "2D"] if kernel != "stencil5" else ["2D"]
    first_shared = hierarchy.first_shared(cores)
    levels = hierarchy.levels
    for i, lv in enumerate(levels):
        shared = i >= first_shared
        eff, note = effective_capacity(hierarchy, i)
        # The levels whose capacities add up here (an exclusive chain), each as one core
        # sees it: a core's layers get its own private levels and 1/P of a shared one;
        # the whole working set (every core's share) gets P private copies and a shared one.
        chain = range(i - len(_disjoint(levels, i)) + 1, i + 1)
        per_core = sum(levels[j].size / (cores if j >= first_shared else 1) for j in chain)
        whole = sum(levels[j].size * (1 if j >= first_shared else cores) for j in chain)
        for name in names:
            budget = safety * (whole if name == "whole" else per_core)
            if name == "whole":

                def need(n):
                    return _whole(kernel, dict(g, nx=n, ny=n, nz=n if kernel != "stencil5" else 1))

                if need(1) > budget:
                    n = 0
                else:
                    lo, hi = 1, 2
                    while need(hi) <= budget:
                        lo, hi = hi, hi * 2
                    while hi - lo > 1:
                        mid = (lo + hi) // 2
                        lo, hi = (mid, hi) if need(mid) <= budget else (lo, mid)
                    n = lo
                req = need(n + 1)
            else:
                n = _max_n(kernel, g, name, budget)
                req = None
                if n is not None:
                    h = dict(g, nx=n + 1, ny=n + 1, nz=n + 1 if kernel != "stencil5" else 1)
                    if h["bj"] > n + 1:
                        h["bj"] = 0
                    req = {c.name: c.requirement for c in _conditions(kernel, h)}[name]
            text = WALL_TEXT[name]
            if name == "3D" and g["bj"]:
                plain = _max_n(kernel, dict(g, bj=0, bk=0), name, budget)
                text += (f" (blocked by bj={g['bj']}: block planes of bj + 1 rows; the "
                         f"blocking moved this wall from after n={plain})")  # fmt: skip
            if note:
                text += f"; capacity {note}"
            if shared and cores > 1 and name != "whole":
                if len(chain) > 1:
                    own = " + ".join(
                        levels[j].name if j < first_shared else f"{levels[j].name}/{cores}"
                        for j in chain
                    )
                    text += (f" (each of {cores} cores: {own} = "
                             f"{format_bytes(int(per_core))})")  # fmt: skip
                else:
                    text += f" (in 1/{cores} of the shared {lv.name}: each of {cores} cores' share)"
            elif name == "whole" and cores > 1 and len(chain) > 1 and shared:
                own = " + ".join(
                    levels[j].name if j >= first_shared else f"{cores} x {levels[j].name}"
                    for j in chain
                )
                text += f" (with {cores} cores: {own} = {format_bytes(int(whole))})"
            out.append(PredictedWall(lv.name, name, n, req, f"{lv.name}: {text}", eff))
    return out


def cube_limit(condition: str, capacity: int, *, kernel: str = "stencil7", safety: float = 0.5,
               elem: int = 8) -> int:  # fmt: skip
    """Closed form of the largest unpadded cubic ``n`` for a condition (see the notes).

    >>> cube_limit("3D", 48 * 1024), cube_limit("2D", 48 * 1024)
    (25, 510)
    """
    b = safety * capacity / elem
    if kernel != "stencil7":
        raise HroofError(f"the closed form is written out for stencil7 only, not {kernel!r}")
    if condition == "3D":
        return max(0, math.floor((1 + math.sqrt(1 + 4 * b)) / 4 - 2))
    if condition == "2D":
        return max(0, math.floor((b + 4) / 6 - 2))
    raise HroofError(f"condition must be '3D' or '2D', got {condition!r}")


__all__ = [
    "STENCILS",
    "WALL_TEXT",
    "LayerCondition",
    "PredictedWall",
    "cube_limit",
    "effective_capacity",
    "stencil_layer_conditions",
    "stencil_walls",
]
