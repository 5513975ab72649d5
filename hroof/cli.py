"""The ``hroof`` command line: argparse subcommands, one ``cmd_*`` function each.

Only this module sees argparse: every ``cmd_*`` function turns its ``args`` into
plain values and calls the library (:mod:`hroof.traces`, :mod:`hroof.cachesim`).
:func:`main` maps bad input to exit status 2 and one line on stderr
(``hroof: error: ...``), never a traceback, and prints a result only once it is
complete. The simulator (and so Numba) is imported by the commands that need
it, so ``hroof --help`` answers at once.

Exit status: 0 success, 2 bad input or usage, 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import textwrap
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import hroof
from hroof._base.errors import HroofError, suggest
from hroof._base.files import partial_path, replace_with, save_figure, write_text
from hroof._base.progress import Progress
from hroof.traces import DEFAULT_CHUNK, FORMATS, count_accesses, detect_format, iter_trace

if TYPE_CHECKING:
    from hroof.cachesim import HierarchyConfig, SimResult

__all__ = ["build_parser", "format_bytes", "format_machine", "format_result", "main"]

#: The trace ``hroof demo`` simulates: a 2D 5-point Jacobi stencil on a 48x48
#: grid, 5 loads and 1 store per interior point (46 x 46 = 2,116 points).
EXAMPLE_TRACE = Path(hroof.__file__).parent / "data" / "example.din"
EXAMPLE_POINTS = 46 * 46
#: 4 adds and 1 multiply (by 1/4) per point of the Jacobi average.
EXAMPLE_FLOPS = EXAMPLE_POINTS * 5

#: Width the report is laid out for when stdout is not a terminal.
REPORT_WIDTH = 100

_MAX_ACCESS_SIZE = (1 << 32) - 1
_TRAFFIC_LABELS = {
    "compulsory": "compulsory",
    "write_allocate": "write-alloc",
    "capacity": "capacity",
    "conflict": "conflict",
}


# ============================================================================ formatting
def format_bytes(nbytes: int) -> str:
    """Format a byte count for people: binary units, one decimal.

    >>> format_bytes(512), format_bytes(1536), format_bytes(5 * 2**30)
    ('512 B', '1.5 KiB', '5.0 GiB')
    """
    if nbytes < 1024:
        return f"{nbytes} B"
    value = float(nbytes)
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        value /= 1024
        if round(value, 1) < 1024 or unit == "PiB":
            break
    return f"{value:.1f} {unit}"


def _assignments(params: dict) -> str:
    """``KEY=VALUE`` words as a user would type them (booleans lower case)."""
    return " ".join(
        f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in params.items()
    )


def _int(n: int) -> str:
    return f"{n:,}"


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def _ai(ai: float | None) -> str:
    """Arithmetic intensity (FLOP/byte) with about three significant digits."""
    if ai is None:
        return "-"
    if ai >= 100:
        return f"{ai:,.0f}"
    if ai >= 10:
        return f"{ai:.1f}"
    if ai >= 1:
        return f"{ai:.2f}"
    return f"{ai:.3f}"


@dataclass(frozen=True)
class _Col:
    """One table column: header (``\\n`` for two lines), alignment, spaces before it."""

    header: str
    align: str = ">"
    gap: int = 2


def _table(cols: Sequence[_Col], rows: Sequence[Sequence[str]]) -> list[str]:
    """Lay out a table: headers bottom-aligned, each column as wide as its widest cell."""
    heads = [c.header.split("\n") for c in cols]
    nhead = max(len(h) for h in heads)
    heads = [[""] * (nhead - len(h)) + h for h in heads]
    widths = [max([len(x) for x in heads[i]] + [len(r[i]) for r in rows]) for i in range(len(cols))]

    def line(cells: Sequence[str]) -> str:
        out = []
        for i, (col, cell) in enumerate(zip(cols, cells, strict=True)):
            gap = " " * col.gap if i else ""
            out.append(gap + (cell.rjust(widths[i]) if col.align == ">" else cell.ljust(widths[i])))
        return "".join(out).rstrip()

    return [line([h[k] for h in heads]) for k in range(nhead)] + [line(r) for r in rows]


def _width() -> int:
    """Columns to lay the report out for: the terminal's if stdout is one, else 100."""
    try:
        if sys.stdout.isatty():
            return max(60, shutil.get_terminal_size((REPORT_WIDTH, 24)).columns)
    except (AttributeError, ValueError):
        pass
    return REPORT_WIDTH


def _header_block(items: Sequence[tuple[str, str]], width: int) -> list[str]:
    """``key  value`` lines, values wrapped and indented under each other."""
    keyw = max(len(k) for k, _ in items) + 2
    out = []
    for key, value in items:
        for i, part in enumerate(value.split("\n")):
            wrapped = textwrap.wrap(part, max(20, width - keyw), break_on_hyphens=False) or [""]
            for j, text in enumerate(wrapped):
                label = key if i == 0 and j == 0 else ""
                out.append(f"{label:<{keyw}}{text}".rstrip())
    return out


def format_result(
    result: SimResult,
    machine: HierarchyConfig | None = None,
    *,
    flops_note: str | None = None,
    width: int = REPORT_WIDTH,
) -> str:
    """Render a simulation result as a per-level table for a terminal.

    The header names the source, accesses, flops, machine, options and timing;
    then one row per cache level and one for memory (lookups, hits, hit %,
    misses, misses by class, write-allocate fills, writebacks, the bytes of
    the level and its arithmetic intensity in FLOP/byte); then, when misses
    were classified, the traffic between each level and the next one down
    split by cause. Columns that would not fit ``width`` move the misses by
    class to a table of their own.

    Parameters
    ----------
    result : SimResult
        What :func:`hroof.cachesim.simulate` returned.
    machine : HierarchyConfig, optional
        The hierarchy simulated, for its description in the header.
    flops_note : str, optional
        How the flops were counted, shown next to them.
    width : int
        Columns to fit (100 by default).

    Returns
    -------
    str
        The report, lines joined by newlines, without a trailing newline.
    """
    levels = result.levels
    mem = result.memory
    core = result.core
    classified = result.classified and all(lv.misses_by_class is not None for lv in levels)
    flops_known = result.flops is not None

    # ---------------------------------------------------------------- header
    src = result.source
    if "trace" in src:
        what = ("trace", f"{src['trace']} ({src.get('format', '?')})")
    elif "kernel" in src:
        params = _assignments(src.get("params") or {})
        what = ("kernel", f"{src['kernel']} {params}".strip())
    else:
        what = ("source", str(src) if src else "arrays")
    kinds = [f"{_int(core.loads)} loads", f"{_int(core.stores)} stores"]
    if core.nt_stores:
        kinds.append(f"{_int(core.nt_stores)} non-temporal stores")
    moved = core.bytes_loaded + core.bytes_stored + core.bytes_nt
    accesses = f"{_int(result.accesses)} ({', '.join(kinds)}; {format_bytes(moved)} accessed)"
    if flops_known:
        flops = _int(result.flops) + (f" ({flops_note})" if flops_note else "")
    else:
        flops = "unknown (pass --flops N for arithmetic intensities)"
    if machine is not None:
        mach = f"{machine.name}\n{machine.describe()}"
    else:
        mach = result.machine or "?"
    options = [
        "misses classified (3C)" if result.classified else "misses not classified",
        "dirty lines flushed at the end" if result.flushed else "no final flush",
    ]
    sim_s = float(result.timing.get("simulate_s", 0.0))
    trace_s = float(result.timing.get("trace_s", 0.0))
    rate = f", {result.accesses / sim_s / 1e6:.2f} M accesses/s" if sim_s > 0 else ""
    produce = "generate trace" if "kernel" in src else "read trace"
    timing = f"simulate {sim_s:.3f} s{rate}; {produce} {trace_s:.3f} s"
    out = _header_block(
        [
            what,
            ("accesses", accesses),
            ("flops", flops),
            ("machine", mach),
            ("options", ", ".join(options)),
            ("time", timing),
        ],
        width,
    )

    # ---------------------------------------------------------------- per level
    fwd = any(lv.forwarded_stores for lv in levels)
    inval = any(lv.invalidations for lv in levels)

    def level_table(with_classes: bool) -> list[str]:
        cols = [_Col("level", "<", 0), _Col("lookups"), _Col("hits"), _Col("hit %"), _Col("misses")]
        if with_classes:
            cols += [_Col("compulsory"), _Col("capacity"), _Col("conflict")]
        cols += [_Col("write-alloc\nfills"), _Col("writebacks")]
        if fwd:
            cols.append(_Col("forwarded\nstores"))
        if inval:
            cols.append(_Col("NT\ninvalidated"))
        cols.append(_Col("bytes"))
        if flops_known:
            cols.append(_Col("AI\nFLOP/B"))
        rows = []
        for lv in levels:
            hit = f"{100 * lv.hits / lv.lookups:.1f}" if lv.lookups else "-"
            row = [lv.name, _int(lv.lookups), _int(lv.hits), hit, _int(lv.misses)]
            if with_classes:
                row += [_int(lv.misses_by_class[c]) for c in ("compulsory", "capacity", "conflict")]
            row += [_int(lv.write_allocate_fills), _int(lv.writebacks)]
            if fwd:
                row.append(_int(lv.forwarded_stores))
            if inval:
                row.append(_int(lv.invalidations))
            row.append(format_bytes(lv.bytes))
            if flops_known:
                row.append(_ai(lv.ai))
            rows.append(row)
        mrow = [mem.name] + [""] * (len(cols) - 1)
        mrow[len(cols) - 1 - flops_known] = format_bytes(mem.bytes)
        if flops_known:
            mrow[-1] = _ai(mem.ai)
        rows.append(mrow)
        return _table(cols, rows)

    table = level_table(classified)
    split = classified and max(len(x) for x in table) > width
    if split:
        table = level_table(False)
    out += ["", *table]
    notes = (
        "bytes: what a level moves for the level above (L1: the core's loads and stores); "
        f"{mem.name}: {format_bytes(mem.bytes_read)} read, "
        f"{format_bytes(mem.bytes_written)} written."
    )
    if flops_known:
        notes += " AI = flops / bytes (FLOP/byte)."
    out += textwrap.wrap(notes, width)

    # ---------------------------------------------------------------- classes
    if split:
        cols = [_Col("level", "<", 0), _Col("misses")]
        rows = []
        for name in ("compulsory", "capacity", "conflict"):
            cols += [_Col(name), _Col("%", gap=1)]
        for lv in levels:
            row = [lv.name, _int(lv.misses)]
            for name in ("compulsory", "capacity", "conflict"):
                n = lv.misses_by_class[name]
                row += [_int(n), _pct(n, lv.misses)]
            rows.append(row)
        out += ["", "Misses by class (Hill & Smith 3C), % of the level's misses:"]
        out += _table(cols, rows)

    # ---------------------------------------------------------------- traffic
    if classified:
        cols = [_Col("traffic", "<", 0), _Col("total")]
        for label in _TRAFFIC_LABELS.values():
            cols += [_Col(label), _Col("%", gap=1)]
        rows = []
        names = [lv.name for lv in levels] + [mem.name]
        for i, lv in enumerate(levels):
            part = lv.traffic_below
            row = [f"{names[i]} -> {names[i + 1]}", format_bytes(lv.traffic_below_bytes)]
            for key in _TRAFFIC_LABELS:
                row += [format_bytes(part[key]), _pct(part[key], lv.traffic_below_bytes)]
            rows.append(row)
        out += ["", "Traffic to the next level down, by cause (% of that traffic):"]
        out += _table(cols, rows)
    return "\n".join(out)


def format_machine(machine: hroof.roofline.Machine | HierarchyConfig) -> str:
    """Render a machine: its figures, then a table of its levels and memory.

    Sizes are in bytes, bandwidths in GB/s as seen by the core, the compute peak and
    ceilings in GFLOP/s, and each level's ridge point (peak / bandwidth) in FLOP/byte.
    A figure the machine file does not give is shown as "unknown" (ridge points as
    "-"). A bare :class:`HierarchyConfig` is shown with its levels' bandwidths only.
    """
    from hroof.roofline import Machine as _Machine

    if not isinstance(machine, _Machine):
        machine = _Machine(
            name=machine.name,
            hierarchy=machine,
            bandwidths=tuple(lv.bandwidth for lv in machine.levels),
            source=machine.source,
        )

    def gbs(bw: float | None) -> str:
        return "unknown" if bw is None else f"{bw:g} GB/s"

    peak = "unknown" if machine.peak is None else f"{machine.peak:g} GFLOP/s"
    if machine.peak is not None and machine.precision != "fp64":
        peak += f" ({machine.precision})"
    others = {k: v for k, v in machine.peaks.items() if k != machine.precision}
    if others:
        peak += "; " + ", ".join(f"{k} {v:g}" for k, v in others.items()) + " GFLOP/s"
    items = [("machine", machine.name), ("file", machine.source or "-")]
    if machine.kind != "cpu" or machine.sms is not None:
        sms = f", {machine.sms} SMs" if machine.sms is not None else ""
        items.append(("device", f"{machine.kind}{sms}"))
    items += [
        ("peak", peak),
        ("memory", f"{machine.memory_name}, {gbs(machine.memory_bandwidth)}"),
    ]
    if machine.missing():
        items.append(("unknown", ", ".join(machine.missing())))
    if machine.energy is not None:
        e = machine.energy
        parts = []
        if e.flop_pj is not None:
            parts.append(f"{e.flop_pj:g} pJ/flop")
        parts += [f"{name} {pj:g} pJ/B" for name, pj in e.byte_pj.items()]
        if e.constant_w is not None:
            parts.append(f"constant {e.constant_w:g} W")
        items.append(("energy", ", ".join(parts) or "table present, no figures"))
    for key, value in machine.measured.items():
        if isinstance(value, dict):
            value = f"{len(value)} entries (see the file)"
        elif isinstance(value, list):
            value = "; ".join(map(str, value))
        if value in ("", None):
            continue
        items.append((f"measured {key}", str(value)))
    head = _header_block(items, REPORT_WIDTH)
    ceilings = [*machine.ceilings, *machine.bandwidth_ceilings]
    if ceilings:
        head += ["", "Ceilings under the roofs (each names the optimisation that lifts a kernel "
                 "through it):"]  # fmt: skip
        ccols = [_Col("under", "<"), _Col("ceiling", "<"), _Col("value"), _Col("optimisation", "<")]
        crows = [[c.level or "peak", c.name, f"{c.value:g} {c.unit}", c.means] for c in ceilings]
        head += _table(ccols, crows)
    elif machine.peak is not None:
        head += ["", "Ceilings: none given"]
    cols = [
        _Col("level", "<", 0),
        _Col("size"),
        _Col("bytes"),
        _Col("ways"),
        _Col("line"),
        _Col("sets"),
        _Col("write-\nallocate", "<"),
        _Col("bandwidth"),
        _Col("ridge\nFLOP/B"),
    ]
    rows = []
    for lv, bw in zip(machine.hierarchy.levels, machine.bandwidths, strict=True):
        rows.append(
            [
                lv.name,
                _size_text(lv.size),
                _int(lv.size),
                str(lv.ways),
                f"{lv.line} B",
                _int(lv.sets),
                "yes" if lv.write_allocate else "no",
                gbs(bw),
                _ai(machine.ridge_point(lv.name)),
            ]
        )
    mem = machine.memory_name
    mem_row = [mem, *["-"] * 6, gbs(machine.memory_bandwidth), _ai(machine.ridge_point(mem))]
    rows.append(mem_row)
    return "\n".join([*head, "", *_table(cols, rows)])


def _size_text(nbytes: int) -> str:
    from hroof.cachesim import format_size

    return format_size(nbytes)


# ============================================================================ argument types
def _number(text: str) -> int:
    """Parse a whole number: ``1000``, ``1_000``, ``1,000`` or ``1e3``."""
    clean = text.strip().replace("_", "").replace(",", "")
    try:
        return int(clean)
    except ValueError:
        pass
    value = float(clean)  # ValueError for garbage, handled by the callers
    if not math.isfinite(value) or not value.is_integer():
        raise ValueError(text)
    return int(value)


def _flops_arg(text: str) -> int:
    try:
        value = _number(text)
    except ValueError:
        value = None
    if value is None or value < 0:
        raise argparse.ArgumentTypeError(
            f"must be a non-negative whole number of floating-point operations "
            f"(e.g. 1000000 or 1e6), got {text!r}"
        )
    return value


def _positive(what: str, largest: int | None = None):
    def parse(text: str) -> int:
        try:
            value = _number(text)
        except ValueError:
            value = None
        if value is None or value < 1 or (largest is not None and value > largest):
            top = f" up to {largest:,}" if largest is not None else ""
            raise argparse.ArgumentTypeError(f"must be a positive {what}{top}, got {text!r}")
        return value

    return parse


def _seconds(text: str) -> float:
    """A non-negative number of seconds (``0.2``)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a number of seconds >= 0, got {text!r}")
    return value


def _format_arg(text: str) -> str:
    name = text.strip().lower()
    if name not in FORMATS:
        raise argparse.ArgumentTypeError(
            f"unknown trace format {text!r}{suggest(name, FORMATS)}; "
            f"choose {', '.join(FORMATS[:-1])} or {FORMATS[-1]}"
        )
    return name


# ============================================================================ commands
def _load_machine(spec: str | None) -> HierarchyConfig:
    """Resolve ``--machine`` (errors about a file name the file)."""
    from hroof.machine.model import resolve_machine

    return resolve_machine(spec)


def _emit(text: str) -> None:
    """Write a complete result to stdout."""
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    sys.stdout.flush()


def _kernel_plan(name: str, assignments: list[str]):
    """Bind a registered kernel to command-line ``KEY=VALUE`` words."""
    from hroof.traces import get_kernel, parse_assignments

    return get_kernel(name).bind(**parse_assignments(assignments))


def cmd_simulate(args: argparse.Namespace) -> int:
    """``hroof simulate KERNEL|--trace FILE``: a kernel or a trace through a cache hierarchy."""
    from hroof.cachesim import simulate

    if args.threads == 2 and not args.no_classify:
        raise HroofError("--threads 2 needs --no-classify (classification runs on one thread)")
    if args.kernel is None and args.trace is None:
        raise HroofError("give a KERNEL (see 'hroof kernels') or --trace FILE")
    if args.kernel is not None and args.trace is not None:
        raise HroofError("give a KERNEL or --trace FILE, not both")
    if args.kernel is not None:
        for option in ("format", "flops"):
            if getattr(args, option) is not None:
                flag = "--" + option.replace("_", "-")
                raise HroofError(f"{flag} is for --trace; a kernel knows its own")
        plan = _kernel_plan(args.kernel, args.params)
        machine = _load_machine(args.machine)
        with Progress(plan.accesses, enabled=False if args.quiet else None) as bar:
            result = simulate(
                machine,
                plan.chunks(args.chunk_size),
                classify=not args.no_classify,
                flush=not args.no_flush,
                flops=plan.flops,
                source=plan.source(),
                progress=bar,
                threads=args.threads,
            )
        if args.json:
            _emit(result.to_json())
        else:
            text = format_result(result, machine, flops_note=plan.notes or None, width=_width())
            _emit(text + _advice(result, machine))
        return 0
    machine = _load_machine(args.machine)
    path = os.fspath(args.trace)
    fmt = args.format or detect_format(path)
    # iter_trace checks the file (exists, readable, npz layout) before anything runs.
    chunks = iter_trace(path, fmt, chunk_size=args.chunk_size, access_size=args.access_size)
    total = count_accesses(path, fmt)
    with Progress(total, enabled=False if args.quiet else None) as bar:
        result = simulate(
            machine,
            chunks,
            classify=not args.no_classify,
            flush=not args.no_flush,
            flops=args.flops,
            source={"trace": path, "format": fmt},
            progress=bar,
            threads=args.threads,
        )
    if args.json:
        _emit(result.to_json())
    else:
        _emit(format_result(result, machine, width=_width()) + _advice(result, machine))
    return 0


def _advice(result: SimResult, hierarchy: HierarchyConfig) -> str:
    """The optimisation guidance for a result, as a section to append to its table; empty
    when the machine lacks a figure it needs or the flops are unknown."""
    from hroof.roofline import load_machine
    from hroof.roofline.guidance import guidance

    if not result.flops or hierarchy.source is None:  # no flops (copy): no AI to guide by
        return ""
    machine = load_machine(hierarchy.source)
    if machine.missing() or not all(lv.bytes for lv in result.levels) or not result.memory.bytes:
        return ""
    lines = guidance(result, machine).lines(width=_width())
    return "\n\nRoofline guidance on " + machine.name + ":\n" + "\n".join(lines)


def cmd_demo(args: argparse.Namespace) -> int:
    """``hroof demo``: the 7-point stencil small, large and swept, with a report."""
    from hroof.machine.model import load_machine
    from hroof.plots.report import (
        DEMO_KERNEL,
        DEMO_LARGE,
        DEMO_SMALL,
        DEMO_SWEEP,
        format_rows,
        run_demo,
        summary_table,
        write_report,
    )

    machine = load_machine(args.machine)
    machine.require("hroof demo")
    try:  # before minutes of simulation, not after
        Path(args.out).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise HroofError(f"cannot write the report to {args.out}: {exc.strerror or exc}") from None
    with Progress(6, enabled=False if args.quiet else None, unit="points") as bar:
        demo = run_demo(machine, progress=bar)
    summary = summary_table(demo)
    written = write_report(
        demo.points, machine, Path(args.out),
        title=f"hroof demo: {DEMO_KERNEL} on {machine.name}", summary=summary,
    )  # fmt: skip
    lines = [
        f"hroof demo: {DEMO_KERNEL} at n={DEMO_SMALL} and n={DEMO_LARGE}, then swept over "
        f"n={DEMO_SWEEP}",
        f"machine   {machine.name}",
        f"          {machine.hierarchy.describe()}",
        "",
        format_rows(summary),
        "",
        "AI: flops per byte each level moves for the level above (FLOP/byte). A wall is the",
        "sweep step where the level below's traffic per flop jumps: the level stopped holding",
        "the three planes the stencil reuses; the layer condition predicts the same from the",
        "cache's capacity alone.",
        "",
    ]
    if demo.large.flops:
        from hroof.roofline.guidance import guidance

        g = guidance(demo.large, machine)
        lines += [f"n={DEMO_LARGE}: {g.lines()[0]}", "What to optimise next:"]
        for i, s in enumerate(g.steps, 1):
            lines += textwrap.wrap(s.text, _width(), initial_indent=f"  {i}. ",
                                   subsequent_indent="     ")  # fmt: skip
        if g.moot:
            lines.append(f"  (need not: {', '.join(s.what for s in g.moot)}: above the bound)")
        lines.append("")
    lines.append(f"report: {written[-1]} (figures beside it)")
    _emit("\n".join(lines))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """``hroof report RESULTS.json|DIR``: the report of a saved sweep."""
    from hroof.machine.model import load_machine
    from hroof.plots.report import load_sweep, write_report

    points, name = load_sweep(Path(args.results))
    machine = load_machine(args.machine)
    ran = [(lv.name, lv.size, lv.ways, lv.line) for lv in points[0].result.levels]
    have = [(lv.name, lv.size, lv.ways, lv.line) for lv in machine.hierarchy.levels]
    if ran != have:
        raise HroofError(
            f"the sweep's levels ({', '.join(f'{n} {s} B {w}-way' for n, s, w, _ in ran)}) are "
            f"not those of machine {machine.name}: pass the sweep's --machine"
        )
    src = Path(args.results)
    out = Path(args.out) if args.out else (src if src.is_dir() else src.parent)
    written = write_report(points, machine, out, title=f"hroof sweep on {name or machine.name}")
    _emit("wrote " + ", ".join(str(p) for p in written))
    return 0


def format_kernels() -> str:
    """``hroof kernels``: every registered kernel with its parameters and defaults."""
    from hroof.traces import kernels

    lines = []
    for k in kernels():
        lines.append(f"{k.name}: {k.summary}")
        for p in k.params:
            extra = f"; one of {', '.join(map(str, p.choices))}" if p.choices else ""
            default = str(p.default).lower() if isinstance(p.default, bool) else p.default
            lines.append(f"    {p.name}={default}  {p.doc}{extra}")
        if k.notes:
            lines.extend("    " + t for t in textwrap.wrap(k.notes, 92))
        lines.append("")
    lines.append(
        "Run one with: hroof simulate KERNEL KEY=VALUE ... (e.g. hroof simulate triad n=1e6);\n"
        "run it natively and time it with: hroof run KERNEL KEY=VALUE ..."
    )
    return "\n".join(lines)


def cmd_kernels(args: argparse.Namespace) -> int:
    """``hroof kernels``: list the kernels and their parameters."""
    _emit(format_kernels())
    return 0


def cmd_trace(args: argparse.Namespace) -> int:
    """``hroof trace KERNEL KEY=VALUE --out FILE``: write a kernel's trace to npz or din."""
    from hroof.traces import write_din, write_npz

    plan = _kernel_plan(args.kernel, args.params)
    out = Path(args.out)
    name = out.name.lower()
    if name.endswith(".npz"):
        writer = write_npz
    elif name.endswith((".din", ".din.gz")):
        writer = write_din
    else:
        raise HroofError(f"--out {out}: give a file ending in .npz, .din or .din.gz")
    # Written beside the target and renamed, so a failure leaves no partial file behind.
    try:
        replace_with(out, lambda tmp: writer(tmp, plan.chunks(args.chunk_size, reuse=False)))
    except HroofError as exc:
        raise HroofError(str(exc).replace(str(partial_path(out)), str(out))) from None
    _emit(
        f"wrote {out}: {plan.accesses:,} accesses of {plan.kernel} "
        f"({_assignments(plan.params)}), {plan.flops:,} flops"
    )
    return 0


def format_sweep(points, machine, walls) -> str:
    """The sweep as a table: one row per point, each level's AI, the bound and what binds."""
    from hroof.roofline.analysis import roofline
    from hroof.studies.sweep import varying

    vary = varying(points) or list(points[0].params)[:1]
    known = not machine.missing()
    cols = [_Col(k) for k in vary] + [_Col("footprint")]
    names = [lv.name for lv in points[0].result.levels] + [points[0].result.memory.name]
    cols += [_Col(f"{n} AI\nFLOP/B") for n in names]
    if known:
        cols += [_Col("bound\nGFLOP/s"), _Col("binds", "<")]
    measured = any(p.measured for p in points)
    if measured:
        cols += [_Col("measured\nGFLOP/s"), _Col("IQR\nGFLOP/s")]
        if known:
            cols += [_Col("measured/\npredicted"), _Col("verdict", "<")]
    poor = 0
    rows = []
    for p in points:
        r = p.result
        row = [str(p.params[k]) for k in vary] + [format_bytes(p.footprint)]
        row += [_ai(lv.ai) for lv in r.levels] + [_ai(r.memory.ai)]
        if known:
            rf = roofline(r, machine)
            perf, binding = rf.bound, rf.binding
            row += [f"{perf:.3g}", binding]
        if measured:
            row += _measured_cells(p, machine if known else None)
            poor += row[-1].startswith("POOR")
        rows.append(row)
    lines = [
        f"kernel    {points[0].result.source.get('kernel')}  ({len(points)} points)",
        f"machine   {machine.name}",
        f"          {machine.hierarchy.describe()}",
        "",
    ]
    lines += _table(cols, rows)
    if not known:
        lines.append(
            f"(no bounds: the machine has no {', '.join(machine.missing())}; "
            "see 'hroof machine show')"
        )
    if measured:
        from hroof.commands.run import is_measured_host

        host = is_measured_host(machine)
        lines += textwrap.wrap(
            "measured: the kernel run natively on this host (one thread), median GFLOP/s of "
            "the timed repeats and their interquartile range (IQR: the middle half); "
            + (
                f"predicted: the bound of {machine.name}, this host's measured figures "
                "('hroof machine measure')"
                if host
                else f"predicted: the bound of the machine model {machine.name}"
                + (", which is not this host (use --machine host)" if known else "")
            )
            + ". POOR: under half the bound (the roofline's poor-performance region)."
            + (f" {poor} of {len(points)} points are POOR." if poor else ""),
            REPORT_WIDTH,
        )
    from hroof.plots.report import predicted_walls

    predicted = predicted_walls(points, machine, vary[0]) if len(vary) == 1 else {}
    if walls:
        lines += ["", "Locality walls (where a level's traffic per flop jumps):"]
        for w in walls:
            lines.append(
                f"  {w.level} ({format_bytes(w.capacity)}): between {w.param}={w.before} "
                f"(footprint {format_bytes(w.footprint_before)}) and {w.param}={w.after} "
                f"(footprint {format_bytes(w.footprint_after)}): "
                f"{w.bytes_per_flop_before:.3g} -> {w.bytes_per_flop_after:.3g} bytes/flop below"
                + (
                    f"; the layer condition predicts n={predicted[w.level]}"
                    if w.level in predicted
                    else ""
                )
            )
    return "\n".join(lines)


def _measured_cells(point, machine) -> list[str]:
    """Measured GFLOP/s and its IQR; with a machine, measured/predicted and the verdict."""
    from hroof.roofline.measured import compare
    from hroof.roofline.measured import iqr_text as _iqr

    m = point.measured
    if not m:
        return ["-", "-"] + (["-", "-"] if machine is not None else [])
    cells = [f"{m['gflop_s']:.3g}", _iqr(m)]
    if machine is not None:
        c = compare(point.result, m["gflop_s"], machine)
        cells += [f"{c.ratio:.2f}", c.verdict] if c else ["-", "no flops"]
    return cells


def _sweep_outputs(out: Path, points, machine, walls, vary) -> list[Path]:
    """results.json, results.csv, the figures (PNG and SVG) and report.html in ``out``."""
    import csv
    import io
    import json

    from hroof.studies.sweep import sweep_doc

    doc = sweep_doc(points, machine.name, walls)
    written = []
    write_text(out / "results.json", json.dumps(doc, indent=1) + "\n")
    written.append(out / "results.json")
    buf = io.StringIO()
    names = [lv.name for lv in points[0].result.levels] + [points[0].result.memory.name]
    w = csv.writer(buf)
    measured = any(p.measured for p in points)
    w.writerow([*points[0].params, "footprint_bytes", "flops",
                *(f"{n}_bytes" for n in names), *(f"{n}_ai" for n in names),
                *(["measured_gflop_s", "measured_gflop_s_min", "measured_gflop_s_max"]
                  if measured else [])])  # fmt: skip
    for p in points:
        r = p.result
        m = p.measured or {}
        w.writerow([*p.params.values(), p.footprint, r.flops,
                    *(lv.bytes for lv in r.levels), r.memory.bytes,
                    *(lv.ai for lv in r.levels), r.memory.ai,
                    *([m.get("gflop_s"), m.get("gflop_s_min"), m.get("gflop_s_max")]
                      if measured else [])])  # fmt: skip
    write_text(out / "results.csv", buf.getvalue())
    written.append(out / "results.csv")
    if len(vary) == 1 and isinstance(points[0].params[vary[0]], int):
        from hroof.plots.report import write_report

        kernel = points[0].result.source.get("kernel")
        written += write_report(points, machine, out, title=f"hroof sweep: {kernel}")
    elif not machine.missing():
        from hroof.plots import roofline as plots

        fig = plots.plot_side_by_side(points, machine)
        for ext in ("png", "svg"):
            written.append(save_figure(fig, out / f"roofline.{ext}"))
    return written


def cmd_sweep(args: argparse.Namespace) -> int:
    """``hroof sweep KERNEL KEY=V1,V2 ...``: a kernel over a grid of parameter values."""
    from hroof.machine.model import load_machine
    from hroof.studies.sweep import expand_grid, find_walls, run_sweep, sweep_doc, varying
    from hroof.traces import parse_assignments

    grid = expand_grid(args.kernel, parse_assignments(args.params))
    machine = load_machine(args.machine)
    if args.measure:
        from hroof.native.core import require_native

        require_native(args.kernel)  # before minutes of simulation, not after
    elif args.min_time is not None:
        raise HroofError("--min-time is for --measure")
    with Progress(len(grid), enabled=False if args.quiet else None, unit="points") as bar:
        points = run_sweep(
            args.kernel, grid, machine.hierarchy, classify=not args.no_classify,
            flush=not args.no_flush, workers=args.workers, use_cache=not args.no_cache,
            progress=bar,
        )  # fmt: skip
    if args.measure:  # serially, after the simulations: nothing else runs while timing
        from hroof.studies.sweep import measure_points

        with Progress(
            len(points), label="measure", enabled=False if args.quiet else None, unit="points"
        ) as bar:
            points = measure_points(args.kernel, points, min_time=args.min_time, progress=bar)
    vary = varying(points)
    walls = []
    if len(vary) == 1 and isinstance(points[0].params[vary[0]], int):
        walls = find_walls(points, vary[0])
    written = []
    if args.out is not None:
        written = _sweep_outputs(Path(args.out), points, machine, walls, vary)
    if args.json:
        import json

        _emit(json.dumps(sweep_doc(points, machine.name, walls), indent=1))
    else:
        text = format_sweep(points, machine, walls)
        if written:
            text += "\n\nwrote " + ", ".join(str(p) for p in written)
        _emit(text)
    return 0


def cmd_machine_show(args: argparse.Namespace) -> int:
    """``hroof machine show NAME|FILE``: a machine's levels, bandwidths, peak and ridge points."""
    from hroof.roofline import load_machine

    _emit(format_machine(load_machine(args.machine)))
    return 0


def cmd_machine_detect(args: argparse.Namespace) -> int:
    """``hroof machine detect [--out FILE]``: the host's cache hierarchy as machine TOML.

    The text is parsed back and validated before it is printed or written, so a file
    that is written always loads with ``load_machine``; ``--out`` writes atomically.
    """
    from hroof.machine.host import host_toml, read_host
    from hroof.machine.model import machine_from_dict

    report = read_host(args.sysfs, args.cpuinfo)
    text = host_toml(report.machine, report.flags, report.notes)
    machine_from_dict(_tomllib().loads(text), source="<detected host>")  # must load back
    if args.out is None:
        _emit(text)
        return 0
    out = Path(args.out)
    write_text(out, text)
    levels = ", ".join(f"{lv.name} {_size_text(lv.size)}" for lv in report.machine.hierarchy.levels)
    _emit(f"wrote {out}: {report.machine.name}: {levels} (bandwidths and peak unknown)")
    return 0


def _tomllib():
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    return tomllib


def cmd_machine_list(args: argparse.Namespace) -> int:
    """``hroof machine list``: the machine files bundled with hroof."""
    from hroof.cachesim import load_hierarchy
    from hroof.machine.catalog import bundled_machines

    known = bundled_machines()
    if not known:
        _emit("no bundled machines")
        return 0
    namew = max(len(n) for n in known) + 2
    lines = []
    for name, path in known.items():
        try:
            h = load_hierarchy(path)
            sizes = ", ".join(f"{lv.name} {_size_text(lv.size)}" for lv in h.levels)
            desc = f"{h.name}: {sizes}"
        except HroofError as exc:
            desc = f"(unreadable: {exc})"
        lines.append(f"{name:<{namew}}{desc}")
    _emit("\n".join(lines))
    return 0


# ============================================================================ parser
class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line: ``hroof: error: ...``."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"hroof: error: {message} (see '{self.prog} --help')\n")


_DESCRIPTION = """\
hroof generates the memory-access stream of a loop kernel (or reads a trace file),
simulates it through a set-associative LRU cache hierarchy (L1..Ln, then memory),
classifies every miss at every level as compulsory, capacity or conflict, and turns
the bytes each level moves into arithmetic intensity (FLOP/byte) and roofline
bounds; swept over problem size, it finds the locality walls."""

_EPILOG = """\
examples:
  hroof demo                                  the 7-point stencil across the walls
  hroof kernels                               the kernels and their parameters
  hroof simulate stencil7 n=128               per-level table of one run
  hroof sweep stencil7 n=8..256:x2 --out d/   a size sweep, with figures and report
  hroof run stencil7 n=128 --predict          run it natively: measured vs predicted
  hroof simulate --trace run.din --flops 1e6  per-level table of a Dinero trace
  hroof machine show skylake-sp               a machine: levels, bandwidths, peak

Bad input exits with status 2 and one line on stderr."""


def build_parser() -> argparse.ArgumentParser:
    """The ``hroof`` argument parser (subcommands set ``func`` to their ``cmd_*``)."""
    fmt = argparse.RawDescriptionHelpFormatter
    parser = _Parser(prog="hroof", description=_DESCRIPTION, epilog=_EPILOG, formatter_class=fmt)
    parser.add_argument("--version", action="version", version=f"hroof {hroof.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")

    machine_help = (
        "cache hierarchy to simulate: the name of a bundled machine (see 'hroof machine "
        "list') or the path of a machine TOML file (default: the bundled 'default')"
    )

    # ---------------------------------------------------------------- kernels
    p = sub.add_parser(
        "kernels",
        help="list the kernels hroof can generate, with their parameters",
        description="List every registered kernel, its parameters, their defaults and units.",
    )
    p.set_defaults(func=cmd_kernels)

    # ---------------------------------------------------------------- sweep
    p = sub.add_parser(
        "sweep",
        help="simulate a kernel over a range of parameter values; find the locality walls",
        description=(
            "Simulate a kernel at every combination of the values given (KEY=V1,V2,... or a "
            "range KEY=16..512:x2, KEY=8..64:+8), on every core, and print each level's "
            "arithmetic intensity per point, the roofline bound and the level that binds "
            "(when the machine has bandwidths and a peak), and the locality walls: the "
            "sizes where a level stops holding the data. Results are cached (see "
            "docs/roofline.md), so a sweep run again costs nothing."
        ),
    )
    p.add_argument("kernel", metavar="KERNEL", help="a kernel (see 'hroof kernels')")
    p.add_argument(
        "params",
        nargs="+",
        metavar="KEY=VALUES",
        help="values to sweep (n=16..256:x2, n=8,12,16) and fixed parameters (nt=true)",
    )
    p.add_argument("--machine", metavar="NAME|FILE", help=machine_help)
    p.add_argument(
        "--out",
        metavar="DIR",
        help="also write results.json, results.csv, the figures (PNG and SVG) and "
        "report.html to DIR",
    )
    p.add_argument("--json", action="store_true", help="print the sweep as JSON")
    p.add_argument("--no-classify", action="store_true", help="do not classify misses")
    p.add_argument("--no-flush", action="store_true", help="no final flush of dirty lines")
    p.add_argument(
        "--workers",
        type=_positive("number of processes"),
        metavar="N",
        help="processes to run points in (default: one per core)",
    )
    p.add_argument("--no-cache", action="store_true", help="simulate every point again")
    p.add_argument(
        "--measure",
        action="store_true",
        help="also run the kernel natively at every point on this host (one thread, after "
        "the simulations) and show measured GFLOP/s beside the predicted bound, "
        "measured/predicted and POOR where under half the bound (see 'hroof run')",
    )
    p.add_argument(
        "--min-time",
        type=_seconds,
        metavar="S",
        help="with --measure: least timed seconds per point (default: 0.2)",
    )
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar on stderr")
    p.set_defaults(func=cmd_sweep)

    # ---------------------------------------------------------------- trace
    p = sub.add_parser(
        "trace",
        help="write a kernel's access trace to a file (npz or din)",
        description=(
            "Generate a kernel's exact access stream and write it as .npz or Dinero .din, "
            "so other simulators (Dinero, pycachesim) can be run on the same stream. "
            "Non-temporal stores cannot be written as din."
        ),
    )
    p.add_argument("kernel", metavar="KERNEL", help="a kernel (see 'hroof kernels')")
    p.add_argument("params", nargs="*", metavar="KEY=VALUE", help="the kernel's parameters")
    p.add_argument(
        "--out", required=True, metavar="FILE", help="output file: .npz, .din or .din.gz"
    )
    p.add_argument(
        "--chunk-size",
        type=_positive("number of accesses"),
        default=DEFAULT_CHUNK,
        metavar="N",
        help=f"accesses generated per chunk (default: {DEFAULT_CHUNK:,})",
    )
    p.set_defaults(func=cmd_trace)

    # ---------------------------------------------------------------- simulate
    p = sub.add_parser(
        "simulate",
        help="simulate a kernel or a trace file and print per-level counts",
        description=(
            "Generate a kernel's access stream (see 'hroof kernels'), or stream a "
            "memory-access trace file, through a simulated cache hierarchy and print, per "
            "level, lookups, hits, misses by class, write-allocate fills, writebacks, the "
            "bytes the level moves and its arithmetic intensity; or the full result as "
            "JSON (schema hroof.result/1)."
        ),
    )
    p.add_argument(
        "kernel", nargs="?", metavar="KERNEL", help="a kernel to generate (see 'hroof kernels')"
    )
    p.add_argument(
        "params",
        nargs="*",
        metavar="KEY=VALUE",
        help="the kernel's parameters, e.g. n=128 nt=true (defaults for the rest)",
    )
    p.add_argument(
        "--trace",
        metavar="FILE",
        help="trace file to simulate (npz, Dinero din or valgrind lackey; text formats "
        "may be gzip-compressed)",
    )
    p.add_argument(
        "--format",
        type=_format_arg,
        metavar="{" + ",".join(FORMATS) + "}",
        help="trace file format (default: told from the file name: .npz; .din, .dinero; "
        ".lackey, .trace, .log, .out)",
    )
    p.add_argument(
        "--flops",
        type=_flops_arg,
        metavar="N",
        help="floating-point operations the traced run performed (a count, not a rate; "
        "e.g. 1e6); gives each level's arithmetic intensity in FLOP/byte",
    )
    p.add_argument("--machine", metavar="NAME|FILE", help=machine_help)
    p.add_argument(
        "--no-classify",
        action="store_true",
        help="do not classify misses as compulsory/capacity/conflict (faster, less memory; "
        "the per-class fields are null)",
    )
    p.add_argument(
        "--no-flush",
        action="store_true",
        help="do not write dirty lines back at the end of the run (steady-state studies)",
    )
    p.add_argument(
        "--threads",
        type=int,
        choices=(1, 2),
        default=1,
        help="2: simulate L1 and the levels below on two threads, one chunk apart (same "
        "result; needs --no-classify)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the result as JSON (schema hroof.result/1) instead of the table",
    )
    p.add_argument(
        "--access-size",
        type=_positive("number of bytes", _MAX_ACCESS_SIZE),
        default=8,
        metavar="BYTES",
        help="size in bytes of din accesses whose line has no SIZE field (default: 8)",
    )
    p.add_argument(
        "--chunk-size",
        type=_positive("number of accesses"),
        default=DEFAULT_CHUNK,
        metavar="N",
        help=f"accesses read and simulated per chunk; bounds memory use (default: "
        f"{DEFAULT_CHUNK:,})",
    )
    p.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        help="no progress bar on stderr (it is shown only when stderr is a terminal, or "
        "when HROOF_PROGRESS=1)",
    )
    p.set_defaults(func=cmd_simulate)

    # ---------------------------------------------------------------- machine
    p = sub.add_parser(
        "machine",
        help="show, list or detect machines (cache levels, bandwidths, peak)",
        description="Inspect machine descriptions (cache levels, bandwidths, compute peak; "
        "TOML files) or detect this host's cache hierarchy.",
    )
    msub = p.add_subparsers(dest="machine_command", metavar="ACTION", title="actions")
    p.set_defaults(func=None, parser=p)
    q = msub.add_parser(
        "show",
        help="print a machine's cache levels, bandwidths, peak and ridge points",
        description="Print a machine's name, source file, compute peak and ceilings (GFLOP/s) "
        "and, per cache level and memory: capacity (bytes), ways, line size (bytes), sets, "
        "write-allocate, bandwidth (GB/s, or unknown) and ridge point (FLOP/byte, the "
        "arithmetic intensity where that level's bandwidth roof meets the peak).",
    )
    q.add_argument(
        "machine",
        metavar="NAME|FILE",
        help="a bundled machine name (see 'hroof machine list') or a machine TOML file",
    )
    q.set_defaults(func=cmd_machine_show)
    q = msub.add_parser(
        "list",
        help="list the bundled machine names",
        description="List the machines bundled with hroof, usable as --machine NAME.",
    )
    q.set_defaults(func=cmd_machine_list)
    q = msub.add_parser(
        "detect",
        help="write this host's cache hierarchy as a machine TOML file",
        description="Read cpu0's data and unified caches from Linux sysfs and the CPU model "
        "and flags (avx2, avx512f, fma) from /proc/cpuinfo, and print them as a machine "
        "TOML file (or write it with --out). Bandwidths and the compute peak cannot be "
        "read from the system: they are left unknown, as comments, never guessed.",
    )
    q.add_argument(
        "--out",
        metavar="FILE",
        help="write the TOML to FILE (atomically) instead of printing it",
    )
    q.add_argument(
        "--sysfs",
        metavar="DIR",
        default="/sys/devices/system/cpu/cpu0/cache",
        help="directory of index* cache descriptions (default: %(default)s)",
    )
    q.add_argument(
        "--cpuinfo",
        metavar="FILE",
        default="/proc/cpuinfo",
        help="cpuinfo file for the model name and flags (default: %(default)s)",
    )
    q.set_defaults(func=cmd_machine_detect)

    # ---------------------------------------------------------------- demo
    p = sub.add_parser(
        "demo",
        help="the 7-point stencil small, large and swept across the walls, with a report",
        description=(
            "Simulate the 3D 7-point stencil at n=16 and n=256 on the default machine "
            "(or --machine), sweep it over n=8..256:x2 across the locality walls, print a "
            "summary (each level's AI small and large, the bound and what binds, the walls "
            "found and the layer conditions' prediction), and write a self-contained HTML "
            "report with the figures to DIR (default hroof-demo/)."
        ),
    )
    p.add_argument("--out", metavar="DIR", default="hroof-demo",
                   help="where the report and figures go (default: hroof-demo)")  # fmt: skip
    p.add_argument("--machine", metavar="NAME|FILE", help=machine_help)
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar on stderr")
    p.set_defaults(func=cmd_demo)

    # ---------------------------------------------------------------- report
    p = sub.add_parser(
        "report",
        help="render the report of a saved sweep (hroof sweep --out DIR)",
        description="Render the figures and report.html of a sweep saved by 'hroof sweep "
        "--out DIR', from DIR or DIR/results.json, without simulating again.",
    )
    p.add_argument("results", metavar="RESULTS.json|DIR", help="a saved sweep")
    p.add_argument("--machine", metavar="NAME|FILE", help="the sweep's machine (for the roofs)")
    p.add_argument("--out", metavar="DIR", help="where to write (default: beside the results)")
    p.set_defaults(func=cmd_report)

    # Commands kept in hroof/commands/, one module per topic.
    from hroof.commands import accel, energy, measure, run, spmv_blocking, table

    for module in (run, energy, measure, spmv_blocking, table, accel):
        module.register(sub, msub)
    parser.set_defaults(func=None, parser=parser)
    return parser


# ============================================================================ entry point
def _one_line(message: str) -> str:
    return " ".join(message.split()) or "unknown error"


def _fail(message: str) -> int:
    sys.stderr.write(f"hroof: error: {_one_line(message)}\n")
    sys.stderr.flush()
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``hroof`` command line and return its exit status.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments without the program name (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0 on success, 2 for bad input or usage (one line on stderr), 130 when
        interrupted.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(None if argv is None else list(argv))
        if args.func is None:
            which = args.parser
            choices = (
                "show, list, detect, measure, import-ert"
                if which is not parser
                else "kernels, simulate, sweep, run, trace, machine, demo, report, energy, "
                "spmv-blocking, table, gemm, network, coalesce, mwp"
            )
            which.error(f"missing command; choose one of {choices}")
    except SystemExit as exc:  # --help, --version, usage errors
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 2)
    try:
        return args.func(args)
    except HroofError as exc:
        return _fail(str(exc))
    except BrokenPipeError:  # stdout closed early, e.g. `hroof ... | head`
        with suppress(OSError, ValueError, AttributeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return 1
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        return _fail(f"{where}{exc.strerror or exc}")
    except KeyboardInterrupt:
        sys.stderr.write("hroof: interrupted\n")
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
