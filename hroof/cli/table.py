"""``hroof table``: the lecture's kernel table (flops, compulsory bytes, ideal AI against N)
on a machine, with the simulated AI per level next to the ideal on request."""

from __future__ import annotations

import argparse
import contextlib
import os
import textwrap

from hroof._base.progress import Progress
from hroof._base.units import parse_int
from hroof.cli.options import (
    MACHINE_HELP,
    machine_option,
    open_engine,
    positive_int,
    quiet_option,
    scheduler_option,
)
from hroof.cli.text import Col, ai_text, emit, term_width, text_table
from hroof.roofline.table import DEFAULT_MAX_ACCESSES
from hroof.studies.executor import SCHEDULER_ENV

#: N when none is given (powers of two, so the fft row is defined).
DEFAULT_NS = (1024, 1048576)

_EXAMPLES = """\
examples:
  hroof table                                   every kernel at N = 1024 and 1048576
  hroof table --n 4096 --machine teaching       with ridge point, bound and region
  hroof table --kernel daxpy dgemv stencil7 --n 4096 --simulate --machine teaching
  hroof table --kernel cg spmv --nnz-per-row 27 --n 1e6
  hroof table --kernel fft --n 1024 --explain   the constants and assumptions
  hroof table --json"""


def _n_arg(text: str) -> int:

    try:
        return parse_int(text, maximum=None)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"N must be a whole number (1000, 1e6, 1_048_576), got {text!r}"
        ) from None


def register(sub, machine_sub) -> None:
    """Add the ``table`` subcommand."""
    from hroof.roofline.table import DEFAULT_NNZ_PER_ROW, KERNELS

    p = sub.add_parser(
        "table",
        help="the analytic kernel table: flops, compulsory bytes and ideal AI against N",
        description=textwrap.fill(
            "Print, for each kernel of the lecture's complexity table (daxpy, dgemv, dgemm, "
            "fft, cg, mg, nbody), dot, and the kernels hroof simulates that they stand on (spmv, "
            "stencil5, stencil7, stencil27), at each N: the exact flop count, the compulsory "
            "data volume in bytes (double precision; every input read once, every output "
            "written once), the ideal arithmetic intensity (FLOP/byte) and its order in N "
            "next to the lecture's, and on a machine with a peak and a memory bandwidth the "
            "ridge point, the bound min(peak, AI x bandwidth) in GFLOP/s and the region. "
            "With --simulate, the rows hroof has a kernel for are also simulated at the "
            "matching size (up to --max-accesses accesses each) and their AI at every "
            "level is shown next to the ideal: how far the caches keep each kernel from "
            "its compulsory bound. Simulation is off by default (it can take a while).",
            88,
        ),
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--n",
        nargs="+",
        type=_n_arg,
        metavar="N",
        help=f"problem sizes (default: {' '.join(map(str, DEFAULT_NS))}); what N counts "
        "depends on the kernel (see --explain)",
    )
    p.add_argument(
        "--kernel",
        nargs="+",
        metavar="K",
        help=f"kernels to show (default: all): {', '.join(KERNELS)}; an N a named kernel "
        "cannot take is an error (with the default, such rows are left out and listed)",
    )
    p.add_argument(
        "--nnz-per-row",
        type=positive_int("number of nonzeros"),
        default=DEFAULT_NNZ_PER_ROW,
        metavar="K",
        help="nonzeros per row of the cg and spmv operator (default: %(default)s, the "
        "7-point stencil)",
    )
    machine_option(
        p,
        MACHINE_HELP + "; its peak and memory bandwidth give the bound, its caches the simulation",
    )
    p.add_argument(
        "--simulate",
        action="store_true",
        help="also simulate daxpy, dot, dgemv, gemm, spmv and the stencils at the size matching "
        "each N and show their AI per level",
    )
    p.add_argument(
        "--max-accesses",
        type=positive_int("number of accesses"),
        default=DEFAULT_MAX_ACCESSES,
        metavar="N",
        help="with --simulate, skip a row whose trace is longer (default: %(default)s)",
    )
    p.add_argument("--explain", action="store_true",
                   help="print each kernel's constants and assumptions")  # fmt: skip
    p.add_argument("--json", action="store_true", help="print the table as JSON (hroof.table/1)")
    quiet_option(p)
    scheduler_option(p)
    p.set_defaults(func=cmd_table)


def run_table(args) -> dict:
    """Build the table document (schema ``hroof.table/1``) from parsed arguments."""
    from hroof.machine.model import load_machine
    from hroof.studies.table import table_doc

    machine = load_machine(args.machine)
    engine = None  # --simulate runs in this process unless a scheduler is named
    if args.simulate and (args.scheduler or os.environ.get(SCHEDULER_ENV, "").strip()):
        engine = open_engine(args)
    with contextlib.ExitStack() as stack:
        if engine is not None:
            stack.enter_context(engine)
        bar = stack.enter_context(Progress(None, enabled=False if args.quiet else None))
        return table_doc(
            list(args.kernel) if args.kernel is not None else None,
            list(args.n) if args.n else list(DEFAULT_NS),
            machine,
            nnz_per_row=args.nnz_per_row,
            simulate=args.simulate,
            max_accesses=args.max_accesses,
            progress=bar,
            executor=engine,
        )


def _order(orders: dict | None) -> str:
    return "-" if orders is None else f"O({orders['ai']})"


def format_table(doc: dict, *, explain: bool = False) -> str:
    """The table document as text: the analytic table, then the simulated AIs."""

    m = doc["machine"]
    known = m["ridge_point"] is not None
    cols = [Col("kernel", "<"), Col("N"), Col("flops"), Col("bytes"),
            Col("ideal AI\nFLOP/B"), Col("AI\norder"), Col("lecture\nAI order")]  # fmt: skip
    if known:
        cols += [Col("bound\nGFLOP/s"), Col("region", "<")]
    rows = []
    for r in doc["rows"]:
        row = [r["kernel"], f"{r['n']:,}", _count(r["flops"]), _count(r["bytes"]), ai_text(r["ai"]),
               _order(r["orders"]), _order(r["lecture_orders"])]  # fmt: skip
        if known:
            row += [f"{r['bound_gflop_s']:.3g}", r["region"]]
        rows.append(row)
    if known:
        head = (f"machine   {m['name']}: fp64 peak {m['peak_gflop_s']:g} GFLOP/s, memory "
                f"{m['memory_bandwidth_gb_s']:g} GB/s, ridge point {ai_text(m['ridge_point'])} "
                "FLOP/byte")  # fmt: skip
    else:
        head = (f"machine   {m['name']} (no fp64 peak or no memory bandwidth: no bounds; "
                "see 'hroof machine show')")  # fmt: skip
    lines = [
        "Kernel table: double precision; compulsory bytes = every input read once, every "
        "output written once (no write-allocate)",
        head,
        "",
        *text_table(cols, rows),
    ]
    sims = [(r, r["simulated"]) for r in doc["rows"] if r["simulated"] is not None]
    done = [(r, s) for r, s in sims if not s["skipped"]]
    if doc["simulate"]:
        lines += ["", "Simulated at the matching size (AI per level, FLOP/byte; 'compulsory' is "
                  "flops over the compulsory traffic to memory):"]  # fmt: skip
        if done:
            names = [lv["name"] for lv in done[0][1]["levels"]]
            scol = [Col("kernel", "<"), Col("N"), Col("simulated as", "<")]
            scol += [Col(f"{n} AI") for n in names]
            scol += [Col("compulsory\nAI"), Col("ideal\nAI"), Col("ideal /\nmemory AI")]
            srows = []
            for r, s in done:
                ais = [lv["ai"] for lv in s["levels"]]
                ratio = f"{r['ai'] / ais[-1]:.2f}x" if ais[-1] else "-"
                srows.append([r["kernel"], f"{r['n']:,}", f"{s['kernel']} {s['size']}",
                              *[ai_text(a) for a in ais], ai_text(s["compulsory_ai"]),
                              ai_text(r["ai"]), ratio])  # fmt: skip
            lines += text_table(scol, srows)
            lines += textwrap.wrap(
                "The compulsory AI differs from the ideal by line rounding, the stencils' "
                "halo, the grid nearest to N and, for spmv, the boundary rows of the "
                "poisson3d matrix (fewer than 7 nonzeros); the memory AI falls further below "
                "it by write-allocate reads (dgemv's y, the stencils' new grid) and the "
                "capacity and conflict misses of the caches.",
                term_width(),
            )
        for r, s in sims:
            if s["skipped"]:
                lines.append(f"not simulated: {r['kernel']} at N={r['n']:,} "
                             f"({s['kernel']} {s['size']}): {s['skipped']}; raise "
                             "--max-accesses to run it")  # fmt: skip
        if not sims:
            lines.append("  (none of these rows has a kernel to simulate)")
    for note in doc["notes"]:
        lines.append(f"note: {note}")
    if explain:
        lines += ["", "Constants and assumptions:"]
        width = term_width()
        for name, text in doc["explain"].items():
            lines += textwrap.wrap(f"{name}: {text}", width, subsequent_indent="    ")
    else:
        lines.append("(constants and assumptions of each row: --explain)")
    return "\n".join(lines)


def _count(n: int) -> str:
    """A count: with thousands separators up to 1e15, else in scientific notation."""
    return f"{n:,}" if n < 10**15 else f"{n:.3e}"


def cmd_table(args: argparse.Namespace) -> int:
    """``hroof table [--n N ...] [--kernel K ...] [--machine M] [--simulate] [--json]``."""
    import json

    doc = run_table(args)
    if args.json:
        emit(json.dumps(doc, indent=1))
    else:
        emit(format_table(doc, explain=args.explain))
    return 0
