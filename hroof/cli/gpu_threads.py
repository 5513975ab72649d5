"""``hroof coalesce`` and ``hroof mwp``: how a GPU's threads reach memory (the coalescing
of a warp's accesses; Hong and Kim's memory- and computation-warp parallelism).

Shares its argument types and formatting with :mod:`hroof.cli.accel` (docs/accelerators.md).
"""

from __future__ import annotations

import argparse
import json

from hroof._base.errors import HroofError
from hroof._base.files import save_figure
from hroof.cli.accel import _FMT, _float_arg, _int_arg, _segments_arg, _wrap
from hroof.cli.options import kernel_plan, positive_int, quiet_option, trace_format
from hroof.cli.text import Col, emit, text_table


# ---------------------------------------------------------------------------- coalesce
def format_coalescing(c, what: str) -> str:

    lines = [
        f"coalescing of {what}",
        f"accesses {c.accesses:,} in {c.warps:,} warp instructions (32 threads each); "
        f"bytes used {c.used_bytes:,}",
        "",
    ]
    cols = [
        Col("transaction", "<", 0),
        Col("transactions"),
        Col("bytes moved"),
        Col("efficiency"),
        Col("waste"),
    ]
    rows = []
    for s, t in zip(c.segments, c.transactions, strict=True):
        eff = c.efficiency(s)
        rows.append(
            [
                f"{s} B",
                f"{t:,}",
                f"{t * s:,}",
                "-" if eff is None else f"{100 * eff:.1f}%",
                "-" if eff is None else f"{1 / eff:.2f}x",
            ]
        )
    return "\n".join(lines + text_table(cols, rows))


def cmd_coalesce(args: argparse.Namespace) -> int:
    """``hroof coalesce KERNEL ... | --trace FILE | --stride B``: transactions per warp."""
    from hroof._base.progress import Progress
    from hroof.accel import coalescing

    given = [args.kernel is not None, args.trace is not None, args.stride is not None]
    if sum(given) != 1:
        raise HroofError(
            "give exactly one of KERNEL (see 'hroof kernels'), --trace FILE or --stride BYTES"
        )
    if args.stride is not None:
        if args.stride < 0:
            raise HroofError(f"--stride must be a non-negative number of bytes, got {args.stride}")
        c = coalescing.warp_transactions(
            [args.stride * t for t in range(32)], args.size, args.segment
        )
        what = f"one warp: 32 threads x {args.size}-byte accesses, {args.stride} bytes apart"
    elif args.kernel is not None:
        plan = kernel_plan(args.kernel, args.params)
        per = args.per_thread or plan.per_iteration
        with Progress(plan.accesses, enabled=False if args.quiet else None) as bar:
            c = coalescing.coalesce_plan(plan, segments=args.segment, per_thread=per, progress=bar)
        what = (
            f"kernel {args.kernel} {' '.join(args.params)}".rstrip()
            + f": one loop iteration per thread, {per} accesses per thread"
        )
    else:
        from hroof.traces import count_accesses, detect_format

        fmt = args.format or detect_format(args.trace)
        per = args.per_thread or 1
        with Progress(
            count_accesses(args.trace, fmt), enabled=False if args.quiet else None
        ) as bar:
            c = coalescing.coalesce_trace(
                args.trace,
                fmt,
                segments=args.segment,
                per_thread=per,
                access_size=args.access_size,
                progress=bar,
            )
        what = f"trace {args.trace}: warps of 32 consecutive threads, {per} accesses per thread"
    emit(json.dumps(c.to_dict(), indent=2) if args.json else format_coalescing(c, what))
    return 0


# ---------------------------------------------------------------------------- mwp
def cmd_mwp(args: argparse.Namespace) -> int:
    """``hroof mwp``: Hong and Kim's MWP, CWP and execution cycles."""
    from hroof.accel.mwp import explain_replay, mwp_cwp, timeline

    r = mwp_cwp(
        args.mem_latency,
        args.departure_delay,
        args.comp_cycles,
        args.mem_cycles,
        args.mem_insts,
        args.warps,
        rounds=args.rounds,
        bandwidth_gbs=args.bandwidth,
        bytes_per_warp=args.bytes_per_warp,
        clock_ghz=args.clock,
        active_sms=args.sms,
    )
    slots = max(1, int(r.mwp))
    t = None
    if args.warps * args.mem_insts <= 100_000:  # the replay is a Python loop
        per = args.mem_insts
        t = timeline(args.warps, args.comp_cycles / per, args.mem_cycles / per, slots, per)
    replay = None if t is None else t.total * r.rounds
    if args.plot:
        if t is None:
            raise HroofError("--plot needs a replay: at most 100,000 memory periods")
        from hroof.plots.accel import timeline_figure

        save_figure(timeline_figure(t, r), args.plot, flag="--plot")
    if args.json:
        why = None if replay is None else explain_replay(r, replay)
        emit(json.dumps({**r.to_dict(), "replay_cycles": replay, "why": why}, indent=2))
        return 0
    bw = "" if r.mwp_peak_bw is None else f", bandwidth limit {r.mwp_peak_bw:.2f}"
    lines = [
        f"MWP   {r.mwp:g} = min(Mem_L / departure delay = {r.mwp_without_bw:g}{bw}, "
        f"N = {args.warps})",
        f"CWP   {r.cwp:g} = min((Mem_cycles + Comp_cycles) / Comp_cycles = {r.cwp_full:g}, "
        f"N = {args.warps})",
        f"case  {r.case}: {r.dominant} dominates "
        f"({'CWP >= MWP' if r.cwp >= r.mwp else 'CWP < MWP'})",
        f"cycles {r.exec_cycles:,.6g} = ({r.formula}) x {r.rounds:g} round(s)",
        f"replay {replay:,.6g} cycles (one issue pipeline, at most {slots} memory periods in "
        "flight)"
        if replay is not None
        else "replay skipped (more than 100,000 memory periods)",
    ]
    if replay is not None:
        lines.append(f"why    {explain_replay(r, replay)}")
    emit("\n".join(lines))
    return 0


def register(sub, machine_sub=None) -> None:
    """Add ``coalesce`` and ``mwp`` to the ``hroof`` subparsers."""

    p = sub.add_parser(
        "coalesce",
        help="memory coalescing: 32/64/128-byte transactions per warp and their efficiency",
        formatter_class=_FMT,
        description=_wrap(
            "Group accesses into warps of 32 threads and count, per warp instruction, the "
            "aligned segments of each transaction size its threads touch; the efficiency is "
            "bytes used / bytes moved. A kernel runs one loop iteration per thread (the j-th "
            "access of 32 consecutive iterations is one warp instruction); a trace file is "
            "read as 32 consecutive threads of --per-thread accesses each (default 1)."
        ),
        epilog=(
            "examples:\n"
            "  hroof coalesce --stride 128 --size 4   scattered: 8x (32 B), 32x (128 B) waste\n"
            "  hroof coalesce --stride 4 --size 4     coalesced: one 128-byte transaction\n"
            "  hroof coalesce triad n=4096\n"
            "  hroof coalesce --trace run.din --segment 32,128"
        ),
    )
    p.add_argument("kernel", nargs="?", metavar="KERNEL", help="a kernel (see 'hroof kernels')")
    p.add_argument("params", nargs="*", metavar="KEY=VALUE", help="the kernel's parameters")
    p.add_argument("--trace", metavar="FILE", help="a trace file (npz, din, lackey)")
    p.add_argument(
        "--format",
        type=trace_format,
        metavar="{npz,din,lackey}",
        help="trace format (default: from the file name)",
    )
    p.add_argument(
        "--access-size",
        type=positive_int("number of bytes", (1 << 32) - 1),
        default=8,
        metavar="BYTES",
        help="size of din accesses without a SIZE field (default: 8)",
    )
    p.add_argument(
        "--stride",
        type=_int_arg,
        metavar="BYTES",
        help="one warp: thread t accesses address t x BYTES",
    )
    p.add_argument(
        "--size",
        type=positive_int("number of bytes"),
        default=4,
        metavar="BYTES",
        help="access size for --stride (default: 4)",
    )
    p.add_argument(
        "--segment",
        type=_segments_arg,
        default=[32, 64, 128],
        metavar="S1,S2,..",
        help="transaction sizes in bytes (default: 32,64,128)",
    )
    p.add_argument(
        "--per-thread",
        type=positive_int("number of accesses"),
        metavar="P",
        help="accesses per thread (default: a kernel's accesses per iteration; 1 for a trace)",
    )
    p.add_argument("--json", action="store_true", help="print the counts as JSON")
    quiet_option(p)
    p.set_defaults(func=cmd_coalesce)

    p = sub.add_parser(
        "mwp",
        help="Hong and Kim's MWP/CWP model: memory or compute dominated, execution cycles",
        formatter_class=_FMT,
        description=_wrap(
            "MWP (warps that can wait for memory at once) = min(Mem_L / departure delay, "
            "bandwidth limit, N); CWP (warps that compute during one memory wait, plus one) "
            "= min((Mem_cycles + Comp_cycles) / Comp_cycles, N); CWP >= MWP: memory "
            "dominates; else compute. Prints the paper's execution cycles and a cycle-by-"
            "cycle replay (Hong and Kim, ISCA 2009)."
        ),
        epilog=(
            "examples (the article's figure, CWP = 3 with 8 warps):\n"
            "  hroof mwp --mem-latency 200 --departure-delay 100 --comp-cycles 100 "
            "--mem-cycles 200 --warps 8\n"
            "  hroof mwp --mem-latency 200 --departure-delay 25 --comp-cycles 100 "
            "--mem-cycles 200 --warps 8"
        ),
    )
    p.add_argument(
        "--mem-latency",
        type=_float_arg,
        required=True,
        metavar="CYCLES",
        help="Mem_L: cycles from a memory request to its data",
    )
    p.add_argument(
        "--departure-delay",
        type=_float_arg,
        required=True,
        metavar="CYCLES",
        help="cycles between consecutive memory requests of an SM",
    )
    p.add_argument(
        "--comp-cycles",
        type=_float_arg,
        required=True,
        metavar="CYCLES",
        help="computation cycles per warp",
    )
    p.add_argument(
        "--mem-cycles",
        type=_float_arg,
        required=True,
        metavar="CYCLES",
        help="memory waiting cycles per warp",
    )
    p.add_argument(
        "--mem-insts",
        type=_int_arg,
        default=1,
        metavar="N",
        help="memory instructions per warp (default: 1)",
    )
    p.add_argument("--warps", type=_int_arg, required=True, metavar="N", help="active warps per SM")
    p.add_argument(
        "--rounds",
        type=_float_arg,
        default=1.0,
        metavar="R",
        help="#Rep: rounds of N warps per SM (default: 1)",
    )
    p.add_argument(
        "--bandwidth",
        type=_float_arg,
        metavar="GB/s",
        help="memory bandwidth, for MWP's bandwidth limit",
    )
    p.add_argument(
        "--bytes-per-warp",
        type=_float_arg,
        metavar="BYTES",
        help="bytes of one warp's memory request",
    )
    p.add_argument("--clock", type=_float_arg, metavar="GHz", help="SM clock")
    p.add_argument(
        "--plot",
        metavar="FILE",
        help="write the replay as a timeline, one row per warp (.png, .svg or .pdf)",
    )
    p.add_argument(
        "--sms",
        type=_int_arg,
        default=1,
        metavar="N",
        help="active SMs sharing the bandwidth (default: 1)",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=cmd_mwp)
