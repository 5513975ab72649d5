"""``hroof power``: Ghane et al.'s power and energy-efficiency rooflines of GPU launch
variants (threads x blocks, FMA, ILP), as a model (:mod:`hroof.accel.power`)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import textwrap

from hroof._base.errors import HroofError
from hroof._base.files import figure_format, save_figure
from hroof._base.units import format_si
from hroof.cli.options import quiet_option, simulation_options
from hroof.cli.text import (
    Col,
    assignments_text,
    emit,
    header_block,
    int_text,
    term_width,
    text_table,
)

_DESCRIPTION = """\
The experiment of Ghane, Larkin, Shi, Chandrasekaran and Cheung, "Power and Energy-efficiency
Roofline Model for GPUs" (2018): a dot product on a GTX 970 and a K80, launched with more or
fewer threads and blocks, with and without fused multiply-add (FMA), with one or several
partial sums per thread (ILP). They measured power; hroof models it. It simulates the kernel
once on the machine (the bytes every level moves), then for each launch variant:

  time    elements / the least of four rates: memory bandwidth; memory latency (resident
          threads x ILP / latency, Little's law); issue (FMA lanes of the active SMs, two
          instructions per element without FMA); the reduction's dependency chain
          (resident threads x ILP / FMA latency)
  energy  flops x flop_pj + bytes x byte_pj + constant_w x time   (Choi et al.)
  power   energy / time;  efficiency = flops / energy (GFLOP/J)

Each variant is a point (energy per flop, power) on the compute roofline and (energy per byte,
power) on the memory one; the line from the origin through it has its performance as slope.
With constant_w = 0 (Ghane et al.'s own equation, and the bundled gtx970 and k80 files, which
have no published constant power) a variant that only changes the time moves up or down, never
sideways: only --constant-w W makes a faster launch more efficient. The gtx970 and k80 energy
figures and latencies are ESTIMATES (per-operation energies of a 28 nm chip); the output says
so. Without --variant: 128 and 1024 threads per block x one, two and ten blocks per SM; then
FMA, ILP4 and both at the fastest of those, and ILP4 at the slowest."""

_EPILOG = """\
examples:
  hroof power dot n=67108864 --machine gtx970
  hroof power dot n=67108864 dtype=float32 --machine k80 --plot k80-power.png
  hroof power dot n=67108864 --machine gtx970 --constant-w 40
  hroof power dot n=1000000 --machine k80 --variant 128x13 --variant 128x13+ilp4 --json

a machine file needs, besides [energy] (see 'hroof energy --help'), sms and clock_ghz in
[machine] and a [gpu] table:
  [gpu]
  warps_per_sm = 64     # resident warps per SM (CUDA occupancy limits)
  blocks_per_sm = 32    # resident blocks per SM
  memory_latency = 400  # SM cycles from a load to its data
  fma_latency = 6       # SM cycles from an FMA to a dependent one
"""


def register(sub, machine_sub) -> None:
    """Add ``hroof power`` to the ``hroof`` subparsers."""
    p = sub.add_parser(
        "power",
        help="Ghane et al.'s power and energy-efficiency rooflines of GPU launch variants "
        "(threads x blocks, FMA, ILP)",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("kernel", metavar="KERNEL", help="dot, triad, daxpy, add or scale")
    p.add_argument("params", nargs="*", metavar="KEY=VALUE", help="the kernel's parameters")
    p.add_argument(
        "--machine",
        metavar="NAME|FILE",
        default="gtx970",
        help="a GPU machine with [energy] and [gpu] tables: gtx970 (default) or k80, or a "
        "machine file",
    )
    p.add_argument(
        "--variant",
        action="append",
        metavar="TxB[+fma][+ilpN]",
        help="a launch: T threads per block, B blocks, FMA on, N partial sums per thread "
        "(e.g. 1024x130+fma+ilp4); repeat for several (default: the sequence above)",
    )
    p.add_argument(
        "--constant-w",
        type=float,
        metavar="W",
        help="constant power charged for the run's time (default: the machine's)",
    )
    p.add_argument(
        "--memory-latency",
        type=float,
        metavar="CYCLES",
        help="memory latency in SM cycles (default: the machine's [gpu] figure)",
    )
    p.add_argument(
        "--fma-latency",
        type=float,
        metavar="CYCLES",
        help="dependent FMA latency in SM cycles (default: the machine's)",
    )
    p.add_argument(
        "--plot", metavar="FILE", help="write the compute and memory power rooflines (.png or .svg)"
    )
    p.add_argument("--json", action="store_true", help="print the variants as JSON")
    simulation_options(p)
    quiet_option(p)
    p.set_defaults(func=cmd_power)


def _g(x: float) -> str:
    """Three significant figures, thousands written out (1,020, not 1.02e+03)."""
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.3g}"


def _change(point, base) -> str:
    """What one change did against its base, in words true of the numbers."""
    speed = point.gflops / base.gflops - 1
    watts = point.power_w - base.power_w
    eff = point.gflop_per_j / base.gflop_per_j - 1
    did = [f"{100 * speed:+.1f}% GFLOP/s", f"{watts:+.3g} W", f"{100 * eff:+.1f}% GFLOP/J"]
    if point.bound == base.bound:
        why = f"{point.bound} bound before and after"
    else:
        why = f"{base.bound} bound -> {point.bound} bound"
    what = point.launch.label.removeprefix(f"{base.launch.threads}x{base.launch.blocks} ")
    return f"{what} at {base.launch.threads}x{base.launch.blocks}: {', '.join(did)} ({why})"


def format_power(plan, gpu, model, work, pairs, precision: str, width: int) -> str:
    nbytes = work.memory_bytes
    run = f"{plan.kernel} ({assignments_text(plan.params)})"
    energy = (f"{model.flop_pj:g} pJ/flop ({model.precision}), "
              + ", ".join(f"{lv.name} {lv.byte_pj:g} pJ/B" for lv in model.levels if lv.byte_pj)
              + f", {model.constant_w:g} W constant")  # fmt: skip
    if model.unverified:
        energy += f"\nUNVERIFIED: {model.unverified}"
    launch = (f"{gpu.sms} SMs at {gpu.clock_ghz:g} GHz, {gpu.warps_per_sm} warps and "
              f"{gpu.blocks_per_sm} blocks resident per SM, {precision} peak {gpu.peak:g} "
              f"GFLOP/s ({gpu.fma_lanes:g} FMA lanes per SM), {work.memory} {gpu.bandwidth:g} "
              f"GB/s; memory latency {gpu.memory_latency:g} cycles, FMA latency "
              f"{gpu.fma_latency:g} cycles")  # fmt: skip
    if gpu.estimate:
        launch += f"\nESTIMATE: {gpu.estimate}"
    lines = header_block([
        ("kernel", f"{run}: {int_text(work.elements)} elements, {int_text(int(work.flops))} flops, "
         f"{format_si(nbytes, 'B')} from {work.memory} (simulated; AI "
         f"{work.flops / nbytes:.3g} FLOP/B)"),
        ("machine", model.machine), ("energy", energy), ("launch", launch),
    ], width)  # fmt: skip
    cols = [Col("variant", "<", 0), Col("resident\nthreads"), Col("GFLOP/s"), Col("GB/s"),
            Col("bound", "<"), Col("time"), Col("power\nW"), Col("pJ/\nflop"),
            Col("GFLOP/J"), Col("pJ/B")]  # fmt: skip
    rows = [[p.launch.label, int_text(p.resident_threads), _g(p.gflops),
             _g(nbytes / p.time_s * 1e-9), p.bound, format_si(p.time_s, "s"), _g(p.power_w),
             _g(p.pj_per_flop), _g(p.gflop_per_j), _g(p.pj_per_byte(nbytes))]
            for p, _ in pairs]  # fmt: skip
    lines += ["", *text_table(cols, rows)]
    changes = [_change(p, b) for p, b in pairs if b is not None]
    if changes:
        lines += ["", "what each change does (against the launch it changes):"]
        for c in changes:
            lines += textwrap.wrap(c, max(40, width), initial_indent="  ",
                                   subsequent_indent="    ")  # fmt: skip
    lines.append("")
    for note in _notes(model, precision, pairs):
        lines += textwrap.wrap(note, max(40, width), subsequent_indent="  ")
    return "\n".join(lines)


def _notes(model, precision, pairs) -> list[str]:
    out = []
    if model.constant_w == 0:
        out.append(
            "constant: 0 W, Ghane et al.'s equation (P = W/t e_flop + Q/t e_mem): energy per "
            "flop is the same for every launch, so launches differ in power and time only; "
            "--constant-w W charges a constant power, and then faster is more efficient"
        )
    else:
        out.append(f"constant: {model.constant_w:g} W x each launch's time (Choi et al.'s pi0)")
    if precision != model.precision:
        out.append(
            f"precision: the kernel's flops are {precision} and are timed at the {precision} "
            f"peak, but charged the machine's {model.precision} flop_pj"
        )
    uncharged = sorted({n for p, _ in pairs for n in p.energy.uncharged})
    if uncharged:
        out.append(f"not charged: {', '.join(uncharged)} (no byte_pj: a lower bound)")
    out.append(
        "model, not measurement: Ghane et al. measured these launches' power; hroof's time "
        "is a launch model and its energy the machine file's figures"
    )
    return out


def cmd_power(args: argparse.Namespace) -> int:
    """``hroof power KERNEL KEY=VALUE ...``: the launch variants on the power rooflines."""
    from hroof._base.progress import Progress
    from hroof.accel.power import KERNEL_SHAPES, Work, gpu_of, parse_launch, run_variants
    from hroof.machine.model import load_machine
    from hroof.roofline.energy import DTYPE_PRECISIONS, energy_model, level_bytes
    from hroof.studies.runs import simulate_kernel
    from hroof.traces import parse_assignments, plan_kernel

    if args.kernel not in KERNEL_SHAPES:
        raise HroofError(
            f"hroof power models one loop iteration per element of {', '.join(KERNEL_SHAPES)}; "
            f"not {args.kernel!r}"
        )
    launches = [parse_launch(v) for v in args.variant or ()]
    if args.constant_w is not None and not args.constant_w >= 0:
        raise HroofError(f"--constant-w must be a number of W >= 0, got {args.constant_w:g}")
    if args.plot:
        figure_format(args.plot, ("png", "svg"), "--plot")
    plan = plan_kernel(args.kernel, **parse_assignments(args.params))
    machine = load_machine(args.machine)
    model = energy_model(machine, "hroof power")
    if args.constant_w is not None:
        model = dataclasses.replace(model, constant_w=args.constant_w)
    precision = DTYPE_PRECISIONS[plan.params.get("dtype", "float64")]
    gpu = gpu_of(machine, precision, args.memory_latency, args.fma_latency)
    with Progress(plan.accesses, enabled=False if args.quiet else None) as bar:
        result = simulate_kernel(plan, machine.hierarchy, classify=not args.no_classify,
                                 flush=not args.no_flush, progress=bar)  # fmt: skip
    work = Work(plan.kernel, plan.iterations - plan.warmup, float(result.flops),
                level_bytes(result), result.memory.name, plan.arrays[0].elem)  # fmt: skip
    if not work.memory_bytes:
        raise HroofError(
            f"the run moves no bytes from {work.memory} (it fits the caches): the memory "
            "roofline has nothing to show; make n larger"
        )
    pairs = run_variants(gpu, work, model, launches)
    points = [p for p, _ in pairs]
    written = []
    if args.plot:
        from hroof.plots.power import plot_power_rooflines

        given = assignments_text(parse_assignments(args.params))
        title = f"{plan.kernel} ({given}) on {model.machine}" if given else (
            f"{plan.kernel} on {model.machine}")  # fmt: skip
        title += ": modelled" + (", energy figures ESTIMATE" if model.unverified else "")
        if args.constant_w is not None:
            title += f", constant power {args.constant_w:g} W (given)"
        save_figure(plot_power_rooflines(points, work.memory_bytes, title=title), args.plot,
                    formats=("png", "svg"), flag="--plot")  # fmt: skip
        written.append(args.plot)
    if args.json:
        doc = {
            "schema": "hroof.power/1",
            "kernel": plan.kernel,
            "params": plan.params,
            "precision": precision,
            "elements": work.elements,
            "flops": work.flops,
            "level_bytes": work.level_bytes,
            "energy_model": model.to_dict(),
            "gpu": dataclasses.asdict(gpu),
            "variants": [
                {**p.to_dict(work.memory_bytes), "changes": None if b is None else b.launch.label}
                for p, b in pairs
            ],
            "notes": _notes(model, precision, pairs),
        }
        emit(json.dumps(doc, indent=1, default=str))
        return 0
    text = format_power(plan, gpu, model, work, pairs, precision, term_width())
    if written:
        text += "\n\nwrote " + ", ".join(written)
    emit(text)
    return 0
