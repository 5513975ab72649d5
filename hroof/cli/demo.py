"""``hroof demo``: the 7-point stencil small, large and swept, with a report."""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

from hroof._base.errors import HroofError
from hroof._base.progress import Progress
from hroof.cli.options import (
    MACHINE_HELP,
)
from hroof.cli.text import emit, term_width


def cmd_demo(args: argparse.Namespace) -> int:
    """``hroof demo``: the 7-point stencil small, large and swept, with a report."""
    from hroof.machine.model import load_machine
    from hroof.plots.report import write_report
    from hroof.studies.demo import (
        DEMO_KERNEL,
        DEMO_LARGE,
        DEMO_SMALL,
        DEMO_SWEEP,
        format_rows,
        run_demo,
        summary_table,
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
            lines += textwrap.wrap(s.text, term_width(), initial_indent=f"  {i}. ",
                                   subsequent_indent="     ")  # fmt: skip
        if g.moot:
            lines.append(f"  (need not: {', '.join(s.what for s in g.moot)}: above the bound)")
        lines.append("")
    lines += _mrc_lines(machine, Path(args.out))
    lines.append(f"report: {written[-1]} (figures beside it)")
    emit("\n".join(lines))
    return 0


def _mrc_lines(machine, out: Path) -> list[str]:
    """The stencil's miss-ratio curve (one pass, every L1 size) as mrc.png, and its knees
    beside the layer conditions, in words."""
    from hroof._base.files import save_figure
    from hroof._base.units import format_bytes
    from hroof.plots.mrc import plot_mrc
    from hroof.studies.demo import DEMO_KERNEL, DEMO_MRC_N, demo_mrc

    rep = demo_mrc(machine)
    path = save_figure(plot_mrc(rep), out / "mrc.png")
    knees = ", ".join(format_bytes(k.bytes) for k in rep.knees)
    lcs = ", ".join(f"{n} {format_bytes(v)}" for n, v in sorted(rep.layer_conditions.items()))
    text = (
        f"Every L1 size at once ({DEMO_KERNEL} n={DEMO_MRC_N}, one pass, 'hroof mrc'): the miss "
        f"ratio falls sharply at {knees}; the layer conditions need {lcs}. The walls of the "
        f"sweep, seen from the cache-size axis: {path}"
    )
    return [*textwrap.wrap(text, term_width()), ""]


def register(sub, machine_sub) -> None:
    """Add ``demo``."""
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
    p.add_argument("--machine", metavar="NAME|FILE", help=MACHINE_HELP)
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar on stderr")
    p.set_defaults(func=cmd_demo)
