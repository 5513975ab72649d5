"""``hroof machine show|list|detect``: inspect machine files, detect the host's caches."""

from __future__ import annotations

import argparse
from pathlib import Path

from hroof._base.errors import HroofError
from hroof._base.files import write_text
from hroof._base.toml import load_toml
from hroof.cli.results import format_machine
from hroof.cli.text import emit, format_size


def cmd_machine_show(args: argparse.Namespace) -> int:
    """``hroof machine show NAME|FILE``: a machine's levels, bandwidths, peak and ridge points."""
    from hroof.roofline import load_machine

    emit(format_machine(load_machine(args.machine)))
    return 0


def cmd_machine_detect(args: argparse.Namespace) -> int:
    """``hroof machine detect [--out FILE]``: the host's cache hierarchy as machine TOML.

    The text is parsed back and validated before it is printed or written, so a file
    that is written always loads with ``load_machine``; ``--out`` writes atomically.
    """
    from hroof.machine.host import CPUINFO, host_toml, read_host
    from hroof.machine.model import machine_from_dict

    # A file the user named must exist: "unknown CPU" from a typo would be a wrong answer.
    if args.cpuinfo != CPUINFO and not Path(args.cpuinfo).is_file():
        raise HroofError(f"--cpuinfo {args.cpuinfo}: no such file")
    report = read_host(args.sysfs, args.cpuinfo)
    text = host_toml(report.machine, report.flags, report.notes)
    machine_from_dict(load_toml(text), source="<detected host>")  # must load back
    if args.out is None:
        emit(text)
        return 0
    out = Path(args.out)
    write_text(out, text)
    levels = ", ".join(
        f"{lv.name} {format_size(lv.size)}" for lv in report.machine.hierarchy.levels
    )
    emit(f"wrote {out}: {report.machine.name}: {levels} (bandwidths and peak unknown)")
    return 0


def cmd_machine_list(args: argparse.Namespace) -> int:
    """``hroof machine list``: the machine files bundled with hroof, then the measured host."""
    from hroof.cachesim import load_hierarchy
    from hroof.machine.catalog import bundled_machines

    known = bundled_machines()
    if not known:
        emit("no bundled machines")
        return 0
    namew = max(len(n) for n in known) + 2
    lines = []
    for name, path in known.items():
        try:
            h = load_hierarchy(path)
            sizes = ", ".join(f"{lv.name} {format_size(lv.size)}" for lv in h.levels)
            desc = f"{h.name}: {sizes}"
        except HroofError as exc:
            desc = f"(unreadable: {exc})"
        lines.append(f"{name:<{namew}}{desc}")
    lines.append(_host_line(max(namew, len("host") + 2)))
    emit("\n".join(lines))
    return 0


def _host_line(namew: int) -> str:
    """``machine list``'s line for the measured host: its figures' date, or how to
    measure it."""
    from hroof.machine.catalog import HOST_MACHINE, host_machine_path
    from hroof.machine.host import MEASURE_COMMAND
    from hroof.machine.model import load_machine

    path = host_machine_path()
    if not path.is_file():
        return f"{HOST_MACHINE:<{namew}}(not measured: '{MEASURE_COMMAND}' measures this machine)"
    try:
        m = load_machine(HOST_MACHINE)
    except HroofError as exc:
        return f"{HOST_MACHINE:<{namew}}(unreadable: {exc})"
    sizes = ", ".join(f"{lv.name} {format_size(lv.size)}" for lv in m.hierarchy.levels)
    date = str(m.measured.get("date", "?"))[:10]
    missing = f"; unknown: {', '.join(m.missing())}" if m.missing() else ""
    return f"{HOST_MACHINE:<{namew}}{m.name}: {sizes} (measured {date}, {path}{missing})"


def register(sub, machine_sub) -> None:
    """Add ``machine show``, ``machine list`` and ``machine detect``."""
    q = machine_sub.add_parser(
        "show",
        help="print a machine's cache levels, bandwidths, peak and ridge points",
        description="Print a machine's name, source file, compute peak and ceilings (GFLOP/s) "
        "and, per cache level and memory: capacity (bytes), ways, line size (bytes), sets, "
        "write-allocate, inclusion policy (nine, exclusive, victim, inclusive), prefetcher "
        "(none, next-line, adjacent, stride STREAMSxDISTANCE), bandwidth "
        "(GB/s, or unknown) and ridge point (FLOP/byte, the "
        "arithmetic intensity where that level's bandwidth roof meets the peak).",
    )
    q.add_argument(
        "machine",
        metavar="NAME|FILE",
        help="a bundled machine name (see 'hroof machine list') or a machine TOML file",
    )
    q.set_defaults(func=cmd_machine_show)
    q = machine_sub.add_parser(
        "list",
        help="list the bundled machine names and the measured host",
        description="List the machines bundled with hroof, usable as --machine NAME.",
    )
    q.set_defaults(func=cmd_machine_list)
    q = machine_sub.add_parser(
        "detect",
        help="write this host's cache hierarchy as a machine TOML file",
        description="Read cpu0's data and unified caches from Linux sysfs and the CPU model "
        "and flags (avx2, avx512f, fma) from /proc/cpuinfo, and print them as a machine "
        "TOML file (or write it with --out). Bandwidths and the compute peak cannot be "
        "read from the system: they are left unknown, as comments, never guessed.",
    )
    q.add_argument(
        "--out",
        metavar="FILE",
        help="write the TOML to FILE (atomically) instead of printing it",
    )
    q.add_argument(
        "--sysfs",
        metavar="DIR",
        default="/sys/devices/system/cpu/cpu0/cache",
        help="directory of index* cache descriptions (default: %(default)s)",
    )
    q.add_argument(
        "--cpuinfo",
        metavar="FILE",
        default="/proc/cpuinfo",
        help="cpuinfo file for the model name and flags (default: %(default)s)",
    )
    q.set_defaults(func=cmd_machine_detect)
