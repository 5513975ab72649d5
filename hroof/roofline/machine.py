"""Machine models: a cache hierarchy plus the figures a roofline needs.

A machine is the hierarchy the simulator runs (``[[level]]`` tables), each
level's bandwidth as seen by the core, memory's bandwidth, the compute peak
and named compute ceilings below it (DESIGN.md, "Machine files"). Any figure
may be unknown (None): simulation needs none of them, and a roofline number
that needs a missing one is None, or, when a command cannot do without it, an
error naming the figure and the command.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

from hroof.cachesim.config import (
    HierarchyConfig,
    bundled_machines,
    hierarchy_from_dict,
    resolve_machine,
)
from hroof.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass(frozen=True)
class Ceiling:
    """A named ceiling below a roof: ``value`` in GFLOP/s (compute) or GB/s (bandwidth)."""

    name: str
    value: float


@dataclass(frozen=True)
class Machine:
    """A cache hierarchy with its roofline figures.

    Attributes
    ----------
    name : str
        As the machine file's ``[machine] name`` says.
    hierarchy : HierarchyConfig
        The cache levels, L1 first.
    bandwidths : tuple of float or None
        Per cache level, GB/s as seen by the core (None: unknown).
    memory_bandwidth : float or None
        GB/s from memory as seen by the core.
    peak : float or None
        Compute peak, GFLOP/s (the roof).
    ceilings : tuple of Ceiling
        Named compute ceilings below the peak, highest first.
    source : str or None
        The file it was read from.
    """

    name: str
    hierarchy: HierarchyConfig
    bandwidths: tuple[float | None, ...]
    memory_bandwidth: float | None = None
    peak: float | None = None
    ceilings: tuple[Ceiling, ...] = ()
    source: str | None = field(default=None, compare=False)

    def __post_init__(self):
        if len(self.bandwidths) != len(self.hierarchy.levels):
            raise ConfigError(
                f"{self.name}: {len(self.bandwidths)} bandwidths for "
                f"{len(self.hierarchy.levels)} levels"
            )

    @property
    def level_names(self) -> list[str]:
        return [lv.name for lv in self.hierarchy.levels]

    @property
    def memory_name(self) -> str:
        return self.hierarchy.memory_name

    def bandwidth(self, level: str) -> float | None:
        """GB/s of a cache level or of memory (by name), None when unknown."""
        if level == self.memory_name:
            return self.memory_bandwidth
        try:
            return self.bandwidths[self.level_names.index(level)]
        except ValueError:
            raise ConfigError(
                f"machine {self.name} has no level {level!r}; levels: "
                f"{', '.join([*self.level_names, self.memory_name])}"
            ) from None

    def all_bandwidths(self) -> list[tuple[str, float | None]]:
        """(name, GB/s) of every cache level and then memory."""
        return [*zip(self.level_names, self.bandwidths, strict=True),
                (self.memory_name, self.memory_bandwidth)]  # fmt: skip

    def ridge_point(self, level: str) -> float | None:
        """FLOP/byte where ``level``'s bandwidth roof meets the compute peak."""
        bw = self.bandwidth(level)
        if self.peak is None or bw is None:
            return None
        return self.peak / bw

    def missing(self) -> list[str]:
        """The roofline figures this machine does not know, in words."""
        out = [f"{n} bandwidth" for n, bw in self.all_bandwidths() if bw is None]
        if self.peak is None:
            out.append("compute peak")
        return out

    def require(self, command: str, *, bandwidths: bool = True, peak: bool = True) -> None:
        """Raise a ConfigError naming the figures ``command`` needs and this machine lacks."""
        lacking = [m for m in self.missing() if (m.endswith("bandwidth") and bandwidths)
                   or (m == "compute peak" and peak)]  # fmt: skip
        if lacking:
            where = f" ({self.source})" if self.source else ""
            raise ConfigError(
                f"machine {self.name}{where} has no {', '.join(lacking)}; {command} needs "
                "them: add them to its machine file (see docs/roofline.md)"
            )


def _positive_float(value, what: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ConfigError(f"{what} must be a positive number, got {value!r}")
    return float(value)


def machine_from_dict(doc: dict, source: str = "<dict>") -> Machine:
    """A Machine from a parsed machine file (DESIGN.md format)."""
    hierarchy = hierarchy_from_dict(doc, source=source)
    compute = doc.get("compute", {})
    peak = compute.get("peak")
    if peak is not None:
        peak = _positive_float(peak, f"[compute] peak of {source}")
    raw = compute.get("ceilings", {})
    if not isinstance(raw, dict):
        raise ConfigError(f"[compute] ceilings of {source} must be a table of name = GFLOP/s")
    ceilings = []
    for name, value in raw.items():
        value = _positive_float(value, f"compute ceiling {name!r} of {source}")
        if peak is not None and value > peak:
            raise ConfigError(
                f"compute ceiling {name!r} of {source} ({value:g} GFLOP/s) is above the "
                f"peak ({peak:g} GFLOP/s)"
            )
        ceilings.append(Ceiling(str(name), value))
    ceilings.sort(key=lambda c: -c.value)
    memory = doc.get("memory", {})
    mem_bw = memory.get("bandwidth")
    if mem_bw is not None:
        mem_bw = _positive_float(mem_bw, f"[memory] bandwidth of {source}")
    return Machine(
        name=hierarchy.name,
        hierarchy=hierarchy,
        bandwidths=tuple(lv.bandwidth for lv in hierarchy.levels),
        memory_bandwidth=mem_bw,
        peak=peak,
        ceilings=tuple(ceilings),
        source=source,
    )


def load_machine(name_or_path: str | Path | None = None) -> Machine:
    """A bundled machine by name (default: ``default``) or a machine TOML file by path."""
    hierarchy = resolve_machine(name_or_path)  # the errors (unknown name, bad file) are its
    path = Path(hierarchy.source) if hierarchy.source else None
    if path is None:  # pragma: no cover (resolve_machine always reads a file)
        raise ConfigError(f"machine {name_or_path} was not read from a file")
    doc = tomllib.loads(path.read_text())
    return machine_from_dict(doc, source=str(path))


__all__ = [
    "Ceiling",
    "Machine",
    "bundled_machines",
    "load_machine",
    "machine_from_dict",
]
