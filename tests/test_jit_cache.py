"""Numba's cached kernels are dropped together when any kernel source of their package
changes (``hroof._base.jit.drop_stale_caches``): Numba compares a cached function with its
own file only, and hroof's kernels inline one another's."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

import hroof.cachesim
import hroof.traces
from hroof._base import jit


@pytest.fixture
def package(tmp_path, monkeypatch):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.py").write_text("y = 2\n")
    cache = tmp_path / "__pycache__"
    cache.mkdir()
    return tmp_path, cache


def _cached(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.iterdir() if p.suffix in (".nbi", ".nbc", ".pyc"))


def test_caches_go_when_a_kernel_source_changes(package):
    root, cache = package
    for name in ("a.f-1.py311.nbi", "a.f-1.py311.1.nbc", "a.cpython-311.pyc"):
        (cache / name).write_text("")
    # No record yet (caches of unknown sources): dropped, Python's own .pyc kept.
    assert jit.drop_stale_caches(root, ("a.py", "b.py"))
    assert _cached(cache) == ["a.cpython-311.pyc"]
    # Compiled again from these sources: kept while they stay as they are.
    (cache / "b.g-3.py311.nbi").write_text("")
    assert not jit.drop_stale_caches(root, ("a.py", "b.py"))
    assert _cached(cache) == ["a.cpython-311.pyc", "b.g-3.py311.nbi"]
    # b.py alone changes: a's kernels may hold b's code, so all go.
    (root / "b.py").write_text("y = 3  # changed\n")
    assert jit.drop_stale_caches(root, ("a.py", "b.py"))
    assert _cached(cache) == ["a.cpython-311.pyc"]


def test_a_numba_cache_dir_or_a_missing_source_is_left_alone(package, monkeypatch):
    root, cache = package
    (cache / "a.f-1.py311.nbi").write_text("")
    assert not jit.drop_stale_caches(root, ("a.py", "missing.py"))
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(root / "elsewhere"))
    assert not jit.drop_stale_caches(root, ("a.py",))
    assert _cached(cache) == ["a.f-1.py311.nbi"]


@pytest.mark.parametrize("pkg", [hroof.cachesim, hroof.traces])
def test_every_module_that_compiles_kernels_is_listed(pkg):
    root = Path(pkg.__file__).parent
    compiling = {p.name for p in root.glob("*.py") if re.search(r"@(lazy_)?njit\(", p.read_text())}
    listed = {n for n in pkg._KERNEL_SOURCES if "/" not in n}
    assert compiling == listed
    assert all((root / n).is_file() for n in pkg._KERNEL_SOURCES)
    assert os.path.samefile(root / "../_base/jit.py", jit.__file__)
