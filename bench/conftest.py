"""pytest-benchmark suite set-up: make bench/ and tests/ importable, warm the JIT once."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))


@pytest.fixture(scope="session", autouse=True)
def jit_warmup():
    """Compile (or load) the kernels before any timing."""
    from compare_pycachesim import reference_hierarchy
    from workloads import stencil_chunks

    from hroof.cachesim import Simulator

    for classify in (False, True):
        sim = Simulator(reference_hierarchy(), classify=classify)
        for c in stencil_chunks(4):
            sim.feed(*c)
        sim.finish()
