"""``hroof gemm``, ``hroof network``, ``hroof coalesce`` and ``hroof mwp``: accelerators
and AI workloads (docs/accelerators.md).

The ``cmd_*`` functions turn argparse values into plain values and call
:mod:`hroof.accel`; bad input raises :class:`hroof._base.errors.HroofError`, which
:func:`hroof.cli.main` prints as one line with exit status 2. Figures are written only
once complete (a temporary file, then a rename).
"""

from __future__ import annotations

import argparse
import json
import textwrap

from hroof._base.errors import HroofError
from hroof._base.files import save_figure
from hroof._base.units import parse_float, parse_int
from hroof.cli.options import kernel_plan, positive_int, trace_format
from hroof.cli.text import Col, emit, text_table

_FMT = argparse.RawDescriptionHelpFormatter
_DTYPES = "fp64, fp32, tf32, fp16, bf16, int8"


def _wrap(text: str) -> str:
    """A description paragraph wrapped for the raw-description help formatter."""
    return textwrap.fill(text, 88)


# ---------------------------------------------------------------------------- helpers
def _int_arg(text: str) -> int:
    """A whole number as typed (``8192``, ``8_192``, ``8e3``); its range is the library's."""

    try:
        return parse_int(text, maximum=None)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None


def _float_arg(text: str) -> float:
    try:
        return parse_float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None


def _segments_arg(text: str) -> list[int]:
    try:
        values = [parse_int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        values = []
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(
            f"must be transaction sizes in bytes separated by commas, e.g. 32,64,128; got {text!r}"
        )
    return values


def _device(machine_spec: str, dtype: str):
    from hroof.accel.device import device, element_size
    from hroof.machine.model import load_machine

    element_size(dtype)  # unknown dtype names fail before the machine is read
    return device(load_machine(machine_spec), dtype)


def _gbs(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def seconds_text(t: float) -> str:
    if t >= 1:
        return f"{t:.3g} s"
    if t >= 1e-3:
        return f"{t * 1e3:.3g} ms"
    return f"{t * 1e6:.3g} us"


def _si(x: float, unit: str) -> str:
    """A count in decimal prefixes, 3-4 significant digits: ``17.2 GFLOP``, ``402.7 MB``."""
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if x >= scale:
            return f"{x / scale:.4g} {prefix}{unit}"
    return f"{x:g} {unit}"


def _flops_text(f: float) -> str:
    return _si(f, "FLOP")


def _bytes_text(b: float) -> str:
    return _si(b, "B")


# ---------------------------------------------------------------------------- gemm
def format_gemm(a, dev) -> str:
    """The ``hroof gemm`` report of one analysis."""

    lines = [
        f"GEMM {a.m} x {a.n} x {a.k} (M x N x K), {a.dtype} ({a.element_size} bytes), tile "
        f"{a.tile[0]}x{a.tile[1]}, on {a.device}",
        f"flops          {_flops_text(a.flops)} (2 M N K)",
        f"AI             {a.ai:,.1f} FLOP/byte on unique bytes (A and B read once, C written once)",
        f"tile AI        {a.tile_ai:,.1f} FLOP/byte per {a.tile[0]}x{a.tile[1]} tile "
        "(2 Mt Nt K flops over (Mt + Nt) K elements)",
        f"peak           {a.peak:,.0f} GFLOP/s ({a.dtype})",
        "",
    ]
    cols = [
        Col("level", "<", 0),
        Col("GB/s"),
        Col("ridge\nFLOP/byte"),
        Col("bytes", gap=3),
        Col("traffic", "<"),
        Col("AI\nFLOP/byte"),
        Col("roof\nGFLOP/s"),
        Col("time"),
    ]
    rows = [
        [
            lv.name,
            _gbs(lv.bandwidth),
            f"{lv.ridge:.1f}",
            _bytes_text(lv.bytes),
            "tiled (SMs load)" if lv.traffic == "tiled" else "unique (at least)",
            f"{lv.ai:,.1f}",
            f"{lv.roof:,.0f}",
            seconds_text(lv.time_s),
        ]
        for lv in a.levels
    ]
    lines += text_table(cols, rows)
    what = "compute" if a.binding == "compute" else f"{a.binding} bandwidth"
    lines += [
        "",
        f"roofline       {a.bound}-bound ({what} binds): {a.attainable:,.0f} GFLOP/s",
        f"time           {seconds_text(a.time_s)} at that bound (a lower bound: perfect overlap, "
        "full device)",
        f"thread blocks  {a.blocks:,} = ceil({a.m}/{a.tile[0]}) x ceil({a.n}/{a.tile[1]})"
        + (f"; {4} x {a.sms} SMs = {a.min_blocks:,}" if a.sms else "; SMs unknown"),
        f"class          {a.klass}-bound",
        f"reason         {a.reason}",
    ]
    return "\n".join(lines)


def cmd_gemm(args: argparse.Namespace) -> int:
    """``hroof gemm M N K``: a GEMM shape's AI, bound and class on a device."""
    from hroof.accel.gemm import analyse_gemm, gemm_family, parse_tile

    dev = _device(args.machine, args.dtype)
    tile = None if args.tile is None else parse_tile(args.tile)
    if args.sweep is not None:
        from hroof.studies.sweep import parse_values

        key, sep, text = args.sweep.partition("=")
        if not sep:
            raise HroofError(f"--sweep {args.sweep!r} must be DIM=VALUES, e.g. n=16..8192:x2")
        values = []
        for v in parse_values(text):
            try:
                values.append(_int_arg(v))
            except argparse.ArgumentTypeError:
                raise HroofError(f"--sweep value {v!r} is not a whole number") from None
        analyses = gemm_family(args.m, args.n, args.k, key, values, dev, tile)
    else:
        analyses = [analyse_gemm(args.m, args.n, args.k, dev, tile)]
    if args.plot:
        from hroof.plots.accel import gemm_figure

        save_figure(gemm_figure(analyses, dev), args.plot, flag="--plot")
    if args.json:
        docs = [a.to_dict() for a in analyses]
        emit(json.dumps(docs[0] if args.sweep is None else docs, indent=2))
    elif args.sweep is None:
        emit(format_gemm(analyses[0], dev))
    else:
        cols = [
            Col("M", gap=0),
            Col("N"),
            Col("K"),
            Col("AI\nFLOP/byte"),
            Col("roof\nGFLOP/s"),
            Col("bound", "<"),
            Col("tile"),
            Col("blocks"),
            Col("class", "<"),
            Col("time"),
        ]
        rows = [
            [
                str(a.m),
                str(a.n),
                str(a.k),
                f"{a.ai:,.1f}",
                f"{a.attainable:,.0f}",
                f"{a.bound} ({a.binding})",
                f"{a.tile[0]}x{a.tile[1]}",
                f"{a.blocks:,}",
                a.klass,
                seconds_text(a.time_s),
            ]
            for a in analyses
        ]
        head = (
            f"GEMM family on {dev.name}, {dev.dtype}, "
            + ("tiles chosen per shape" if tile is None else f"tile {tile[0]}x{tile[1]}")
            + "; ridge "
            + ", ".join(f"{n} {dev.peak / bw:.1f}" for n, bw in dev.levels)
            + " FLOP/byte"
            + (f"; latency-bound below {4 * dev.sms} blocks" if dev.sms else "")
        )
        emit("\n".join([head, "", *text_table(cols, rows)]))
    if args.plot:
        import sys

        sys.stderr.write(f"wrote {args.plot}\n")
    return 0


# ---------------------------------------------------------------------------- network
def format_network(na) -> str:
    """The ``hroof network`` report: per-layer table and the network's totals."""

    cols = [
        Col("layer", "<", 0),
        Col("type", "<"),
        Col("output\nC x H x W"),
        Col("MFLOP"),
        Col("weights\nMB"),
        Col("act. in\nMB"),
        Col("act. out\nMB"),
        Col("AI\nFLOP/byte"),
        Col("roof\nGFLOP/s"),
        Col("bound", "<"),
        Col("time"),
    ]
    rows = []
    for lb in na.layers:
        c = lb.cost
        shape = "x".join(str(x) for x in c.out_shape)
        if lb.bound == "skipped":
            rows.append([c.name, c.type, shape, "-", "-", "-", "-", "-", "-", "skipped", "-"])
            continue
        rows.append(
            [
                c.name,
                c.type,
                shape,
                f"{c.flops / 1e6:,.1f}",
                f"{c.weight_bytes / 1e6:.3g}",
                f"{c.in_bytes / 1e6:.3g}",
                f"{c.out_bytes / 1e6:.3g}",
                f"{c.ai:.1f}",
                f"{lb.attainable:,.0f}",
                lb.bound,
                seconds_text(lb.time_s),
            ]
        )
    head = [
        f"{na.network} on {na.device}: {na.dtype}, batch {na.batch}; peak {na.peak:,.0f} "
        f"GFLOP/s, {na.memory} {na.bandwidth:g} GB/s, "
        f"ridge {na.ridge:.1f} FLOP/byte",
        "counting: a MAC = 2 flops; each layer moves its weights (bias included), input and "
        "output activations once; pooling skipped (fused); ReLU/BN not counted",
        "",
    ]
    tail = [
        "",
        f"total          {na.flops / 1e9:,.2f} GFLOP ({na.macs / 1e9:,.2f} G MACs), "
        f"{na.params / 1e6:,.2f} M parameters, {na.bytes / 1e6:,.1f} MB moved",
        f"AI             {na.ai:.1f} FLOP/byte vs ridge {na.ridge:.1f}: {na.bound}-bound",
        f"attainable     {na.attainable:,.0f} GFLOP/s = min(peak, AI x {na.bandwidth:g} GB/s)",
        f"time           {seconds_text(na.time_s)} summed over layers, each at its own bound "
        f"({na.achieved:,.0f} GFLOP/s on average)",
    ]
    return "\n".join(head + text_table(cols, rows) + tail)


def cmd_network(args: argparse.Namespace) -> int:
    """``hroof network NAME|FILE``: per-layer flops, bytes and bounds of a network."""
    from hroof.accel.network import analyse_network, load_network

    net = load_network(args.network)
    dev = _device(args.machine, args.dtype)
    if args.batch < 1:
        raise HroofError(f"--batch must be a positive whole number, got {args.batch}")
    na = analyse_network(net, dev, args.batch)
    if args.plot:
        from hroof.plots.accel import network_figure

        save_figure(network_figure(na, dev), args.plot, flag="--plot")
    emit(json.dumps(na.to_dict(), indent=2) if args.json else format_network(na))
    return 0


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
    from hroof.accel.mwp import mwp_cwp, timeline

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
        emit(json.dumps({**r.to_dict(), "replay_cycles": replay}, indent=2))
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
    emit("\n".join(lines))
    return 0


# ---------------------------------------------------------------------------- parsers
def register(sub, machine_sub=None) -> None:
    """Add ``gemm``, ``network``, ``coalesce`` and ``mwp`` to the ``hroof`` subparsers."""

    p = sub.add_parser(
        "gemm",
        help="a GEMM shape on a GPU: AI, ridge points, compute/memory/latency-bound",
        formatter_class=_FMT,
        description=_wrap(
            "Arithmetic intensity of C(MxN) = A(MxK) B(KxN) at a precision (2MNK flops over "
            "A and B read once and C written once), the tiled kernel's AI (per tile: "
            "(Mt+Nt)K elements for 2MtNtK flops) against the L2, the ridge point of each "
            "level, the roofline bound and time, the thread blocks (one per tile) against "
            "4 x SMs, and the class: latency-bound when there are too few blocks, else "
            "compute- or memory-bound."
        ),
        epilog=(
            "examples:\n"
            "  hroof gemm 8192 128 8192 --machine v100 --dtype fp16   AI 124.1 < 138.9: memory\n"
            "  hroof gemm 8192 128 8192 --tile 128x128                64 blocks: latency-bound\n"
            "  hroof gemm 8192 8192 8192 --dtype fp16                 AI 2730: compute\n"
            "  hroof gemm 8192 128 8192 --tile 32x32                  1024 blocks: memory-bound\n"
            "  hroof gemm 4096 n 4096 --sweep n=16..8192:x2 --plot gemm.png"
        ),
    )
    p.add_argument("m", metavar="M", help="rows of A and C")
    p.add_argument("n", metavar="N", help="columns of B and C")
    p.add_argument("k", metavar="K", help="columns of A, rows of B")
    p.add_argument(
        "--machine",
        default="v100",
        metavar="NAME|FILE",
        help="a GPU machine (default: v100; see 'hroof machine list')",
    )
    p.add_argument(
        "--dtype",
        default="fp16",
        metavar="DTYPE",
        help=f"element precision: {_DTYPES} (default: fp16); the machine must give a peak for it",
    )
    p.add_argument(
        "--tile",
        metavar="MtxNt",
        help="C tile per thread block (default: chosen per shape as a library would: the "
        "largest tile, 256x128 down to 16x16, that still gives 4 thread blocks per SM; "
        "128x128 when the SM count is unknown)",
    )
    p.add_argument(
        "--sweep",
        metavar="DIM=VALUES",
        help="vary one dimension: m, n or k = a list or range (16..8192:x2); the "
        "positional value of that dimension is ignored",
    )
    p.add_argument(
        "--plot",
        metavar="FILE",
        help="write the shapes on the device's roofline (.png, .svg or .pdf)",
    )
    p.add_argument("--json", action="store_true", help="print the analysis as JSON")
    p.set_defaults(func=_gemm_entry)

    p = sub.add_parser(
        "network",
        help="a CNN's per-layer flops, bytes and roofline on a device (vgg16, mobilenet, file)",
        formatter_class=_FMT,
        description=_wrap(
            "Per-layer flops (a MAC is 2 flops) and bytes (weights incl. bias, input and "
            "output activations, each moved once) of a network, its arithmetic intensity, "
            "attainable performance min(peak, AI x memory bandwidth) and bound on a device. "
            "Built in: vgg16, mobilenet (v1), on 3x224x224. A network file (.toml with "
            '[[layer]] tables or .json with a "layers" list) gives your own: layer types '
            "conv, pwconv, dwconv, fc, pool (see docs/accelerators.md)."
        ),
        epilog=(
            "examples:\n"
            "  hroof network vgg16 --machine gtx1080ti            compute-bound\n"
            "  hroof network mobilenet --machine gtx1080ti        memory-bound\n"
            "  hroof network my.toml --machine a100 --dtype fp16 --plot layers.png"
        ),
    )
    p.add_argument("network", metavar="NAME|FILE", help="vgg16, mobilenet or a .toml/.json file")
    p.add_argument(
        "--machine",
        default="gtx1080ti",
        metavar="NAME|FILE",
        help="a GPU machine (default: gtx1080ti)",
    )
    p.add_argument(
        "--dtype",
        default="fp32",
        metavar="DTYPE",
        help=f"element precision: {_DTYPES} (default: fp32, 4 bytes)",
    )
    p.add_argument(
        "--batch",
        type=_int_arg,
        default=1,
        metavar="B",
        help="batch size: scales flops and activations, not weights (default: 1)",
    )
    p.add_argument("--plot", metavar="FILE", help="write the per-layer roofline (.png/.svg/.pdf)")
    p.add_argument("--json", action="store_true", help="print the analysis as JSON")
    p.set_defaults(func=cmd_network)

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
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar on stderr")
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


def _gemm_entry(args: argparse.Namespace) -> int:
    """Parse M N K (whole numbers; with --sweep the swept one may be a placeholder)."""
    swept = args.sweep.partition("=")[0].strip().lower() if args.sweep else None
    for dim in ("m", "n", "k"):
        text = getattr(args, dim)
        if dim == swept:
            setattr(args, dim, 1)
            continue
        try:
            setattr(args, dim, _int_arg(text))
        except argparse.ArgumentTypeError:
            raise HroofError(
                f"GEMM dimension {dim.upper()} must be a positive whole number, got {text!r}"
            ) from None
    return cmd_gemm(args)
