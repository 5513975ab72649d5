"""``hroof gemm`` and ``hroof network``: accelerators and AI workloads (docs/accelerators.md);
``coalesce`` and ``mwp`` are in :mod:`hroof.cli.gpu_threads`.

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
from hroof._base.units import format_si, parse_float, parse_int
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


def _flops_text(f: float) -> str:
    return format_si(f, "FLOP", digits=4, small=False)


def _bytes_text(b: float) -> str:
    return format_si(b, "B", digits=4, small=False)


# ---------------------------------------------------------------------------- gemm
def _article_view(a):
    """The article's GEMM comparison: (AI on unique bytes without split-K, the memory
    level, "compute" or "memory" against that level's ridge)."""
    from hroof.accel.gemm import gemm_ai

    ai = gemm_ai(a.m, a.n, a.k, a.element_size)
    mem = a.levels[-1]
    return ai, mem, "compute" if ai >= mem.ridge else "memory"


def _gemm_article_lines(a, dev) -> list[str]:
    """``--convention article``: the article's figure and comparison (AI on unique bytes,
    no launch, against the off-chip ridge) first, hroof's refinement second."""
    ai, mem, verdict = _article_view(a)
    sign = ">=" if verdict == "compute" else "<"
    what = "compute" if a.binding == "compute" else f"{a.binding} bandwidth"
    split = f", split-K {a.split_k}" if a.split_k > 1 else ""
    refined = (
        f"refinement     hroof's launch ({a.tile[0]}x{a.tile[1]} tiles{split}): AI {a.ai:,.1f} "
        f"on {mem.name}"
        + (" with split-K's partial sums" if a.split_k > 1 else "")
        + f"; {a.bound}-bound ({what} binds: {a.attainable:,.0f} GFLOP/s); class {a.klass}-bound"
    )
    return [
        f"article        AI {ai:,.1f} FLOP/byte (2 M N K over A, B read and C written once) "
        f"{sign} {mem.name} ridge {mem.ridge:.1f} ({dev.peak:,.0f} / {mem.bandwidth:,.0f}): "
        f"{verdict}-bound",
        refined,
    ]


def format_gemm(a, dev, convention: str | None = None) -> str:
    """The ``hroof gemm`` report of one analysis; with ``convention="article"`` the
    article's comparison and hroof's refinement open it."""
    from hroof.accel.gemm import gemm_ai

    split = f", split-K {a.split_k} slices" if a.split_k > 1 else ""
    lines = [
        f"GEMM {a.m} x {a.n} x {a.k} (M x N x K), {a.dtype} ({a.element_size} bytes), tile "
        f"{a.tile[0]}x{a.tile[1]}{split}, on {a.device}",
        *(_gemm_article_lines(a, dev) if convention == "article" else []),
        f"flops          {_flops_text(a.flops)} (2 M N K)",
        f"AI             {a.ai:,.1f} FLOP/byte on unique bytes (A and B read once, C written once"
        + (
            f"; plus split-K's partial sums, 2 x {a.split_k - 1} x M N elements; without them "
            f"{gemm_ai(a.m, a.n, a.k, a.element_size):,.1f})"
            if split
            else ")"
        ),
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
        + (f" x {a.split_k} K slices" if split else "")
        + (f"; {4} x {a.sms} SMs = {a.min_blocks:,}" if a.sms else "; SMs unknown"),
        f"class          {a.klass}-bound",
        f"reason         {a.reason}",
        f"article        {a.note}",
    ]
    return "\n".join(lines)


def cmd_gemm(args: argparse.Namespace) -> int:
    """``hroof gemm M N K``: a GEMM shape's AI, bound and class on a device."""
    from hroof.accel.gemm import analyse_gemm, gemm_family, parse_tile

    dev = _device(args.machine, args.dtype)
    tile = None if args.tile is None else parse_tile(args.tile)
    if tile and not args.sweep and (tile[0] > args.m or tile[1] > args.n):
        raise HroofError(
            f"--tile {tile[0]}x{tile[1]} is larger than C ({args.m} x {args.n}); a tile "
            f"is at most M x N (e.g. --tile {min(tile[0], args.m)}x{min(tile[1], args.n)})"
        )
    split = args.split_k
    if split is not None and split < 1:
        raise HroofError(f"--split-k must be a positive whole number, got {split}")
    if args.sweep is not None and args.convention is not None:
        raise HroofError(
            "--convention applies to one shape; with --sweep the table's 'article' column "
            "gives the article's verdict"
        )
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
        analyses = gemm_family(args.m, args.n, args.k, key, values, dev, tile, split)
    else:
        analyses = [analyse_gemm(args.m, args.n, args.k, dev, tile, split)]
    if args.plot:
        from hroof.plots.accel import gemm_figure

        save_figure(gemm_figure(analyses, dev), args.plot, flag="--plot")
    if args.json:
        docs = [a.to_dict() for a in analyses]
        if args.convention == "article":  # the article's figure and verdict, as in the text
            ai, mem, verdict = _article_view(analyses[0])
            docs[0].update(article_ai=ai, article_ridge=mem.ridge, article_bound=verdict)
        emit(json.dumps(docs[0] if args.sweep is None else docs, indent=2))
    elif args.sweep is None:
        emit(format_gemm(analyses[0], dev, args.convention))
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
            Col("article", "<"),
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
                f"{a.tile[0]}x{a.tile[1]}" + (f"/{a.split_k}K" if a.split_k > 1 else ""),
                f"{a.blocks:,}",
                a.klass,
                a.article or "-",
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
        foot = (
            "tile: /SK = split-K into S slices; article: the accelerator article's verdict by "
            "shape (M ~ N >> K latency, M or N small memory, all large compute); where it "
            "differs from class, the single-shape report says why"
        )
        emit("\n".join([head, "", *text_table(cols, rows), "", foot]))
    if args.plot:
        import sys

        sys.stderr.write(f"wrote {args.plot}\n")
    return 0


# ---------------------------------------------------------------------------- network
def _counting(na) -> str:
    """One line saying which conventions a network analysis used."""
    ops = (
        "a MAC = 2 flops (--count flops, the default)"
        if na.count == "flops"
        else "a MAC = 1 op (--count macs, the accelerator article's convention; the peak is "
        "halved to Gop/s to match)"
    )
    moved = (
        "weights (bias incl.), input and output activations once (--traffic io, the default)"
        if na.traffic == "io"
        else "weights and output activations once (--traffic outputs: the article's "
        "Kernel Mem + Output Mem)"
    )
    if na.fused == "graph":
        fused = (
            "the network's own layer graph: a ReLU inside the layer before it costs nothing, "
            "every other ReLU, batch norm and pooling is a layer of its own"
        )
    elif na.fused:
        fused = (
            "ReLU, batch norm and pooling fused into the layer before (the default; --unfused "
            "to count them)"
        )
    else:
        fused = "ReLU, batch norm and pooling are layers of their own (--unfused)"
    return f"counting: {ops}\nbytes:    {moved}\nlayers:   {fused}"


def format_network(na, convention: str | None = None) -> str:
    """The ``hroof network`` report: per-layer table and the network's totals."""

    u = na.unit
    cols = [
        Col("layer", "<", 0),
        Col("type", "<"),
        Col("output\nC x H x W"),
        Col(f"M{u}" if u == "FLOP" else "M ops"),
        Col("weights\nMB"),
        Col("act. in\nMB"),
        Col("act. out\nMB"),
        Col(f"AI\n{u}/byte"),
        Col(f"roof\nG{u}/s"),
        Col("bound", "<"),
        Col("time"),
    ]
    rows = []
    for lb in na.layers:
        c = lb.cost
        shape = "x".join(str(x) for x in c.out_shape)
        if lb.bound == "fused":
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
                f"{c.ai:.2f}" if c.ai < 1 else f"{c.ai:.1f}",
                f"{lb.attainable:,.0f}",
                lb.bound,
                seconds_text(lb.time_s),
            ]
        )
    head = [
        f"{na.network} on {na.device}: {na.dtype}, batch {na.batch}; peak {na.peak:,.0f} "
        f"G{u}/s, {na.memory} {na.bandwidth:g} GB/s, ridge {na.ridge:.1f} {u}/byte",
        *([f"convention {convention} (--convention {convention}):"] if convention else []),
        _counting(na),
        "",
    ]
    total = (
        f"{na.flops / 1e9:,.2f} GFLOP ({na.macs / 1e9:,.2f} G MACs)"
        if na.count == "flops"
        else f"{na.flops / 1e9:,.3f} G operations counting a MAC as one "
        f"({na.macs / 1e9:,.2f} G MACs)"
    )
    n_mem = sum(lb.bound == "memory" for lb in na.layers)
    n_fused = sum(lb.bound == "fused" for lb in na.layers)
    what = (
        "ReLU layers inside the layer before them, not listed"
        if na.fused == "graph"
        else "ReLU, batch-norm and pooling layers fused, not listed: --unfused lists and "
        "counts them"
    )
    tail = [
        *([f"({n_fused} {what})"] if n_fused else []),
        "",
        f"total          {total}, {na.params / 1e6:,.2f} M parameters, "
        f"{na.bytes / 1e6:,.1f} MB moved",
        f"AI             {na.ai:.1f} {u}/byte vs ridge {na.ridge:.1f} ({na.count} "
        f"convention): {na.bound}-bound",
        f"attainable     {na.attainable:,.0f} G{u}/s = min(peak, AI x {na.bandwidth:g} GB/s)",
        f"time           {seconds_text(na.time_s)} summed over layers, each at its own bound "
        f"({na.achieved:,.0f} G{u}/s on average); {n_mem} memory-bound layer(s)",
    ]
    if na.count == "macs":
        tail.append(_article_ridge(na))
    return "\n".join(head + text_table(cols, rows) + tail)


def _article_ridge(na) -> str:
    """The accelerator article's comparison: a MAC-counted AI against the ridge in FLOP/byte
    (peak with a FMA as 2 flops), and whether it gives hroof's verdict."""
    verdict = "compute" if na.ai >= na.flop_ridge else "memory"
    same = "the same verdict" if verdict == na.bound else f"NOT hroof's {na.bound}-bound"
    return (
        f"article way    {na.ai:.1f} op/byte vs the FLOP ridge {na.flop_ridge:.1f} (a MAC once "
        f"against a FMA twice, as the article compares): {verdict}-bound, {same}"
    )


def cmd_network(args: argparse.Namespace) -> int:
    """``hroof network NAME|FILE``: per-layer flops, bytes and bounds of a network."""
    from hroof.accel.network import analyse_network, load_network

    net = load_network(args.network)
    dev = _device(args.machine, args.dtype)
    if args.batch < 1:
        raise HroofError(f"--batch must be a positive whole number, got {args.batch}")
    na = analyse_network(net, dev, args.batch, **_network_convention(args))
    if args.plot:
        from hroof.plots.accel import network_figure

        save_figure(network_figure(na, dev), args.plot, flag="--plot")
    if args.json:
        emit(json.dumps({**na.to_dict(), "convention": args.convention}, indent=2))
    else:
        emit(format_network(na, args.convention))
    return 0


def _network_convention(args: argparse.Namespace) -> dict:
    """``count``, ``fused`` and ``traffic`` from --convention or the separate flags."""
    from hroof.accel.network import CONVENTIONS

    if args.convention is None:
        return {
            "count": args.count or "flops",
            "fused": not args.unfused,
            "traffic": args.traffic or "io",
        }
    given = [f for f, v in (("--count", args.count), ("--traffic", args.traffic),
                            ("--unfused", args.unfused)) if v]  # fmt: skip
    if given:
        raise HroofError(
            f"--convention {args.convention} sets --count, --traffic and the layers itself; "
            f"drop {', '.join(given)}"
        )
    return dict(CONVENTIONS[args.convention])


# ---------------------------------------------------------------------------- parsers
def register(sub, machine_sub=None) -> None:
    """Add ``gemm`` and ``network`` to the ``hroof`` subparsers."""

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
            "  hroof gemm 8192 128 8192 --convention article          article: AI 124.1 < 138.9, "
            "memory;\n"
            "                                                         then hroof: AI 120.5, the "
            "L2 binds\n"
            "  hroof gemm 8192 128 8192 --tile 128x128                64 blocks: latency-bound\n"
            "  hroof gemm 8192 8192 8192 --dtype fp16                 AI 2730: compute\n"
            "  hroof gemm 8192 8192 128                               the article's M~N>>K case\n"
            "  hroof gemm 512 512 512                                 64 blocks: latency-bound\n"
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
        help="C tile per thread block (default: chosen per shape as a tensor-core library "
        "would: the largest tile, 256x128 down to 64x64, that still gives 4 thread blocks "
        "per SM, else 64x64 with split-K; 128x128 when the SM count is unknown)",
    )
    p.add_argument(
        "--split-k",
        type=_int_arg,
        metavar="S",
        help="split K into S slices (serial split-K: S x the thread blocks, C read and "
        "written once more per extra slice); default: chosen with the tile, 1 with --tile",
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
    p.add_argument(
        "--convention",
        choices=("article",),
        help="article: open the report with the accelerator article's figure and comparison "
        "(AI on unique bytes, no split-K, against the off-chip ridge), hroof's refinement "
        "(the launch's tiles and split-K, the L2 roof) on the line after it",
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
            "  hroof network vgg16 --convention article           the article's AI 25, compute\n"
            "  hroof network mobilenet --convention article       the article's AI 7, memory\n"
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
    p.add_argument(
        "--count",
        choices=("flops", "macs"),
        default=None,
        help="flops: a multiply-accumulate is 2 flops (default); macs: it is one operation, "
        "as the accelerator article counts (the peak is halved to match)",
    )
    p.add_argument(
        "--unfused",
        action="store_true",
        help="count ReLU, batch norm and pooling as layers of their own (read input, write "
        "output); default: fused into the layer before them",
    )
    p.add_argument(
        "--traffic",
        choices=("io", "outputs"),
        default=None,
        help="io: each layer moves weights, input and output once (default); outputs: "
        "weights and outputs only (the article's Kernel Mem + Output Mem)",
    )
    p.add_argument(
        "--convention",
        choices=("article",),
        help="article: the accelerator article's counting for every network (a MAC = 1 op, "
        "weights + outputs, each network's own layer graph: a ReLU inside a convolution "
        "free, separate batch-norm, ReLU and pooling layers counted); instead of "
        "--count/--traffic/--unfused",
    )
    p.add_argument("--plot", metavar="FILE", help="write the per-layer roofline (.png/.svg/.pdf)")
    p.add_argument("--json", action="store_true", help="print the analysis as JSON")
    p.set_defaults(func=cmd_network)


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
