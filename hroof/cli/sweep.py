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
    model_option,
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
    if args.mrc_at is not None:  # before minutes of simulation, not after
        _check_mrc_at(grid, args.mrc_at)
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
    if args.model == "nine":  # the walls are then predicted for the NINE levels too
        from dataclasses import replace

        machine = replace(
            machine, hierarchy=machine.hierarchy.with_inclusion("nine").without_prefetch()
        )
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
            written = moved(_sweep_outputs(stage, points, machine, walls, vary, args), stage, out)
    if args.json:
        import json

        emit(json.dumps(sweep_doc(points, machine, walls), indent=1))
    else:
        text = format_sweep(points, machine, walls)
        if written:
            text += "\n\nwrote " + ", ".join(str(p) for p in written)
        emit(text)
    return 0


def _check_mrc_at(grid: list[dict[str, str]], at) -> None:
    """``--mrc-at`` must name a value of the one parameter the sweep varies."""
    vary = [k for k in grid[0] if len({str(g[k]) for g in grid}) > 1]
    if len(vary) != 1:
        raise HroofError("--mrc-at needs a sweep over one parameter")
    have = [str(g[vary[0]]) for g in grid]
    if str(at) not in have:
        raise HroofError(
            f"--mrc-at {at}: no point with {vary[0]}={at} in this sweep "
            f"(it has {vary[0]}={','.join(have)})"
        )


def _sweep_outputs(out: Path, points, machine, walls, vary, args) -> list[Path]:
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
        written += write_report(points, machine, out, title=f"hroof sweep: {kernel}",
                                mrc=args.mrc, mrc_at=args.mrc_at)  # fmt: skip
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
    ran_policies = [lv.inclusion for lv in points[0].result.levels]
    if ran_policies != [lv.inclusion for lv in machine.hierarchy.levels]:
        # Predict the walls for the policies the sweep ran with (--model nine, or results
        # saved before the preset had its policies), not the machine file's.
        from dataclasses import replace

        pairs = zip(machine.hierarchy.levels, ran_policies, strict=True)
        levels = tuple(replace(lv, inclusion=pol) for lv, pol in pairs)
        machine = replace(machine, hierarchy=replace(machine.hierarchy, levels=levels))
    src = Path(args.results)
    out = Path(args.out) if args.out else (src if src.is_dir() else src.parent)
    with output_dir(out) as stage:
        title = f"hroof sweep on {name or machine.name}"
        report = write_report(points, machine, stage, title=title, mrc=args.mrc,
                              mrc_at=args.mrc_at)  # fmt: skip
        written = moved(report, stage, out)
    emit("wrote " + ", ".join(str(p) for p in written))
    return 0


#: ``--mrc`` choices (``hroof.studies.sweep_mrc.MRC_MODES``; not imported: it loads Numba).
MRC_CHOICES = ("auto", "exact", "sample", "off")


def _mrc_options(p) -> None:
    p.add_argument(
        "--mrc",
        choices=MRC_CHOICES,
        default="auto",
        help="the miss-ratio curve of one point in the report (every cache size, beside the "
        "walls): auto (default) draws the largest point with at most 2**25 accesses, exactly "
        "up to 2**24 and from a SHARDS sample above; exact or sample draw the largest point "
        "that way; off draws none (see docs/mrc.md)",
    )
    p.add_argument("--mrc-at", metavar="VALUE", help="the point of the curve: its swept value")


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
    model_option(p)
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
    _mrc_options(p)
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
    _mrc_options(p)
    p.set_defaults(func=cmd_report)
