"""``hroof sweep`` and ``hroof report``: a kernel over a grid of parameters, and the report
of a saved sweep."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hroof._base.errors import HroofError
from hroof._base.files import save_figure, write_text
from hroof._base.outdir import moved, output_dir
from hroof._base.progress import Progress
from hroof.cli.options import (
    SAMPLE_HELP,
    machine_option,
    open_engine,
    quiet_option,
    sample_fraction,
    seconds,
    simulation_options,
    workers_option,
)
from hroof.cli.results import format_sweep
from hroof.cli.text import emit


def cmd_sweep(args: argparse.Namespace) -> int:
    """``hroof sweep KERNEL KEY=V1,V2 ...``: a kernel over a grid of parameter values."""
    from hroof.machine.model import load_machine
    from hroof.studies.sweep import (
        expand_grid,
        run_sweep,
        sweep_doc,
        sweep_walls,
        varying,
        wall_param,
    )
    from hroof.traces import parse_assignments
    from hroof.traces.kernels import split_run_words

    grid = expand_grid(args.kernel, parse_assignments(args.params))
    counts = {split_run_words(p)[1].get("cores", 1) for p in grid}
    if args.measure:
        from hroof.machine.host import comparison_machine
        from hroof.native.core import require_native

        require_native(args.kernel)  # before minutes of simulation, not after
        chosen = comparison_machine(args.machine)
        machine = load_machine(chosen.machine)
        if args.machine is None:
            sys.stderr.write(f"hroof: {chosen.note}\n")
    else:
        if args.min_time is not None:
            raise HroofError("--min-time is for --measure")
        machine = load_machine(args.machine)
    if max(counts) > 1:
        from hroof.machine.cores import check_cores

        if args.measure:
            raise HroofError("--measure runs one thread; it does not combine with cores > 1")
        for cores in sorted(counts):
            check_cores(machine, cores)
    with (
        open_engine(args) as engine,
        Progress(len(grid), enabled=False if args.quiet else None, unit="points") as bar,
    ):
        points = run_sweep(
            args.kernel, grid, machine.hierarchy, classify=not args.no_classify,
            flush=not args.no_flush, workers=args.workers, use_cache=not args.no_cache,
            progress=bar, executor=engine, sample_sets=args.sample_sets,
        )  # fmt: skip
    if args.measure:  # serially, after the simulations: nothing else runs while timing
        from hroof.studies.sweep import measure_points

        with Progress(
            len(points), label="measure", enabled=False if args.quiet else None, unit="points"
        ) as bar:
            points = measure_points(args.kernel, points, min_time=args.min_time, progress=bar)
    counts = {p.result.cores for p in points}
    if len(counts) == 1 and min(counts) > 1:  # every point on P cores: the P-core figures
        from hroof.machine.cores import for_cores

        machine = for_cores(machine, min(counts))
    vary = varying(points)
    walls = []
    along = wall_param(points)
    if along is not None:  # one parameter, or it and cores=P,Q,... (walls for each P)
        walls = sweep_walls(points, machine, along)
    written = []
    if args.out is not None:  # staged, then moved in together under a lock
        out = Path(args.out)
        with output_dir(out) as stage:
            written = moved(_sweep_outputs(stage, points, machine, walls, vary), stage, out)
    if args.json:
        import json

        emit(json.dumps(sweep_doc(points, machine, walls), indent=1))
    else:
        text = format_sweep(points, machine, walls)
        if written:
            text += "\n\nwrote " + ", ".join(str(p) for p in written)
        emit(text)
    return 0


def _sweep_outputs(out: Path, points, machine, walls, vary) -> list[Path]:
    """results.json, results.csv, the figures (PNG and SVG) and report.html in ``out``."""
    import csv
    import io
    import json

    from hroof.studies.sweep import sweep_doc, wall_param

    doc = sweep_doc(points, machine, walls)
    written = []
    write_text(out / "results.json", json.dumps(doc, indent=1) + "\n")
    written.append(out / "results.json")
    buf = io.StringIO()
    names = [lv.name for lv in points[0].result.levels] + [points[0].result.memory.name]
    w = csv.writer(buf)
    measured = any(p.measured for p in points)
    w.writerow([*points[0].params, "footprint_bytes", "flops",
                *(f"{n}_bytes" for n in names), *(f"{n}ai_text" for n in names),
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
    elif "cores" in vary and wall_param(points) is not None:
        # One roofline figure cannot hold P-core machines: the shared level's traffic
        # against the size, per P, beside the layer conditions' walls.
        from hroof.plots.cores import plot_cores
        from hroof.studies.sweep import predicted_by_cores

        param = wall_param(points)
        fig = plot_cores(points, machine, param, predicted_by_cores(points, machine, param))
        for ext in ("png", "svg"):
            written.append(save_figure(fig, out / f"cores.{ext}"))
    elif not machine.missing():
        from hroof.plots import roofline as plots

        fig = plots.plot_side_by_side(points, machine)
        for ext in ("png", "svg"):
            written.append(save_figure(fig, out / f"roofline.{ext}"))
    return written


def cmd_report(args: argparse.Namespace) -> int:
    """``hroof report RESULTS.json|DIR``: the report of a saved sweep."""
    from hroof.machine.model import load_machine
    from hroof.plots.report import write_report
    from hroof.studies.sweep import load_sweep, sweep_machine

    points, name = load_sweep(Path(args.results))
    # The machine results.json names, unless --machine says otherwise.
    machine = load_machine(args.machine) if args.machine else sweep_machine(name)
    if machine is None:
        raise HroofError(
            f"{args.results} names machine {name!r}, which is not a bundled one: pass the "
            "sweep's --machine (its file)"
        )
    ran = [(lv.name, lv.size, lv.ways, lv.line) for lv in points[0].result.levels]
    have = [(lv.name, lv.size, lv.ways, lv.line) for lv in machine.hierarchy.levels]
    if ran != have:
        raise HroofError(
            f"the sweep's levels ({', '.join(f'{n} {s} B {w}-way' for n, s, w, _ in ran)}) are "
            f"not those of machine {machine.name}: pass the sweep's --machine"
        )
    src = Path(args.results)
    out = Path(args.out) if args.out else (src if src.is_dir() else src.parent)
    with output_dir(out) as stage:
        title = f"hroof sweep on {name or machine.name}"
        written = moved(write_report(points, machine, stage, title=title), stage, out)
    emit("wrote " + ", ".join(str(p) for p in written))
    return 0


def register(sub, machine_sub) -> None:
    """Add ``sweep`` and ``report``."""
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
        help="values to sweep (n=16..256:x2, n=8,12,16) and fixed parameters (nt=true); "
        "cores=1,2,4 sweeps the number of cores the outer loop is split across (walls and "
        "layer conditions for each; grain=G sets the round-robin grain; docs/cache-model.md, "
        "'Several cores')",
    )
    machine_option(p)
    p.add_argument(
        "--out",
        metavar="DIR",
        help="also write results.json, results.csv, the figures (PNG and SVG) and "
        "report.html to DIR",
    )
    p.add_argument("--json", action="store_true", help="print the sweep as JSON")
    simulation_options(p)
    p.add_argument(
        "--sample-sets", type=sample_fraction, default=1, metavar="1/K", help=SAMPLE_HELP
    )
    workers_option(p)
    p.add_argument(
        "--measure",
        action="store_true",
        help="also run the kernel natively at every point on this host (one thread, after "
        "the simulations) and show measured GFLOP/s beside the predicted bound, "
        "measured/predicted and POOR where under half the bound (see 'hroof run'); "
        "without --machine, against the measured host if there is one",
    )
    p.add_argument(
        "--min-time",
        type=seconds,
        metavar="S",
        help="with --measure: least timed seconds per point (default: 0.2)",
    )
    quiet_option(p)
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser(
        "report",
        help="render the report of a saved sweep (hroof sweep --out DIR)",
        description="Render the figures and report.html of a sweep saved by 'hroof sweep "
        "--out DIR', from DIR or DIR/results.json, without simulating again.",
    )
    p.add_argument("results", metavar="RESULTS.json|DIR", help="a saved sweep")
    p.add_argument(
        "--machine",
        metavar="NAME|FILE",
        help="the sweep's machine (default: the bundled machine results.json names)",
    )
    p.add_argument("--out", metavar="DIR", help="where to write (default: beside the results)")
    p.set_defaults(func=cmd_report)
