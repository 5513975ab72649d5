"""``hroof warm``: compile every kernel ahead, in parallel processes."""

from __future__ import annotations

import argparse
import sys
import time

from hroof.cli.options import positive_int

_DESCRIPTION = """\
Compile every Numba kernel hroof runs (the simulator's level passes and access engine,
several cores, set sampling, miss-ratio curves, every kernel's trace generator and the
trace readers), a group per process, and keep them in the on-disk cache. A command
otherwise compiles the kernels of its own path on its first run (10-40 s on a 2-core
machine for 'hroof simulate') and loads them in a fraction of a second after. Run once
after installing or updating hroof, or let 'make demo' and 'make test' run it; when
everything is compiled already it takes a few seconds. The kernels are kept beside
hroof's sources when that folder can be written, else in $XDG_CACHE_HOME/hroof/numba
(or $NUMBA_CACHE_DIR when set), and compiled again after any change to hroof's kernel
sources."""


def register(sub, machine_sub) -> None:
    p = sub.add_parser(
        "warm",
        help="compile every kernel ahead, in parallel (once per install)",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--jobs", "-j", type=positive_int("--jobs"), default=None, metavar="N",
        help="processes to compile in (default: the CPUs this process may use)",
    )  # fmt: skip
    p.add_argument("--quiet", "-q", action="store_true", help="print nothing but errors")
    p.set_defaults(func=cmd_warm)


def cmd_warm(args: argparse.Namespace) -> int:
    from hroof.studies.warm import GROUPS, warm

    t0 = time.perf_counter()

    def done(name: str, seconds: float) -> None:
        if not args.quiet:
            print(f"  {GROUPS[name][0]:40s} {seconds:6.1f} s", flush=True)

    if not args.quiet:
        print("compiling (or loading from the cache) every kernel hroof runs:", flush=True)
    took = warm(jobs=args.jobs, done=done)
    if not args.quiet:
        wall = time.perf_counter() - t0
        print(f"done: {len(took)} groups in {wall:.1f} s", flush=True)
    sys.stdout.flush()
    return 0
