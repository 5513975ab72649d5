"""``hroof kernels``, ``hroof simulate`` and ``hroof trace``: a kernel or a trace through a
cache hierarchy, and a kernel's trace to a file."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from hroof._base.errors import HroofError
from hroof._base.files import partial_path, replace_with
from hroof._base.guards import check_disk, check_memory, check_time
from hroof._base.progress import Progress
from hroof.cachesim.reference.engine import AUTO_MAX_ACCESSES, simulate_plan, supports
from hroof.cli.options import (
    MAX_ACCESS_SIZE,
    SAMPLE_HELP,
    chunk_option,
    flops_count,
    kernel_plan,
    kernel_run,
    machine_option,
    model_option,
    positive_int,
    quiet_option,
    sample_fraction,
    simulation_options,
    trace_format,
)
from hroof.cli.results import format_carm, format_cores, format_kernels, format_result
from hroof.cli.text import Col, assignments_text, emit, format_bytes, term_width, text_table
from hroof.machine.model import resolve_machine
from hroof.traces import FORMATS, count_accesses, detect_format, iter_trace
from hroof.traces.limits import BYTES_PER_READ_ACCESS, MAX_SECONDS, check_plan, guard_chunks

#: Accesses written per second, used only to refuse absurd requests.
WRITE_PACE = 2e7

if TYPE_CHECKING:
    from hroof.cachesim import HierarchyConfig, SimResult


def cmd_kernels(args: argparse.Namespace) -> int:
    """``hroof kernels``: list the kernels and their parameters."""
    emit(format_kernels())
    return 0


def sampling_note(result: SimResult) -> str:
    """A paragraph on a set-sampled result's uncertainty (empty if not sampled)."""
    s = result.sampling
    if not s:
        return ""
    text = f"\n\nSet sampling 1/{s['k']}: the counts are estimates (sampled sets x {s['k']})"
    if s["stderr"]:
        parts = [
            f"{lv['name']} misses +-{100 * 3 * lv['misses'] / max(1, r.misses):.2f} %"
            for lv, r in zip(s["stderr"]["levels"], result.levels, strict=True)
        ]
        text += "; 3 standard errors: " + ", ".join(parts)
        text += f"; resolution {s['resolution']} lines"
    if s["warning"]:
        text += "\nwarning: " + s["warning"]
    return text


def cmd_simulate(args: argparse.Namespace) -> int:
    """``hroof simulate KERNEL|--trace FILE``: a kernel or a trace through a cache hierarchy."""
    if args.kernel is None and args.trace is None:
        raise HroofError("give a KERNEL (see 'hroof kernels') or --trace FILE")
    if args.kernel is not None and args.trace is not None:
        raise HroofError("give a KERNEL or --trace FILE, not both")
    if args.kernel is not None:
        for option in ("format", "flops"):
            if getattr(args, option) is not None:
                flag = "--" + option.replace("_", "-")
                raise HroofError(f"{flag} is for --trace; a kernel knows its own")
        plan, run = kernel_run(args.kernel, args.params)
        machine = _model(resolve_machine(args.machine), args.model)
        cores = run.get("cores", 1)
        if cores > 1 and machine.source is not None:
            from hroof.machine.cores import check_cores
            from hroof.roofline import load_machine

            check_cores(load_machine(machine.source), cores)
        check_plan(plan, machine.line_bits, classify=not args.no_classify)
        if _engine(args, plan, cores) == "reference":  # a small run: Numba never loads
            result = simulate_plan(
                machine, plan, classify=not args.no_classify, flush=not args.no_flush
            )
            _print(result, machine, args, plan.notes)
            return 0
        from hroof.studies.runs import auto_threads, simulate_kernel

        with Progress(plan.accesses, enabled=False if args.quiet else None) as bar:
            result = simulate_kernel(
                plan,
                machine,
                classify=not args.no_classify,
                flush=not args.no_flush,
                chunk_size=args.chunk_size,
                progress=bar,
                # several cores run on one thread (the pipelined levels are one core's)
                threads=1
                if cores > 1 and args.threads == "auto"
                else _threads(args, plan.accesses, machine, auto_threads),
                sample_sets=args.sample_sets,
                **run,
            )
        _print(result, machine, args, plan.notes)
        return 0
    if args.engine == "reference":
        raise HroofError(
            "--engine reference runs kernels only; a --trace file runs on the simulator "
            "(--engine numba or auto)"
        )
    from hroof.cachesim import simulate
    from hroof.studies.runs import auto_threads, read_trace_meta, split_chunks

    machine = _model(resolve_machine(args.machine), args.model)
    path = os.fspath(args.trace)
    fmt = args.format or detect_format(path)
    # iter_trace checks the file (exists, readable, npz layout) before anything runs.
    check_memory(  # the reader's buffers, before it allocates them
        BYTES_PER_READ_ACCESS * args.chunk_size,
        f"a chunk of {args.chunk_size:,} accesses",
        hint="; lower --chunk-size",
    )
    chunks = iter_trace(path, fmt, chunk_size=args.chunk_size, access_size=args.access_size)
    # Bounded line pieces per chunk, and classification memory checked as pages appear.
    chunks = guard_chunks(chunks, machine.line_bits, classify=not args.no_classify)
    total = count_accesses(path, fmt)
    # A trace written by 'hroof trace' knows its kernel, flops and warm-up accesses.
    meta = read_trace_meta(path) if fmt == "npz" else None
    source = {"trace": path, "format": fmt}
    flops, warmup, flush = args.flops, None, not args.no_flush
    if meta is not None:
        source.update({k: meta[k] for k in ("kernel", "params", "accounting") if k in meta})
        if flops is None:
            flops = meta.get("flops")
        if meta.get("warmup_accesses"):
            warmup, chunks = split_chunks(chunks, int(meta["warmup_accesses"]))
            flush = False
    with Progress(total, enabled=False if args.quiet else None) as bar:
        result = simulate(
            machine,
            chunks,
            warmup=warmup,
            classify=not args.no_classify,
            flush=flush,
            flops=flops,
            source=source,
            progress=bar,
            threads=_threads(args, total, machine, auto_threads),
            sample_sets=args.sample_sets,
        )
    if args.json:
        emit(_json(result, machine))
    else:
        text = format_result(result, machine, width=term_width()) + sampling_note(result)
        emit(text + _advice(result, machine))
    return 0


def _print(result: SimResult, machine: HierarchyConfig, args, notes: str) -> None:
    """A kernel's result: JSON, or the table with the cores, sampling and guidance."""
    if args.json:
        emit(_json(result, machine))
        return
    text = format_result(result, machine, flops_note=notes or None, width=term_width())
    if result.per_core is not None:
        text += "\n\n" + format_cores(result)
    emit(text + sampling_note(result) + _nest_note(result, machine) + _advice(result, machine))


def _nest_note(result: SimResult, machine: HierarchyConfig) -> str:
    """For a kernel file: the layer condition holding at each level, predicted from the
    file alone, beside the bytes per innermost iteration simulated (empty otherwise)."""
    kernel = (result.source or {}).get("kernel", "")
    if not kernel.lower().endswith(".c") or not result.levels:
        return ""
    from hroof.roofline.nest_lc import nest_layer_conditions
    from hroof.traces import get_kernel

    params = dict(result.source.get("params", {}))
    k = get_kernel(kernel)
    counted = params.get("sweeps", 1)
    plan = k.bind(**params)
    iters = (plan.iterations - plan.warmup) or 1
    if result.cores > 1 or counted != 1 or plan.warmup:
        return ""  # the conditions are per sweep of one core
    cols = [
        Col("level", "<", 0),
        Col("capacity"),
        Col("condition\nthat holds", "<"),
        Col("it needs"),
        Col("predicted\nB/iteration"),
        Col("simulated\nB/iteration"),
    ]
    rows = []
    lcs = nest_layer_conditions(kernel, params, machine)
    below = [lv.bytes for lv in result.levels[1:]] + [result.memory.bytes]
    for lc, moved in zip(lcs, below, strict=True):
        holds = lc.holds if lc.holds in ("none", "every array") else f"loop {lc.holds}"
        per = "first touch" if lc.bytes_per_iteration is None else f"{lc.bytes_per_iteration:.3g}"
        rows.append([f"{lc.level} -> {lc.below}", format_bytes(lc.capacity), holds,
                     format_bytes(lc.requirement), per, f"{moved / iters:.3g}"])  # fmt: skip
    return (
        "\n\nLayer conditions predicted from the file (hroof.roofline.nest_lc; safety 1, "
        "fully associative LRU):\n" + "\n".join(text_table(cols, rows))
    )


def _engine(args, plan, cores: int) -> str:
    """``--engine``: "reference" or "numba" for this kernel run. auto: the reference model
    for a run of at most :data:`~hroof.cachesim.reference.engine.AUTO_MAX_ACCESSES`
    accesses (counted from the plan, before anything is generated) that it supports;
    reference: that model, or a one-line error saying why it cannot."""
    if args.engine == "numba":
        return "numba"
    why = supports(plan, cores=cores, sample_sets=args.sample_sets)
    if why is None and args.threads == "2":
        why = "--threads 2 runs on the simulator only"
    if args.engine == "reference":
        if why is not None:
            raise HroofError(f"--engine reference: {why} (use --engine numba or auto)")
        return "reference"
    return "reference" if why is None and plan.accesses <= AUTO_MAX_ACCESSES else "numba"


def _threads(args, accesses: int | None, machine: HierarchyConfig, auto) -> int:
    """``--threads``: 1, 2, or auto (two for a large simulation; with ``--sample-sets
    1/K``, large is counted in the 1/K of the accesses simulated)."""
    if args.threads == "auto":
        simulated = None if accesses is None else accesses // max(1, int(args.sample_sets))
        return auto(simulated, machine)
    return int(args.threads)


def _model(hierarchy: HierarchyConfig, model: str) -> HierarchyConfig:
    """``--model``: the machine's own inclusion policies and prefetchers, or every level
    NINE without prefetchers (the plain model)."""
    if model == "machine":
        return hierarchy
    return hierarchy.with_inclusion("nine").without_prefetch()


def _json(result: SimResult, hierarchy: HierarchyConfig) -> str:
    """The result as JSON with its ``analysis`` (the roofline, CARM, walls, guidance)."""
    import json

    from hroof.roofline import load_machine
    from hroof.roofline.document import result_doc

    machine = load_machine(hierarchy.source) if hierarchy.source is not None else None
    if machine is not None and result.cores > 1:
        from hroof.machine.cores import for_cores

        machine = for_cores(machine, result.cores)
    return json.dumps(result_doc(result, machine), indent=2)


def _advice(result: SimResult, hierarchy: HierarchyConfig) -> str:
    """The optimisation guidance for a result, as a section to append to its table; empty
    when the machine lacks a figure it needs or the flops are unknown."""
    from hroof.roofline import load_machine
    from hroof.roofline.guidance import guidance

    if not result.flops or hierarchy.source is None:  # no flops (copy): no AI to guide by
        return ""
    machine = load_machine(hierarchy.source)
    if result.cores > 1:
        from hroof.machine.cores import for_cores

        machine = for_cores(machine, result.cores)
    if machine.missing() or not all(lv.bytes for lv in result.levels) or not result.memory.bytes:
        return ""
    lines = guidance(result, machine).lines(width=term_width())
    lines += format_carm(result, machine, width=term_width())  # issue 34: the CARM line
    return "\n\nRoofline guidance on " + machine.name + ":\n" + "\n".join(lines)


def cmd_trace(args: argparse.Namespace) -> int:
    """``hroof trace KERNEL KEY=VALUE --out FILE``: write a kernel's trace to npz or din."""
    from hroof.traces import write_din
    from hroof.traces.npz_out import write_npz_streaming

    plan = kernel_plan(args.kernel, args.params)
    out = Path(args.out)
    name = out.name.lower()
    if name.endswith(".npz"):  # streamed: one chunk in memory, whatever the trace's length
        writer, per_access = write_npz_streaming, 13
    elif name.endswith((".din", ".din.gz")):
        writer, per_access = write_din, 20
    else:
        raise HroofError(f"--out {out}: give a file ending in .npz, .din or .din.gz")
    check_time(plan.accesses, WRITE_PACE, MAX_SECONDS, f"writing {plan.accesses:,} accesses")
    check_disk(per_access * plan.accesses, out, f"--out {out}")
    from hroof.studies import runs

    if name.endswith(".npz") and per_access * plan.accesses > runs.TRACE_WARN_BYTES:
        from hroof._base.units import format_bytes

        print(f"hroof: warning: {out} will be about {format_bytes(per_access * plan.accesses)} "
              f"({plan.accesses:,} accesses x {per_access} bytes)",
              file=sys.stderr, flush=True)  # fmt: skip
    # Written beside the target and renamed, so a failure leaves no partial file behind.
    # Progress on stderr (a terminal only): an npz's three members count once each.
    passes = 3 if name.endswith(".npz") else 1

    def counted(chunks, bar):
        for chunk in chunks:
            bar(len(chunk[0]))
            yield chunk

    try:
        with Progress(passes * plan.accesses, label="write") as bar:
            if passes == 3:

                def make():
                    return counted(plan.chunks(args.chunk_size), bar)

                def write(tmp):
                    write_npz_streaming(tmp, make, plan.accesses)
                    runs.add_trace_meta(tmp, plan)  # kernel, parameters, flops: simulate --trace

                replace_with(out, write)
            else:
                chunks = counted(plan.chunks(args.chunk_size, reuse=False), bar)
                replace_with(out, lambda tmp: writer(tmp, chunks))
    except HroofError as exc:
        raise HroofError(str(exc).replace(str(partial_path(out)), str(out))) from None
    emit(
        f"wrote {out}: {plan.accesses:,} accesses of {plan.kernel} "
        f"({assignments_text(plan.params)}), {plan.flops:,} flops"
    )
    return 0


def register(sub, machine_sub) -> None:
    """Add ``kernels``, ``trace`` and ``simulate``."""
    p = sub.add_parser(
        "kernels",
        help="list the kernels hroof can generate, with their parameters",
        description="List every registered kernel, its parameters, their defaults and units.",
    )
    p.set_defaults(func=cmd_kernels)

    p = sub.add_parser(
        "trace",
        help="write a kernel's access trace to a file (npz or din)",
        description=(
            "Generate a kernel's exact access stream and write it as .npz or Dinero .din, "
            "so other simulators (Dinero, pycachesim) can be run on the same stream. "
            "Non-temporal stores cannot be written as din."
        ),
    )
    p.add_argument("kernel", metavar="KERNEL", help="a kernel (see 'hroof kernels')")
    p.add_argument("params", nargs="*", metavar="KEY=VALUE", help="the kernel's parameters")
    p.add_argument(
        "--out", required=True, metavar="FILE", help="output file: .npz, .din or .din.gz"
    )
    chunk_option(p, "generated and written")
    p.set_defaults(func=cmd_trace)

    p = sub.add_parser(
        "simulate",
        help="simulate a kernel or a trace file and print per-level counts",
        description=(
            "Generate a kernel's access stream (see 'hroof kernels'), or stream a "
            "memory-access trace file, through a simulated cache hierarchy and print, per "
            "level, lookups, hits, misses by class, write-allocate fills, writebacks, the "
            "bytes the level moves and its arithmetic intensity; or the full result as "
            "JSON (schema hroof.result/1)."
        ),
    )
    p.add_argument(
        "kernel", nargs="?", metavar="KERNEL", help="a kernel to generate (see 'hroof kernels')"
    )
    p.add_argument(
        "params",
        nargs="*",
        metavar="KEY=VALUE",
        help="the kernel's parameters, e.g. n=128 nt=true (defaults for the rest); cores=P "
        "splits the kernel's outer loop across P cores, each with its own private levels, "
        "the shared ones (the last level unless the machine file marks shared = true) fed "
        "round-robin grain=G accesses of each core at a time (default 1024; docs/cache-"
        "model.md, 'Several cores')",
    )
    p.add_argument(
        "--trace",
        metavar="FILE",
        help="trace file to simulate (npz, Dinero din or valgrind lackey; text formats "
        "may be gzip-compressed)",
    )
    p.add_argument(
        "--format",
        type=trace_format,
        metavar="{" + ",".join(FORMATS) + "}",
        help="trace file format (default: told from the file name: .npz; .din, .dinero; "
        ".lackey, .trace, .log, .out)",
    )
    p.add_argument(
        "--flops",
        type=flops_count,
        metavar="N",
        help="floating-point operations the traced run performed (a count, not a rate; "
        "e.g. 1e6); gives each level's arithmetic intensity in FLOP/byte",
    )
    machine_option(p)
    model_option(p)
    simulation_options(p)
    p.add_argument(
        "--threads",
        choices=("auto", "1", "2"),
        default="auto",
        help="2: simulate L1 and the levels below on two threads, one chunk apart (the same "
        "counts; with classification the flag words, about 1 byte per distinct line, are "
        "kept twice), on a hierarchy with no inclusive level, L1 and L2 non-inclusive "
        "non-exclusive and no L1 prefetcher (else one thread); auto (default): two from "
        "3,000,000 accesses, one core, when a second CPU is idle (load average), else one",
    )
    p.add_argument(
        "--engine",
        choices=("auto", "numba", "reference"),
        default="auto",
        help="what simulates a kernel: numba, the compiled simulator (any size; about 0.6 s "
        "to load Numba and its cached kernels before the first access); reference, the "
        "plain-Python reference model the tests hold the simulator to (the same counts, "
        "about a hundred times slower an access, Numba never loaded; one core, no --sample-sets "
        "or --threads 2, hroof's own kernels); auto (default): reference for a kernel of at "
        f"most {AUTO_MAX_ACCESSES:,} accesses it supports, else numba. A --trace file always "
        "runs on numba",
    )
    p.add_argument(
        "--sample-sets", type=sample_fraction, default=1, metavar="1/K", help=SAMPLE_HELP
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the result as JSON (schema hroof.result/1) instead of the table",
    )
    p.add_argument(
        "--access-size",
        type=positive_int("number of bytes", MAX_ACCESS_SIZE),
        default=8,
        metavar="BYTES",
        help="size in bytes of din accesses whose line has no SIZE field (default: 8)",
    )
    chunk_option(p)
    quiet_option(p)
    p.set_defaults(func=cmd_simulate)
