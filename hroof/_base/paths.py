"""Where hroof keeps files of its own: ``$XDG_CACHE_HOME/hroof`` (default ``~/.cache/hroof``)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_home() -> Path:
    """hroof's cache folder: ``$XDG_CACHE_HOME/hroof``, else ``~/.cache/hroof``."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "hroof"


def results_cache_dir() -> Path:
    """Where sweep and study results are cached: ``$HROOF_CACHE_DIR``, else
    ``cache_home()/results``."""
    if os.environ.get("HROOF_CACHE_DIR"):
        return Path(os.environ["HROOF_CACHE_DIR"])
    return cache_home() / "results"


def host_machine_path() -> Path:
    """Where ``hroof machine measure`` keeps the measured host: ``$HROOF_HOST_MACHINE``,
    else ``cache_home()/host.toml``."""
    if os.environ.get("HROOF_HOST_MACHINE"):
        return Path(os.environ["HROOF_HOST_MACHINE"])
    return cache_home() / "host.toml"
