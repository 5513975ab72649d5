"""Argument types and the option groups commands share (one definition each).

Every number a user types goes through :mod:`hroof._base.units`, so ``1e6``,
``1_000_000`` and ``48 KiB`` mean the same on every option and in every
``KEY=VALUE`` word, and a value that is not whole where a whole number is
needed is an error, never truncated.
"""

from __future__ import annotations

import argparse

from hroof._base.errors import HroofError, suggest
from hroof._base.units import parse_float, parse_int
from hroof.traces import DEFAULT_CHUNK, FORMATS

#: The largest access size a trace may give (its ``size`` field is 32-bit).
MAX_ACCESS_SIZE = (1 << 32) - 1

#: ``--machine`` help, the same on every command.
MACHINE_HELP = (
    "the machine: a bundled name (see 'hroof machine list'), 'host' (this host, once "
    "measured with 'hroof machine measure') or the path of a machine TOML file "
    "(default: skylake-sp)"
)


def _typed(parse, message: str):
    """An argparse type from a units parser; a bad value gets argparse's one line."""

    def convert(text: str):
        try:
            return parse(text)
        except HroofError:
            raise argparse.ArgumentTypeError(f"{message}, got {text!r}") from None

    return convert


def positive_int(what: str, largest: int | None = None):
    """An argparse type: a whole number >= 1 (and <= ``largest``) in any spelling."""
    top = f" up to {largest:,}" if largest is not None else ""
    return _typed(
        lambda t: parse_int(t, what, minimum=1, maximum=largest or 2**63 - 1),
        f"must be a positive {what}{top}",
    )


flops_count = _typed(
    lambda t: parse_int(t, "flops", minimum=0, units=False),
    "must be a non-negative whole number of floating-point operations (e.g. 1000000 or 1e6)",
)
flops_count.__doc__ = "An argparse type: a non-negative whole number of floating-point operations."

seconds = _typed(
    lambda t: parse_float(t, "seconds", minimum=0.0), "must be a number of seconds >= 0"
)
seconds.__doc__ = "An argparse type: a number of seconds >= 0."


def trace_format(text: str) -> str:
    """An argparse type: one of the trace formats (case-insensitive)."""
    name = text.strip().lower()
    if name not in FORMATS:
        raise argparse.ArgumentTypeError(
            f"unknown trace format {text!r}{suggest(name, FORMATS)}; "
            f"choose {', '.join(FORMATS[:-1])} or {FORMATS[-1]}"
        )
    return name


#: ``--sample-sets`` help, the same on every command that takes it.
SAMPLE_HELP = (
    "simulate only 1/K of the sets, exactly, and scale the counts by K: K must divide the "
    "greatest common divisor of the levels' set counts; the result carries each count's "
    "standard error (default: 1/1, every set)"
)


def sample_fraction(text: str) -> int:
    """``--sample-sets 1/K`` -> K (argparse type; K in any spelling of the one parser)."""
    head, slash, k = text.partition("/")
    try:
        if not slash or head.strip() != "1":
            raise HroofError(text)
        return parse_int(k.strip(), "K", minimum=1, units=False)
    except HroofError:
        raise argparse.ArgumentTypeError(
            f"expected 1/K with K a positive integer, got {text!r}"
        ) from None


# ---------------------------------------------------------------------------- option groups
def machine_option(p: argparse.ArgumentParser, help: str = MACHINE_HELP) -> None:
    """``--machine NAME|FILE``."""
    p.add_argument("--machine", metavar="NAME|FILE", help=help)


def quiet_option(p: argparse.ArgumentParser) -> None:
    """``--quiet/-q``: no progress bar."""
    p.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        help="no progress bar on stderr (it is shown only when stderr is a terminal, or "
        "when HROOF_PROGRESS=1)",
    )


def json_option(p: argparse.ArgumentParser, schema: str) -> None:
    """``--json``: the result as a JSON document of ``schema``."""
    p.add_argument(
        "--json", action="store_true", help=f"print the result as JSON (schema {schema})"
    )


def workers_option(p: argparse.ArgumentParser, points: str = "points") -> None:
    """``--workers N``, ``--no-cache`` and ``--scheduler``: how the ``points`` of a
    multi-point command run (local processes, the result cache, a Dask cluster)."""
    p.add_argument(
        "--workers",
        type=positive_int("number of processes"),
        metavar="N",
        help=f"processes to run {points} in (or LocalCluster workers with --scheduler "
        "local; default: one per core)",
    )
    p.add_argument(
        "--no-cache", action="store_true", help=f"simulate all {points} again (no result cache)"
    )
    scheduler_option(p)


def scheduler_option(p: argparse.ArgumentParser) -> None:
    """``--scheduler ADDRESS|local``: run the points on a Dask cluster (docs/cluster.md)."""
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS|local",
        help="run the points on the Dask scheduler at tcp://HOST:PORT, or on a LocalCluster "
        "on 127.0.0.1 with 'local' (--workers worker processes); default: $HROOF_SCHEDULER, "
        "else local processes (needs pip install 'hroof[cluster]'; see docs/cluster.md)",
    )


def open_engine(args: argparse.Namespace):
    """The executor a command's ``--scheduler``/``--workers`` ask for (a context manager);
    an unreachable scheduler is an error here, before any work."""
    from hroof.studies.executor import open_executor

    return open_executor(getattr(args, "scheduler", None), workers=getattr(args, "workers", None))


def chunk_option(p: argparse.ArgumentParser, what: str = "read and simulated") -> None:
    """``--chunk-size N``: accesses per chunk (bounds memory)."""
    p.add_argument(
        "--chunk-size",
        type=positive_int("number of accesses"),
        default=DEFAULT_CHUNK,
        metavar="N",
        help=f"accesses {what} per chunk; bounds memory use (default: {DEFAULT_CHUNK:,})",
    )


def model_option(p: argparse.ArgumentParser) -> None:
    """``--model machine|nine``: the machine's inclusion policies and prefetchers, or every
    level NINE without prefetchers."""
    p.add_argument(
        "--model",
        choices=("machine", "nine"),
        default="machine",
        help="machine: each level's inclusion policy and prefetcher as the machine file gives "
        "them (default); nine: every level non-inclusive, non-exclusive and without "
        "prefetcher, to compare (docs/cache-model.md, 'Inclusion policies', 'Prefetchers')",
    )


def simulation_options(p: argparse.ArgumentParser) -> None:
    """``--no-classify`` and ``--no-flush``: what every simulating command can switch off."""
    p.add_argument(
        "--no-classify",
        action="store_true",
        help="do not classify misses as compulsory/capacity/conflict (faster, less memory; "
        "the per-class fields are null)",
    )
    p.add_argument(
        "--no-flush",
        action="store_true",
        help="do not write dirty lines back at the end of the run (steady-state studies)",
    )


def kernel_run(name: str, assignments: list[str]):
    """Bind a kernel to ``KEY=VALUE`` words that may include the run words ``cores=P`` and
    ``grain=G``; returns the plan and ``{"cores": P, "grain": G}`` (those given)."""
    from hroof.traces import get_kernel, parse_assignments
    from hroof.traces.kernels import split_run_words

    params, run = split_run_words(parse_assignments(assignments))
    return get_kernel(name).bind(**params), run


def kernel_plan(name: str, assignments: list[str]):
    """Bind a registered kernel to command-line ``KEY=VALUE`` words (no run words: a
    command that takes ``cores=P`` uses :func:`kernel_run`)."""
    from hroof.traces import get_kernel, parse_assignments
    from hroof.traces.kernels import RUN_WORDS

    values = parse_assignments(assignments)
    for word in RUN_WORDS:
        if word in values:
            raise HroofError(
                f"{word}= is for hroof simulate, sweep and study (this command runs one "
                "stream on one core)"
            )
    return get_kernel(name).bind(**values)
