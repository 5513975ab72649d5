"""``hroof run KERNEL KEY=VALUE ...``: run a kernel natively on this host and time it.

The kernel's parameters are bound by the same definitions as ``hroof simulate``
(:mod:`hroof.traces`), the native twin (:mod:`hroof.native`) runs the same
loops over the same layout, and the flops are the same exact count, so a
measured point sits beside a simulated one. ``--machine`` adds the machine
model's bound at the compulsory intensity (no simulation); ``--predict``
simulates the same parameters (cached like sweeps) and prints measured /
predicted with a verdict in words.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap

from hroof._base.guards import check_memory
from hroof._base.progress import Progress
from hroof.cli.options import kernel_plan, positive_int, quiet_option, seconds
from hroof.cli.text import REPORT_WIDTH, Col, assignments_text, emit, format_bytes, text_table
from hroof.machine.catalog import is_measured_host

_DESCRIPTION = """\
Run a kernel for real on this host (its Numba twin: the loops and array layout of
the traced kernel, one thread) and time it: warm-up runs first (the JIT compile
and a first run are not timed), then timed runs until --min-time seconds and
--repeats runs have passed. Prints the median time and its spread, the measured
GFLOP/s (from the kernel's exact flop count, the one 'hroof simulate' uses) and two
effective bandwidths: compulsory (the kernel's footprint, the distinct bytes it
touches, per second) and core (the bytes its loads and stores move per second, the
simulator's L1 bytes).

--machine shows the measured point next to that machine model's roofline at the
compulsory intensity (flops / footprint against memory bandwidth and peak: no
simulation). --predict simulates the same parameters on the machine (cached like
sweeps) and prints measured / predicted and a verdict: near the roof (at least half
the bound), POOR (under half: the roofline's poor-performance region) or above the
bound. Without --machine it compares against the measured host when 'hroof
machine measure' has written it, else against the skylake-sp model with a warning:
the bound of a model is another machine's, and the ratio compares this host with it.
The simulation is one cold run; the timed runs are warm repeats, so a problem that
fits in a cache can beat the bound. Timings on a shared or virtual machine are
noisy: quote the median and the spread (docs/run.md)."""

_EPILOG = """\
examples:
  hroof run triad n=1e7                       GFLOP/s and GB/s of STREAM triad
  hroof run stencil7 n=256 --predict          measured against the simulated bound
  hroof run gemm m=256 n=256 k=256 order=ikj --json
  hroof run spmv matrix=poisson3d n=64 --machine skylake-sp"""


def register(sub, machine_sub) -> None:
    """Add ``hroof run`` to the subcommands."""

    p = sub.add_parser(
        "run",
        help="run a kernel natively on this host: measured GFLOP/s and GB/s",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("kernel", metavar="KERNEL", help="a kernel (see 'hroof kernels')")
    p.add_argument(
        "params",
        nargs="*",
        metavar="KEY=VALUE",
        help="the kernel's parameters, as for 'hroof simulate' (defaults for the rest)",
    )
    p.add_argument(
        "--min-time",
        type=seconds,
        default=0.2,
        metavar="S",
        help="least total seconds of the timed runs (default: 0.2)",
    )
    p.add_argument(
        "--repeats",
        type=positive_int("number of runs"),
        default=5,
        metavar="N",
        help="least number of timed runs (default: 5)",
    )
    p.add_argument(
        "--warmup",
        type=positive_int("number of runs"),
        default=1,
        metavar="N",
        help="untimed runs first; the first compiles the kernel (default: 1)",
    )
    p.add_argument(
        "--machine",
        metavar="NAME|FILE",
        help="a machine model (bundled name, TOML file, or 'host' after 'hroof machine "
        "measure') whose roofline bound to show beside the measurement",
    )
    p.add_argument(
        "--predict",
        action="store_true",
        help="simulate the same parameters on the machine (default: the measured host if "
        "'hroof machine measure' has run, else skylake-sp with a warning) and print "
        "measured / predicted and a verdict",
    )
    p.add_argument("--json", action="store_true", help="print the measurement as JSON")
    quiet_option(p)
    p.set_defaults(func=cmd_run)


def _host() -> str:
    from pathlib import Path

    from hroof.machine.host import CPUINFO, read_cpuinfo

    model = read_cpuinfo(Path(CPUINFO))[0]
    return model or "this host"


def _ms(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.3g} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} us"


def _g(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def compulsory_bound(flops: int, footprint: int, machine) -> dict | None:
    """The machine's roofline at the compulsory AI (flops / footprint, FLOP/byte):
    ``min(peak, AI x memory bandwidth)`` GFLOP/s, or None without the figures or flops."""
    if not flops or not footprint or machine.peak is None or machine.memory_bandwidth is None:
        return None
    ai = flops / footprint
    return {
        "ai": ai,
        "memory": machine.memory_name,
        "bandwidth_gb_s": machine.memory_bandwidth,
        "peak_gflop_s": machine.peak,
        "bound_gflop_s": min(machine.peak, ai * machine.memory_bandwidth),
    }


def cmd_run(args: argparse.Namespace) -> int:
    """``hroof run KERNEL KEY=VALUE ...``: the kernel run natively and timed."""
    from hroof.native import measure_kernel
    from hroof.native.core import require_native

    plan = kernel_plan(args.kernel, args.params)
    require_native(plan.kernel)
    # The native run allocates the kernel's arrays for real: refuse what cannot fit.
    check_memory(plan.footprint, f"running {plan.kernel} natively (its arrays)")
    machine = None
    chosen = None
    if args.machine is not None or args.predict:
        from hroof.machine.host import comparison_machine
        from hroof.machine.model import load_machine

        chosen = comparison_machine(args.machine)
        machine = load_machine(chosen.machine)
        if not chosen.is_host and args.machine is None:
            sys.stderr.write(f"hroof: {chosen.note}\n")
    comparison = result = None
    if args.predict:  # simulate first: never beside the timed runs
        from hroof.roofline.measured import compare
        from hroof.studies.sweep import run_sweep

        machine.require("hroof run --predict")
        with Progress(1, enabled=False if args.quiet else None, unit="simulation") as bar:
            result = run_sweep(plan.kernel, [plan.params], machine.hierarchy, workers=1,
                               progress=bar)[0].result  # fmt: skip
    with Progress(None, label="run", enabled=False if args.quiet else None, unit="runs") as bar:
        m = measure_kernel(plan, min_time=args.min_time, min_repeats=args.repeats,
                           warmup=args.warmup, progress=bar)  # fmt: skip
    if result is not None:
        comparison = compare(result, m.gflop_s or 0.0, machine)
    cbound = compulsory_bound(m.flops, m.footprint, machine) if machine is not None else None

    if args.json:
        doc = m.to_dict()
        doc["host"] = _host()
        if machine is not None:
            doc["machine"] = {
                "name": machine.name,
                "is_host": is_measured_host(machine),
                "why": chosen.note if chosen else "",
                "compulsory_bound": cbound,
                "predicted": comparison.to_dict() if comparison else None,
            }
        emit(json.dumps(doc, indent=1))
        return 0

    t = m.timing
    lines = [
        f"kernel     {m.kernel} {assignments_text(m.params)}",
        f"host       {_host()}; one thread, native (Numba)",
        f"runs       {t.repeats} timed ({t.total:.3g} s in all) after {t.warmup} warm-up "
        f"run{'s' if t.warmup > 1 else ''} (JIT compile not timed)",
        f"time       median {_ms(t.median)} a run; IQR {_ms(t.q1)}..{_ms(t.q3)}; "
        f"min {_ms(t.minimum)}, max {_ms(t.maximum)}",
        f"flops      {m.flops:,} a run (the exact count hroof simulate uses)",
    ]
    if m.notes:
        lines += textwrap.wrap("note       " + m.notes, REPORT_WIDTH, subsequent_indent=" " * 11)
    q_lo, q_hi = m.gflop_s_iqr
    f_rate = [(m.footprint / s / 1e9 if s > 0 else None) for s in (t.median, t.q3, t.q1)]
    c_rate = [(m.core_bytes / s / 1e9 if s > 0 else None) for s in (t.median, t.q3, t.q1)]
    rows = [
        ["performance", "GFLOP/s", _g(m.gflop_s), f"{_g(q_lo)}..{_g(q_hi)}",
         f"{m.flops:,} flops a run"],
        ["compulsory bandwidth", "GB/s", _g(f_rate[0]), f"{_g(f_rate[1])}..{_g(f_rate[2])}",
         f"footprint {format_bytes(m.footprint)} (distinct bytes touched) per run time"],
        ["core bandwidth", "GB/s", _g(c_rate[0]), f"{_g(c_rate[1])}..{_g(c_rate[2])}",
         f"loads + stores {format_bytes(m.core_bytes)} (the simulator's L1 bytes) per run time"],
    ]  # fmt: skip
    cols = [Col("measured", "<", 0), Col("unit", "<"), Col("median"), Col("IQR"),
            Col("from", "<")]  # fmt: skip
    lines += ["", *text_table(cols, rows)]
    if machine is not None:
        what = (
            "this host: the figures 'hroof machine measure' measured"
            if is_measured_host(machine)
            else "a model: its figures, not this host's"
        )
        lines += ["", f"machine    {machine.name} ({what})"]
        if chosen is not None and args.machine is None:
            lines += textwrap.wrap(
                "           " + chosen.note, REPORT_WIDTH, subsequent_indent=" " * 11
            )
        if cbound is not None:
            ratio = f"; measured / that = {m.gflop_s / cbound['bound_gflop_s']:.2f}"
            lines.append(
                f"roofline at the compulsory AI  {cbound['bound_gflop_s']:.3g} GFLOP/s = "
                f"min(peak {cbound['peak_gflop_s']:g}, {cbound['ai']:.3g} FLOP/B x "
                f"{cbound['memory']} {cbound['bandwidth_gb_s']:g} GB/s){ratio}"
            )
        elif not m.flops:
            lines.append("no flops: compare the bandwidths with the machine's (machine show)")
        else:
            lines.append(f"no bound: the machine has no {', '.join(machine.missing())}")
        if result is not None:
            from hroof.roofline.analysis import roofline

            rf = roofline(result, machine)
            lines.append(f"predicted  {rf.bound:.3g} GFLOP/s, {rf.binding} binds (the "
                         "hierarchical bound of the simulated run)")  # fmt: skip
            if comparison is not None:
                lines.append(f"measured / predicted  {comparison.ratio:.2f}: "
                             f"{comparison.verdict}")  # fmt: skip
    emit("\n".join(lines))
    return 0
