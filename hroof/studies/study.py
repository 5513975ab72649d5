"""A study: every kernel over its parameter ranges, on every machine, as one grid.

A study file (TOML; ``examples/walls.toml``)::

    name = "walls"
    machines = ["skylake-sp", "zen4"]
    [options]
    classify = true      # miss classes (default true)
    flush = true         # final flush of dirty lines (default true)
    sample_sets = "1/16" # simulate 1/K of the sets, counts x K (default "1/1": all)
    [[kernel]]
    name = "stencil7"
    params = { n = "8..256:x2" }     # a value list or range, as for ``hroof sweep``
    axis = "n"                       # the parameter the walls are found along (optional)

:func:`run_study` binds every point first (a point whose parameters a kernel
rejects is a failed point, named, and the rest run), takes what the result cache
holds, sends the rest to an executor (:mod:`hroof.studies.executor`) and hands each
point to ``on_point`` as it finishes, so a caller can stream it to disk. The
client writes the cache, so a study interrupted and run again simulates only what
had not finished. :func:`study_walls` finds the locality walls per kernel, machine
and setting of the other parameters; :func:`study_doc` is the ``hroof.study/1``
document, :func:`tidy_rows` the tidy table (one row per point and level) and
:func:`study_report` a Markdown report.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hroof._base.errors import HroofError
from hroof._base.toml import load_toml
from hroof._base.units import format_bytes
from hroof.cachesim import SimResult
from hroof.machine.cores import check_cores
from hroof.studies.cache import ResultCache, cache_key
from hroof.studies.executor import Executor, simulate_point, track
from hroof.studies.sweep import (
    MAX_POINTS,
    SweepPoint,
    find_walls,
    key_options,
    parse_values,
    point_label,
    run_options,
)
from hroof.traces import get_kernel
from hroof.traces.kernels import RUN_WORDS, split_run_words

SCHEMA = "hroof.study/1"
_TOP = {"name", "machines", "options", "kernel"}
_KERNEL = {"name", "params", "axis"}
_OPTIONS = {"classify", "flush", "sample_sets"}


@dataclass(frozen=True)
class KernelSpec:
    """One kernel of a study: its parameters (text, value lists and ranges allowed) and
    the parameter its walls are found along (None: the one integer parameter that varies)."""

    kernel: str
    params: dict[str, str] = field(default_factory=dict)
    axis: str | None = None

    def points(self) -> list[dict[str, str]]:
        k = get_kernel(self.kernel)
        for key in self.params:
            if key in RUN_WORDS:  # cores=P, grain=G (docs/cache-model.md, "Several cores")
                continue
            k.param(key)  # an unknown parameter, with a suggestion, before anything runs
        if self.axis is not None:
            k.param(self.axis)
        values = [parse_values(v) for v in self.params.values()]
        return [dict(zip(self.params, c, strict=True)) for c in itertools.product(*values)]

    def to_dict(self) -> dict:
        return {"kernel": self.kernel, "params": dict(self.params), "axis": self.axis}


@dataclass(frozen=True)
class StudySpec:
    """What a study varies: kernels, machines (names or files) and simulation options."""

    name: str
    kernels: tuple[KernelSpec, ...]
    machines: tuple[str, ...]
    classify: bool = True
    flush: bool = True
    sample_sets: int = 1  #: K of set sampling 1/K (:mod:`hroof.cachesim.sampling`)

    @property
    def options(self) -> dict:
        opts = {"classify": self.classify, "flush": self.flush}
        if self.sample_sets != 1:  # (unsampled studies keep their cache keys)
            opts["sample_sets"] = self.sample_sets
        return opts

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "kernels": [k.to_dict() for k in self.kernels],
            "machines": list(self.machines),
            "options": self.options,
        }


def _text(value: Any, where: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    if isinstance(value, list) and value and all(isinstance(v, (int, float, str)) for v in value):
        return ",".join(str(v) for v in value)
    raise HroofError(f"{where}: give a value, a list or a range text such as '8..256:x2'")


def _unknown(keys, allowed: set, where: str) -> None:
    from hroof._base.errors import suggest

    for key in keys:
        if key not in allowed:
            raise HroofError(f"{where}: unknown key {key!r}{suggest(key, allowed)}")


def parse_kernel_words(text: str) -> KernelSpec:
    """``"stencil7 n=8..64:x2 radius=1"`` (the command line's ``--kernel``)."""
    words = text.split()
    if not words:
        raise HroofError("--kernel needs a kernel name, e.g. --kernel 'stencil7 n=8..64:x2'")
    params = {}
    for word in words[1:]:
        key, sep, value = word.partition("=")
        if not sep or not key or not value:
            raise HroofError(f"--kernel {text!r}: parameters are written KEY=VALUES, got {word!r}")
        if key in params:
            raise HroofError(f"--kernel {text!r}: parameter {key} is given twice")
        params[key] = value
    get_kernel(words[0])
    return KernelSpec(words[0], params)


def load_study(path: str | Path) -> StudySpec:
    """Read and check a study file (unknown keys, kernels and parameters are errors)."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise HroofError(f"cannot read study file {path}: {exc.strerror or exc}") from None
    doc = load_toml(text)
    _unknown(doc, _TOP, str(path))
    options = doc.get("options", {})
    if not isinstance(options, dict):
        raise HroofError(f"{path}: [options] must be a table")
    _unknown(options, _OPTIONS, f"{path} [options]")
    for key, value in options.items():
        if key != "sample_sets" and not isinstance(value, bool):
            raise HroofError(f"{path} [options]: {key} must be true or false")
    sample_sets = _sample_sets(options.get("sample_sets", 1), f"{path} [options]")
    machines = doc.get("machines", [])
    if isinstance(machines, str):
        machines = [machines]
    if not isinstance(machines, list) or not all(isinstance(m, str) for m in machines):
        raise HroofError(f"{path}: machines must be a list of machine names or files")
    base = path.parent
    machines = [str(base / m) if m.endswith(".toml") and not Path(m).is_absolute() else m
                for m in machines]  # fmt: skip
    kernels = []
    entries = doc.get("kernel", [])
    if not isinstance(entries, list):
        raise HroofError(f"{path}: kernels are [[kernel]] tables")
    for i, entry in enumerate(entries, 1):
        where = f"{path} [[kernel]] #{i}"
        _unknown(entry, _KERNEL, where)
        if not isinstance(entry.get("name"), str):
            raise HroofError(f'{where}: needs name = "KERNEL"')
        params = entry.get("params", {})
        if not isinstance(params, dict):
            raise HroofError(f"{where}: params must be a table, e.g. params = {{ n = '8..64:x2' }}")
        axis = entry.get("axis")
        if axis is not None and not isinstance(axis, str):
            raise HroofError(f"{where}: axis must be a parameter name")
        get_kernel(entry["name"])
        kernels.append(KernelSpec(entry["name"],
                                  {k: _text(v, f"{where} {k}") for k, v in params.items()},
                                  axis))  # fmt: skip
    name = doc.get("name", path.stem)
    return StudySpec(str(name), tuple(kernels), tuple(machines), options.get("classify", True),
                     options.get("flush", True), sample_sets)  # fmt: skip


def _sample_sets(value: Any, where: str) -> int:
    """``sample_sets = "1/16"`` (or 16) -> 16."""
    import re

    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    m = re.fullmatch(r"\s*1\s*/\s*(\d+)\s*", value) if isinstance(value, str) else None
    if not m or int(m.group(1)) < 1:
        raise HroofError(f'{where}: sample_sets must be "1/K" with K a positive integer, '
                         f"got {value!r}")  # fmt: skip
    return int(m.group(1))


@dataclass(frozen=True)
class StudyPoint:
    """One point of a study: a kernel's parameters on a machine, and its result (or error).

    ``params`` are the bound parameters (every default filled in) when binding
    succeeded, else the values as given; ``error`` names why the point failed.
    """

    index: int
    kernel: str
    machine: str
    params: dict
    footprint: int | None = None
    result: SimResult | None = None
    cached: bool = False
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def label(self) -> str:
        return f"{point_label(self.kernel, self.params)} on {self.machine}"

    def to_dict(self) -> dict:
        return {
            "kernel": self.kernel,
            "machine": self.machine,
            "params": dict(self.params),
            "status": "ok" if self.ok else "failed",
            "error": self.error,
            "footprint": self.footprint,
            "cached": self.cached,
            "result": None if self.result is None else self.result.to_dict(),
        }


def check_study(spec: StudySpec) -> int:
    """Validate ``spec`` whole (kernels, parameter names and ranges, machines) and return
    its number of points, without simulating anything."""
    if not spec.kernels:
        raise HroofError(f"study {spec.name} has no kernels: add [[kernel]] or --kernel")
    total = sum(len(ks.points()) for ks in spec.kernels) * len(_machines(spec))
    if total > MAX_POINTS:
        raise HroofError(f"study {spec.name} has {total} points; at most {MAX_POINTS}")
    return total


def _machines(spec: StudySpec) -> dict:
    from hroof.machine.catalog import DEFAULT_MACHINE
    from hroof.machine.model import load_machine

    loaded = {}
    for name in spec.machines or (DEFAULT_MACHINE,):
        short = Path(name).stem if name.endswith(".toml") else name
        if short in loaded:
            raise HroofError(f"study {spec.name}: machine {short} is given twice")
        loaded[short] = load_machine(name)
    return loaded


def run_study(
    spec: StudySpec,
    executor: Executor,
    *,
    use_cache: bool = True,
    progress: Callable[[int], None] | None = None,
    on_point: Callable[[StudyPoint], None] | None = None,
) -> tuple[list[StudyPoint], dict]:
    """Run every point of ``spec``; return the points in grid order and the machines by name.

    The grid is kernels x their parameter values x machines. ``on_point`` gets each
    point when it is known (cached, failed to bind, or back from the executor), in
    that order; ``progress`` counts points. Nothing is raised for failed points:
    each carries its error.
    """
    check_study(spec)
    machines = _machines(spec)
    if spec.sample_sets != 1:  # a K that cannot sample a machine fails the study, not each point
        from hroof.cachesim.sampling import check_sample

        for machine in machines.values():
            check_sample(machine.hierarchy, spec.sample_sets)
    grids = [(ks, ks.points()) for ks in spec.kernels]
    store = ResultCache(enabled=use_cache)
    options = spec.options
    points: list[StudyPoint | None] = []
    todo = []  # (index, key, args)

    def finish(point: StudyPoint, count: bool = True) -> None:
        points[point.index] = point
        if on_point is not None:
            on_point(point)
        if count and progress is not None:
            progress(1)

    for (ks, grid), (mname, machine) in itertools.product(grids, machines.items()):
        kernel = get_kernel(ks.kernel)
        for given in grid:
            index = len(points)
            points.append(None)
            try:
                kparams, run = split_run_words(given)
                plan = kernel.bind(**kparams)
                if run.get("cores", 1) > 1:
                    check_cores(machine, run["cores"])
            except HroofError as exc:
                finish(StudyPoint(index, ks.kernel, mname, dict(given), error=str(exc)))
                continue
            opts = run_options(options, run, machine.hierarchy)
            key = cache_key(ks.kernel, plan.params, machine.hierarchy,
                            key_options(opts, machine.hierarchy))  # fmt: skip
            params = {**plan.params, **run}
            hit = store.get(key, machine.hierarchy.name)
            if hit is not None:
                finish(StudyPoint(index, ks.kernel, mname, params, plan.footprint, hit, True))
                continue
            todo.append((index, key, plan, opts))
            points[index] = StudyPoint(index, ks.kernel, mname, params, plan.footprint)
    argsets = [
        (points[i].kernel, plan.params, machines[points[i].machine].hierarchy, opts)
        for i, _, plan, opts in todo
    ]
    rejected = sum(p is not None and not p.ok for p in points)
    for out in track(executor, simulate_point, argsets, progress, failed=rejected):
        index, key, _, _ = todo[out.index]
        pending = points[index]
        if out.ok:
            store.put(key, out.value)
            done = StudyPoint(index, pending.kernel, pending.machine, pending.params,
                              pending.footprint, SimResult.from_dict(out.value))  # fmt: skip
        else:
            done = StudyPoint(index, pending.kernel, pending.machine, pending.params,
                              pending.footprint, error=out.error)  # fmt: skip
        finish(done, count=False)
    return list(points), machines


def _axis(ks: KernelSpec, points: Sequence[StudyPoint]) -> str | None:
    if ks.axis is not None:
        return ks.axis
    vary = [k for k, v in ks.params.items() if len(parse_values(v)) > 1]
    ints = [k for k in vary if all(isinstance(p.params.get(k), int) for p in points)]
    if len(ints) == 1:
        return ints[0]
    return "n" if "n" in ints else None


def study_walls(spec: StudySpec, points: Sequence[StudyPoint]) -> list[dict]:
    """The locality walls of every kernel on every machine, along the kernel's axis,
    for each setting of its other parameters (failed points left out)."""
    out = []
    for ks in spec.kernels:
        mine = [p for p in points if p.ok and p.kernel == ks.kernel]
        axis = _axis(ks, mine)
        if axis is None:
            continue
        groups: dict[tuple, list[StudyPoint]] = {}
        for p in mine:
            fixed = tuple((k, repr(v)) for k, v in p.params.items() if k != axis)
            groups.setdefault((p.machine, fixed), []).append(p)
        for (machine, _), group in groups.items():
            if len(group) < 2:
                continue
            sweep = [SweepPoint(p.params, p.footprint, p.result, p.cached) for p in group]
            fixed = {k: group[0].params[k] for k in ks.params if k != axis}
            for wall in find_walls(sweep, axis):
                wall = replace(wall, cores=group[0].result.cores)
                out.append({"kernel": ks.kernel, "machine": machine, "fixed": fixed,
                            **wall.to_dict()})  # fmt: skip
    return out


def study_doc(spec: StudySpec, points: Sequence[StudyPoint], walls: list[dict]) -> dict:
    """The study as JSON-ready data, schema ``hroof.study/1``: the spec, every point in
    grid order (``result`` a ``hroof.result/1`` document, or null with ``error``), walls."""
    failed = [p for p in points if not p.ok]
    return {
        "schema": SCHEMA,
        **spec.to_dict(),
        "total": len(points),
        "failed": len(failed),
        "cached": sum(p.cached for p in points),
        "points": [p.to_dict() for p in points],
        "walls": walls,
    }


def tidy_header(spec: StudySpec) -> list[str]:
    """The columns of :func:`tidy_rows`: kernel, machine, every parameter of every kernel
    of the study, then the point's and the level's figures (known before anything runs,
    so rows can be streamed)."""
    names = list(dict.fromkeys(p.name for ks in spec.kernels for p in get_kernel(ks.kernel).params))
    return ["kernel", "machine", *names, "status", "cached", "footprint_bytes", "flops",
            "level", "bytes", "ai", "misses", "compulsory", "capacity", "conflict",
            "error"]  # fmt: skip


def tidy_rows(point: StudyPoint, header: Sequence[str]) -> list[list]:
    """One row per level (memory included) of a point; one row for a failed point."""
    params = [point.params.get(k, "") for k in header[2 : header.index("status")]]
    head = [point.kernel, point.machine, *params, "ok" if point.ok else "failed",
            point.cached, point.footprint if point.footprint is not None else ""]  # fmt: skip
    r = point.result
    if r is None:
        return [[*head, "", "", "", "", "", "", "", point.error or ""]]
    rows = []
    for lv in r.levels:
        by = lv.misses_by_class or {}
        rows.append([*head, r.flops, lv.name, lv.bytes, lv.ai, lv.misses,
                     by.get("compulsory", ""), by.get("capacity", ""), by.get("conflict", ""),
                     ""])  # fmt: skip
    rows.append([*head, r.flops, r.memory.name, r.memory.bytes, r.memory.ai, "", "", "", "", ""])
    return rows


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def study_report(spec: StudySpec, points: Sequence[StudyPoint], walls: list[dict],
                 engine: str) -> str:  # fmt: skip
    """A Markdown report: what ran where, the walls per kernel and machine, the failures."""
    failed = [p for p in points if not p.ok]
    cached = sum(p.cached for p in points)
    lines = [
        f"# hroof study: {spec.name}",
        "",
        f"{len(points)} points ({_count(len(spec.kernels), 'kernel')} x "
        f"{_count(len(spec.machines) or 1, 'machine')}), {cached} from the result cache, "
        f"{len(failed)} failed; run on {engine}.",
        "",
        "## Locality walls",
        "",
        "Where a level's traffic per flop jumps by 25 % or more: the level stopped holding",
        "the data between the two values of the axis parameter.",
        "",
    ]
    if walls:
        lines += ["| kernel | machine | fixed | level | capacity | between | bytes/flop |",
                  "|---|---|---|---|---|---|---|"]  # fmt: skip
        for w in walls:
            fixed = " ".join(f"{k}={v}" for k, v in w["fixed"].items()) or "-"
            cap = format_bytes(w["capacity"]) if w["capacity"] else "-"
            lines.append(
                f"| {w['kernel']} | {w['machine']} | {fixed} | {w['level']} | {cap} | "
                f"{w['param']}={w['before']} .. {w['after']} | "
                f"{w['bytes_per_flop_before']:.3g} -> {w['bytes_per_flop_after']:.3g} |"
            )
    else:
        lines.append("No walls in the ranges studied.")
    lines += ["", "## Failed points", ""]
    lines += [f"- {p.label}: {p.error}" for p in failed] or ["None."]
    return "\n".join(lines) + "\n"


__all__ = [
    "SCHEMA",
    "KernelSpec",
    "StudyPoint",
    "StudySpec",
    "check_study",
    "load_study",
    "parse_kernel_words",
    "run_study",
    "study_doc",
    "study_report",
    "study_walls",
    "tidy_header",
    "tidy_rows",
]
