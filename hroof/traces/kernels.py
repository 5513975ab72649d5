"""Kernel trace generators: a registry of loop kernels and their exact access streams.

A :class:`Kernel` has a name, documented parameters with defaults and
validation, and a builder that turns validated parameters into a
:class:`Plan`: the arrays' layout (base addresses, element size), the exact
flop count, the number of accesses, the footprint (distinct bytes touched),
and a chunked Numba generator of ``(addr, size, kind)`` in program order.
:meth:`Plan.chunks` streams the trace a chunk at a time, so a billion-access
kernel never exists in memory; :func:`hroof.studies.runs.simulate_kernel` feeds those
chunks straight into the simulator (this package knows nothing of caches).

A generator is an ``@njit`` function ``gen(pos, stop, addr, size, kind, args)``
that writes whole iterations ``pos, pos + 1, ...`` (an iteration is whatever
unit the kernel counts: a STREAM element, a stencil point) into the buffers
while they have room for ``per_iteration`` more accesses, and returns
``(accesses written, next pos)``. ``args`` is a tuple of the kernel's own
values (numbers and arrays). Registering a kernel of your own::

    import numpy as np
    from numba import njit
    from hroof.traces import Kernel, Param, Plan, layout, register_kernel

    @njit(cache=True)
    def _sum_gen(pos, stop, addr, size, kind, args):
        base, elem = args
        n = 0
        while pos < stop and n < addr.shape[0]:
            addr[n] = base + pos * elem   # load x[pos]
            size[n] = elem
            kind[n] = 0
            n += 1
            pos += 1
        return n, pos

    def _sum_plan(p):
        (x,) = layout([("x", 8, p["n"])])
        return Plan(arrays=(x,), flops=p["n"], iterations=p["n"], per_iteration=1,
                    accesses=p["n"], footprint=x.nbytes, gen=_sum_gen,
                    args=(x.base, 8))

    register_kernel(Kernel("sum", "s += x[i]", (Param("n", 1024, "elements"),), _sum_plan))
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from hroof._base.errors import HroofError, suggest
from hroof._base.units import parse_float, parse_int

#: Byte address of the first array of every kernel (1 GiB: clear of address 0,
#: and page- and line-aligned).
BASE = 1 << 30
#: Default alignment of each array, in bytes.
ALIGN = 64
#: Default accesses per chunk handed to the simulator.
CHUNK = 1 << 20

#: Element types of the kernels' arrays and their sizes in bytes.
DTYPES = {"float64": 8, "float32": 4}

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclass(frozen=True)
class Param:
    """One kernel parameter.

    Parameters
    ----------
    name : str
        As written on the command line (``n=128``).
    default : int, float, str or bool
        Its value when not given; its type is the parameter's type.
    doc : str
        One line for ``hroof kernels``, with units.
    choices : tuple, optional
        The allowed values.
    minimum : int or float, optional
        The smallest allowed value of a number.
    """

    name: str
    default: Any
    doc: str
    choices: tuple | None = None
    minimum: int | float | None = None

    @property
    def type(self) -> type:
        return type(self.default)

    def parse(self, value: Any, kernel: str) -> Any:
        """Convert ``value`` (a Python value or command-line text) and validate it."""
        where = f"{kernel} parameter {self.name}"
        t = self.type
        try:
            if t is bool:
                if isinstance(value, str):
                    if value.lower() not in _TRUE | _FALSE:
                        raise ValueError
                    value = value.lower() in _TRUE
                elif not isinstance(value, (bool, np.bool_)):
                    raise ValueError
                value = bool(value)
            elif t is int:
                value = parse_int(value, where)
            elif t is float:
                value = parse_float(value, where)
            else:
                value = str(value)
        except HroofError:
            raise
        except (TypeError, ValueError):
            raise HroofError(f"{where} must be {t.__name__}, got {value!r}") from None
        if self.choices is not None and value not in self.choices:
            raise HroofError(
                f"{where} must be one of {', '.join(map(str, self.choices))}, got {value!r}"
                f"{suggest(str(value), [str(c) for c in self.choices])}"
            )
        if self.minimum is not None and value < self.minimum:
            raise HroofError(f"{where} must be at least {self.minimum}, got {value!r}")
        return value


@dataclass(frozen=True)
class Array:
    """One array of a kernel: ``count`` elements of ``elem`` bytes from byte ``base``."""

    name: str
    base: int
    elem: int
    count: int

    @property
    def nbytes(self) -> int:
        return self.elem * self.count

    @property
    def end(self) -> int:
        return self.base + self.nbytes

    def to_dict(self) -> dict:
        return {"name": self.name, "base": self.base, "elem": self.elem, "count": self.count}


def layout_params(dtype_doc: str = "element type") -> tuple[Param, ...]:
    """The parameters every kernel's layout takes: ``dtype``, ``align`` and ``gap``."""
    return (
        Param("dtype", "float64", dtype_doc, choices=tuple(DTYPES)),
        Param("align", ALIGN, "alignment of each array, bytes (a power of two)", minimum=1),
        Param("gap", 0, "extra bytes between consecutive arrays (padding)", minimum=0),
    )


def layout(
    arrays: list[tuple[str, int, int]], *, base: int = BASE, align: int = ALIGN, gap: int = 0
) -> tuple[Array, ...]:
    """Place arrays one after the other: each starts ``gap`` bytes after the previous
    one ends, rounded up to a multiple of ``align``.

    >>> [a.base - BASE for a in layout([("a", 8, 10), ("b", 8, 10)])]
    [0, 128]
    """
    if align <= 0 or align & (align - 1):
        raise HroofError(f"alignment must be a power of two, got {align}")
    out = []
    addr = base
    for name, elem, count in arrays:
        addr = (addr + align - 1) // align * align
        out.append(Array(name, addr, elem, count))
        addr += elem * count + gap
    return tuple(out)


@dataclass(frozen=True)
class Plan:
    """A kernel with bound parameters: everything about its trace but the accesses.

    Attributes
    ----------
    arrays : tuple of Array
        The layout.
    flops : int
        Exact floating-point operations.
    iterations : int
        Units the generator counts (its ``pos`` runs from 0 to this).
    per_iteration : int
        The most accesses one iteration emits (buffers hold at least this many).
    accesses : int
        Exact number of accesses the generator emits.
    footprint : int
        Distinct bytes touched.
    gen : numba function
        ``gen(pos, stop, addr, size, kind, args) -> (n, pos)``.
    args : tuple
        The generator's own arguments.
    kernel, params : str, dict
        Filled in by :meth:`Kernel.bind`.
    notes : str
        How flops are counted, when that needs saying.
    extra : dict
        Kernel-specific figures beyond the common ones, JSON-ready (numbers and
        text), e.g. the ``spmv`` kernel's executed flops, fill ratio and padding
        with ``storage=bcsr``; empty for most kernels.
    """

    arrays: tuple[Array, ...]
    flops: int
    iterations: int
    per_iteration: int
    accesses: int
    footprint: int
    gen: Callable
    args: tuple
    kernel: str = ""
    params: dict = field(default_factory=dict)
    notes: str = ""
    extra: dict = field(default_factory=dict)

    def chunks(self, chunk_size: int = CHUNK, *, reuse: bool = True) -> Iterator[tuple]:
        """Yield the trace as ``(addr, size, kind)`` chunks (int64, int64, uint8).

        With ``reuse`` (the default, for feeding a simulator) every chunk is a
        view of the same buffers, overwritten by the next one; ``reuse=False``
        yields fresh arrays (for collecting or writing them).
        """
        cap = max(int(chunk_size), self.per_iteration)
        addr = np.empty(cap, dtype=np.int64)
        size = np.empty(cap, dtype=np.int64)
        kind = np.empty(cap, dtype=np.uint8)
        pos = 0
        while pos < self.iterations:
            n, pos = self.gen(pos, self.iterations, addr, size, kind, self.args)
            if n == 0:
                raise RuntimeError(f"generator of {self.kernel} made no progress at {pos}")
            if reuse:
                yield addr[:n], size[:n], kind[:n]
            else:
                yield addr[:n].copy(), size[:n].copy(), kind[:n].copy()

    def source(self) -> dict:
        """The ``source`` field of a result: ``{"kernel": ..., "params": ...}``, plus
        ``"extra"`` when the plan has extra facts (e.g. BCSR's executed flops and fill)."""
        out = {"kernel": self.kernel, "params": dict(self.params)}
        if self.extra:
            out["extra"] = dict(self.extra)
        return out


@dataclass(frozen=True)
class Kernel:
    """A registered loop kernel: name, parameters and the builder of its :class:`Plan`."""

    name: str
    summary: str
    params: tuple[Param, ...]
    build: Callable[[dict], Plan]
    notes: str = ""

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        names = [p.name for p in self.params]
        raise HroofError(
            f"kernel {self.name} has no parameter '{name}'{suggest(name, names)}; "
            f"its parameters: {', '.join(names)}"
        )

    def bind(self, **values: Any) -> Plan:
        """Validate ``values`` (defaults for the rest) and build the plan."""
        params = {p.name: p.default for p in self.params}
        for name, value in values.items():
            params[name] = self.param(name).parse(value, self.name)
        plan = self.build(params)
        return replace(plan, kernel=self.name, params=params, notes=plan.notes or self.notes)


_REGISTRY: dict[str, Kernel] = {}
_BUILTIN_MODULES = ("stream", "stencils", "dense", "sparse")
_builtins_loaded = False


def _load_builtins() -> None:
    """Import the modules that register hroof's own kernels (once; they import Numba)."""
    global _builtins_loaded
    if _builtins_loaded:
        return
    _builtins_loaded = True  # first: those modules call register_kernel while importing
    import importlib

    for name in _BUILTIN_MODULES:
        importlib.import_module(f"hroof.traces.{name}")


def register_kernel(kernel: Kernel, *, replace_existing: bool = False) -> Kernel:
    """Add a kernel to the registry (``hroof kernels``, ``hroof simulate NAME``)."""
    _load_builtins()  # a user's kernel must not take a built-in's name unnoticed
    if kernel.name in _REGISTRY and not replace_existing:
        raise HroofError(f"a kernel named {kernel.name} is registered already")
    _REGISTRY[kernel.name] = kernel
    return kernel


def unregister_kernel(name: str) -> None:
    """Remove a kernel from the registry (a no-op for an unknown name)."""
    _REGISTRY.pop(name, None)


def get_kernel(name: str) -> Kernel:
    """The registered kernel ``name``; an unknown name gets the closest suggestion."""
    _load_builtins()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise HroofError(
            f"unknown kernel '{name}'{suggest(name, _REGISTRY)}; "
            f"known: {', '.join(sorted(_REGISTRY))}"
        ) from None


def kernels() -> list[Kernel]:
    """All registered kernels, by name."""
    _load_builtins()
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


def plan_kernel(name: str, **params: Any) -> Plan:
    """Bind a registered kernel's parameters: ``plan_kernel("triad", n=1024)``."""
    return get_kernel(name).bind(**params)


def parse_assignments(items: list[str]) -> dict[str, str]:
    """Split command-line ``KEY=VALUE`` words into a dict (values stay text).

    >>> parse_assignments(["n=64", "nt=true"])
    {'n': '64', 'nt': 'true'}
    """
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise HroofError(f"parameters are written KEY=VALUE, got {item!r}")
        if key in out:
            raise HroofError(f"parameter {key} is given twice")
        out[key] = value
    return out
