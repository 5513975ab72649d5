"""Sweeps: one kernel simulated over a grid of parameter values, in parallel, cached.

``hroof sweep stencil7 n=16..256:x2`` simulates the 7-point stencil at
n = 16, 32, ..., 256 on both cores, one process per point, and keeps every
result in a cache keyed by (kernel, all its parameters, the machine's cache
geometry, the simulation options, hroof's version), so re-plotting or
re-reporting a sweep never simulates again.

Value lists (:func:`parse_values`): ``16,24,32``; ``16..512:x2`` (doubling);
``16..64:+16`` (steps of 16); ``16..20`` (every integer).
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hroof._base.errors import HroofError
from hroof._base.units import parse_range
from hroof.cachesim import HierarchyConfig, SimResult
from hroof.machine.model import Machine
from hroof.roofline.layers import STENCILS, PredictedWall, stencil_walls
from hroof.studies.cache import ResultCache, cache_key
from hroof.studies.executor import Executor, LocalPool, PointsFailed, simulate_point, track
from hroof.traces import accounting, get_kernel
from hroof.traces.cfile import is_kernel_file
from hroof.traces.kernels import RUN_WORDS, split_run_words
from hroof.traces.limits import check_plan

#: Most points one sweep may have (a guard against a typo such as 1..100000).
MAX_POINTS = 10_000


def parse_values(text: str) -> list[str]:
    """Expand one ``KEY=...`` value: a comma list or a range (values stay text).

    >>> parse_values("16..128:x2"), parse_values("8..32:+8"), parse_values("3..5")
    (['16', '32', '64', '128'], ['8', '16', '24', '32'], ['3', '4', '5'])
    >>> parse_values("a,b")
    ['a', 'b']
    """
    out: list[str] = []
    for part in text.split(","):
        part = part.strip()
        if ".." not in part:
            if part:
                out.append(part)
            continue
        values = parse_range(part, "range", limit=MAX_POINTS)
        out.extend(str(v) for v in values)
        if len(out) > MAX_POINTS:
            raise HroofError(f"range {part!r} has more than {MAX_POINTS} values")
    if not out:
        raise HroofError(f"no values in {text!r}")
    return out


def expand_grid(kernel: str, assignments: dict[str, str]) -> list[dict[str, str]]:
    """The points of a sweep: the cartesian product of every multi-valued parameter.

    Unknown parameters are errors here, before anything runs.
    """
    k = get_kernel(kernel)
    keys = list(assignments)
    for key in keys:
        if key in RUN_WORDS:  # cores=P, grain=G: how the kernel runs (docs: "Several cores")
            continue
        k.param(key)  # raises for an unknown parameter, with a suggestion
    values = [parse_values(assignments[key]) for key in keys]
    total = math.prod(len(v) for v in values)  # counted before the product is built
    if total > MAX_POINTS:
        raise HroofError(f"the sweep has {total:,} points; at most {MAX_POINTS:,}")
    points = [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*values)]
    if len(points) > MAX_POINTS:
        raise HroofError(f"the sweep has {len(points)} points; at most {MAX_POINTS}")
    return points


@dataclass(frozen=True)
class SweepPoint:
    """One point of a sweep: the kernel's bound parameters and its simulation result.

    ``measured`` is the native run of the same parameters on this host when the
    sweep was measured (``hroof sweep --measure``): the
    :meth:`hroof.native.Measurement.to_dict` fields without schema and source
    (``gflop_s`` is the median GFLOP/s, ``gflop_s_min`` .. ``gflop_s_max`` its
    spread, ``timing`` the seconds per run); None otherwise.
    """

    params: dict[str, Any]
    footprint: int
    result: SimResult
    cached: bool = False
    measured: dict | None = None

    def to_dict(self) -> dict:
        d = {
            "params": dict(self.params),
            "footprint": self.footprint,
            "cached": self.cached,
            "result": self.result.to_dict(),
        }
        if self.measured is not None:
            d["measured"] = dict(self.measured)
        return d


def point_label(kernel: str, params: dict) -> str:
    """A point by name: ``stencil7 n=64 radius=1``."""
    return " ".join([kernel, *(f"{k}={v}" for k, v in params.items())])


def run_sweep(
    kernel: str,
    points: list[dict],
    hierarchy: HierarchyConfig,
    *,
    classify: bool = True,
    flush: bool = True,
    workers: int | None = None,
    use_cache: bool = True,
    progress: Callable[[int], None] | None = None,
    executor: Executor | None = None,
    sample_sets: int = 1,
) -> list[SweepPoint]:
    """Simulate ``kernel`` at every point (a dict of parameter values, text or typed).

    Points run on ``executor`` (:mod:`hroof.studies.executor`; default: a pool of
    ``workers`` local processes, one per core, at most the number of points) and
    come back in the order given. ``progress`` is called with 1 after each point.
    Only this process reads and writes the result cache. ``sample_sets=K``
    simulates each point on 1/K of the sets (:mod:`hroof.cachesim.sampling`).

    Raises
    ------
    PointsFailed
        Some points failed where they ran; every other point finished and is cached.
    """
    k = get_kernel(kernel)
    split = [split_run_words(p) for p in points]
    plans = [k.bind(**p) for p, _ in split]  # validates every point before any runs
    for plan in plans:  # time and classification memory, before any runs
        check_plan(plan, hierarchy.line_bits, classify=classify)
    base = {"classify": classify, "flush": flush}
    if sample_sets != 1:  # (unsampled runs keep their cache keys)
        base["sample_sets"] = sample_sets
    runs = [run_options(base, run, hierarchy) for _, run in split]
    store = ResultCache(enabled=use_cache)
    results: list[SimResult | None] = [None] * len(plans)
    cached = [False] * len(plans)
    todo = []
    for i, plan in enumerate(plans):
        key = cache_key(kernel, plan.params, hierarchy, key_options(runs[i], hierarchy))
        hit = store.get(key, hierarchy.name)
        if hit is not None:
            results[i], cached[i] = hit, True
            if progress:
                progress(1)
            continue
        todo.append((i, plan, key))
    engine = executor if executor is not None else LocalPool(workers)
    argsets = [(kernel, plan.params, hierarchy, runs[i]) for i, plan, _ in todo]
    failed = []
    for out in track(engine, simulate_point, argsets, progress):
        i, plan, key = todo[out.index]
        if out.ok:
            results[i] = SimResult.from_dict(out.value)
            store.put(key, out.value)
        else:
            failed.append((point_label(kernel, plan.params), out.error))
    if failed:
        raise PointsFailed(failed, len(plans))
    return [
        SweepPoint({**plan.params, **run}, plan.footprint, res, c)
        for plan, (_, run), res, c in zip(plans, split, results, cached, strict=True)
    ]


def run_options(base: dict, run: dict, hierarchy: HierarchyConfig) -> dict:
    """The simulation options of one point: ``base`` plus its run words (``cores``,
    ``grain``; one core without a grain keeps the options, and cache keys, of before)."""
    if run.get("cores", 1) == 1 and "grain" not in run:
        return base
    return {**base, **run}


def key_options(options: dict, hierarchy: HierarchyConfig) -> dict:
    """``options`` for the cache key: with several cores, which levels are shared too."""
    if options.get("cores", 1) == 1:
        return options
    return {**options, "first_shared": hierarchy.first_shared(options["cores"])}


def measure_points(
    kernel: str,
    points: list[SweepPoint],
    *,
    min_time: float | None = None,
    min_repeats: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[SweepPoint]:
    """The points with ``measured`` filled in: each run natively on this host, one
    after the other in this process (never beside the simulations: timing).

    ``min_time`` (seconds) and ``min_repeats`` default to
    :func:`hroof.native.timing.time_kernel`'s. Measurements are never cached.
    """
    from dataclasses import replace

    from hroof.native import measure_kernel
    from hroof.native.core import require_native
    from hroof.native.timing import MIN_REPEATS, MIN_TIME
    from hroof.traces import plan_kernel

    require_native(kernel)  # no native twin: fail before anything runs
    plans = [plan_kernel(kernel, **p.params) for p in points]
    out = []
    for point, plan in zip(points, plans, strict=True):
        m = measure_kernel(
            plan,
            min_time=MIN_TIME if min_time is None else min_time,
            min_repeats=MIN_REPEATS if min_repeats is None else min_repeats,
        )
        d = m.to_dict()
        del d["schema"], d["source"]
        out.append(replace(point, measured=d))
        if progress:
            progress(1)
    return out


def varying(points: list[SweepPoint]) -> list[str]:
    """The parameters whose value differs between the points of a sweep."""
    if not points:
        return []
    return [k for k in points[0].params if len({repr(p.params[k]) for p in points}) > 1]


def sweep_doc(points: list[SweepPoint], machine: Machine | str, walls: list) -> dict:
    """A sweep as JSON-ready data, schema ``hroof.sweep/1`` (``results.json``).

    With a :class:`Machine` (not just its name) every point's result carries its
    ``analysis`` (:func:`hroof.roofline.document.analysis_doc`: accounting, AI and
    attainable performance per level, bound and binding level, CARM AI and bound,
    walls' parts, guidance) and the document ``notes``: what the walls do not
    show (no wall in range, predicted walls left out). Readers ignore both.
    """
    name = machine if isinstance(machine, str) else machine.name
    pts = [p.to_dict() for p in points]
    doc = {"schema": "hroof.sweep/1", "machine": name, "points": pts,
           "walls": [w.to_dict() for w in walls]}  # fmt: skip
    if not isinstance(machine, str):
        from hroof.roofline.document import analysis_doc

        for d, p in zip(pts, points, strict=True):
            d["result"]["analysis"] = analysis_doc(p.result, machine)
        vary = varying(points)
        if len(vary) == 1:
            doc["notes"] = missing_walls_text(walls, points, machine, vary[0])
    return doc


def sweep_walls(
    points: list[SweepPoint], machine: Machine | HierarchyConfig, param: str
) -> list[Wall]:
    """:func:`find_walls`, each wall with the layer condition that broke
    (:func:`explain_walls`). Points of several ``cores`` values (a sweep of
    ``cores=1,2,4`` and ``param``) get the walls of each value, each wall naming its
    ``cores``."""
    from dataclasses import replace

    groups: dict[int, list[SweepPoint]] = {}
    for p in points:
        groups.setdefault(p.result.cores, []).append(p)
    out = []
    for cores, group in sorted(groups.items()):
        walls = explain_walls(find_walls(group, param), group, machine, param)
        out += [replace(w, cores=cores) for w in walls]
    return out


def predicted_by_cores(
    points: list[SweepPoint], machine: Machine | HierarchyConfig, param: str
) -> dict[int, list[tuple[int, str]]]:
    """Per core count, the ``(n, condition)`` walls the layer conditions predict for the
    first shared level (empty for a kernel without layer conditions)."""
    out: dict[int, list[tuple[int, str]]] = {}
    for cores in sorted({p.result.cores for p in points}):
        group = [p for p in points if p.result.cores == cores]
        shared = group[0].result.shared_levels
        h = getattr(machine, "hierarchy", machine)
        level = shared[0] if shared else h.levels[-1].name
        out[cores] = [(w.n, w.condition) for w in all_predicted_walls(group, machine, param)
                      if w.level == level and w.n]  # fmt: skip
    return out


def wall_param(points: list[SweepPoint]) -> str | None:
    """The parameter a sweep's walls are found along: the one whole-number parameter that
    varies besides ``cores`` (None when there is not exactly one)."""
    vary = [k for k in varying(points) if k != "cores"]
    if len(vary) == 1 and isinstance(points[0].params[vary[0]], int):
        return vary[0]
    return None


@dataclass(frozen=True)
class Wall:
    """A locality wall: between two sweep points, a level's bytes per flop jump.

    ``condition``, ``predicted`` and ``explanation`` say which layer condition
    broke (``"whole"``, ``"3D"`` or ``"2D"``; see
    :func:`hroof.roofline.layers.stencil_walls`), the largest ``n`` it holds
    for, and why, in words; ``matched`` is True when the prediction lies in the
    measured interval (``before <= predicted < after``). All are None/empty for
    a kernel without layer conditions.
    """

    level: str
    param: str
    before: Any
    after: Any
    bytes_per_flop_before: float
    bytes_per_flop_after: float
    footprint_before: int
    footprint_after: int
    capacity: int | None
    condition: str | None = None
    predicted: int | None = None
    explanation: str = ""
    matched: bool | None = None
    #: The cores of the points the wall lies between (``cores = P`` runs).
    cores: int = 1

    def to_dict(self) -> dict:
        return dict(self.__dict__)

    def text(self) -> str:
        """One line: the level, the measured interval, what broke and the prediction."""
        from hroof._base.units import format_bytes

        cap = f" ({format_bytes(self.capacity)})" if self.capacity else ""
        who = f"cores={self.cores}, " if self.cores > 1 else ""
        line = (f"{who}{self.level}{cap}: between {self.param}={self.before} and "
                f"{self.param}={self.after}, {self.bytes_per_flop_before:.3g} -> "
                f"{self.bytes_per_flop_after:.3g} bytes/flop below")  # fmt: skip
        if self.condition:
            why = self.explanation.split(": ", 1)[-1]
            hit = "inside the measured interval" if self.matched else "outside it"
            line += (f"; {why}; the layer condition predicts it after "
                     f"{self.param}={self.predicted} ({hit})")  # fmt: skip
        return line


def find_walls(points: list[SweepPoint], param: str, *, jump: float = 1.25) -> list[Wall]:
    """The sizes where a level's bytes per flop jump by ``jump`` or more.

    ``points`` must vary ``param`` (they are taken in increasing order of it).
    Each wall names the level whose traffic from below jumped (the bytes of the
    level below it), the two values of ``param`` around the jump, the footprint
    at each, and the capacity of the level that stopped holding the data.
    """
    pts = sorted(points, key=lambda p: p.params[param])
    walls = []
    if not pts:
        return walls
    names = [lv.name for lv in pts[0].result.levels] + [pts[0].result.memory.name]

    def per_flop(point: SweepPoint) -> list[float | None]:
        r = point.result
        if not r.flops:
            return [None] * len(names)
        return [lv.bytes / r.flops for lv in r.levels] + [r.memory.bytes / r.flops]

    prev = per_flop(pts[0])
    for a, b in itertools.pairwise(pts):
        cur = per_flop(b)
        # A jump from (almost) nothing counts when it is a visible share of what the core
        # moves: in the steady state a level that holds the whole grid sends nothing below.
        floor = 0.05 * (cur[0] or 0.0)
        for idx, (x, y) in enumerate(zip(prev, cur, strict=True)):
            if idx == 0 or x is None or y is None:
                continue
            if (x > 0 and y >= jump * x and y - x > 1e-3 * floor) or (
                x <= floor / 10 and y - x > floor
            ):
                holder = a.result.levels[idx - 1]  # the level that stopped holding the data
                walls.append(
                    Wall(holder.name, param, a.params[param], b.params[param], x, y,
                         a.footprint, b.footprint, holder.size)
                )  # fmt: skip
        prev = cur
    return walls


def load_sweep(path: Path) -> tuple[list[SweepPoint], str]:
    """Read ``results.json`` of ``hroof sweep --out`` (or its directory)."""
    path = Path(path)
    if path.is_dir():
        path = path / "results.json"
    if not path.is_file():
        raise HroofError(f"no sweep results at {path}")
    try:
        doc = json.loads(path.read_text())
        if doc.get("schema") != "hroof.sweep/1":
            raise HroofError(f"{path} is not a sweep (schema {doc.get('schema')!r})")
        for i, p in enumerate(doc["points"]):  # as strictly as what is typed
            _check_point(p, f"{path}: point {i}")
        points = [SweepPoint(p["params"], p["footprint"], SimResult.from_dict(p["result"]),
                             p.get("cached", False), p.get("measured"))
                  for p in doc["points"]]  # fmt: skip
    except (OSError, ValueError, KeyError, TypeError) as exc:
        if isinstance(exc, HroofError):
            raise
        raise HroofError(f"{path} is not a readable sweep result: {exc}") from None
    if not points:
        raise HroofError(f"{path} holds no points")
    return points, doc.get("machine", "")


def _check_point(p: dict, where: str) -> None:
    """A saved point's footprint is a whole number of bytes >= 0 and every number of its
    result and measurement finite and >= 0 (NaN, infinity, negatives are refused)."""
    footprint = p["footprint"]
    if isinstance(footprint, bool) or not isinstance(footprint, int) or footprint < 0:
        raise HroofError(f"{where}: footprint must be a whole number of bytes >= 0, got "
                         f"{footprint!r}")  # fmt: skip
    result = {k: v for k, v in p["result"].items() if k != "source"}
    for name, value in _numbers(result, "result"):
        if not math.isfinite(value) or value < 0:
            raise HroofError(f"{where}: {name} must be a finite number >= 0, got {value!r}")
    for name, value in _numbers(p.get("measured") or {}, "measured"):
        if not math.isfinite(value):
            raise HroofError(f"{where}: {name} must be a finite number, got {value!r}")


def _numbers(obj, name: str):
    """Every number in a JSON value, with its dotted name."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _numbers(v, f"{name}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _numbers(v, f"{name}[{i}]")
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        yield name, obj


def sweep_machine(name: str) -> Machine | None:
    """The bundled machine whose name is ``name`` (a sweep's ``machine`` field), or None."""
    from hroof.machine.catalog import bundled_machines
    from hroof.machine.model import load_machine

    for key in bundled_machines():
        machine = load_machine(key)
        if machine.name == name or key == name:
            return machine
    return None


def all_predicted_walls(
    points: list[SweepPoint], machine: Machine | HierarchyConfig, param: str
) -> list[PredictedWall]:
    """Every wall the layer conditions predict for a stencil swept over ``n``, or a kernel
    file swept over one of its constants (:mod:`hroof.roofline.nest_lc`), in or out of
    the sweep's range; empty for anything else. Steady-state runs (warm-up sweeps) get
    the whole-working-set walls too."""
    kernel = points[0].result.source.get("kernel")
    h = getattr(machine, "hierarchy", machine)
    steady = accounting(points[0].result.source)["mode"] == "steady"
    if is_kernel_file(kernel):  # any nest: its layer conditions from the file alone
        from hroof.roofline.nest_lc import nest_walls

        try:
            nest = get_kernel(kernel).nest
        except HroofError:  # a saved sweep whose kernel file is gone: nothing to predict from
            return []
        if param not in nest.constants:
            return []
        fixed = {k: v for k, v in points[0].params.items() if k != param and k not in RUN_WORDS}
        return nest_walls(kernel, fixed, param, h, steady=steady, safety=1.0,
                          cores=points[0].result.cores)  # fmt: skip
    if param != "n" or kernel not in STENCILS:
        return []
    fixed = {k: v for k, v in points[0].params.items() if k != "n" and k not in RUN_WORDS}
    return stencil_walls(fixed, h, kernel=kernel, steady=steady, safety=1.0,
                         cores=points[0].result.cores)  # fmt: skip


def predicted_walls(
    points: list[SweepPoint], machine: Machine | HierarchyConfig, param: str
) -> list[PredictedWall]:
    """The predicted walls inside the sweep's range of ``n`` (see :func:`all_predicted_walls`)."""
    lo, hi = (min(p.params[param] for p in points), max(p.params[param] for p in points))
    return [w for w in all_predicted_walls(points, machine, param)
            if w.n is not None and lo <= w.n < hi]  # fmt: skip


def explain_walls(
    walls: list[Wall], points: list[SweepPoint], machine: Machine | HierarchyConfig, param: str
) -> list[Wall]:
    """The walls with the layer condition that broke at each: the prediction of that level
    inside the measured interval, else the level's nearest prediction (``matched``
    False). Unchanged for a kernel without layer conditions."""
    import math
    from dataclasses import replace

    preds = all_predicted_walls(points, machine, param)
    out = []
    used = set()
    for w in sorted(walls, key=lambda w: w.before):
        mine = [p for p in preds if p.level == w.level and p.n]
        if not mine:
            out.append(w)
            continue
        inside = [p for p in mine if w.before <= p.n < w.after]
        best = (
            inside[0]
            if inside
            else min(mine, key=lambda p: abs(math.log((p.n + 0.5) / math.sqrt(w.before * w.after))))
        )
        text = best.explanation
        if not inside and (best.level, best.condition) in used:
            level, _, why = text.partition(": ")
            text = f"{level}: still breaking (a cache is not fully associative): {why}"
        used.add((best.level, best.condition))
        out.append(replace(w, condition=best.condition, predicted=best.n,
                           explanation=text, matched=bool(inside)))  # fmt: skip
    return out


def missing_walls_text(
    walls: list[Wall], points: list[SweepPoint], machine: Machine | HierarchyConfig, param: str
) -> list[str]:
    """Lines for what the sweep does not show: no wall in range (and the nearest
    prediction), predicted walls in range that no measured wall matched, and the
    predicted walls beyond the range."""
    preds = [p for p in all_predicted_walls(points, machine, param) if p.n]
    lo, hi = (min(p.params[param] for p in points), max(p.params[param] for p in points))
    shown = {(w.level, w.condition) for w in walls if w.matched}
    lines = []
    if not walls:
        line = f"No wall in this range ({param}={lo}..{hi})."
        if preds:
            import math

            near = min(preds, key=lambda p: abs(math.log((p.n + 0.5) / math.sqrt(lo * hi))))
            line += (f" The nearest predicted wall: {near.explanation}, after "
                     f"{param}={near.n}.")  # fmt: skip
        lines.append(line)
    beyond = set()
    for p in sorted(preds, key=lambda p: p.n):
        if lo <= p.n < hi and (p.level, p.condition) not in shown:
            lines.append(f"Predicted but not seen: {p.explanation}, after {param}={p.n}.")
        elif p.n >= hi and p.level not in beyond:  # the next wall of each level
            beyond.add(p.level)
            lines.append(f"Left out (beyond {param}={hi}): {p.explanation}, after "
                         f"{param}={p.n}.")  # fmt: skip
    return lines
