"""Compile options shared by every Numba kernel (one place to change them).

``cache=True`` keeps compiled kernels on disk (next to the sources, or in
hroof's user cache folder when those cannot be written: :func:`numba_cache_dir`),
each stamped with all of hroof's kernel sources (:func:`sources_stamp`), so only
the first run on a machine pays the compile time and a changed kernel never
loads old machine code. Every kernel is decorated through :func:`njit`, which
puts that cache locator in place. ``error_model="numpy"``
drops the Python-style division checks from the hot loops.

``_nrt=False`` compiles without Numba's reference-counting runtime. The
kernels never allocate, and with the runtime on, every call of a helper that
is passed the state arrays increments and decrements each array's reference
count, which cost ten times more than the cache lookup itself (measured:
~100 ns against ~7 ns per access on the reference stencil stream). Without it a
call of a helper is a plain call, which LLVM inlines where it pays when it links
the caller with its callees. A helper is inlined at Numba-IR level (Numba's
``inline="always"``, which copies the helper's typed IR into every call site
before LLVM sees it) only where the bench shows it pays (:data:`HOT`): inlining
every helper that way made the policy kernels take minutes and gigabytes to
compile (``bench/compile.py``, ``bench/RESULTS.md``).
"""

import contextlib
import hashlib
import os
import tempfile
from pathlib import Path

JIT = {"cache": True, "nogil": True, "error_model": "numpy", "_nrt": False}

#: The one helper inlined at Numba-IR level: the shadow's lookup of the classified level
#: pass (``_shadow_kernels._sh_touch_r``), which keeps the shadow's meta columns in the
#: pass's registers and returns five values. Left to LLVM it stayed a call, and the
#: classified pass ran 1.8-2.6x slower (stencil7 0.55 s against 0.21 s, random 5.2-5.7 s
#: against 2.9-3.1 s, ``bench/speed.py``, ``bench/RESULTS.md``, "First run"); inlined,
#: its speed is back, and the plain path's first compile stays at 11 s.
HOT = {**JIT, "inline": "always"}

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

    while _PENDING:  # each leaves the list once resolved (an interrupt loses none)
        lazy = _PENDING[-1]
        lazy._dispatcher = njit(**lazy._opts)(lazy.py_func)
        _PENDING.pop()
    for name, module in list(sys.modules.items()):
        if (name != "hroof" and not name.startswith("hroof.")) or module is None:
            continue
        space = vars(module)
        for key, value in list(space.items()):
            if isinstance(value, LazyJit) and value._dispatcher is not None:
                space[key] = value._dispatcher


# ------------------------------------------------------------------ the on-disk cache
#: hroof's package folder: the kernels whose cache :class:`hroof's locator <_locator_class>`
#: places and stamps.
_PACKAGE = Path(__file__).resolve().parent.parent


def kernel_sources(package: str | os.PathLike | None = None) -> list[Path]:
    """The source files of ``package`` that compile Numba kernels (those that say ``njit``),
    sorted: what every cached kernel's stamp is made of (:func:`sources_stamp`)."""
    root = Path(_PACKAGE if package is None else package)
    return sorted(p for p in root.rglob("*.py") if "njit" in p.read_text(encoding="utf-8"))


_OWN_STAMP: list[str] = []


def sources_stamp(package: str | os.PathLike | None = None) -> str:
    """A hash of every kernel source of ``package`` (default hroof's:
    :func:`kernel_sources`), names and contents: the freshness stamp of each of its
    cached kernels.

    Numba stamps a cached function with a hash of its own file only, but a kernel here
    calls kernels of other files, which LLVM links (and inlines) into its machine code:
    after a change to ``_shadow_kernels.py`` alone, the level passes of ``_kernels.py``
    would load from the cache with the old shadow built in and misread the new tables.
    With one stamp for all, a change to any kernel source recompiles every kernel once.
    hroof's own stamp is taken once per process, at its first kernel (close to when the
    sources were imported: a kernel compiled from them is never saved under the stamp
    of sources edited while the process ran).
    """
    if package is None and _OWN_STAMP:
        return _OWN_STAMP[0]
    root = Path(_PACKAGE if package is None else package)
    h = hashlib.sha256()
    for p in kernel_sources(root):
        h.update(p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    stamp = h.hexdigest()
    if package is None:
        _OWN_STAMP.append(stamp)
    return stamp


def numba_cache_dir(py_file: str | os.PathLike) -> Path:
    """Where the compiled kernels of the hroof source ``py_file`` are kept.

    ``$NUMBA_CACHE_DIR`` when set (a folder per source folder inside it, as Numba does);
    else the ``__pycache__`` beside the source when it can be written (a clone, a
    virtual environment); else hroof's user cache folder (``$XDG_CACHE_HOME/hroof/numba``,
    default ``~/.cache/hroof/numba``), for a package installed where its user cannot
    write.
    """
    src = Path(py_file).resolve()
    sub = f"{src.parent.name}_{hashlib.sha1(str(src.parent).encode()).hexdigest()}"
    env = os.environ.get("NUMBA_CACHE_DIR")
    if env:
        return Path(env) / sub
    tree = src.parent / "__pycache__"
    if _writable(tree):
        return tree
    from hroof._base.paths import cache_home

    return cache_home() / "numba" / sub


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
        return True
    except OSError:
        return False


_LOCATOR = None


def _locator_class():
    """Numba's cache locator for hroof's kernels (made once; Numba imported here)."""
    global _LOCATOR
    if _LOCATOR is not None:
        return _LOCATOR
    from numba.core import caching

    class HroofCacheLocator(caching._CacheLocator):
        """Places a cached hroof kernel (:func:`numba_cache_dir`) and stamps it with every
        kernel source (:func:`sources_stamp`); other packages' functions are Numba's."""

        def __init__(self, py_func, py_file):
            self._lineno = py_func.__code__.co_firstlineno
            self._path = str(numba_cache_dir(py_file))

        def get_cache_path(self):
            return self._path

        def get_source_stamp(self):
            return sources_stamp()

        def get_disambiguator(self):
            return str(self._lineno)

        @classmethod
        def from_function(cls, py_func, py_file):
            try:
                Path(py_file).resolve().relative_to(_PACKAGE)
            except (ValueError, OSError):
                return None  # not hroof's: Numba's own locators place it
            self = cls(py_func, py_file)
            try:
                self.ensure_cache_path()
            except OSError:
                return None
            return self

    impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl
    if HroofCacheLocator not in impl._locator_classes:
        impl._locator_classes.insert(0, HroofCacheLocator)
    _listen_to_compiles()
    _LOCATOR = HroofCacheLocator
    return _LOCATOR


def njit(*args, **opts):
    """``numba.njit``, with hroof's cache locator in place first (:func:`numba_cache_dir`,
    :func:`sources_stamp`): every hroof kernel is decorated through this."""
    _locator_class()
    import numba

    return numba.njit(*args, **opts)


# ----------------------------------------------------------------- the first compile
#: Where :func:`notify_compiles` writes its one line (None: nowhere; the library never
#: prints unless a command asked it to).
_NOTICE: dict = {"stream": None, "after": 1.0, "shown": False, "depth": 0, "timer": None}

#: The line a command prints while hroof's kernels compile for the first time.
COMPILE_NOTICE = (
    "hroof: compiling the simulator's kernels for this machine, once (about 10-40 s; "
    "later runs load them from the cache; 'hroof warm' compiles them all ahead)"
)


def notify_compiles(stream, after: float = 1.0) -> None:
    """Write :data:`COMPILE_NOTICE` to ``stream``, once per process, when Numba has been
    compiling one of hroof's kernels for ``after`` seconds (a cached kernel loads in
    milliseconds, so a warm run never shows it). ``None`` switches it off."""
    _NOTICE.update(stream=stream, after=after)


def _on_compile(starting: bool) -> None:
    """Numba started (``starting``) or ended compiling a hroof kernel."""
    import threading

    _NOTICE["depth"] += 1 if starting else -1
    if not starting or _NOTICE["shown"] or _NOTICE["stream"] is None or _NOTICE["timer"]:
        return

    def show() -> None:
        _NOTICE["timer"] = None
        if _NOTICE["depth"] > 0 and not _NOTICE["shown"] and _NOTICE["stream"] is not None:
            _NOTICE["shown"] = True
            from tqdm import tqdm

            # Through tqdm: a progress bar drawn on the stream moves below the line.
            with contextlib.suppress(OSError, ValueError):
                tqdm.write(COMPILE_NOTICE, file=_NOTICE["stream"])

    timer = threading.Timer(_NOTICE["after"], show)
    timer.daemon = True
    _NOTICE["timer"] = timer
    timer.start()


def _listen_to_compiles() -> None:
    """Follow Numba's compile events of hroof's kernels (:func:`notify_compiles`)."""
    from numba.core import event

    class _Listener(event.Listener):
        def on_start(self, ev):
            if _is_ours(ev):
                _on_compile(True)

        def on_end(self, ev):
            if _is_ours(ev):
                _on_compile(False)

    event.register("numba:compile", _Listener())


def _is_ours(ev) -> bool:
    disp = ev.data.get("dispatcher") if isinstance(ev.data, dict) else None
    module = getattr(getattr(disp, "py_func", None), "__module__", "") or ""
    return module == "hroof" or module.startswith("hroof.")
