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

import hashlib
import itertools
import json
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hroof
from hroof._base.errors import HroofError
from hroof.cachesim import HierarchyConfig, SimResult
from hroof.traces import get_kernel

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
        lo_text, _, rest = part.partition("..")
        hi_text, _, step = rest.partition(":")
        try:
            lo, hi = int(lo_text), int(hi_text)
        except ValueError:
            raise HroofError(f"range {part!r} needs integer ends, e.g. 16..512:x2") from None
        if hi < lo:
            raise HroofError(f"range {part!r} runs backwards")
        values = []
        if step.startswith("x"):
            try:
                factor = float(step[1:])
            except ValueError:
                factor = 0.0
            if factor <= 1 or lo < 1:
                raise HroofError(f"range {part!r}: a factor step needs xF with F > 1, from >= 1")
            v = float(lo)
            while round(v) <= hi:
                if not values or round(v) != values[-1]:
                    values.append(round(v))
                v *= factor
        else:
            inc_text = step[1:] if step.startswith("+") else (step or "1")
            try:
                inc = int(inc_text)
            except ValueError:
                inc = 0
            if inc < 1:
                raise HroofError(f"range {part!r}: write the step as +N (N >= 1) or xF")
            values = list(range(lo, hi + 1, inc))
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
        k.param(key)  # raises for an unknown parameter, with a suggestion
    values = [parse_values(assignments[key]) for key in keys]
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


def cache_dir() -> Path:
    """Where sweep results are kept: ``$HROOF_CACHE_DIR``, else ``$XDG_CACHE_HOME/hroof``
    (default ``~/.cache/hroof``), subfolder ``results``."""
    if os.environ.get("HROOF_CACHE_DIR"):
        return Path(os.environ["HROOF_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "hroof" / "results"


def cache_key(kernel: str, params: dict, hierarchy: HierarchyConfig, options: dict) -> str:
    """A hash of everything a result depends on (not the machine's name or bandwidths)."""
    geometry = [[lv.name, lv.size, lv.ways, lv.line, lv.write_allocate] for lv in hierarchy.levels]
    blob = json.dumps(
        {"kernel": kernel, "params": params, "levels": geometry, "memory": hierarchy.memory_name,
         "options": options, "version": hroof.__version__},
        sort_keys=True,
    )  # fmt: skip
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def _simulate_point(kernel: str, params: dict, hierarchy: HierarchyConfig, options: dict):
    """Worker: one point, returned as a plain dict (cheap to send between processes)."""
    from hroof.studies.runs import simulate_kernel

    return simulate_kernel(kernel, hierarchy, **options, **params).to_dict()


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
    sample_sets: int = 1,
) -> list[SweepPoint]:
    """Simulate ``kernel`` at every point (a dict of parameter values, text or typed).

    Points run in ``workers`` processes (default: one per core, at most the
    number of points) and come back in the order given. ``progress`` is
    called with 1 after each point. ``sample_sets=K`` simulates each point on
    1/K of the sets (:mod:`hroof.cachesim.sampling`).
    """
    k = get_kernel(kernel)
    plans = [k.bind(**p) for p in points]  # validates every point before any runs
    options = {"classify": classify, "flush": flush}
    if sample_sets != 1:  # (unsampled runs keep their cache keys)
        options["sample_sets"] = sample_sets
    store = cache_dir() if use_cache else None
    results: list[SimResult | None] = [None] * len(plans)
    cached = [False] * len(plans)
    todo = []
    for i, plan in enumerate(plans):
        key = cache_key(kernel, plan.params, hierarchy, options)
        path = store / f"{key}.json" if store else None
        if path is not None and path.is_file():
            try:
                results[i] = SimResult.from_dict(json.loads(path.read_text()))
                cached[i] = True
                if progress:
                    progress(1)
                continue
            except (OSError, ValueError, KeyError, TypeError):
                pass  # an unreadable cache entry is simulated again
        todo.append((i, plan, path))
    if workers is None:
        workers = os.cpu_count() or 1
    workers = max(1, min(workers, len(todo)))

    def done(i, path, d):
        results[i] = SimResult.from_dict(d)
        if path is not None:
            _write_cache(path, d)
        if progress:
            progress(1)

    if workers == 1:
        for i, plan, path in todo:
            done(i, path, _simulate_point(kernel, plan.params, hierarchy, options))
    elif todo:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = [
                (i, path, pool.submit(_simulate_point, kernel, plan.params, hierarchy, options))
                for i, plan, path in todo
            ]
            for i, path, fut in futures:
                done(i, path, fut.result())
    return [
        SweepPoint(plan.params, plan.footprint, res, c)
        for plan, res, c in zip(plans, results, cached, strict=True)
    ]


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


def _write_cache(path: Path, d: dict) -> None:
    """Write a cache entry atomically; a cache that cannot be written is only a lost speed-up."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(d))
        os.replace(tmp, path)
    except OSError:
        pass


def varying(points: list[SweepPoint]) -> list[str]:
    """The parameters whose value differs between the points of a sweep."""
    if not points:
        return []
    return [k for k in points[0].params if len({repr(p.params[k]) for p in points}) > 1]


def sweep_doc(points: list[SweepPoint], machine_name: str, walls: list) -> dict:
    """A sweep as JSON-ready data, schema ``hroof.sweep/1`` (``results.json``)."""
    return {
        "schema": "hroof.sweep/1",
        "machine": machine_name,
        "points": [p.to_dict() for p in points],
        "walls": [w.to_dict() for w in walls],
    }


@dataclass(frozen=True)
class Wall:
    """A locality wall: between two sweep points, a level's bytes per flop jump."""

    level: str
    param: str
    before: Any
    after: Any
    bytes_per_flop_before: float
    bytes_per_flop_after: float
    footprint_before: int
    footprint_after: int
    capacity: int | None

    def to_dict(self) -> dict:
        return dict(self.__dict__)


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
        for idx, (x, y) in enumerate(zip(prev, cur, strict=True)):
            if idx == 0 or x is None or y is None or x <= 0:
                continue
            if y >= jump * x:
                holder = a.result.levels[idx - 1]  # the level that stopped holding the data
                walls.append(
                    Wall(holder.name, param, a.params[param], b.params[param], x, y,
                         a.footprint, b.footprint, holder.size)
                )  # fmt: skip
        prev = cur
    return walls
