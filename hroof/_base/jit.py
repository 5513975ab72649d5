"""Compile options shared by every Numba kernel (one place to change them).

``cache=True`` keeps compiled kernels on disk next to the sources, so only
the first run on a machine pays the compile time. ``error_model="numpy"``
drops the Python-style division checks from the hot loops.

``_nrt=False`` compiles without Numba's reference-counting runtime. The
kernels never allocate, and with the runtime on, every call of a helper that
is passed the state arrays increments and decrements each array's reference
count, which cost ten times more than the cache lookup itself (measured:
~100 ns against ~7 ns per access on the reference stencil stream). Without it a
call of a helper is a plain call, which LLVM inlines where it pays when it links
the caller with its callees: no helper is inlined at Numba-IR level (Numba's
``inline="always"``), which copies the helper's typed IR into every call site
before LLVM sees it and made the policy kernels take minutes and gigabytes to
compile (``bench/compile.py``, ``bench/RESULTS.md``).
"""

import os
from pathlib import Path

JIT = {"cache": True, "nogil": True, "error_model": "numpy", "_nrt": False}

#: Trace generators: compiled once and cached, GIL released; they may allocate (the
#: sparse builders do), so Numba's runtime stays on.
GEN = {"cache": True, "nogil": True}

#: Measurement microkernels (``hroof machine measure``): as :data:`GEN` with NumPy's
#: error model; each kernel adds its own ``fastmath`` flags (FMA contraction or none).
MICRO = {**GEN, "error_model": "numpy"}


class LazyJit:
    """An ``@njit`` function of a trace generator module whose Numba dispatcher is made on
    first use (:func:`lazy_njit`), so that building a kernel's plan (``plan_kernel``) and
    the reference engine of ``hroof simulate`` never import Numba.

    Calling it, or reading any attribute a Numba dispatcher has (``py_func`` aside), makes
    every pending :class:`LazyJit` a real dispatcher (:func:`resolve_lazy`); that also
    replaces these objects in the globals of every loaded ``hroof`` module, so Numba finds
    dispatchers, not these, when it compiles a function that calls another. The same
    machine code: the dispatcher is ``numba.njit(**opts)(py_func)``, found in Numba's
    on-disk cache under the same function.
    """

    def __init__(self, func, opts: dict) -> None:
        self.py_func = func
        self._opts = opts
        self._dispatcher = None
        self.__module__ = func.__module__
        self.__name__ = func.__name__
        self.__qualname__ = func.__qualname__
        self.__doc__ = func.__doc__
        _PENDING.append(self)

    @property
    def dispatcher(self):
        """The Numba dispatcher (made, with every pending one, on the first request)."""
        if self._dispatcher is None:
            resolve_lazy()
        return self._dispatcher

    def __call__(self, *args):
        return self.dispatcher(*args)

    def __getattr__(self, name: str):
        if name.startswith("__") or name in {"_dispatcher", "_opts", "py_func"}:
            raise AttributeError(name)
        return getattr(self.dispatcher, name)

    def __reduce__(self):  # pickled by reference, as a module-level function
        return (_lookup, (self.__module__, self.__qualname__))

    def __repr__(self) -> str:
        state = "compiled on use" if self._dispatcher is None else "resolved"
        return f"<LazyJit {self.__module__}.{self.__qualname__} ({state})>"


_PENDING: list[LazyJit] = []


def _lookup(module: str, qualname: str):
    import importlib

    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def lazy_njit(**opts):
    """``numba.njit(**opts)`` deferred until the function is first used (:class:`LazyJit`).

    For the trace generators (``hroof.traces``): their modules also build the kernels'
    plans, which a run of the reference engine needs without Numba."""

    def wrap(func):
        return LazyJit(func, opts)

    return wrap


def resolve_lazy() -> None:
    """Make every pending :class:`LazyJit` a Numba dispatcher and put the dispatchers in
    place of the lazy objects in the globals of every loaded ``hroof`` module."""
    import sys

    import numba

    while _PENDING:  # each leaves the list once resolved (an interrupt loses none)
        lazy = _PENDING[-1]
        lazy._dispatcher = numba.njit(**lazy._opts)(lazy.py_func)
        _PENDING.pop()
    for name, module in list(sys.modules.items()):
        if (name != "hroof" and not name.startswith("hroof.")) or module is None:
            continue
        space = vars(module)
        for key, value in list(space.items()):
            if isinstance(value, LazyJit) and value._dispatcher is not None:
                space[key] = value._dispatcher


#: The index files Numba keeps beside a module's sources (``cache=True``), and the file in
#: which :func:`drop_stale_caches` records the sources they were compiled from.
_NUMBA_CACHE_SUFFIXES = (".nbi", ".nbc")
_STAMP = "hroof-kernels.stamp"


def drop_stale_caches(directory: str | os.PathLike, names: tuple[str, ...]) -> bool:
    """Remove Numba's cached kernels of the package in ``directory`` when any of its kernel
    sources ``names`` changed since they were compiled; return True if it removed any.

    Numba checks a cached function against its own source file only, but a kernel here
    calls kernels of the other modules, which LLVM links (and inlines) into it, and its cached
    machine code holds theirs: after a change to ``_shadow_kernels.py`` alone, the level
    passes of ``_kernels.py`` would load from the cache with the old shadow built in and
    misread the new tables. So the modification times and sizes of all the kernel
    sources, which Numba compares one file at a time, are compared together. Only the
    default cache beside the sources is handled (not a ``NUMBA_CACHE_DIR``); a
    directory that cannot be written is left alone. No Numba import: a few ``stat`` calls.
    """
    if os.environ.get("NUMBA_CACHE_DIR"):
        return False
    root = Path(directory)
    cache = root / "__pycache__"
    try:
        stamp = "\n".join(
            f"{n} {st.st_mtime_ns} {st.st_size}" for n in sorted(names)
            for st in [(root / n).stat()]
        )  # fmt: skip
        path = cache / _STAMP
        if path.is_file() and path.read_text() == stamp:
            return False
        removed = False
        if cache.is_dir():
            for f in cache.iterdir():
                if f.suffix in _NUMBA_CACHE_SUFFIXES:
                    f.unlink(missing_ok=True)
                    removed = True
        cache.mkdir(exist_ok=True)
        tmp = cache / f"{_STAMP}.{os.getpid()}"
        tmp.write_text(stamp)
        tmp.replace(path)
        return removed
    except OSError:
        return False
