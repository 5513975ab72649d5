"""Where hroof's compiled kernels are cached, and when they go stale
(``hroof._base.jit``: ``numba_cache_dir``, ``sources_stamp``, the cache locator).

Numba stamps a cached function with its own file only, but hroof's kernels call one
another's across files (LLVM links the callees' code into the caller's): every kernel
carries one stamp made of all the kernel sources, so a change to any of them
recompiles every kernel once."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from hroof._base import jit


def _package(tmp_path: Path) -> Path:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "a.py").write_text("@njit(**JIT)\ndef f(x):\n    return x\n")
    (pkg / "b.py").write_text("@njit(**JIT)\ndef g(x):\n    return x + 1\n")
    (pkg / "c.py").write_text("def plain(x):\n    return x\n")
    return pkg


def test_the_stamp_covers_every_kernel_source_and_only_those(tmp_path):
    pkg = _package(tmp_path)
    assert [p.name for p in jit.kernel_sources(pkg)] == ["a.py", "b.py"]
    before = jit.sources_stamp(pkg)
    assert jit.sources_stamp(pkg) == before
    # A plain module changes: the kernels stay as they were.
    (pkg / "c.py").write_text("def plain(x):\n    return 2 * x\n")
    assert jit.sources_stamp(pkg) == before
    # b.py alone changes: a's kernels may hold b's code, so the one stamp changes.
    (pkg / "b.py").write_text("@njit(**JIT)\ndef g(x):\n    return x + 2\n")
    after = jit.sources_stamp(pkg)
    assert after != before
    # The same contents again: the same stamp (a hash, not a time).
    (pkg / "b.py").write_text("@njit(**JIT)\ndef g(x):\n    return x + 1\n")
    assert jit.sources_stamp(pkg) == before


def test_hroofs_own_stamp_is_of_its_kernel_modules():
    names = {p.name for p in jit.kernel_sources()}
    assert {"_kernels.py", "_split_kernels.py", "stencils.py", "jit.py"} <= names
    assert "units.py" not in names


def test_cache_folder_numba_cache_dir_first(tmp_path, monkeypatch):
    src = _package(tmp_path) / "a.py"
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "nc"))
    folder = jit.numba_cache_dir(src)
    assert folder.parent == tmp_path / "nc"
    assert folder.name.startswith("pkg_")
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    assert jit.numba_cache_dir(src) == src.parent / "__pycache__"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_package_caches_in_the_user_cache(tmp_path, monkeypatch):
    pkg = _package(tmp_path)
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    pkg.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        folder = jit.numba_cache_dir(pkg / "a.py")
    finally:
        pkg.chmod(stat.S_IRWXU)
    assert folder.parent == tmp_path / "xdg" / "hroof" / "numba"


def test_read_only_package_caches_in_the_user_cache_as_root_too(tmp_path, monkeypatch):
    # Root can write anywhere, so the fallback is forced the way a read-only folder would.
    pkg = _package(tmp_path)
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(jit, "_writable", lambda folder: False)
    folder = jit.numba_cache_dir(pkg / "a.py")
    assert folder.parent == tmp_path / "xdg" / "hroof" / "numba"
    assert folder.name.startswith("pkg_")


def test_a_changed_kernel_source_recompiles_in_a_fresh_process(tmp_path):
    """End to end, in a copy of one kernel module under a package of its own: a second
    process loads the kernel from the cache; after an edit to another kernel source of the
    package, the next process compiles again (Numba's own stamp would have loaded it)."""
    pkg = tmp_path / "hroof_probe"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "k.py").write_text(
        "from hroof._base.jit import JIT, njit\n\n@njit(**JIT)\ndef f(x):\n    return x + 1\n"
    )
    (pkg / "other.py").write_text("# njit kernels live here too\nX = 1\n")
    probe = (
        "import sys; from hroof._base import jit; from pathlib import Path\n"
        f"jit._PACKAGE = Path({str(pkg)!r})\n"
        "import hroof_probe.k as k\n"
        "k.f(1)\n"
        "print(len(k.f.stats.cache_hits), len(k.f.stats.cache_misses))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    env.pop("NUMBA_CACHE_DIR", None)

    def run() -> str:
        out = subprocess.run(
            [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
        )
        return out.stdout.split()

    assert run() == ["0", "1"]  # compiled
    assert run() == ["1", "0"]  # loaded
    (pkg / "other.py").write_text("# njit kernels live here too\nX = 2\n")
    assert run() == ["0", "1"]  # another kernel source changed: compiled again
    assert any(p.suffix == ".nbi" for p in (pkg / "__pycache__").iterdir())
