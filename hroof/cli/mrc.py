"""``hroof mrc KERNEL KEY=VALUE ...`` and ``hroof mrc --trace FILE``: miss-ratio curves.

The curve comes from :mod:`hroof.cachesim.mrc` (one pass, every capacity), the
knees, layer conditions and AIs from :mod:`hroof.roofline.mrc`, the figure from
:mod:`hroof.plots.mrc`; this module only reads the options and prints.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import textwrap

from hroof._base.errors import HroofError
from hroof._base.files import save_figure, write_text
from hroof._base.guards import check_memory
from hroof._base.progress import Progress
from hroof._base.units import format_bytes, format_size, parse_float, parse_int
from hroof.cli.options import (
    chunk_option,
    flops_count,
    kernel_plan,
    machine_option,
    model_option,
    positive_int,
    quiet_option,
    trace_format,
)
from hroof.cli.text import Col, ai_text, assignments_text, emit, text_table
from hroof.machine.model import resolve_machine
from hroof.traces import FORMATS, count_accesses, detect_format, iter_trace
from hroof.traces.limits import BYTES_PER_READ_ACCESS, MRC_BYTES_PER_LINE, check_plan, guard_chunks

_DESCRIPTION = """\
Compute the miss-ratio curve of a kernel's (or a trace's) access stream: the misses of a
fully-associative LRU cache of every capacity, from one pass over the stream (Mattson's
stack distances), and, for the level's number of sets, the misses at every associativity.
The curve is of the stream reaching --level (default: the first level, i.e. the trace
itself): the misses, RFOs, writebacks and non-temporal invalidations the levels above it
send down, simulated. At the level's capacity the curve is the simulator's
fully-associative shadow; at the level's geometry, the set-associative curve is the level.

Prints the knees (capacities where the miss ratio falls sharply: the locality walls seen
from the cache-size axis) next to the layer-condition capacities of the stencils and the
machine's level sizes, and the AI the next level down would see at other capacities of
this level (bytes below from the curve, writebacks held at the simulated count).

--sample R estimates the curve from a spatial sample (SHARDS, Waldspurger et al., FAST
2015) at rate R; --sample-size N keeps at most N sampled lines. Both print the rate, the
resolution (1/R lines: the curve is not resolved below) and an error estimate, and warn
when too few distinct lines were sampled for it; --sample-seed N samples another set
of lines (not the kernel parameter seed=N, which changes the kernel)."""

_EPILOG = """\
examples:
  hroof mrc stencil7 n=64 --machine skylake-sp     knees next to the layer conditions
  hroof mrc stencil7 n=128 --level L2 --out l2.png the L2 stream's curve, as a figure
  hroof mrc spmv matrix=poisson3d n=48 --sample 0.01 --json
  hroof mrc --trace run.din --flops 1e6 --csv curve.csv"""


def _rate(text: str) -> float:
    try:
        r = parse_float(text, "sampling rate", positive=True)
    except HroofError:
        r = None
    if r is None or r > 1:
        raise argparse.ArgumentTypeError(f"must be a sampling rate in (0, 1], got {text!r}")
    return r


def _seed(text: str) -> int:
    try:
        return parse_int(text, "seed", minimum=0, maximum=2**32 - 1, units=False)
    except HroofError:
        raise argparse.ArgumentTypeError(
            f"must be a whole number from 0 to 2**32-1, got {text!r}"
        ) from None


def _csv(report) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    d = report.curve.to_dict()
    w.writerow(["capacity_lines", "capacity_bytes", "misses", "miss_ratio"])
    for row in d["curve"]:
        w.writerow([row["lines"], row["bytes"], row["misses"], f"{row['miss_ratio']:.6g}"])
    return buf.getvalue()


def format_mrc(report, *, title: str, threads: int = 1) -> str:
    """The text report: the curve's facts, knees against layer conditions, levels, AIs
    (``threads``: the threads the curve's pass ran on)."""
    c = report.curve
    out = [title, ""]
    facts = [
        f"stream into {report.level}: {c.lookups:,} lookups"
        + (f", {c.writes:,} arriving writebacks" if c.writes else ""),
        f"distinct lines {c.distinct_lines:,} ({format_bytes(c.distinct_lines * c.line)}), "
        f"line {c.line} B, compulsory misses {round(c.compulsory):,}"
        + (f", reloads after NT invalidation {round(c.reloads):,}" if c.reloads else ""),
    ]
    if c.sampled:
        s = c.sample
        facts.append(
            f"SHARDS sample ({s['mode']}): rate {s['rate']:.4g}, "
            f"{s['sampled_lookups']:,} sampled lookups, resolution "
            f"{format_bytes(s['resolution_lines'] * c.line)}, estimated mean error "
            f"{s['error_estimate']:.4f} (miss ratio), {s.get('sampled_lines', 0):,} distinct "
            f"lines sampled, hash seed {s.get('seed', 0)}"
            + (f", {threads} threads" if threads > 1 else "")
        )
        if s.get("warning"):
            facts += textwrap.wrap("Warning: " + s["warning"], 100)
    elif threads > 1:
        facts.append(
            f"{threads} threads: the set-associative curve beside the exact one (the same curves)"
        )
    out += facts
    out += ["", "Knees (where the miss ratio falls sharply; capacity = 90 % of the drop done):"]
    lcs = sorted(report.layer_conditions.items(), key=lambda t: t[1])
    rows = []
    for k in report.knees:
        near = ""
        if lcs:
            name, need = min(lcs, key=lambda t: abs(t[1] - k.bytes))
            if 0.5 <= k.bytes / need <= 2:
                near = f"{name}: {format_bytes(need)} ({k.bytes / need - 1:+.1%})"
        rows.append(
            [
                format_bytes(k.bytes),
                f"{k.lines:,}",
                f"{k.before:.4f} -> {k.after:.4f}",
                near or "-",
            ]
        )
    if rows:
        cols = [Col("capacity", "<", 2), Col("lines"), Col("miss ratio", "<"),
                Col("nearest layer condition", "<")]  # fmt: skip
        if not lcs:  # not a stencil: no conditions to compare with
            cols, rows = cols[:-1], [r[:-1] for r in rows]
        out += ["  " + r for r in text_table(cols, rows)]
    else:
        out.append("  none (no drop of at least 0.02 within a few doublings)")
    if lcs:
        out.append(
            "  layer conditions (exact LRU, safety 1): "
            + ", ".join(f"{n} {format_bytes(v)} ({v:,} B)" for n, v in lcs)
        )
    out += [
        "",
        "The machine's levels on this curve (fully associative) and as simulated (the real "
        f"levels: misses per lookup into {report.level}):",
    ]
    rows = []
    for m in report.levels:
        sim = "-"
        if m.simulated_miss_ratio is not None:
            sim = f"{m.simulated_miss_ratio:.4f} ({m.simulated_misses:,})"
        rows.append([m.name, format_size(m.bytes), f"{m.miss_ratio:.4f} ({int(m.misses):,})", sim])
    cols = [Col("level", "<", 2), Col("capacity"), Col("curve", "<"), Col("simulated", "<")]
    out += ["  " + r for r in text_table(cols, rows)]
    if c.sa_misses is not None:
        ways = [w for w in (1, 2, 4, 8, 16, 32, 64) if w <= c.max_ways]
        out.append(
            f"  set-associative, {c.sets} sets: "
            + ", ".join(f"{w}-way {int(c.sa_misses[w - 1]):,}" for w in ways)
        )
    if report.flops:
        wb = report.writebacks
        how = (
            f"(misses + writebacks held at {wb:,}) x line"
            if wb is not None
            else "misses x line; writebacks not counted without the simulation"
        )
        out += ["", f"If {report.level} had another capacity (bytes below = {how}):"]
        rows = [
            [format_size(r["capacity"]), f"{round(r['misses']):,}",
             format_bytes(r["bytes_below"]), ai_text(r["ai"])]
            for r in report.ai_rows
        ]  # fmt: skip
        below = report.below
        cols = [Col(f"{report.level} capacity", "<", 2), Col("misses"), Col(f"bytes to {below}"),
                Col(f"AI of {below}\nFLOP/byte")]  # fmt: skip
        out += ["  " + r for r in text_table(cols, rows)]
        out += _more_capacity_sentence(report)
    note = c.source.get("note")
    if note:
        out += ["", textwrap.fill("Note: " + note, 100)]
    return "\n".join(out)


def _more_capacity_sentence(report) -> list[str]:
    """The AI table read as one sentence: 2 MiB more of the level, the next level's AI."""
    size = next(m.bytes for m in report.levels if m.name == report.level)
    rows = {r["capacity"]: r for r in report.ai_rows}
    now, more = rows.get(size), rows.get(size + 2 * 2**20)
    if now is None or more is None or now["ai"] is None or more["ai"] is None:
        return []
    lv, below = report.level, report.below
    text = (
        f"With 2 MiB more {lv} ({format_size(size + 2 * 2**20)} instead of {format_size(size)}), "
        f"the AI of {below} (the bytes {lv} moves to and from {below}) would be "
        f"{ai_text(more['ai'])} FLOP/byte instead of {ai_text(now['ai'])}."
    )
    return ["", *textwrap.wrap(text, 100)]


#: ``--threads auto`` takes two threads from this many accesses.
TWO_THREADS_FROM = 1_000_000


def _threads(args, total: int | None) -> int:
    """``--threads``: 1, 2, or auto: two for a stream of :data:`TWO_THREADS_FROM` accesses
    or more (or of unknown length) when a second CPU is idle, else one."""
    if args.threads != "auto":
        return int(args.threads)
    from hroof.studies.runs import second_cpu_free

    big = total is None or total >= TWO_THREADS_FROM
    return 2 if big and second_cpu_free() else 1


#: What to do when the simulation's classification would not fit.
_NO_SIM = "; --no-simulate draws the curve without the simulation that classifies"


def cmd_mrc(args: argparse.Namespace) -> int:
    """``hroof mrc``: the miss-ratio curve of a kernel or a trace, with knees and AIs."""
    from hroof.cachesim import simulate
    from hroof.cachesim.mrc import level_index, miss_ratio_curve
    from hroof.roofline.mrc import layer_capacities, report

    if (args.kernel is None) == (args.trace is None):
        raise HroofError("give a KERNEL (see 'hroof kernels') or --trace FILE, not both")
    if args.sample is not None and args.sample_size is not None:
        raise HroofError("give --sample R or --sample-size N, not both")
    for path, flag, kind in ((args.out, "--out", "figure"), (args.csv, "--csv", "csv")):
        if path and kind == "figure":
            from hroof._base.files import figure_format

            figure_format(path, flag=flag)
    machine = resolve_machine(args.machine)
    if args.model == "nine":
        machine = machine.with_inclusion("nine").without_prefetch()
    target = level_index(machine, args.level)
    if args.kernel is not None:
        if args.format is not None or args.flops is not None:
            raise HroofError("--format and --flops are for --trace; a kernel knows its own")
        plan = kernel_plan(args.kernel, args.params)
        source = plan.source()
        flops = plan.flops
        # Before anything runs: the simulation's time and classification, and the curve's
        # state (O(distinct lines): at most the footprint's lines, about 48 bytes each).
        check_plan(plan, machine.line_bits, classify=not args.no_simulate, hint=_NO_SIM)
        lines = plan.footprint >> machine.line_bits
        check_memory(MRC_BYTES_PER_LINE * (lines + 65536), f"the miss-ratio curve of "
                     f"{plan.kernel} ({lines:,} distinct lines)")  # fmt: skip

        def chunks():
            return plan.chunks(args.chunk_size)

        total = plan.accesses
        title = f"Miss-ratio curve of {plan.kernel} ({assignments_text(plan.params)})"
        lcs = layer_capacities(plan.kernel, plan.params, machine) if target == 0 else {}
    else:
        path = os.fspath(args.trace)
        fmt = args.format or detect_format(path)
        source = {"trace": path, "format": fmt}
        flops = args.flops

        check_memory(  # the reader's buffers, before it allocates them
            BYTES_PER_READ_ACCESS * args.chunk_size,
            f"a chunk of {args.chunk_size:,} accesses", hint="; lower --chunk-size",
        )  # fmt: skip

        def chunks():  # bounded line pieces per chunk; classification pages counted
            raw = iter_trace(path, fmt, chunk_size=args.chunk_size)
            return guard_chunks(raw, machine.line_bits, classify=not args.no_simulate, hint=_NO_SIM)

        total = count_accesses(path, fmt)
        title = f"Miss-ratio curve of {path}"
        lcs = {}
    title += f", stream into {machine.levels[target].name} of {machine.name}"
    passes = 1 if args.no_simulate else 2  # the curve's pass, then the simulation
    threads = _threads(args, total)
    with Progress(passes * total if total else None, enabled=False if args.quiet else None) as bar:
        curve = miss_ratio_curve(
            chunks(), machine, level=target, sets=args.sets, max_ways=args.max_ways,
            rate=args.sample, sample_size=args.sample_size, seed=args.sample_seed, source=source,
            progress=bar, threads=threads,
        )  # fmt: skip
        sim = None
        if not args.no_simulate:
            sim = simulate(machine, chunks(), flops=flops, source=source, progress=bar)
    rep = report(curve, machine, level=target, flops=flops, simulated=sim, layer_conditions=lcs)
    if args.csv:
        write_text(args.csv, _csv(rep))
    if args.out:
        from hroof.plots.mrc import plot_mrc

        save_figure(plot_mrc(rep), args.out, flag="--out")
    if args.json:
        emit(json.dumps(rep.to_dict(), indent=1))
    else:
        text = format_mrc(rep, title=title, threads=threads)
        for path, what in ((args.csv, "curve"), (args.out, "figure")):
            if path:
                text += f"\nwrote {path} ({what})"
        emit(text)
    return 0


def register(sub, machine_sub) -> None:
    """Add ``hroof mrc``."""
    p = sub.add_parser(
        "mrc",
        help="miss-ratio curve: the misses of every cache size from one pass, with knees",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("kernel", nargs="?", metavar="KERNEL", help="a kernel (see 'hroof kernels')")
    p.add_argument("params", nargs="*", metavar="KEY=VALUE", help="the kernel's parameters")
    p.add_argument("--trace", metavar="FILE", help="a trace file instead of a kernel")
    p.add_argument(
        "--format",
        type=trace_format,
        metavar="{" + ",".join(FORMATS) + "}",
        help="trace file format (default: told from the file name)",
    )
    p.add_argument("--flops", type=flops_count, metavar="N", help="flops of the trace (AIs)")
    machine_option(p)
    model_option(p)
    p.add_argument(
        "--level",
        metavar="NAME",
        help="the curve of the stream reaching this level (the levels above are simulated); "
        "default: the first level (the trace itself)",
    )
    p.add_argument(
        "--sets",
        type=positive_int("number of sets"),
        metavar="N",
        help="sets of the set-associative curve (default: the level's)",
    )
    p.add_argument(
        "--max-ways",
        type=positive_int("number of ways", 4096),
        metavar="W",
        help="deepest associativity of the set-associative curve (default: max(32, 2 x ways))",
    )
    p.add_argument(
        "--sample",
        type=_rate,
        metavar="R",
        help="SHARDS spatial sampling at rate R in (0, 1] (e.g. 0.01)",
    )
    p.add_argument(
        "--sample-size",
        type=positive_int("number of lines"),
        metavar="N",
        help="fixed-size SHARDS: keep at most N sampled lines (at least 16)",
    )
    p.add_argument(
        "--sample-seed",
        type=_seed,
        default=0,
        metavar="N",
        help="key of the sampling hash (another seed samples other lines; default 0)",
    )
    p.add_argument(
        "--threads",
        choices=("auto", "1", "2"),
        default="auto",
        help="2: a second thread, the same curves: the set-associative curve runs beside the "
        "fully associative one (with --sample or --sample-size, half its sets on each thread, "
        "and the sample is fed beside its sub-samples); auto (default): two from 1,000,000 "
        "accesses when a second CPU is idle (load average), else one. The exact fully "
        "associative pass itself is one chain of dependent updates, on one thread",
    )
    p.add_argument(
        "--no-simulate",
        action="store_true",
        help="skip the simulation of the whole hierarchy (no simulated point, no writebacks)",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON (hroof.mrc/1)")
    p.add_argument("--csv", metavar="FILE", help="write the curve as CSV")
    p.add_argument("--out", metavar="FILE", help="write the figure (.png or .svg)")
    chunk_option(p)
    quiet_option(p)
    p.set_defaults(func=cmd_mrc)
