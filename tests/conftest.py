"""Shared fixtures: one JIT warm-up per test session, tiny geometries."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

# Matplotlib's font cache stays where it is (the per-test HOME below would make every
# subprocess rebuild it).
os.environ.setdefault(
    "MPLCONFIGDIR",
    str(Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "matplotlib"),
)

from hroof.cachesim import Simulator, hierarchy

#: ``make check`` (HROOF_TEST_LANE=check) runs each property on a tenth of its examples:
#: the same properties, a quicker edit-test loop; ``make test`` runs them in full.
FAST_LANE = os.environ.get("HROOF_TEST_LANE") == "check"


def examples(n: int) -> int:
    """Hypothesis examples for a property: ``n``, or a tenth of it in the fast lane."""
    return max(10, n // 10) if FAST_LANE else n


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory, monkeypatch):
    """Every test gets its own HOME, result cache and host-file location.

    Nothing a test writes (a cached sweep point, a measured host file) can reach
    another test or the developer's own ~/.cache, and nothing there can reach a test.
    """
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    for var in ("HROOF_CACHE_DIR", "HROOF_HOST_MACHINE", "HROOF_SCHEDULER"):
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture(scope="session", autouse=True)
def jit_warmup():
    """Compile (or load from Numba's cache) every kernel once, before any test."""
    h = hierarchy(
        {"name": "L1", "size": 256, "ways": 2, "line": 64},
        {"name": "L2", "size": 3 * 256, "ways": 4, "line": 64, "write_allocate": False},
    )
    addr = np.array([0, 64, 4096, 100, 8192], dtype=np.uint64)
    size = np.array([8, 8, 8, 64, 8], dtype=np.uint32)
    kind = np.array([0, 1, 2, 1, 0], dtype=np.uint8)
    for classify in (True, False):
        sim = Simulator(h, classify=classify)
        sim.feed(addr, size, kind)
        sim.finish()


def random_trace(rng, n, *, lines=24, line=64, kinds=(0, 1, 2), p=None, max_size=None):
    """A random trace over a few lines, so that tiny caches hit, miss and conflict."""
    addr = rng.integers(0, lines * line, size=n, dtype=np.int64)
    max_size = max_size or line
    size = rng.choice([1, 2, 4, 8, 8, 8, 16, max_size], size=n).astype(np.int64)
    kind = rng.choice(np.array(kinds, dtype=np.uint8), size=n, p=p)
    return addr, size, kind
