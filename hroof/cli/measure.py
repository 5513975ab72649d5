"""``hroof machine measure`` and ``hroof machine import-ert``.

``measure`` times Numba microkernels on this host (compute ceilings, bandwidth
sweeps on one core and on all cores), writes the measured machine file where
``--machine host`` finds it (:func:`hroof.machine.model.host_machine_path`),
and with ``--out DIR`` also the TOML, an ERT ``roofline.json``, the sweep data,
the figures and ``report.html``. ``import-ert`` maps an ERT ``roofline.json``
onto a machine's levels.
"""

from __future__ import annotations

import argparse
import json
import textwrap
from pathlib import Path

from hroof._base.errors import ConfigError
from hroof._base.files import write_text
from hroof._base.progress import Progress
from hroof._base.units import format_bytes
from hroof.cli.options import positive_int, quiet_option
from hroof.cli.text import Col, emit, text_table

_MEASURE_EPILOG = """\
examples:
  hroof machine measure --quick            about 15 s; writes the host file
  hroof machine measure --out measured/    about a minute; also TOML, roofline.json,
                                           figures and report.html in measured/
  hroof machine show host                  the figures as hroof reads them
  hroof simulate stencil7 n=128 --machine host

The host file is $HROOF_HOST_MACHINE if set, else $XDG_CACHE_HOME/hroof/host.toml
(default ~/.cache/hroof/host.toml)."""

_IMPORT_EPILOG = """\
examples:
  hroof machine import-ert Results/Run.001/roofline.json --onto host --out ert.toml
  hroof machine import-ert roofline.json --onto skylake-sp

gflops entries: 'GFLOPs', 'FP64 GFLOPs' or 'DP GFLOPs' is the peak, 'FP32 GFLOPs' or
'SP GFLOPs' (etc.) another precision's peak, '<ceiling> GFLOPs' a compute ceiling
with a known name ('no FMA', 'scalar', ...). gbytes entries map by name onto the
machine's levels and memory (DRAM/MEM/HBM are memory), otherwise in order: L1, L2,
..., with DRAM last."""


def register(sub, machine_sub) -> None:
    """Add ``machine measure`` and ``machine import-ert`` to the ``machine`` subparser."""

    fmt = argparse.RawDescriptionHelpFormatter
    q = machine_sub.add_parser(
        "measure",
        help="measure this host's compute ceilings and bandwidths (empirical roofline)",
        description=textwrap.fill(
            "Time Numba microkernels on this host: the double- and single-precision "
            "peak with FMA on the widest SIMD registers, without FMA, and scalar (GFLOP/s); and "
            "read, write, copy and triad bandwidth (GB/s) over working sets from 4 KiB to 8x the "
            "last-level cache, on one core and on all cores, best of several trials. Bandwidth "
            "plateaus are found as ERT does and matched to the detected cache levels; a level "
            "without a clear plateau stays unknown, with a note. Writes the measured machine "
            "file (loadable as --machine host) and prints a summary.",
            width=80,
        ),
        epilog=_MEASURE_EPILOG,
        formatter_class=fmt,
    )
    q.add_argument(
        "--quick",
        action="store_true",
        help="fewer points and trials: about 15 s instead of about a minute",
    )
    q.add_argument("--preset", choices=("full", "quick", "tiny"), help=argparse.SUPPRESS)
    q.add_argument(
        "--out",
        metavar="DIR",
        help="also write machine.toml, roofline.json (ERT layout), sweep.csv, "
        "bandwidth.png/svg and report.html to DIR",
    )
    q.add_argument(
        "--threads",
        type=positive_int("number of threads", 1024),
        metavar="N",
        help="threads of the all-core figures (default: the CPUs usable)",
    )
    q.add_argument(
        "--bandwidth-kernel",
        choices=("read", "write", "copy", "triad"),
        default="read",
        help="whose single-core plateaus become the level bandwidths (default: %(default)s)",
    )
    q.add_argument(
        "--no-save", action="store_true", help="do not write the host file (only print, and --out)"
    )
    q.add_argument(
        "--replace",
        action="store_true",
        help="write a clean host file: by default a level this run finds no plateau for "
        "keeps the previous file's figure (marked with its date)",
    )
    quiet_option(q)
    q.set_defaults(func=cmd_machine_measure)

    q = machine_sub.add_parser(
        "import-ert",
        help="turn an ERT roofline.json into a machine file's figures",
        description=textwrap.fill(
            "Read an Empirical Roofline Toolkit roofline.json (empirical.gflops and "
            "empirical.gbytes) and write a machine TOML file: the cache levels of --onto with "
            "ERT's peak, ceilings and bandwidths. Prints the TOML, or writes it with --out.",
            width=80,
        ),
        epilog=_IMPORT_EPILOG,
        formatter_class=fmt,
    )
    q.add_argument("ert", metavar="ROOFLINE.json", help="ERT's roofline.json")
    q.add_argument(
        "--onto",
        metavar="NAME|FILE",
        required=True,
        help="the machine whose levels the figures belong to (a bundled name, "
        "'host', or a machine TOML file)",
    )
    q.add_argument("--out", metavar="FILE", help="write the TOML to FILE (atomically)")
    q.set_defaults(func=cmd_machine_import_ert)


def _check_writable(path: Path, what: str) -> None:
    """ConfigError unless ``path`` (a directory, created later if missing) could be
    written: checked before minutes of measuring, and without creating anything."""
    import os

    probe = path
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if not probe.is_dir():
        raise ConfigError(f"{what}: {probe} is not a directory")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ConfigError(f"{what}: cannot write in {probe} (permission denied)")


def _check_out_dir(out: str | None) -> Path | None:
    if out is None:
        return None
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"--out {out} exists and is not a directory")
    _check_writable(path, f"--out {out}")
    return path


def _spread(s) -> str:
    if s is None:
        return ""
    return f"{s.lo:.4g}..{s.hi:.4g}" + (" !" if s.wide else "")


def format_measurement(
    m, written: list[Path], kernel: str = "read", changes: list[str] | None = None
) -> str:
    """The summary ``hroof machine measure`` prints: the figures with their trials'
    range (``!``: too wide to trust), the notes, and what changed in the host file."""

    lines = [
        f"{m.host.machine.name}: measured {m.date} ({m.settings.name}, {m.elapsed_s:.0f} s)",
        "",
        "compute (GFLOP/s)",
    ]
    counts = sorted({1, m.threads})
    rows = []
    for f in m.compute:
        if f.threads == 1:
            cells = [f.precision, f.variant]
            for t in counts:
                g = m.figure(f.variant, f.precision, t)
                cells += [f"{g.gflops:.1f}", _spread(g.spread)]
            rows.append([*cells, f.kernel])
    cols = [Col("precision", "<"), Col("variant", "<")]
    for t in counts:
        cols += [Col(f"{t} thread" + ("s" if t > 1 else "")), Col("trials", "<")]
    lines += text_table([*cols, Col("kernel", "<")], rows)
    lines += ["", "bandwidth plateaus (GB/s; -: no clear plateau)"]
    names = [lf.name for lf in m.sweeps[0].levels]
    rows = [
        [s.kernel, str(s.threads)] + [f"{lf.gbs:.1f}" if lf.gbs else "-" for lf in s.levels]
        for s in m.sweeps
    ]
    lines += text_table([Col("kernel", "<"), Col("threads"), *(Col(n) for n in names)], rows)
    sweep = m.sweep(kernel, 1)
    lines += ["", f"{kernel}, 1 thread (the host file's bandwidths): median of the plateau, "
              "range of the trials' medians"]  # fmt: skip
    rows = [
        [lf.name, f"{lf.gbs:.1f}" if lf.gbs else "-", _spread(lf.spread),
         f"{format_bytes(lf.plateau.lo_bytes)}..{format_bytes(lf.plateau.hi_bytes)}"
         if lf.plateau else lf.note]
        for lf in sweep.levels
    ]  # fmt: skip
    lines += text_table(
        [Col("level", "<"), Col("GB/s"), Col("trials", "<"), Col("working sets", "<")], rows
    )
    wide = [f"{f.precision} {f.variant}, {f.threads} thread(s)" for f in m.compute
            if f.spread is not None and f.spread.wide]  # fmt: skip
    wide += [f"{s.kernel}, {s.threads} thread(s), {lf.name}" for s in m.sweeps for lf in s.levels
             if lf.spread is not None and lf.spread.wide]  # fmt: skip
    notes = list(m.notes)
    if wide:
        notes.append(
            "spread too wide to trust (middle half of the trials over 10 % apart; '!'): "
            + "; ".join(wide)
        )
    if notes:
        lines += ["", "notes:"] + [f"  {n}" for n in notes]
    if changes:
        lines += ["", "host file changes:"] + [f"  {c}" for c in changes]
    if written:
        lines += ["", "wrote " + ", ".join(str(p) for p in written)]
    return "\n".join(lines)


def cmd_machine_measure(args: argparse.Namespace) -> int:
    """``hroof machine measure``: measure the host, write the host file (and --out DIR)."""
    from hroof.machine.host import read_host
    from hroof.machine.measure import files
    from hroof.machine.measure.run import PRESETS, measure_host, mem_available, plan, usable_cores
    from hroof.machine.model import host_machine_path
    from hroof.plots import measure as report

    out = _check_out_dir(args.out)
    if not args.no_save:  # fail now, not after the measurement
        host_path = host_machine_path()
        if host_path.is_dir():
            raise ConfigError(f"the host file {host_path} is a directory")
        _check_writable(host_path.parent, f"the host file {host_path}")
    preset = args.preset or ("quick" if args.quick else "full")
    settings = PRESETS[preset]
    host = read_host()
    threads = args.threads or usable_cores()
    total = plan(settings, host, threads, mem_available())["points"]
    with Progress(
        total, label="measure", unit="points", enabled=False if args.quiet else None
    ) as bar:
        m = measure_host(settings, host=host, threads=threads, progress=bar)
    text = files.measurement_toml(m, args.bandwidth_kernel)
    written = []
    changes: list[str] = []
    if not args.no_save:
        previous = None
        if args.replace:
            changes.append("--replace: a clean host file, nothing kept from the previous one")
        elif host_path.is_file():
            from hroof.machine.model import load_machine

            try:
                previous = load_machine(host_path)
            except ConfigError as exc:
                changes.append(f"the previous host file was unreadable ({exc}): replaced")
        host_text, more = files.host_file(m, args.bandwidth_kernel, previous)
        changes += more
        write_text(host_path, host_text)
        written.append(host_path)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        doc = files.ert_document(m, args.bandwidth_kernel)
        write_text(out / "machine.toml", text)
        write_text(out / "roofline.json", json.dumps(doc, indent=3) + "\n")
        rows = ["kernel,threads,working_set_bytes,gbs"]
        rows += [
            f"{s.kernel},{s.threads},{x},{g!r}"
            for s in m.sweeps
            for x, g in zip(s.sizes, s.gbs, strict=True)
        ]
        write_text(out / "sweep.csv", "\n".join(rows) + "\n")
        written += [out / "machine.toml", out / "roofline.json", out / "sweep.csv"]
        written += report.write_figures(m, out)
        write_text(out / "report.html", report.report_html(m, text))
        written.append(out / "report.html")
    emit(format_measurement(m, written, args.bandwidth_kernel, changes))
    return 0


def cmd_machine_import_ert(args: argparse.Namespace) -> int:
    """``hroof machine import-ert ROOFLINE.json --onto NAME|FILE``: ERT figures as machine TOML."""
    from hroof.machine.measure.files import import_ert_toml, read_ert
    from hroof.machine.model import load_machine

    if args.out is not None and Path(args.out).is_dir():
        raise ConfigError(f"--out {args.out} is a directory; give a file name")
    doc = read_ert(args.ert)
    machine = load_machine(args.onto)
    text = import_ert_toml(doc, machine, source=args.ert)
    if args.out is None:
        emit(text)
        return 0
    write_text(Path(args.out), text)
    emit(f"wrote {args.out}: {machine.name} with the figures of {args.ert}")
    return 0
