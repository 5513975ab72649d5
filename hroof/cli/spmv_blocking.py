"""``hroof spmv-blocking``: SpMV in CSR and in r x c register blocks on one matrix."""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

from hroof._base.errors import HroofError
from hroof._base.files import save_figure, write_text
from hroof._base.progress import Progress
from hroof.cli.options import (
    machine_option,
    open_engine,
    quiet_option,
    workers_option,
)
from hroof.cli.text import Col, ai_text, emit, text_table

_EXAMPLES = """\
examples:
  hroof spmv-blocking poisson2d n=128 dof=2 --blocks 1x1,2x2,4x4 --machine teaching
  hroof spmv-blocking random rows=20000 nnz_per_row=8 --blocks 2x2,4x4
  hroof spmv-blocking matrix.mtx --blocks 1x2,2x1,2x2,3x3 --out blocking/
  hroof spmv-blocking poisson3d n=24 dof=3 --blocks 3x3 --json"""


def register(sub, machine_sub) -> None:
    """Add the ``spmv-blocking`` subcommand."""

    p = sub.add_parser(
        "spmv-blocking",
        help="SpMV in CSR and in r x c register blocks (BCSR): AI and traffic per level",
        description=textwrap.fill(
            "Simulate the spmv kernel on one matrix stored as CSR and as block CSR in each "
            "block size given (r x c blocks, explicit zeros stored and multiplied, the "
            "matrix padded to multiples of r and c) and print, per storage: the fill ratio "
            "(stored entries / true nonzeros), explicit zeros, padding, executed flops, each "
            "level's arithmetic intensity (FLOP/byte of the useful flops, 2 per true "
            "nonzero, so every storage is measured at equal work), the ideal AI (every byte "
            "of the footprint moved once), the change of memory AI against CSR, and the "
            "roofline bound when the machine has bandwidths and a peak. Blocking pays where "
            "the AI rises; the explicit zeros eat the gain where it falls.",
            88,
        ),
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "matrix",
        metavar="MATRIX",
        help="poisson2d, poisson3d, random, banded, or a Matrix Market .mtx file",
    )
    p.add_argument(
        "params",
        nargs="*",
        metavar="KEY=VALUE",
        help="the matrix's spmv parameters (n=64, dof=2, rows=, nnz_per_row=, seed=, band=, "
        "index_bytes=, dtype=; see 'hroof kernels'); not storage, r or c",
    )
    p.add_argument(
        "--blocks",
        default="1x1,2x2,4x4",
        metavar="RxC,...",
        help="block sizes, rows x columns (default: %(default)s)",
    )
    p.add_argument("--no-csr", action="store_true", help="do not simulate plain CSR too")
    machine_option(p)
    p.add_argument(
        "--out",
        metavar="DIR",
        help="also write blocking.json and the figure spmv_blocking.png/.svg to DIR",
    )
    p.add_argument(
        "--json", action="store_true", help="print the study as JSON (hroof.spmv-blocking/1)"
    )
    workers_option(p, "storages")
    quiet_option(p)
    p.set_defaults(func=cmd_spmv_blocking)


def format_blocking(points, machine) -> str:
    """The study as a table, one row per storage, and a verdict."""
    from hroof.roofline.analysis import roofline
    from hroof.studies.spmv_blocking import matrix_title

    first = points[0]
    b0 = first.blocking
    known = not machine.missing()
    names = [lv.name for lv in first.result.levels] + [first.result.memory.name]
    cols = [Col("storage", "<"), Col("fill\nratio"), Col("explicit\nzeros"),
            Col("padding\nrows/cols"), Col("executed\nflops")]  # fmt: skip
    cols += [Col(f"{n} AI\nFLOP/B") for n in names]
    cols += [Col("ideal AI\nFLOP/B"), Col(f"{names[-1]} AI\nvs CSR")]
    if known:
        cols += [Col("bound\nGFLOP/s"), Col("binds", "<")]
    csr = next((p for p in points if p.storage == "csr"), None)
    rows = []
    for p in points:
        r = p.result
        x = p.blocking
        pad = f"{x.get('pad_rows', 0)}/{x.get('pad_cols', 0)}"
        row = [p.label, f"{p.fill_ratio:.3f}", f"{x.get('explicit_zeros', 0):,}", pad,
               f"{x['executed_flops']:,}"]  # fmt: skip
        row += [ai_text(lv.ai) for lv in r.levels] + [ai_text(r.memory.ai)]
        row.append(ai_text(p.ideal_ai))
        if csr is not None and csr.result.memory.ai and r.memory.ai:
            row.append(f"{100 * (r.memory.ai / csr.result.memory.ai - 1):+.0f}%")
        else:
            row.append("-")
        if known:
            rf = roofline(r, machine)
            row += [f"{rf.bound:.3g}", rf.binding]
        rows.append(row)
    nnz = b0["nnz"]
    lines = [
        f"spmv-blocking  {matrix_title(points)}  ({nnz:,} nonzeros, "
        f"{first.params['index_bytes']}-byte indices, {first.params['dtype']})",
        f"machine   {machine.name}",
        f"          {machine.hierarchy.describe()}",
        "",
        *text_table(cols, rows),
        "",
        "AI counts the useful flops (2 per true nonzero) at every storage; executed flops "
        "also multiply the explicit zeros.",
    ]
    if csr is not None and csr.result.memory.ai:
        ref = csr.result.memory.ai
        blocked = [p for p in points if p.storage == "bcsr"]
        tol = 0.005  # changes under half a percent are no change
        pays = [p for p in blocked if (p.result.memory.ai or 0) > ref * (1 + tol)]
        loses = [p for p in blocked if (p.result.memory.ai or 0) < ref * (1 - tol)]
        same = [p for p in blocked if p not in pays and p not in loses]
        if pays:
            best = max(pays, key=lambda p: p.result.memory.ai)
            lines.append(
                f"blocking pays at {', '.join(p.label for p in pays)} (best {best.label}: "
                f"{names[-1]} AI {ai_text(best.result.memory.ai)} against CSR's {ai_text(ref)})"
            )
        if loses:
            worst = max(p.fill_ratio for p in loses)
            lines.append(
                f"blocking loses at {', '.join(p.label for p in loses)}: the explicit zeros "
                f"(fill ratio up to {worst:.2f}) eat the gain"
            )
        if same:
            lines.append(f"no change at {', '.join(p.label for p in same)}")
    if not known:
        lines.append(
            f"(no bounds: the machine has no {', '.join(machine.missing())}; "
            "see 'hroof machine show')"
        )
    return "\n".join(lines)


def _outputs(out: Path, points, machine) -> list[Path]:
    import json

    from hroof.plots.spmv_blocking import plot_blocking
    from hroof.studies.spmv_blocking import blocking_doc, matrix_title

    written = []
    doc = blocking_doc(points, machine if not machine.missing() else None)
    doc["machine"] = machine.name
    write_text(out / "blocking.json", json.dumps(doc, indent=1) + "\n")
    written.append(out / "blocking.json")
    fig = plot_blocking(points, title=f"SpMV register blocking: {matrix_title(points)} "
                        f"on {machine.name}")  # fmt: skip
    for ext in ("png", "svg"):
        written.append(save_figure(fig, out / f"spmv_blocking.{ext}"))
    return written


def cmd_spmv_blocking(args: argparse.Namespace) -> int:
    """``hroof spmv-blocking MATRIX [KEY=VALUE ...] --blocks RxC,...``."""
    import json

    from hroof.machine.model import load_machine
    from hroof.studies.spmv_blocking import blocking_doc, parse_blocks, plan_blocking, run_blocking
    from hroof.traces import parse_assignments

    blocks = parse_blocks(args.blocks)
    matrix = {"matrix": args.matrix, **parse_assignments(args.params)}
    if "matrix" in parse_assignments(args.params):
        raise HroofError("give the matrix once, as MATRIX, not also as matrix=")
    # bad parameters and blocks larger than the matrix, before the machine
    plans = plan_blocking(matrix, blocks, csr=not args.no_csr)
    machine = load_machine(args.machine)
    if args.out is not None:
        try:
            Path(args.out).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise HroofError(f"cannot write to {args.out}: {exc.strerror or exc}") from None
    with (
        open_engine(args) as engine,
        Progress(len(plans), enabled=False if args.quiet else None, unit="storages") as bar,
    ):
        points = run_blocking(
            matrix, blocks, machine.hierarchy, csr=not args.no_csr, workers=args.workers,
            use_cache=not args.no_cache, progress=bar, plans=plans, executor=engine,
        )  # fmt: skip
    written = _outputs(Path(args.out), points, machine) if args.out is not None else []
    if args.json:
        doc = blocking_doc(points, machine if not machine.missing() else None)
        doc["machine"] = machine.name
        emit(json.dumps(doc, indent=1))
    else:
        text = format_blocking(points, machine)
        if written:
            text += "\n\nwrote " + ", ".join(str(p) for p in written)
        emit(text)
    return 0
