"""What every native kernel shares: the registry, the prepared run and the array arena.

A native kernel is a function ``prepare(plan) -> Prepared`` registered under
the name of a traced kernel (:func:`native`). It allocates the arrays with
:func:`arena` at the byte offsets of the plan's layout, fills them with seeded
random values, and returns the run (one execution of the kernel, no
allocation), an optional reset (restores inputs that the kernel overwrites,
run outside the timed region) and the arrays, so tests can compare the output
with NumPy.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from hroof._base.errors import HroofError
from hroof.traces.kernels import Array, Plan

#: Bytes the arena's first array is aligned to at least (a page), so the arrays
#: keep the trace layout's offsets modulo the page size, as far as virtual
#: addresses allow.
PAGE = 4096

#: Float types by element size in bytes (the kernels' ``dtype``).
FLOATS = {8: np.float64, 4: np.float32}
#: Index types by size in bytes (``spmv``'s ``index_bytes``).
INDICES = {8: np.int64, 4: np.int32}

_MODULES = ("stream", "stencils", "dense", "sparse")
_REGISTRY: dict[str, Callable[[Plan], Prepared]] = {}
_loaded = False


@dataclass
class Prepared:
    """A kernel ready to run natively.

    Attributes
    ----------
    run : callable
        ``run()`` executes the kernel once (all its sweeps); it allocates nothing.
    arrays : dict of str to ndarray
        The kernel's arrays by the layout's names (views into one arena).
    core_bytes : int
        Bytes the kernel's loads and stores move, as the trace counts them (the
        simulator's L1 bytes, non-temporal stores included).
    reset : callable or None
        Restores the inputs that ``run`` overwrites (untimed), or None when a
        run leaves its inputs as they were.
    notes : str
        Where the native run differs from the traced one.
    initial : dict of str to ndarray
        Copies of the arrays before any run that ``reset`` restores (only those:
        a copy of every array would double the memory of a large run).
    """

    run: Callable[[], object]
    arrays: dict[str, np.ndarray]
    core_bytes: int
    reset: Callable[[], None] | None = None
    notes: str = ""
    initial: dict[str, np.ndarray] = field(default_factory=dict)


def native(name: str):
    """Register ``prepare(plan) -> Prepared`` as the native twin of kernel ``name``."""

    def deco(fn: Callable[[Plan], Prepared]) -> Callable[[Plan], Prepared]:
        _REGISTRY[name] = fn
        return fn

    return deco


def _load() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        for mod in _MODULES:
            importlib.import_module(f"hroof.native.{mod}")


def native_kernels() -> list[str]:
    """The kernels that have a native implementation, by name."""
    _load()
    return sorted(_REGISTRY)


def require_native(kernel: str) -> Callable[[Plan], Prepared]:
    """The native ``prepare`` of ``kernel``; a HroofError naming the native kernels if none."""
    _load()
    try:
        return _REGISTRY[kernel]
    except KeyError:
        raise HroofError(
            f"kernel {kernel} has no native implementation; "
            f"native kernels: {', '.join(native_kernels())}"
        ) from None


def prepare(plan: Plan) -> Prepared:
    """Allocate and fill ``plan``'s arrays and return its native run.

    Raises
    ------
    HroofError
        If the kernel has no native implementation.
    """
    return require_native(plan.kernel)(plan)


def arena(arrays: tuple[Array, ...], dtypes: dict[str, type], align: int = 64) -> dict:
    """NumPy views of the layout's arrays at the layout's byte offsets, in one buffer.

    The buffer's first array starts on a boundary of ``max(PAGE, align)`` bytes
    (the layout's base is aligned to it too), so every array has the alignment
    and the gaps that the trace gives it. Memory is not touched here (first touch
    happens where the arrays are filled).

    Parameters
    ----------
    arrays : tuple of Array
        The plan's layout.
    dtypes : dict
        NumPy type of each array by name (its size must be the array's ``elem``).
    align : int
        The layout's alignment in bytes.
    """
    start = min(a.base for a in arrays)
    end = max(a.end for a in arrays)
    boundary = max(PAGE, align)  # the layout's base (BASE) is aligned to it
    from hroof.machine.measure.run import mem_available

    free = mem_available()
    if free is not None and end - start > free:
        # Linux hands out more than it has and kills the process when it fills the pages
        raise HroofError(
            f"the kernel's arrays need {end - start:,} bytes, more than the "
            f"{free:,} bytes of memory available (MemAvailable); choose a smaller size"
        )
    try:
        raw = np.empty(end - start + boundary, dtype=np.uint8)
    except MemoryError:
        raise HroofError(
            f"the kernel's arrays need {end - start:,} bytes, more than this host can "
            "allocate; choose a smaller size"
        ) from None
    shift = (-raw.ctypes.data) % boundary
    out = {}
    for a in arrays:
        dt = np.dtype(dtypes[a.name])
        if dt.itemsize != a.elem:
            raise AssertionError(f"{a.name}: {dt} is not {a.elem} bytes")
        lo = shift + a.base - start
        out[a.name] = raw[lo : lo + a.nbytes].view(dt)
    return out


def fill(arrays: dict[str, np.ndarray], names, seed: int = 0) -> None:
    """Fill the named float arrays with seeded uniform values in [0.5, 1.5), in place
    (no temporary as large as the array)."""
    rng = np.random.default_rng(seed)
    for name in names:
        a = arrays[name]
        rng.random(out=a, dtype=a.dtype)
        a += a.dtype.type(0.5)


def snapshot(arrays: dict[str, np.ndarray], names) -> dict[str, np.ndarray]:
    """Copies of the named arrays."""
    return {k: arrays[k].copy() for k in names}


def restorer(arrays: dict[str, np.ndarray], initial: dict[str, np.ndarray], names):
    """A reset that copies ``initial[name]`` back into ``arrays[name]`` for ``names``."""

    def reset() -> None:
        for name in names:
            np.copyto(arrays[name], initial[name])

    return reset
