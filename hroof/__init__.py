"""hroof: a cache-simulator-driven hierarchical roofline engine.

Data flows one way: :mod:`hroof.traces` (access streams) ->
:mod:`hroof.cachesim` (simulated cache hierarchy, per-level miss
classification) -> :mod:`hroof.roofline` (arithmetic intensity and bounds).
"""

from hroof._base.errors import HroofError

__version__ = "0.1.0"

__all__ = ["HroofError", "__version__"]
