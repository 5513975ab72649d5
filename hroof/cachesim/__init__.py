"""Set-associative LRU cache-hierarchy simulator with per-level 3C miss classification.

The model is defined in ``docs/cache-model.md``. Feed a trace as chunks of
``(addr, size, kind)`` arrays to a :class:`Simulator`, or call
:func:`simulate` on an iterable of chunks.
"""

from hroof.cachesim.config import (
    HierarchyConfig,
    LevelConfig,
    format_size,
    hierarchy,
    hierarchy_from_dict,
    load_hierarchy,
    parse_size,
)
from hroof.cachesim.result import SCHEMA, CoreCounts, LevelResult, MemoryResult, SimResult

_LAZY = {"Simulator", "simulate", "simulate_arrays"}
#: Names that moved to :mod:`hroof.machine` (which machine a name means is the machine
#: layer's business) and stay importable from here for scripts written before.
_MOVED = {"resolve_machine": "model", "bundled_machines": "catalog", "DEFAULT_MACHINE": "catalog"}


def __getattr__(name: str):
    """The simulator (and so Numba) loads on first use, so importing results, configs or
    the roofline models (``hroof --help``, ``hroof machine show``) stays fast."""
    if name in _LAZY:
        from hroof.cachesim import simulator

        return getattr(simulator, name)
    if name in _MOVED:  # compatibility alias, resolved lazily (no import edge upward)
        import importlib

        return getattr(importlib.import_module(f"hroof.machine.{_MOVED[name]}"), name)
    raise AttributeError(f"module 'hroof.cachesim' has no attribute {name!r}")


__all__ = [
    "DEFAULT_MACHINE",
    "SCHEMA",
    "CoreCounts",
    "HierarchyConfig",
    "LevelConfig",
    "LevelResult",
    "MemoryResult",
    "SimResult",
    "Simulator",
    "bundled_machines",
    "format_size",
    "hierarchy",
    "hierarchy_from_dict",
    "load_hierarchy",
    "parse_size",
    "resolve_machine",
    "simulate",
    "simulate_arrays",
]
