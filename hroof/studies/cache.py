"""The result cache: a simulated point is kept, keyed by everything it depends on.

A key hashes the kernel and every parameter, the simulation options, the cache
hierarchy in canonical form (each level's name, size, ways, line, write policy,
inclusion policy and prefetcher; memory's name; the machine's name, which a result
carries) and the simulator's own code: a hash of every source file of
:mod:`hroof.cachesim` and :mod:`hroof.traces` (and the base modules they compile
with). So a changed simulator, generator or machine never returns a result computed
by another, and a result read back always names the machine it was asked for.
Bandwidths and peaks are not in the key: they do
not change what is simulated, only how it is read.

Entries are ``hroof.result/1`` JSON documents in :func:`hroof._base.paths.results_cache_dir`
(``$HROOF_CACHE_DIR``, else ``$XDG_CACHE_HOME/hroof/results``), written whole or not
at all; a cache that cannot be read or written only costs a simulation.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
from pathlib import Path

from hroof._base.errors import HroofError
from hroof._base.files import write_text
from hroof._base.paths import results_cache_dir
from hroof.cachesim import HierarchyConfig, SimResult
from hroof.traces.cfile import is_kernel_file
from hroof.traces.filekernel import kernel_digest

#: Bump when a result's meaning changes without any source of cachesim/traces changing.
CACHE_VERSION = 2
_ROOT = Path(__file__).resolve().parent.parent
#: The code a simulated result depends on.
_CODE = ("cachesim", "traces", "_base/jit.py", "_base/kinds.py", "_base/units.py")


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """A hash of the simulator's and the generators' sources (computed once a process)."""
    h = hashlib.sha256()
    for part in _CODE:
        path = _ROOT / part
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for f in files:
            h.update(str(f.relative_to(_ROOT)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def canonical_hierarchy(hierarchy: HierarchyConfig) -> dict:
    """What of a machine a simulation depends on, in a fixed form.

    A level's inclusion policy is appended only when it is not NINE, and its prefetcher
    (with the stride table's size and distance) only when it has one, so the keys of
    plain hierarchies are those they had before policies and prefetchers existed.
    """

    def level(lv) -> list:
        out = [lv.name, lv.size, lv.ways, lv.line, lv.write_allocate]
        if lv.inclusion != "nine":
            out.append(lv.inclusion)
        if lv.prefetch != "none":
            out.append(["prefetch", lv.prefetch, lv.prefetch_streams, lv.prefetch_distance])
        return out

    return {
        "name": hierarchy.name,
        "levels": [level(lv) for lv in hierarchy.levels],
        "memory": hierarchy.memory_name,
    }


def cache_key(kernel: str, params: dict, hierarchy: HierarchyConfig, options: dict) -> str:
    """A hash of everything a simulated result depends on (for a kernel file, its text).

    >>> from hroof.cachesim import hierarchy
    >>> a = hierarchy({"name": "L1", "size": 1024, "ways": 2}, name="A")
    >>> b = hierarchy({"name": "L1", "size": 1024, "ways": 2}, name="B")
    >>> cache_key("triad", {"n": 8}, a, {}) != cache_key("triad", {"n": 8}, b, {})
    True
    """
    doc = {
        "kernel": kernel,
        "params": params,
        "machine": canonical_hierarchy(hierarchy),
        "options": options,
        "code": code_fingerprint(),
        "version": CACHE_VERSION,
    }
    if is_kernel_file(kernel):  # a kernel file: its text, not only its path
        doc["kernel_digest"] = kernel_digest(kernel)
    blob = json.dumps(doc, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


class ResultCache:
    """Simulated results on disk, one JSON file per key (``directory=None``: no cache)."""

    def __init__(self, directory: str | Path | None = None, *, enabled: bool = True):
        self.directory = None
        if enabled:
            self.directory = Path(directory) if directory else results_cache_dir()

    def path(self, key: str) -> Path | None:
        return self.directory / f"{key}.json" if self.directory else None

    def get(self, key: str, machine_name: str | None = None) -> SimResult | None:
        """The result under ``key``, or None (absent, unreadable, or not a result)."""
        path = self.path(key)
        if path is None or not path.is_file():
            return None
        try:
            result = SimResult.from_dict(json.loads(path.read_text()))
        except (OSError, ValueError, KeyError, TypeError):
            return None  # an unreadable entry is simulated again
        if machine_name is not None and result.machine != machine_name:
            return None  # never hand back a result that names another machine
        return result

    def put(self, key: str, doc: dict) -> None:
        """Keep a result document; a cache that cannot be written is only a lost speed-up."""
        path = self.path(key)
        if path is None:
            return
        with contextlib.suppress(HroofError):
            write_text(path, json.dumps(doc))


__all__ = ["CACHE_VERSION", "ResultCache", "cache_key", "canonical_hierarchy", "code_fingerprint"]
