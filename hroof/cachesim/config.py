"""Cache hierarchy configuration: levels, sizes, machine TOML files.

A hierarchy is L1..Ln followed by memory (see ``docs/cache-model.md``). All
levels share one line size, a power of two; a level's set count is
``size / (line * ways)`` and need not be a power of two.
"""

from __future__ import annotations

import math
import numbers
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hroof._base.errors import ConfigError, HroofError, suggest
from hroof._base.toml import load_toml
from hroof._base.units import format_size
from hroof._base.units import parse_size as _parse_size

if sys.version_info >= (3, 11):
    pass
else:  # pragma: no cover
    pass

#: The most levels a hierarchy may have (the per-line flag words hold one
#: "seen" and one "written back" bit per level).
MAX_LEVELS = 16


def parse_size(value: Any, what: str = "size") -> int:
    """A positive byte count: an integer or a string such as ``"48 KiB"``
    (:func:`hroof._base.units.parse_size`, raising :class:`ConfigError`).

    >>> parse_size("48 KiB"), parse_size("2 MiB"), parse_size(4096)
    (49152, 2097152, 4096)
    """
    return _parse_size(value, what, exc=ConfigError)


def _positive_int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise ConfigError(f"{what} must be a positive integer, got {value!r}")
    return int(value)


#: A level's inclusion policies (``inclusion`` in a ``[[level]]`` table).
INCLUSION_POLICIES = ("nine", "exclusive", "victim", "inclusive")
#: A level's hardware prefetchers (``prefetch`` in a ``[[level]]`` table; docs/cache-model.md,
#: "Prefetchers").
PREFETCHERS = ("none", "next-line", "adjacent", "stride")


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
    inclusion : str
        The level's policy towards the levels above it (docs/cache-model.md,
        "Inclusion policies"): ``"nine"`` (default: non-inclusive,
        non-exclusive), ``"exclusive"``, ``"victim"`` or ``"inclusive"``.
        L1 has no level above it and must be ``"nine"``.
    shared : bool
        With ``cores > 1``, one copy of this level serves every core (the
        levels above it are each core's own; docs/cache-model.md, "Several
        cores"). No level marked: the last level is shared.
    prefetch : str
        The level's hardware prefetcher (docs/cache-model.md, "Prefetchers"):
        ``"none"`` (default), ``"next-line"``, ``"adjacent"`` (the other line of
        the aligned 128-byte pair) or ``"stride"``.
    prefetch_streams, prefetch_distance : int
        The stride prefetcher's table size (streams, one per 4 KiB page) and
        distance (it requests ``line + distance * stride``); 16 and 1 by default.
    """

    name: str
    size: int
    ways: int
    line: int = 64
    write_allocate: bool = True
    bandwidth: float | None = None
    inclusion: str = "nine"
    shared: bool = False
    prefetch: str = "none"
    prefetch_streams: int = 16
    prefetch_distance: int = 1

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
        if not isinstance(self.shared, bool):
            raise ConfigError(f"{self.name} shared must be true or false, got {self.shared!r}")
        if self.inclusion not in INCLUSION_POLICIES:
            raise ConfigError(
                f"{self.name} inclusion must be one of {', '.join(INCLUSION_POLICIES)}, got "
                f"{self.inclusion!r}"
            )
        self._check_prefetch()
        if self.bandwidth is not None:
            if isinstance(self.bandwidth, bool) or not isinstance(self.bandwidth, (int, float)):
                raise ConfigError(
                    f"{self.name} bandwidth must be a number of GB/s, got {self.bandwidth!r}"
                )
            if not (math.isfinite(self.bandwidth) and self.bandwidth > 0):  # inf is no figure
                raise ConfigError(
                    f"{self.name} bandwidth must be positive and finite (GB/s), got "
                    f"{self.bandwidth!r}"
                )

    def _check_prefetch(self) -> None:
        if self.prefetch not in PREFETCHERS:
            raise ConfigError(
                f"{self.name} prefetch must be one of {', '.join(PREFETCHERS)}, got "
                f"{self.prefetch!r}{suggest(str(self.prefetch), PREFETCHERS)}"
            )
        for key in ("prefetch_streams", "prefetch_distance"):
            _positive_int(getattr(self, key), f"{self.name} {key}")
        if self.prefetch != "none" and self.line > 4096:
            raise ConfigError(f"{self.name}: a prefetcher needs lines of at most 4 KiB (4096 B)")
        if self.prefetch == "adjacent" and self.line >= 128:
            raise ConfigError(
                f"{self.name}: the adjacent-line prefetcher pairs lines within an aligned "
                f"128-byte block, so it needs lines under 128 B, got {self.line} B"
            )

    @property
    def sets(self) -> int:
        """Number of sets, ``size / (line * ways)``."""
        return self.size // (self.line * self.ways)

    @property
    def lines(self) -> int:
        """Capacity in lines."""
        return self.size // self.line

    def describe(self) -> str:
        policy = "" if self.inclusion == "nine" else f" {self.inclusion}"
        if self.prefetch != "none":
            policy += f" {self.describe_prefetch()} prefetch"
        return f"{self.name} {format_size(self.size)} {self.ways}-way {self.line} B lines{policy}"

    def describe_prefetch(self) -> str:
        """The prefetcher in a few words: ``none``, ``next-line``, ``stride 16x1``."""
        if self.prefetch == "stride":
            return f"stride {self.prefetch_streams}x{self.prefetch_distance}"
        return self.prefetch


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
        if levels[0].inclusion != "nine":
            raise ConfigError(
                f"{levels[0].name} is the first level: nothing above it to include or exclude, "
                f"so its inclusion must be 'nine', got {levels[0].inclusion!r}"
            )
        marked = [i for i, lvl in enumerate(levels) if lvl.shared]
        if marked and marked != list(range(marked[0], len(levels))):
            raise ConfigError(
                "shared levels must be the last ones (a level below a shared one is shared "
                f"too); shared: {', '.join(levels[i].name for i in marked)}"
            )
        if levels[0].shared:
            raise ConfigError(f"{levels[0].name} is the first level: each core has its own")

    def first_shared(self, cores: int) -> int:
        """Index of the first level shared by ``cores`` cores (``len(levels)``: none).

        One core shares nothing; with several, the levels marked ``shared``, or
        the last level when none is marked (a one-level hierarchy: none).

        >>> h = hierarchy({"name": "L1", "size": 256, "ways": 2},
        ...               {"name": "L2", "size": 1024, "ways": 4})
        >>> h.first_shared(1), h.first_shared(4)
        (2, 1)
        """
        n = len(self.levels)
        if cores <= 1:
            return n
        marked = [i for i, lvl in enumerate(self.levels) if lvl.shared]
        if marked:
            return marked[0]
        return n - 1 if n > 1 else n

    @property
    def plain(self) -> bool:
        """True if every level is NINE without a prefetcher (the level-by-level model)."""
        return all(lvl.inclusion == "nine" and lvl.prefetch == "none" for lvl in self.levels)

    @property
    def pipelines(self) -> bool:
        """True if L1 can run beside the levels below on two threads (``threads=2``): two
        levels or more, and L1 a plain pass (the plain model, or the top of the policy
        path's plain passes: :func:`split_level`)."""
        return len(self.levels) > 1 and (self.plain or split_level(self.levels) >= 1)

    @property
    def prefetching(self) -> bool:
        """True if some level has a prefetcher."""
        return any(lvl.prefetch != "none" for lvl in self.levels)

    def without_prefetch(self) -> HierarchyConfig:
        """The same hierarchy with every prefetcher off (``--model nine``)."""
        return replace(self, levels=tuple(replace(lv, prefetch="none") for lv in self.levels))

    def with_inclusion(self, inclusion: str = "nine") -> HierarchyConfig:
        """The same hierarchy with L2 and below set to ``inclusion`` (``--model nine``)."""
        levels = (self.levels[0], *(replace(lv, inclusion=inclusion) for lv in self.levels[1:]))
        return replace(self, levels=levels)

    @property
    def line(self) -> int:
        return self.levels[0].line

    @property
    def line_bits(self) -> int:
        return int(math.log2(self.line))

    def describe(self) -> str:
        return ", ".join(lvl.describe() for lvl in self.levels)


def split_level(levels) -> int:
    """How many top levels run as plain level passes (0: none, all access by access).

    ``levels`` are ``LevelConfig`` objects. Levels ``0 .. t - 1`` can run on
    their own, before the levels below see anything, when nothing below them
    ever changes them or the order of what reaches them:

    * each of them is NINE without a prefetcher (a prefetcher inserts at its
      own level, and the plain passes have none);
    * no level is inclusive: an inclusive level's eviction drops the copies
      above it, L1's included;
    * level ``t`` is NINE (it may prefetch): an exclusive level hands a line's
      dirty bit up to the nearest level above it that allocates, and an
      exclusive or victim level takes the clean victims of the level above,
      which a plain pass does not send. Below a NINE level ``t`` the dirty bit
      stops at ``t`` or lower (a read allocates at every NINE level it
      misses; a forwarded store never takes a dirty bit up), and the clean
      victims of ``t - 1`` go nowhere;
    * with a prefetcher anywhere, ``t`` is at most 1: the prefetchers of an
      access run after the writebacks of that access, and only L1's output
      says which those are (a request, then the writeback of its fill's
      victim right after it, if any); below L1 a writeback may belong to the
      next access.
    """
    nlev = len(levels)
    if any(lv.inclusion == "inclusive" for lv in levels):
        return 0
    t = 0
    while t < nlev and levels[t].inclusion == "nine" and levels[t].prefetch == "none":
        t += 1
    if t == nlev:
        return 0  # the plain model: no policy path at all
    if levels[t].inclusion != "nine":  # exclusive or victim: its level above stays below
        t -= 1
    if any(lv.prefetch != "none" for lv in levels):
        t = min(t, 1)
    return max(t, 0)


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
#: The keys of a ``[[level]]`` table that the simulator reads. A machine file's other
#: keys (bandwidths, ceilings, ``[compute]``, ``[energy]``, ...) belong to the machine
#: schema (:mod:`hroof.machine.model`), which validates the whole file once.
LEVEL_KEYS = frozenset(
    {"name", "size", "ways", "line", "write_allocate", "bandwidth", "inclusion", "shared"}
    | {"prefetch", "prefetch_streams", "prefetch_distance"}
)


def _check_keys(table: dict, allowed, where: str) -> None:
    for key in table:
        if key not in allowed:
            raise ConfigError(
                f"unknown key '{key}' in {where}{suggest(key, allowed)}; "
                f"allowed: {', '.join(sorted(allowed))}"
            )


def _level_from_table(
    table: dict, where: str, default_name: str, allowed=LEVEL_KEYS
) -> LevelConfig:
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    if allowed is not None:
        _check_keys(table, allowed, where)
    for key in ("size", "ways"):
        if key not in table:
            raise ConfigError(f"{where} is missing '{key}'")
    for key in ("prefetch_streams", "prefetch_distance"):
        if key in table and table.get("prefetch") != "stride":
            raise ConfigError(f"{where}: '{key}' is a parameter of prefetch = \"stride\" only")
    try:
        return LevelConfig(
            name=table.get("name", default_name),
            size=table["size"],
            ways=table["ways"],
            line=table.get("line", 64),
            write_allocate=table.get("write_allocate", True),
            bandwidth=table.get("bandwidth"),
            inclusion=table.get("inclusion", "nine"),
            shared=table.get("shared", False),
            prefetch=table.get("prefetch", "none"),
            prefetch_streams=table.get("prefetch_streams", 16),
            prefetch_distance=table.get("prefetch_distance", 1),
        )
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _table(doc: dict, key: str, source: str) -> dict:
    value = doc.get(key, {})
    if not isinstance(value, dict):
        raise ConfigError(f"[{key}] in {source} must be a table")
    return value


def hierarchy_from_dict(doc: dict, source: str = "<dict>", *, level_keys=None) -> HierarchyConfig:
    """The cache hierarchy of a parsed machine file: its ``[[level]]`` tables, named by
    ``[machine] name`` and ``[memory] name``.

    Only what the simulator needs is read here; ``level_keys`` (the machine schema's
    full set) makes an unknown key in a level an error. The whole file is validated by
    :func:`hroof.machine.load_machine`.
    """
    if not isinstance(doc, dict):
        raise ConfigError(f"{source} must be a table of tables")
    machine = _table(doc, "machine", source)
    memory = _table(doc, "memory", source)
    tables = doc.get("level")
    if not tables:
        raise ConfigError(f"{source} has no [[level]] tables")
    if not isinstance(tables, list):
        raise ConfigError(f"'level' in {source} must be an array of tables: write [[level]]")
    levels = [
        _level_from_table(
            t, f"[[level]] #{i + 1} of {source}", default_name=f"L{i + 1}", allowed=level_keys
        )
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


def read_toml(path: str | Path) -> dict:
    """Parse a TOML file; a missing, unreadable or malformed file is a ConfigError."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"machine file not found: {path}")
    try:
        return load_toml(path.read_text())
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    except HroofError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None


def load_hierarchy(path: str | Path) -> HierarchyConfig:
    """Read the cache levels of a machine TOML file (the levels only; see
    :func:`hroof.machine.load_machine` for the whole machine)."""
    return hierarchy_from_dict(read_toml(path), source=str(Path(path)))
