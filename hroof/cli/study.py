"""``hroof study``: kernels x parameter ranges x machines as one grid, on any executor."""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
from pathlib import Path

from hroof._base.errors import HroofError
from hroof._base.files import write_text
from hroof._base.progress import Progress
from hroof.cli.options import (
    SAMPLE_HELP,
    open_engine,
    quiet_option,
    sample_fraction,
    simulation_options,
    workers_option,
)
from hroof.cli.text import emit


def _spec(args: argparse.Namespace):
    from dataclasses import replace

    from hroof.studies.study import StudySpec, load_study, parse_kernel_words

    if args.file is not None:
        spec = load_study(args.file)
    else:
        spec = StudySpec("study", (), ())
    extra = tuple(parse_kernel_words(k) for k in args.kernel or ())
    spec = replace(spec, kernels=spec.kernels + extra)
    if args.machine:
        spec = replace(spec, machines=tuple(args.machine))
    if args.no_classify:
        spec = replace(spec, classify=False)
    if args.no_flush:
        spec = replace(spec, flush=False)
    if args.sample_sets is not None:
        spec = replace(spec, sample_sets=args.sample_sets)
    return spec


def cmd_study(args: argparse.Namespace) -> int:
    """``hroof study FILE.toml``: run the grid, stream the tidy table, write the report."""
    from hroof.studies.study import (
        check_study,
        run_study,
        study_doc,
        study_report,
        study_walls,
        tidy_header,
        tidy_rows,
    )

    spec = _spec(args)
    total = check_study(spec)  # every bad input before a worker starts
    out = Path(args.out) if args.out else Path(f"study-{spec.name}")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise HroofError(f"cannot write to {out}: {exc.strerror or exc}") from None
    header = tidy_header(spec)
    stream_path = out / "study.partial.csv"
    with contextlib.ExitStack() as stack:
        engine = stack.enter_context(open_engine(args))  # unreachable: exit 2, nothing run
        stream = stack.enter_context(stream_path.open("w", newline=""))
        writer = csv.writer(stream)
        writer.writerow(header)

        def streamed(point) -> None:  # each point as it finishes, in the order it finishes
            writer.writerows(tidy_rows(point, header))
            stream.flush()

        bar = stack.enter_context(
            Progress(total, label="study", enabled=False if args.quiet else None, unit="points")
        )
        points, _ = run_study(spec, engine, use_cache=not args.no_cache, progress=bar,
                              on_point=streamed)  # fmt: skip
        engine_name = engine.name
    walls = study_walls(spec, points)
    doc = study_doc(spec, points, walls)
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(header)
    for p in points:
        w.writerows(tidy_rows(p, header))
    written = [write_text(out / "study.csv", buf.getvalue())]
    written.append(write_text(out / "study.json", json.dumps(doc, indent=1) + "\n"))
    report = study_report(spec, points, walls, engine_name)
    written.append(write_text(out / "report.md", report))
    stream_path.unlink(missing_ok=True)  # the whole table is in study.csv now
    if args.json:
        emit(json.dumps(doc, indent=1))
    else:
        emit(report.rstrip() + "\n\nwrote " + ", ".join(str(p) for p in written))
    failed = [(p.label, p.error) for p in points if not p.ok]
    if failed:  # named on stderr; exit status 1 (the others are written)
        from hroof.studies.executor import PointsFailed

        raise PointsFailed(failed, len(points))
    return 0


def register(sub, machine_sub) -> None:
    """Add ``study``."""
    p = sub.add_parser(
        "study",
        help="a grid of kernels x parameter ranges x machines, on local processes or a "
        "Dask cluster; tidy table, walls, report",
        description=(
            "Run every point of a study (kernels with parameter ranges, machines, options: "
            "a TOML file, see examples/walls.toml, or --kernel/--machine), stream each "
            "result as it finishes into DIR/study.partial.csv, then write the tidy table "
            "DIR/study.csv (one row per point and level), DIR/study.json (hroof.study/1), "
            "and DIR/report.md with the locality walls per kernel and machine. Results "
            "are cached, so an interrupted study run again computes only what had not "
            "finished. Exit status 1 when some points failed (they are named; the others "
            "are kept)."
        ),
    )
    p.add_argument("file", nargs="?", metavar="FILE.toml", help="the study file")
    p.add_argument(
        "--kernel",
        action="append",
        metavar="'KERNEL KEY=VALUES ...'",
        help="a kernel and its parameter ranges, quoted as one word (repeatable; added to "
        "the file's)",
    )
    p.add_argument(
        "--machine",
        action="append",
        metavar="NAME|FILE",
        help="a machine to run on (repeatable; replaces the file's; default: skylake-sp)",
    )
    p.add_argument("--out", metavar="DIR", help="where to write (default: study-NAME)")
    p.add_argument("--json", action="store_true", help="print the study as JSON (hroof.study/1)")
    simulation_options(p)
    p.add_argument(
        "--sample-sets", type=sample_fraction, metavar="1/K",
        help=SAMPLE_HELP.replace("default: 1/1, every set", "default: the file's, else 1/1"),
    )  # fmt: skip
    workers_option(p)
    quiet_option(p)
    p.set_defaults(func=cmd_study)
