"""Detect the cache hierarchy of the machine hroof runs on (Linux sysfs + /proc/cpuinfo).

The kernel describes cpu0's caches in ``/sys/devices/system/cpu/cpu0/cache/index*/``:
``level``, ``type`` (Data, Instruction, Unified), ``size`` (e.g. ``48K``),
``ways_of_associativity``, ``coherency_line_size`` and ``number_of_sets``. The data
and unified caches, sorted by level, become the levels L1, L2, ... of a
:class:`~hroof.machine.model.Machine`. Bandwidths and the compute peak cannot be
read from the system, so they are left unknown (None), never guessed; ``hroof
machine measure`` (:mod:`hroof.machine.measure`) measures them.

A level whose values are odd (unreadable, not positive, a different line size from
L1's, a capacity that does not divide into whole sets) is skipped, and the reason is
kept as a note that :func:`host_toml` writes as a comment.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hroof._base.errors import ConfigError
from hroof.cachesim.config import HierarchyConfig, LevelConfig, format_size
from hroof.machine.model import Machine

#: Where Linux describes cpu0's caches.
SYSFS_CACHE = "/sys/devices/system/cpu/cpu0/cache"
#: Where Linux describes the processor model and its instruction-set flags.
CPUINFO = "/proc/cpuinfo"
#: The cpuinfo flags that decide which compute ceilings a core has.
ROOFLINE_FLAGS = ("avx2", "avx512f", "fma")

_SIZE_RE = re.compile(r"^\s*(\d+)\s*([KMG]?)i?B?\s*$", re.IGNORECASE)
_SCALE = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}


@dataclass(frozen=True)
class HostReport:
    """What :func:`read_host` found.

    Attributes
    ----------
    machine : Machine
        The detected hierarchy; every bandwidth and the peak are None.
    model : str or None
        The processor's model name from cpuinfo (None if cpuinfo was unreadable).
    flags : tuple of str
        Those of :data:`ROOFLINE_FLAGS` that cpuinfo lists, in that order.
    notes : tuple of str
        One line per skipped cache or unreadable file, and per inconsistency found.
    """

    machine: Machine
    model: str | None
    flags: tuple[str, ...]
    notes: tuple[str, ...] = ()


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def parse_sysfs_size(text: str) -> int:
    """Bytes of a sysfs cache ``size`` such as ``"48K"``, ``"1024K"`` or ``"32M"``.

    >>> parse_sysfs_size("48K"), parse_sysfs_size("2M"), parse_sysfs_size("512")
    (49152, 2097152, 512)
    """
    m = _SIZE_RE.match(text)
    if m is None:
        raise ValueError(f"size {text!r} is not a number of bytes with an optional K/M/G")
    return int(m.group(1)) * _SCALE[m.group(2).upper()]


def _positive(text: str | None, what: str) -> int:
    if text is None:
        raise ValueError(f"no {what} file")
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{what} {text!r} is not a whole number") from None
    if value <= 0:
        raise ValueError(f"{what} is {value}, not a positive number")
    return value


@dataclass(frozen=True)
class _Cache:
    index: str
    level: int
    kind: str
    size: int
    ways: int
    line: int
    sets: int | None


def _read_index(d: Path) -> _Cache:
    """One ``index*`` directory; ValueError naming the odd value."""
    kind = _read(d / "type")
    if kind is None:
        raise ValueError("no type file")
    level = _positive(_read(d / "level"), "level")
    size_text = _read(d / "size")
    if size_text is None:
        raise ValueError("no size file")
    size = parse_sysfs_size(size_text)
    if size <= 0:
        raise ValueError(f"size is {size_text!r}")
    ways = _positive(_read(d / "ways_of_associativity"), "ways_of_associativity")
    line = _positive(_read(d / "coherency_line_size"), "coherency_line_size")
    sets_text = _read(d / "number_of_sets")
    sets = None if sets_text is None else _positive(sets_text, "number_of_sets")
    return _Cache(d.name, level, kind, size, ways, line, sets)


def read_cpuinfo(path: Path) -> tuple[str | None, tuple[str, ...], list[str]]:
    """Model name and the roofline flags of the first processor in ``path``."""
    text = _read(path)
    if text is None:
        return None, (), [f"{path} is unreadable: the model name and flags are unknown"]
    model = None
    flags: set[str] = set()
    for line in text.splitlines():
        if not line.strip():
            if model is not None or flags:  # the end of the first processor's block
                break
            continue
        key, sep, value = line.partition(":")
        key, value = key.strip().lower(), value.strip()
        if not sep or not value:
            continue
        if key in ("model name", "cpu model") and model is None:
            model = value
        elif key in ("flags", "features") and not flags:
            flags = set(value.split())
    notes = [] if model else [f"{path} names no model"]
    return model, tuple(f for f in ROOFLINE_FLAGS if f in flags), notes


def read_host(sysfs: str | Path = SYSFS_CACHE, cpuinfo: str | Path = CPUINFO) -> HostReport:
    """Read the host's cache hierarchy and CPU model; see :func:`detect_host`.

    Returns
    -------
    HostReport
        The machine, the model name, the roofline flags and notes on skipped levels.
    """
    sysfs = Path(sysfs)
    if not sysfs.is_dir():
        raise ConfigError(
            f"cannot detect the host's caches: {sysfs} is not a directory (hroof reads "
            "Linux sysfs; on other systems write a machine TOML file by hand)"
        )
    indexes = sorted(
        (d for d in sysfs.glob("index*") if d.is_dir()),
        key=lambda d: (len(d.name), d.name),
    )
    if not indexes:
        raise ConfigError(f"cannot detect the host's caches: {sysfs} has no index* directories")
    notes: list[str] = []
    caches: list[_Cache] = []
    for d in indexes:
        try:
            cache = _read_index(d)
        except ValueError as exc:
            notes.append(f"skipped {d.name}: {exc}")
            continue
        if cache.kind.lower() not in ("data", "unified"):
            continue  # instruction caches hold no data
        caches.append(cache)
    caches.sort(key=lambda c: (c.level, c.index))
    levels: list[LevelConfig] = []
    seen: set[int] = set()
    for c in caches:
        where = f"{c.index} (level {c.level} {c.kind})"
        if c.level in seen:
            notes.append(f"skipped {where}: a second data cache at level {c.level}")
            continue
        if levels and c.line != levels[0].line:
            notes.append(
                f"skipped {where}: {c.line} B lines, but L1's are {levels[0].line} B "
                "(hroof needs one line size)"
            )
            continue
        if c.size % (c.ways * c.line):
            notes.append(
                f"skipped {where}: {format_size(c.size)} does not divide into whole sets of "
                f"{c.ways} ways x {c.line} B lines ({c.size / (c.ways * c.line):g} sets)"
            )
            continue
        name = f"L{len(levels) + 1}"
        sets = c.size // (c.ways * c.line)
        if c.sets is not None and c.sets != sets:
            notes.append(
                f"{name} ({c.index}): number_of_sets is {c.sets}, but size / (ways x line) = "
                f"{sets}; hroof uses size and ways"
            )
        if c.level != len(levels) + 1:
            notes.append(f"{name} is the kernel's level {c.level} ({c.index})")
        seen.add(c.level)
        levels.append(LevelConfig(name=name, size=c.size, ways=c.ways, line=c.line))
    if not levels:
        why = "; ".join(notes) or "no data or unified caches"
        raise ConfigError(f"cannot detect the host's caches from {sysfs}: {why}")
    model, flags, cpu_notes = read_cpuinfo(Path(cpuinfo))
    notes += cpu_notes
    flag_text = ", ".join(flags) if flags else "no " + "/".join(ROOFLINE_FLAGS)
    name = f"host: {model or 'unknown CPU'} [{flag_text}]"
    hierarchy = HierarchyConfig(tuple(levels), name=name, source=str(sysfs))
    machine = Machine(
        name=name,
        hierarchy=hierarchy,
        bandwidths=(None,) * len(levels),
        source=str(sysfs),
    )
    return HostReport(machine=machine, model=model, flags=flags, notes=tuple(notes))


def detect_host(sysfs: str | Path = SYSFS_CACHE, cpuinfo: str | Path = CPUINFO) -> Machine:
    """The host's cache hierarchy as a :class:`Machine` with unknown bandwidths and peak.

    Parameters
    ----------
    sysfs : str or Path
        A directory of ``index*`` cache descriptions (default: cpu0's in Linux sysfs).
    cpuinfo : str or Path
        A ``/proc/cpuinfo``-style file for the model name and the flags avx2, avx512f
        and fma, which go into the machine's name.

    Returns
    -------
    Machine
        Levels L1, L2, ... from the data and unified caches, sorted by level; every
        bandwidth and the compute peak are None.

    Raises
    ------
    ConfigError
        If ``sysfs`` is missing, holds no cache descriptions, or none of them is usable.

    Warns
    -----
    UserWarning
        For each cache that was skipped or is inconsistent (see :func:`read_host`).
    """
    report = read_host(sysfs, cpuinfo)
    for note in report.notes:
        warnings.warn(f"hroof host detection: {note}", stacklevel=2)
    return report.machine


#: The command that measures this host (named in errors about its missing figures).
MEASURE_COMMAND = "hroof machine measure --quick"


@dataclass(frozen=True)
class Comparison:
    """Which machine a command comparing runs on this host with a bound should use.

    Attributes
    ----------
    machine : str
        A name or path for :func:`~hroof.machine.model.load_machine`.
    is_host : bool
        Whether that is the measured host.
    note : str
        One line saying which machine and why; when it is a model of another CPU, a
        warning that says how to measure this one.
    """

    machine: str
    is_host: bool
    note: str


def comparison_machine(name: str | None = None) -> Comparison:
    """The machine to compare native runs against: ``name`` if given, else the measured
    host when ``hroof machine measure`` has written it, else the default model with a
    warning (its bound is another CPU's).

    Used by ``hroof run --predict`` and ``hroof sweep --measure``.
    """
    from hroof.machine.catalog import DEFAULT_MACHINE, HOST_MACHINE, host_machine_path

    if name is not None:
        is_host = name == HOST_MACHINE
        return Comparison(name, is_host, f"compared against {name} (--machine)")
    path = host_machine_path()
    if path.is_file():
        return Comparison(
            HOST_MACHINE,
            True,
            f"compared against host: this machine's figures measured by 'hroof machine "
            f"measure' ({path}); --machine NAME for another",
        )
    return Comparison(
        DEFAULT_MACHINE,
        False,
        f"WARNING: no measured host ({path}): the bound is the {DEFAULT_MACHINE} model, "
        f"another CPU, not this one; run '{MEASURE_COMMAND}' to measure this host (it is "
        "then used by default)",
    )


def missing_host_figures_hint(machine) -> str:
    """For a machine loaded from the measured host file: the sentence saying how to get
    its missing figures (empty for any other machine)."""
    from hroof.machine.catalog import is_measured_host

    if not is_measured_host(machine):
        return ""
    return (
        f"; run '{MEASURE_COMMAND}' again to measure them (a new measurement keeps "
        "the figures it does not find)"
    )


def _toml_string(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's for these characters)."""
    return json.dumps(text, ensure_ascii=False)


def host_toml(
    machine: Machine,
    cpu_flags: Sequence[str] = (),
    notes: Sequence[str] = (),
) -> str:
    """The machine TOML text (docs/architecture.md, "Machine files") of a detected host.

    Unknown figures are written as comments saying so, and that ``hroof machine
    measure`` measures them; the text loads back with
    :func:`~hroof.machine.model.load_machine`.

    Parameters
    ----------
    machine : Machine
        Typically from :func:`detect_host`.
    cpu_flags : sequence of str
        The roofline-relevant cpuinfo flags (avx2, avx512f, fma) the host has.
    notes : sequence of str
        Lines to record as comments (skipped levels, inconsistencies).

    Returns
    -------
    str
        The TOML text, ending in a newline.
    """
    flags = " ".join(cpu_flags) if cpu_flags else "none of " + ", ".join(ROOFLINE_FLAGS)
    out = [
        f"# Detected by `hroof machine detect` from {machine.source or 'sysfs'}.",
        "# Cache geometry as the Linux kernel reports it for cpu0 (data and unified caches).",
        "# Bandwidths (GB/s as seen by one core) and the compute peak (GFLOP/s) cannot be read",
        "# from the system and are unknown; hroof does not guess them. `hroof machine measure`",
        "# measures them (and writes the host file used by --machine host); or add them by",
        "# hand from a measurement or a datasheet, citing the source.",
    ]
    if notes:
        out.append("#")
        out += [f"# note: {n}" for n in notes]
    out += [
        "",
        "[machine]",
        f"name = {_toml_string(machine.name)}",
        f"notes = {_toml_string(f'cpu flags: {flags}')}",
        "",
    ]
    if machine.peak is None:
        out += [
            "# [compute]",
            "# peak = ...          # GFLOP/s: unknown",
            "# ceilings = { ... }  # unknown",
        ]
    else:
        out += ["[compute]", f"peak = {machine.peak!r}"]
        if machine.ceilings:
            items = ", ".join(f"{_toml_string(c.name)} = {c.value!r}" for c in machine.ceilings)
            out.append(f"ceilings = {{ {items} }}")
    for lv, bw in zip(machine.hierarchy.levels, machine.bandwidths, strict=True):
        out += [
            "",
            "[[level]]",
            f"name = {_toml_string(lv.name)}",
            f"size = {_toml_string(format_size(lv.size))}  # {lv.sets} sets",
            f"ways = {lv.ways}",
            f"line = {lv.line}",
        ]
        if not lv.write_allocate:
            out.append("write_allocate = false")
        out.append("# bandwidth = ...  # GB/s: unknown" if bw is None else f"bandwidth = {bw!r}")
    out += ["", "[memory]", f"name = {_toml_string(machine.memory_name)}"]
    mem = machine.memory_bandwidth
    out.append("# bandwidth = ...  # GB/s: unknown" if mem is None else f"bandwidth = {mem!r}")
    return "\n".join(out) + "\n"


__all__ = [
    "CPUINFO",
    "MEASURE_COMMAND",
    "ROOFLINE_FLAGS",
    "SYSFS_CACHE",
    "Comparison",
    "HostReport",
    "comparison_machine",
    "detect_host",
    "host_toml",
    "missing_host_figures_hint",
    "parse_sysfs_size",
    "read_host",
]
