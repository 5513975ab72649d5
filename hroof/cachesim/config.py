"""Cache hierarchy configuration: levels, sizes, machine TOML files.

A hierarchy is L1..Ln followed by memory (see ``docs/cache-model.md``). All
levels share one line size, a power of two; a level's set count is
``size / (line * ways)`` and need not be a power of two.
"""

from __future__ import annotations

import math
import numbers
import os
import re
import sys
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from hroof._base.errors import ConfigError, suggest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

#: The most levels a hierarchy may have (the per-line flag words hold one
#: "seen" and one "written back" bit per level).
MAX_LEVELS = 16

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1024,
    "kb": 1024,
    "kib": 1024,
    "m": 1024**2,
    "mb": 1024**2,
    "mib": 1024**2,
    "g": 1024**3,
    "gb": 1024**3,
    "gib": 1024**3,
}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def parse_size(value: Any, what: str = "size") -> int:
    """Parse a byte count: an integer or a string such as ``"48 KiB"``.

    Binary units only (``KB`` is taken as KiB, as cache datasheets mean it).

    >>> parse_size("48 KiB"), parse_size("2 MiB"), parse_size(4096)
    (49152, 2097152, 4096)
    """
    if isinstance(value, bool):
        raise ConfigError(f"{what} must be a byte count, got {value!r}")
    if isinstance(value, numbers.Integral) or (isinstance(value, float) and value.is_integer()):
        nbytes = int(value)
    elif isinstance(value, str):
        m = _SIZE_RE.match(value)
        unit = m.group(2).lower() if m else None
        if m is None or unit not in _UNITS:
            raise ConfigError(
                f'{what} {value!r} is not a size; write e.g. 32768, "48 KiB" or "2 MiB"'
            )
        scaled = Fraction(m.group(1)) * _UNITS[unit]
        if scaled.denominator != 1:
            raise ConfigError(f"{what} {value!r} is not a whole number of bytes")
        nbytes = int(scaled)
    else:
        raise ConfigError(f"{what} must be a byte count, got {value!r}")
    if nbytes <= 0:
        raise ConfigError(f"{what} must be positive, got {value!r}")
    return nbytes


def format_size(nbytes: int) -> str:
    """Format a byte count with the largest binary unit that divides it.

    >>> format_size(49152), format_size(2097152), format_size(1000), format_size(28835840)
    ('48 KiB', '2 MiB', '1000 B', '27.5 MiB')
    """
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale} {unit}"
        if nbytes >= scale and (8 * nbytes) % scale == 0:  # 27.5 MiB, 1.375 MiB, exactly
            whole, eighths = divmod(8 * nbytes // scale, 8)
            return f"{whole}{str(eighths / 8)[1:]} {unit}"
    return f"{nbytes} B"


def _positive_int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise ConfigError(f"{what} must be a positive integer, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class LevelConfig:
    """One cache level.

    Parameters
    ----------
    name : str
        Label used in results ("L1", "L2", ...).
    size : int or str
        Capacity in bytes (``"48 KiB"`` accepted).
    ways : int
        Associativity; ``ways * line`` must divide ``size``.
    line : int
        Line size in bytes, a power of two.
    write_allocate : bool
        If False, a store that misses is passed down as a write of the
        access's bytes, with no fill.
    bandwidth : float or None
        GB/s as seen by the core (used by the roofline, ignored here).
    """

    name: str
    size: int
    ways: int
    line: int = 64
    write_allocate: bool = True
    bandwidth: float | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ConfigError(f"level name must be a non-empty string, got {self.name!r}")
        object.__setattr__(self, "size", parse_size(self.size, f"{self.name} size"))
        object.__setattr__(self, "ways", _positive_int(self.ways, f"{self.name} ways"))
        line = _positive_int(self.line, f"{self.name} line")
        object.__setattr__(self, "line", line)
        if line & (line - 1):
            raise ConfigError(f"{self.name} line size {line} is not a power of two")
        if self.size % (line * self.ways):
            raise ConfigError(
                f"{self.name} capacity {self.size} B does not divide into whole sets of "
                f"{self.ways} ways x {line} B lines ({self.size / (line * self.ways):g} sets)"
            )
        if not isinstance(self.write_allocate, bool):
            raise ConfigError(
                f"{self.name} write_allocate must be true or false, got {self.write_allocate!r}"
            )
        if self.bandwidth is not None:
            if isinstance(self.bandwidth, bool) or not isinstance(self.bandwidth, (int, float)):
                raise ConfigError(
                    f"{self.name} bandwidth must be a number of GB/s, got {self.bandwidth!r}"
                )
            if not self.bandwidth > 0:
                raise ConfigError(f"{self.name} bandwidth must be positive, got {self.bandwidth!r}")

    @property
    def sets(self) -> int:
        """Number of sets, ``size / (line * ways)``."""
        return self.size // (self.line * self.ways)

    @property
    def lines(self) -> int:
        """Capacity in lines."""
        return self.size // self.line

    def describe(self) -> str:
        return f"{self.name} {format_size(self.size)} {self.ways}-way {self.line} B lines"


@dataclass(frozen=True)
class HierarchyConfig:
    """An ordered list of cache levels, L1 first, then memory."""

    levels: tuple[LevelConfig, ...]
    name: str = "custom"
    memory_name: str = "DRAM"
    source: str | None = field(default=None, compare=False)

    def __post_init__(self):
        levels = tuple(self.levels)
        object.__setattr__(self, "levels", levels)
        if not levels:
            raise ConfigError("a hierarchy needs at least one cache level")
        if len(levels) > MAX_LEVELS:
            raise ConfigError(
                f"a hierarchy may have at most {MAX_LEVELS} levels, got {len(levels)}"
            )
        for lvl in levels:
            if not isinstance(lvl, LevelConfig):
                raise ConfigError(f"levels must be LevelConfig objects, got {lvl!r}")
        lines = {lvl.line for lvl in levels}
        if len(lines) != 1:
            desc = ", ".join(f"{lvl.name} {lvl.line} B" for lvl in levels)
            raise ConfigError(f"all levels must share one line size; got {desc}")
        names = [lvl.name for lvl in levels]
        if len(set(names)) != len(names):
            raise ConfigError(f"level names must be unique, got {names}")

    @property
    def line(self) -> int:
        return self.levels[0].line

    @property
    def line_bits(self) -> int:
        return int(math.log2(self.line))

    def describe(self) -> str:
        return ", ".join(lvl.describe() for lvl in self.levels)


def hierarchy(*levels: LevelConfig | dict, name: str = "custom") -> HierarchyConfig:
    """Build a :class:`HierarchyConfig` from levels or dicts of level keys.

    >>> h = hierarchy({"name": "L1", "size": "32 KiB", "ways": 8})
    >>> h.levels[0].sets
    64
    """
    built = []
    for i, lvl in enumerate(levels):
        if isinstance(lvl, dict):
            lvl = _level_from_table(lvl, f"level {i + 1}", default_name=f"L{i + 1}")
        built.append(lvl)
    return HierarchyConfig(tuple(built), name=name)


# --------------------------------------------------------------------------- TOML
_TOP_KEYS = {"machine", "compute", "level", "memory", "energy", "measured"}
_MACHINE_KEYS = {"name", "description", "source", "notes", "kind", "sms", "cores", "clock_ghz"}
_LEVEL_KEYS = {
    "name", "size", "ways", "line", "bandwidth", "write_allocate", "latency", "ceilings",
}  # fmt: skip
_MEMORY_KEYS = {"name", "bandwidth", "latency", "ceilings"}
_COMPUTE_KEYS = {"peak", "ceilings", "precision", "peaks"}


def _check_keys(table: dict, allowed: set, where: str) -> None:
    for key in table:
        if key not in allowed:
            raise ConfigError(
                f"unknown key '{key}' in {where}{suggest(key, allowed)}; "
                f"allowed: {', '.join(sorted(allowed))}"
            )


def _level_from_table(table: dict, where: str, default_name: str) -> LevelConfig:
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    _check_keys(table, _LEVEL_KEYS, where)
    for key in ("size", "ways"):
        if key not in table:
            raise ConfigError(f"{where} is missing '{key}'")
    try:
        return LevelConfig(
            name=table.get("name", default_name),
            size=table["size"],
            ways=table["ways"],
            line=table.get("line", 64),
            write_allocate=table.get("write_allocate", True),
            bandwidth=table.get("bandwidth"),
        )
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def hierarchy_from_dict(doc: dict, source: str = "<dict>") -> HierarchyConfig:
    """Build a hierarchy from a parsed machine file (DESIGN.md format)."""
    _check_keys(doc, _TOP_KEYS, source)
    machine = doc.get("machine", {})
    if not isinstance(machine, dict):
        raise ConfigError(f"[machine] in {source} must be a table")
    _check_keys(machine, _MACHINE_KEYS, f"[machine] of {source}")
    if "compute" in doc:
        if not isinstance(doc["compute"], dict):
            raise ConfigError(f"[compute] in {source} must be a table")
        _check_keys(doc["compute"], _COMPUTE_KEYS, f"[compute] of {source}")
    memory = doc.get("memory", {})
    if not isinstance(memory, dict):
        raise ConfigError(f"[memory] in {source} must be a table")
    _check_keys(memory, _MEMORY_KEYS, f"[memory] of {source}")
    tables = doc.get("level")
    if not tables:
        raise ConfigError(f"{source} has no [[level]] tables")
    if not isinstance(tables, list):
        raise ConfigError(f"'level' in {source} must be an array of tables: write [[level]]")
    levels = [
        _level_from_table(t, f"[[level]] #{i + 1} of {source}", default_name=f"L{i + 1}")
        for i, t in enumerate(tables)
    ]
    try:
        return HierarchyConfig(
            tuple(levels),
            name=str(machine.get("name", Path(source).stem)),
            memory_name=str(memory.get("name", "DRAM")),
            source=source,
        )
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None


def load_hierarchy(path: str | Path) -> HierarchyConfig:
    """Read the cache levels of a machine TOML file."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"machine file not found: {path}")
    try:
        doc = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    return hierarchy_from_dict(doc, source=str(path))


_DATA = Path(__file__).resolve().parent.parent / "data"
#: The machine used when none is named.
DEFAULT_MACHINE = "skylake-sp"


def bundled_machines() -> dict[str, Path]:
    """Names and paths of the machine files shipped with hroof."""
    return {p.stem: p for p in sorted(_DATA.glob("*.toml"))}


#: The name that selects the measured host (``hroof machine measure`` writes it).
HOST_MACHINE = "host"


def host_machine_path() -> Path:
    """Where ``hroof machine measure`` keeps the measured host: ``$HROOF_HOST_MACHINE``,
    else ``$XDG_CACHE_HOME/hroof/host.toml`` (default ``~/.cache/hroof/host.toml``)."""
    if os.environ.get("HROOF_HOST_MACHINE"):
        return Path(os.environ["HROOF_HOST_MACHINE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "hroof" / "host.toml"


def resolve_machine(name_or_path: str | Path | None) -> HierarchyConfig:
    """Load a bundled machine by name, the measured host (``"host"``), or a machine TOML
    file by path."""
    if name_or_path is None:
        name_or_path = DEFAULT_MACHINE
    text = str(name_or_path)
    known = bundled_machines()
    if text in known:
        return load_hierarchy(known[text])
    if text == HOST_MACHINE:
        path = host_machine_path()
        if not path.is_file():
            raise ConfigError(
                f"no measured host at {path}: run 'hroof machine measure' first (or set "
                "HROOF_HOST_MACHINE to a machine file)"
            )
        return load_hierarchy(path)
    if Path(text).is_file() or text.endswith(".toml") or "/" in text:
        return load_hierarchy(text)
    raise ConfigError(
        f"unknown machine '{text}'{suggest(text, [*known, HOST_MACHINE])}; known: "
        f"{', '.join(known)}, {HOST_MACHINE} (once measured), or a path to a machine TOML file"
    )
