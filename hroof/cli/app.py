"""The ``hroof`` command line: the parser built from one module per command, and :func:`main`.

Only :mod:`hroof.cli` sees argparse: every ``cmd_*`` function turns its ``args``
into plain values and calls the library. :func:`main` maps bad input to exit
status 2 and one line on stderr (``hroof: error: ...``), never a traceback, and
prints a result only once it is complete. The simulator (and so Numba) is
imported by the commands that need it, so ``hroof --help`` answers at once.

Exit status: 0 success, 1 a multi-point run finished with failed points, 2 bad
input or usage, 130 interrupted (Ctrl-C), 143 terminated (SIGTERM), 129 hung up (SIGHUP).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence
from contextlib import suppress

import hroof
from hroof._base.errors import HroofError
from hroof._base.jit import notify_compiles
from hroof._base.outdir import signals_raise
from hroof._base.progress import shown_on
from hroof.cli import (
    accel,
    demo,
    energy,
    gpu_threads,
    machine,
    measure,
    mrc,
    power,
    run,
    simulate,
    spmv_blocking,
    study,
    sweep,
    table,
    warm,
)
from hroof.studies.executor import PointsFailed

#: The command modules, in the order ``hroof --help`` lists them. Each has
#: ``register(sub, machine_sub)`` adding its subcommands.
COMMANDS = (
    simulate, sweep, mrc, study, run, demo, machine, measure, energy, power, spmv_blocking, table,
    accel, gpu_threads, warm,
)  # fmt: skip


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line: ``hroof: error: ...``."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"hroof: error: {message} (see '{self.prog} --help')\n")


_DESCRIPTION = """\
hroof generates the memory-access stream of a loop kernel (or reads a trace file),
simulates it through a set-associative LRU cache hierarchy (L1..Ln, then memory),
classifies every miss at every level as compulsory, capacity or conflict, and turns
the bytes each level moves into arithmetic intensity (FLOP/byte) and roofline
bounds; swept over problem size, it finds the locality walls."""

_EPILOG = """\
examples:
  hroof demo                                  the 7-point stencil across the walls
  hroof kernels                               the kernels and their parameters
  hroof simulate stencil7 n=128               per-level table of one run
  hroof sweep stencil7 n=8..256:x2 --out d/   a size sweep, with figures and report
  hroof mrc stencil7 n=64                     misses of every cache size, knees, AIs
  hroof run stencil7 n=128 --predict          run it natively: measured vs predicted
  hroof simulate --trace run.din --flops 1e6  per-level table of a Dinero trace
  hroof machine show skylake-sp               a machine: levels, bandwidths, peak
  hroof warm                                  compile every kernel ahead (once)

Bad input exits with status 2 and one line on stderr."""


def build_parser() -> argparse.ArgumentParser:
    """The ``hroof`` argument parser (subcommands set ``func`` to their ``cmd_*``)."""
    fmt = argparse.RawDescriptionHelpFormatter
    parser = _Parser(prog="hroof", description=_DESCRIPTION, epilog=_EPILOG, formatter_class=fmt)
    parser.add_argument("--version", action="version", version=f"hroof {hroof.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    machine_sub = None  # the ``machine`` group's actions, once it is listed
    for module in COMMANDS:
        if module is machine:
            p = sub.add_parser(
                "machine",
                help="show, list, detect or measure machines (cache levels, bandwidths, peak)",
                description="Inspect machine descriptions (cache levels, bandwidths, compute "
                "peak; TOML files), detect this host's cache hierarchy, or measure its "
                "bandwidths and peaks.",
            )
            machine_sub = p.add_subparsers(
                dest="machine_command", metavar="ACTION", title="actions"
            )
            p.set_defaults(func=None, parser=p)
        module.register(sub, machine_sub)
    parser.set_defaults(func=None, parser=parser)
    return parser


def _choices(parser: argparse.ArgumentParser) -> str:
    """The subcommands a parser offers, read from the parser itself."""
    for action in parser._actions:  # argparse keeps no public list of subparsers
        if isinstance(action, argparse._SubParsersAction):
            return ", ".join(action.choices)
    return ""  # pragma: no cover (every parser that reaches here has subcommands)


def _one_line(message: str) -> str:
    return " ".join(message.split()) or "unknown error"


def _fail(message: str) -> int:
    sys.stderr.write(f"hroof: error: {_one_line(message)}\n")
    sys.stderr.flush()
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``hroof`` command line and return its exit status.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments without the program name (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0 on success, 2 for bad input or usage (one line on stderr), 128 + the
        signal's number when interrupted (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP).
    """
    with signals_raise():  # SIGTERM, SIGHUP: the same cleanup as Ctrl-C, then one line
        code = _main(argv)
    if code > 128:
        # An interrupt can leave an object half-built (llvmlite's, when it lands while Numba
        # loads a kernel): its __del__ then fails as the interpreter exits, which Python prints
        # as "Exception ignored" with a traceback under the one-line message. Nothing is left
        # to do by then: say nothing more.
        sys.unraisablehook = _quiet
    return code


def _quiet(args) -> None:
    """``sys.unraisablehook`` after an interrupt: the program has said all it will."""


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(None if argv is None else list(argv))
        if args.func is None:
            which = args.parser
            which.error(f"missing command; choose one of {_choices(which)}")
    except SystemExit as exc:  # --help, --version, usage errors
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 2)
    if not getattr(args, "quiet", False) and shown_on(sys.stderr):
        notify_compiles(sys.stderr)  # one line if the kernels compile (the first run)
    try:
        return args.func(args)
    except PointsFailed as exc:  # the others finished: status 1, not 2
        sys.stderr.write(f"hroof: error: {_one_line(str(exc))}\n")
        return 1
    except HroofError as exc:
        return _fail(str(exc))
    except BrokenPipeError:  # stdout closed early, e.g. `hroof ... | head`
        with suppress(OSError, ValueError, AttributeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return 1
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        return _fail(f"{where}{exc.strerror or exc}")
    except KeyboardInterrupt as exc:
        signum = getattr(exc, "signum", signal.SIGINT)
        with suppress(OSError, ValueError):
            by = "" if signum == signal.SIGINT else f" by {signal.Signals(signum).name}"
            sys.stderr.write(f"hroof: interrupted{by}\n")
            sys.stderr.flush()
        return 128 + signum


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
