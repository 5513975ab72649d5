"""Set-associative LRU cache-hierarchy simulator with per-level 3C miss classification.

The model is defined in ``docs/cache-model.md``. Feed a trace as chunks of
``(addr, size, kind)`` arrays to a :class:`Simulator`, or call
:func:`simulate` on an iterable of chunks.
"""

from hroof.cachesim.config import (
    DEFAULT_MACHINE,
    HierarchyConfig,
    LevelConfig,
    bundled_machines,
    format_size,
    hierarchy,
    hierarchy_from_dict,
    load_hierarchy,
    parse_size,
    resolve_machine,
)
from hroof.cachesim.result import SCHEMA, CoreCounts, LevelResult, MemoryResult, SimResult

_LAZY = {"Simulator", "simulate", "simulate_arrays"}


def __getattr__(name: str):
    """The simulator (and so Numba) loads on first use, so importing results, configs or
    the roofline models (``hroof --help``, ``hroof machine show``) stays fast."""
    if name in _LAZY:
        from hroof.cachesim import simulator

        return getattr(simulator, name)
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
