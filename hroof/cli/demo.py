"""``hroof demo``: the 7-point stencil small, large and swept, with a report."""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

from hroof._base.errors import HroofError
from hroof._base.outdir import moved, output_dir
from hroof._base.progress import Progress
from hroof.cli.options import machine_option, quiet_option
from hroof.cli.text import emit, term_width


def cmd_demo(args: argparse.Namespace) -> int:
    """``hroof demo``: the 7-point stencil in steady state swept across the walls, with a
    report."""
    from hroof.machine.model import load_machine
    from hroof.plots.report import write_report
    from hroof.studies.demo import (
        DEMO_KERNEL,
        DEMO_SWEEP,
        DEMO_WARMUP,
        carm_lesson,
        format_rows,
        run_demo,
        summary_lines,
        summary_table,
    )

    machine = load_machine(args.machine)
    machine.require("hroof demo")
    try:  # before minutes of simulation, not after
        Path(args.out).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise HroofError(f"cannot write the report to {args.out}: {exc.strerror or exc}") from None
    npoints = len(DEMO_SWEEP.split(","))
    with Progress(npoints, enabled=False if args.quiet else None, unit="points") as bar:
        demo = run_demo(machine, progress=bar)
    summary = summary_table(demo)
    story = summary_lines(demo)
    lesson = carm_lesson(demo.large, machine)
    from hroof.studies.demo import DEMO_MRC_N
    from hroof.studies.sweep_mrc import sweep_curve

    # Every L1 size at one point of the sweep (its warm-up run, not counted), in the report.
    mrc = sweep_curve(demo.points, machine, "n", mode="exact", at=DEMO_MRC_N)
    with output_dir(args.out) as stage:  # staged, then moved in together under a lock
        written = moved(write_report(
            demo.points, machine, stage,
            title=f"hroof demo: {DEMO_KERNEL} in steady state on {machine.name}",
            summary=summary,
            # the walls left out are listed under the report's wall table already
            notes=[*(ln for ln in story if not ln.startswith(("Left out", "Predicted but"))),
                   "Cache-aware reading: " + lesson],
            mrc_curve=mrc,
        ), stage, Path(args.out))  # fmt: skip
    width = term_width()
    lines = [
        f"hroof demo: {DEMO_KERNEL} in steady state ({DEMO_WARMUP} warm-up sweeps simulated "
        f"and not counted, then 1 counted sweep), swept over n={DEMO_SWEEP}",
        f"machine   {machine.name}",
        f"          {machine.hierarchy.describe()}",
        "",
        format_rows(summary),
        "",
    ]
    for line in story:
        indent = " " * (len(line) - len(line.lstrip()))
        lines += textwrap.wrap(line, width, subsequent_indent=indent + "  ")
    lines += ["", *textwrap.wrap("Cache-aware reading: " + lesson, width), ""]
    large = demo.large
    if large.result.flops and large.result.memory.bytes:
        from hroof.roofline.guidance import guidance

        g = guidance(large.result, machine)
        lines += [f"n={large.params['n']}: {g.lines()[0]}", "What to optimise next:"]
        for i, s in enumerate(g.steps, 1):
            lines += textwrap.wrap(s.text, width, initial_indent=f"  {i}. ",
                                   subsequent_indent="     ")  # fmt: skip
        if g.moot:
            lines.append(f"  (need not: {', '.join(s.what for s in g.moot)}: above the bound)")
        lines.append("")
    if mrc[0] is not None:
        lines += _mrc_lines(mrc[0], Path(args.out) / "mrc.png")
    lines.append(f"report: {written[-1]} (figures beside it)")
    live = [p for p in written if p.name == "interactive.html"]
    if live:
        lines.append(f"interactive: {live[0]} (a slider through the sizes; works offline)")
    emit("\n".join(lines))
    return 0


def _mrc_lines(sc, path: Path) -> list[str]:
    """The stencil's miss-ratio curve (one pass, every L1 size; the report's mrc.png): its
    knees beside the layer conditions, in words."""
    from hroof._base.units import format_bytes
    from hroof.studies.demo import DEMO_KERNEL

    rep = sc.report
    knees = ", ".join(format_bytes(k.bytes) for k in rep.knees)
    lcs = ", ".join(f"{n} {format_bytes(v)}" for n, v in sorted(rep.layer_conditions.items()))
    text = (
        f"Every L1 size at once ({DEMO_KERNEL} n={sc.point.params['n']}, one pass, 'hroof "
        f"mrc'): the miss ratio falls sharply at {knees}; the layer conditions need {lcs}. "
        f"The walls of the sweep, seen from the cache-size axis: {path}"
    )
    return [*textwrap.wrap(text, term_width()), ""]


def register(sub, machine_sub) -> None:
    """Add ``demo``."""
    p = sub.add_parser(
        "demo",
        help="the 7-point stencil in steady state swept across the walls, with a report",
        description=(
            "Simulate the 3D 7-point stencil in steady state (2 warm-up sweeps simulated, "
            "not counted) on the default machine (or --machine) at n=16..192, across the "
            "locality walls; print a summary (per size the bytes each level sends below, "
            "the bound and what binds; every wall beside its layer-condition prediction; "
            "the walls left out; the cache-aware reading of the largest run), and write a "
            "self-contained HTML report with the figures, and an interactive page (a slider "
            "through the sizes), to DIR (default hroof-demo/)."
        ),
    )
    p.add_argument("--out", metavar="DIR", default="hroof-demo",
                   help="where the report and figures go (default: hroof-demo)")  # fmt: skip
    machine_option(p)
    quiet_option(p)
    p.set_defaults(func=cmd_demo)
