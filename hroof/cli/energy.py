"""``hroof energy``: a kernel's energy, power and energy efficiency (roofline model of energy).

One run (every ``KEY=VALUE`` a single value): simulate, then print per level the
bytes, the energy and its share, and the run's time, energy, power, GFLOP/J and
what dominates; ``--plot FILE`` draws the efficiency arch and the power line.
A sweep (a value list or range, ``n=16..256:x2``): simulate every point (in
parallel, cached, as ``hroof sweep``), print one row per point, and with
``--out DIR`` write ``energy.json`` and the figures ``efficiency.png``,
``power.png`` and ``breakdown.png``. The model is :mod:`hroof.roofline.energy`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hroof._base.errors import HroofError
from hroof._base.files import figure_format, save_figure, write_text
from hroof._base.units import format_si
from hroof.cli.options import (
    open_engine,
    quiet_option,
    simulation_options,
    workers_option,
)
from hroof.cli.text import (
    Col,
    ai_text,
    assignments_text,
    emit,
    format_bytes,
    header_block,
    int_text,
    term_width,
    text_table,
)

_DESCRIPTION = """\
Simulate a kernel on a machine and estimate its energy with the roofline model of energy
(Choi, Bedard, Fowler and Vuduc, IPDPS 2013), level by level:

  time    T = max(flops / peak, max over levels of bytes / bandwidth)
  energy  E = flops x flop_pj + sum over levels of bytes x byte_pj + constant_w x T
  power   P = E / T;  efficiency = flops / E (GFLOP/J)

The machine needs an [energy] table (flop_pj, constant_w, byte_pj for memory at least),
a compute peak and a memory bandwidth. Cache levels without byte_pj are not charged and
levels without a bandwidth are not timed; both are named in the output.

With every KEY=VALUE a single value: one run, printed per level (--plot FILE draws the
efficiency arch and the power line with the run's dots). With a list or a range
(n=16..256:x2, n=8,16,32): a sweep, one row per point (--out DIR writes energy.json,
efficiency.png, power.png and breakdown.png: energy per flop by level across the sweep,
where the locality walls show up as energy walls)."""

_EPILOG = """\
examples:
  hroof energy stencil7 n=64 --machine i7-950
  hroof energy triad n=1000000 --machine i7-950 --plot triad-energy.png
  hroof energy stencil7 n=8..128:x2 --machine i7-950 --out energy/
  hroof energy gemm m=64 n=64 k=64 --machine my-gpu.toml --json

a machine file's [energy] table (see docs/energy.md):
  [energy]
  flop_pj = 670.0                  # pJ per flop at the precision of the peak
  constant_w = 122.0               # W drawn whatever the machine does
  byte_pj = { DRAM = 795.0 }       # pJ per byte moved at a level (memory at least)
  source = "Choi et al., IPDPS 2013"
"""


def register(sub, machine_sub) -> None:
    """Add ``hroof energy`` to the ``hroof`` subparsers (``machine_sub``: no action there)."""
    p = sub.add_parser(
        "energy",
        help="a kernel's energy, power and GFLOP/J per level (roofline model of energy)",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("kernel", metavar="KERNEL", help="a kernel (see 'hroof kernels')")
    p.add_argument(
        "params",
        nargs="*",
        metavar="KEY=VALUE",
        help="the kernel's parameters; a list or range (n=16..256:x2) makes a sweep",
    )
    from hroof.machine.catalog import DEFAULT_MACHINE

    p.add_argument(
        "--machine",
        metavar="NAME|FILE",
        help="a bundled machine with an [energy] table (i7-950, gtx580) or a machine TOML "
        f"file with one (default: {DEFAULT_MACHINE}, which has none)",
    )
    p.add_argument(
        "--plot",
        metavar="FILE",
        help="one run: write the efficiency arch and the power line to FILE (.png or .svg)",
    )
    p.add_argument(
        "--out",
        metavar="DIR",
        help="a sweep: write energy.json, efficiency.png, power.png and breakdown.png to DIR",
    )
    p.add_argument("--json", action="store_true", help="print the estimate(s) as JSON")
    simulation_options(p)

    workers_option(p)
    quiet_option(p)
    p.set_defaults(func=cmd_energy)


# ---------------------------------------------------------------------------- text
def _g(x: float | None, unit: str = "") -> str:
    if x is None:
        return "-"
    return f"{x:.3g}{unit}"


def _machine_line(model) -> str:
    per_byte = ", ".join(f"{lv.name} {lv.byte_pj:g}" for lv in model.levels if lv.byte_pj)
    text = (f"{model.flop_pj:g} pJ/flop ({model.precision}), {model.constant_w:g} W constant, "
            f"pJ/byte: {per_byte}")  # fmt: skip
    text += f"\n({model.source})" if model.source else ""
    return text + (f"\nUNVERIFIED: {model.unverified}" if model.unverified else "")


def _notes(model, estimates, results=()) -> list[str]:
    from hroof.machine.model import CONSTANT_TERM
    from hroof.roofline.energy import precision_mismatch

    out = [f"constant: {CONSTANT_TERM}"]
    other = sorted({p for r in results if (p := precision_mismatch(r, model))})
    if other:
        out.append(
            f"precision: the kernel's flops are {', '.join(other)} but flop_pj and the peak "
            f"are the machine's {model.precision} figures, not rescaled: the flops' energy "
            f"and time are those of {model.precision} flops"
        )
    uncharged = sorted({n for e in estimates for n in e.uncharged}, key=model.level_names.index)
    untimed = sorted({n for e in estimates for n in e.untimed}, key=model.level_names.index)
    if uncharged:
        out.append(
            f"not charged: {', '.join(uncharged)} (no byte_pj in [energy]: their bytes cost "
            "no energy here, so the energy is a lower bound)"
        )
    if untimed:
        out.append(
            f"not timed: {', '.join(untimed)} (no bandwidth: their bytes take no time here, "
            "so the time and the constant energy are lower bounds)"
        )
    return out


def format_energy(result, model, estimate, *, width: int) -> str:
    """One run's energy: per-level table, then time, energy, power, efficiency, dominant."""

    src = result.source
    run = f"{src.get('kernel')} ({assignments_text(src.get('params', {}))})" if src else "?"
    lines = header_block(
        [("kernel", run), ("machine", model.machine), ("energy", _machine_line(model))], width
    )
    total = estimate.total_j
    ais = {lv.name: lv.ai for lv in result.levels}
    ais[result.memory.name] = result.memory.ai
    cols = [Col("term", "<"), Col("count"), Col("AI\nFLOP/B"), Col("pJ\neach"),
            Col("time"), Col("energy"), Col("share")]  # fmt: skip
    times = {lv.name: (None if lv.bandwidth is None else b / (lv.bandwidth * 1e9))
             for lv in model.levels for b in [_bytes(result, lv.name)]}  # fmt: skip
    rows = [["flops", int_text(estimate.flops), "-", f"{model.flop_pj:g}",
             format_si(estimate.flops / (model.peak * 1e9), "s"),
             format_si(estimate.part("flops").joules, "J"),
             _share(estimate.part("flops").joules, total)]]  # fmt: skip
    for lv in model.levels:
        nbytes = _bytes(result, lv.name)
        joules = estimate.part(lv.name).joules if lv.byte_pj is not None else None
        rows.append([f"{lv.name} bytes", int_text(nbytes), ai_text(ais.get(lv.name)),
                     "-" if lv.byte_pj is None else f"{lv.byte_pj:g}",
                     format_si(times[lv.name], "s"),
                     "not charged" if joules is None else format_si(joules, "J"),
                     "-" if joules is None else _share(joules, total)])  # fmt: skip
    const = estimate.part("constant").joules
    rows.append(["constant", "-", "-", f"{model.constant_w:g} W", format_si(estimate.time_s, "s"),
                 format_si(const, "J"), _share(const, total)])  # fmt: skip
    lines += ["", *text_table(cols, rows), ""]
    binds = "compute" if estimate.binding == "compute" else f"{estimate.binding} bandwidth"
    dom = estimate.dominant
    dom_name = {"flops": "the flops", "constant": "the constant power"}.get(
        dom.name, f"{dom.name} bytes"
    )
    lines += header_block(
        [
            ("time", f"{format_si(estimate.time_s, 's')} ({_g(estimate.performance)} GFLOP/s; "
             f"{binds} sets it)"),
            ("energy", f"{format_si(total, 'J')} ({_g(estimate.pj_per_flop)} pJ/FLOP)"),
            ("power", format_si(estimate.power_w, "W")),
            ("efficiency", f"{_g(estimate.gflop_per_j)} GFLOP/J (at most "
             f"{model.max_efficiency:.3g} GFLOP/J with no traffic)"),
            ("dominant", f"{dom_name}: {_share(dom.joules, total)} of the energy"),
        ],
        width,
    )  # fmt: skip
    lines += _notes(model, [estimate], [result])
    return "\n".join(lines)


def _bytes(result, name: str) -> int:
    from hroof.roofline.energy import level_bytes

    return level_bytes(result)[name]


def _share(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def format_energy_sweep(points, model, estimates, vary) -> str:
    """A sweep's energy: one row per point."""

    cols = [Col(k) for k in vary] + [Col("footprint"), Col("time"), Col("energy"),
            Col("pJ/FLOP"), Col("power\nW"), Col("GFLOP/J"), Col("dominant", "<")]  # fmt: skip
    rows = []
    for p, e in zip(points, estimates, strict=True):
        rows.append([str(p.params[k]) for k in vary] + [
            format_bytes(p.footprint), format_si(e.time_s, "s"), format_si(e.total_j, "J"),
            _g(e.pj_per_flop),
            _g(e.power_w), _g(e.gflop_per_j),
            f"{e.dominant.name} ({_share(e.dominant.joules, e.total_j)})"])  # fmt: skip

    kernel = points[0].result.source.get("kernel")
    lines = header_block([("kernel", f"{kernel} ({len(points)} points)"),
                           ("machine", model.machine), ("energy", _machine_line(model))],
                          term_width())  # fmt: skip
    lines.append("")
    lines += text_table(cols, rows)
    lines += _notes(model, estimates, [p.result for p in points])
    return "\n".join(lines)


# ---------------------------------------------------------------------------- command
def cmd_energy(args: argparse.Namespace) -> int:
    """``hroof energy KERNEL KEY=VALUE ...``: energy, power and GFLOP/J of a run or a sweep."""
    from hroof._base.progress import Progress
    from hroof.machine.model import load_machine
    from hroof.roofline.energy import energy_doc, energy_model, energy_sweep_doc, run_energy
    from hroof.studies.sweep import expand_grid
    from hroof.traces import parse_assignments

    grid = expand_grid(args.kernel, parse_assignments(args.params))
    machine = load_machine(args.machine)
    model = energy_model(machine, "hroof energy")  # before anything runs
    sweep = len(grid) > 1
    if sweep and args.plot:
        raise HroofError("--plot is for one run; a sweep writes its figures with --out DIR")
    if not sweep and args.out:
        raise HroofError(
            "--out is for a sweep (give a list or range, e.g. n=16..256:x2); "
            "one run writes its figure with --plot FILE"
        )
    if args.plot:
        figure_format(args.plot, ("png", "svg"), "--plot")  # before the simulation
    if not sweep:
        from hroof.studies.runs import simulate_kernel
        from hroof.traces import get_kernel

        plan = get_kernel(args.kernel).bind(**grid[0])
        with Progress(plan.accesses, enabled=False if args.quiet else None) as bar:
            result = simulate_kernel(plan, machine.hierarchy, classify=not args.no_classify,
                                     flush=not args.no_flush, progress=bar)  # fmt: skip
        est = run_energy(result, model)
        written = []
        if args.plot:
            from hroof.plots.energy import plot_energy

            given = assignments_text(parse_assignments(args.params))
            title = f"{plan.kernel} ({given}) on {model.machine}" if given else (
                f"{plan.kernel} on {model.machine}")  # fmt: skip
            save_figure(
                plot_energy(result, model, title=title),
                args.plot,
                formats=("png", "svg"),
                flag="--plot",
            )
            written.append(args.plot)
        if args.json:
            emit(json.dumps(energy_doc(result, model, est), indent=1))
        else:
            text = format_energy(result, model, est, width=term_width())
            if written:
                text += "\n\nwrote " + ", ".join(written)
            emit(text)
        return 0

    from hroof.studies.sweep import run_sweep, varying

    with (
        open_engine(args) as engine,
        Progress(len(grid), enabled=False if args.quiet else None, unit="points") as bar,
    ):
        points = run_sweep(
            args.kernel, grid, machine.hierarchy, classify=not args.no_classify,
            flush=not args.no_flush, workers=args.workers, use_cache=not args.no_cache,
            progress=bar, executor=engine,
        )  # fmt: skip
    estimates = [run_energy(p.result, model) for p in points]
    vary = varying(points)
    doc = energy_sweep_doc(points, model, estimates)
    written, skipped = [], []
    if args.out:
        written = sweep_outputs(Path(args.out), points, model, vary, doc, skipped)
    if args.json:
        emit(json.dumps(doc, indent=1))
    else:
        text = format_energy_sweep(points, model, estimates, vary)
        if written:
            text += "\n\nwrote " + ", ".join(str(p) for p in written)
        text += "".join("\n" + line for line in skipped)
        emit(text)
    return 0


def _assignments_of(point, vary) -> str:
    return " ".join(f"{k}={point.params[k]}" for k in vary)


def sweep_outputs(out: Path, points, model, vary, doc, skipped: list[str]) -> list[Path]:
    """energy.json, efficiency.png, power.png and (one varying integer) breakdown.png.

    A figure left out is explained by a line appended to ``skipped``.
    """
    from hroof.plots.energy import plot_efficiency, plot_energy_breakdown, plot_power
    from hroof.studies.sweep import find_walls

    param = vary[0] if len(vary) == 1 else None
    figures = [("efficiency.png", plot_efficiency(model, points, param=param)),
               ("power.png", plot_power(model, points, param=param))]  # fmt: skip
    flopless = [p for p in points if not p.result.flops]
    if flopless:  # energy per flop has no meaning there; the J and W are still printed
        p = flopless[0]
        skipped.append(
            f"breakdown.png not drawn: the run at {_assignments_of(p, vary)} does no flops "
            "(the breakdown is in pJ per flop)"
        )
    elif len(vary) == 1 and all(isinstance(p.params[vary[0]], int) for p in points):
        walls = find_walls(points, vary[0])
        figures.append(
            ("breakdown.png", plot_energy_breakdown(points, model, vary[0], walls=walls))
        )
    written = []
    for name, fig in figures:  # every figure is drawn before any file is written
        save_figure(fig, out / name)
        written.append(out / name)
    write_text(out / "energy.json", json.dumps(doc, indent=1) + "\n")
    written.append(out / "energy.json")
    return written
