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
from hroof._base.guards import ResourceError, check_memory
from hroof._base.kinds import SIZE_DTYPE
from hroof._base.units import INT_MAX, parse_float, parse_int

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
    warmup : int
        Iterations (of ``iterations``) at the start of the trace that are
        simulated but not counted: the warm-up sweeps of a steady-state run.
        ``flops`` counts only the rest.
    sweeps : int
        Counted sweeps (time steps) of an iterative kernel, after ``warmup``;
        1 for a kernel that is not iterative.
    warmup_sweeps : int
        Warm-up sweeps (0: cold accounting, the counted sweeps start from
        empty caches).
    outer_units : int
        Iterations of the kernel's outermost loop in one time step (0: the
        kernel has no loop hroof knows how to split, so it runs on one core).
    outer_start : callable or None
        ``outer_start(u)``: the iteration (within one time step) where unit
        ``u`` of the outer loop starts, for ``u`` in ``0..outer_units``
        (``outer_start(outer_units)`` is the step's length). A unit's
        iterations are contiguous in program order.
    sampled : callable or None
        ``sampled(filt)``: the kernel's set-sampled generator for a
        :class:`~hroof.traces.sampled.SetFilter`, ``(gen, args, fargs)`` or None
        (:mod:`hroof.traces.sampled`); None: set sampling filters the full trace.
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
    warmup: int = 0
    sweeps: int = 1
    warmup_sweeps: int = 0
    outer_units: int = 0
    outer_start: Callable[[int], int] | None = None
    sampled: Callable | None = None

    @property
    def steady(self) -> bool:
        """True when warm-up sweeps run first and are not counted (steady state)."""
        return self.warmup > 0

    def chunks(
        self, chunk_size: int = CHUNK, *, reuse: bool = True, start: int = 0,
        stop: int | None = None,
    ) -> Iterator[tuple]:  # fmt: skip
        """Yield the trace as ``(addr, size, kind)`` chunks (int64, uint32, uint8).

        With ``reuse`` (the default, for feeding a simulator) every chunk is a
        view of the same buffers, overwritten by the next one; ``reuse=False``
        yields fresh arrays (for collecting or writing them). ``start`` and
        ``stop`` (iterations) give a part of the trace: ``chunks(stop=plan.warmup)``
        is the warm-up, ``chunks(start=plan.warmup)`` the counted part.
        """
        # Never a buffer longer than the trace; a huge --chunk-size is refused before it is
        # allocated (13 bytes an access: address, size, kind).
        cap = max(min(int(chunk_size), self.accesses), self.per_iteration, 1)
        check_memory(13 * cap, f"a chunk of {cap:,} accesses", hint="; lower --chunk-size")
        addr = np.empty(cap, dtype=np.int64)
        size = np.empty(cap, dtype=SIZE_DTYPE)
        kind = np.empty(cap, dtype=np.uint8)
        pos = int(start)
        end = self.iterations if stop is None else int(stop)
        while pos < end:
            n, pos = self.gen(pos, end, addr, size, kind, self.args)
            if n == 0:
                raise RuntimeError(f"generator of {self.kernel} made no progress at {pos}")
            if reuse:
                yield addr[:n], size[:n], kind[:n]
            else:
                yield addr[:n].copy(), size[:n].copy(), kind[:n].copy()

    def generated(
        self, chunk_size: int = CHUNK, *, start: int = 0, stop: int | None = None
    ) -> Generated:
        """Iterations ``start .. stop`` of the trace for a simulator: iterable as
        :meth:`chunks` (reused buffers), and able to generate straight into a simulator's
        L1 pass a cache-sized block at a time (:class:`Generated`)."""
        return Generated(self, int(chunk_size), int(start),
                         self.iterations if stop is None else int(stop))  # fmt: skip

    @property
    def steps(self) -> int:
        """Time steps of the trace, warm-up ones included (1 for a kernel that is not
        iterative)."""
        return self.warmup_sweeps + self.sweeps

    def thread_ranges(self, cores: int, step: int) -> list[tuple[int, int]]:
        """Iterations ``(start, stop)`` of each of ``cores`` threads in time step ``step``.

        The outer loop's ``outer_units`` iterations are split as OpenMP's
        ``schedule(static)`` without a chunk size does: contiguous blocks, thread
        ``t`` gets ``q + 1`` units if ``t < r`` else ``q`` (``q, r = divmod(units,
        cores)``), in thread order; a thread may get none. Every thread finishes
        step ``s`` before any starts step ``s + 1`` (the time loop's barrier).

        >>> from hroof.traces import plan_kernel
        >>> plan_kernel("triad", n=10).thread_ranges(3, 0)
        [(0, 4), (4, 7), (7, 10)]
        """
        cores = int(cores)
        if cores < 1:
            raise HroofError(f"cores must be a positive integer, got {cores}")
        if cores > 1 and (self.outer_units <= 0 or self.outer_start is None):
            raise HroofError(
                f"kernel {self.kernel or '?'} has no outer loop hroof splits across threads; "
                "it runs with cores=1 only"
            )
        if not 0 <= step < self.steps:
            raise HroofError(f"step {step} is not in 0..{self.steps - 1}")
        length = self.iterations // self.steps
        if cores == 1:
            return [(step * length, (step + 1) * length)]
        q, r = divmod(self.outer_units, cores)
        out = []
        u = 0
        for t in range(cores):
            v = u + q + (1 if t < r else 0)
            out.append((step * length + self.outer_start(u), step * length + self.outer_start(v)))
            u = v
        return out

    def source(self) -> dict:
        """The ``source`` field of a result: ``{"kernel": ..., "params": ...}``, plus
        ``"extra"`` when the plan has extra facts (e.g. BCSR's executed flops and fill)."""
        out = {"kernel": self.kernel, "params": dict(self.params)}
        if self.extra:
            out["extra"] = dict(self.extra)
        out["accounting"] = {
            "mode": "steady" if self.steady else "cold",
            "warmup_sweeps": self.warmup_sweeps,
            "counted_sweeps": self.sweeps,
        }
        return out


@dataclass(frozen=True)
class Generated:
    """Iterations ``start .. stop`` of a plan's trace, in chunks of ``chunk_size``
    accesses (:meth:`Plan.generated`).

    Iterating yields :meth:`Plan.chunks`. :meth:`feed_into` instead has a simulator
    run the generator itself (:meth:`hroof.cachesim.Simulator.feed_generated`): the
    accesses reach its L1 pass a block at a time, while the block is still in the
    host's caches, instead of as 17-byte-an-access chunks written out and read back
    twice (a count, then L1). Only for generators trusted to write valid accesses
    (hroof's own: :func:`hroof.studies.runs.own_generator`).
    """

    plan: Plan
    chunk_size: int
    start: int
    stop: int

    def __iter__(self) -> Iterator[tuple]:
        return self.plan.chunks(self.chunk_size, start=self.start, stop=self.stop)

    def feed_into(self, sim, progress: Callable[[int], None] | None = None) -> float:
        """Generate into ``sim`` (progress per chunk); return the seconds generating."""
        chunk = max(min(self.chunk_size, self.plan.accesses), 1)
        # L1's output of a chunk: a request and a writeback at most an access, 16 bytes each
        cap = max(chunk, self.plan.per_iteration)
        check_memory(32 * cap, f"a chunk of {cap:,} accesses", hint="; lower --chunk-size")
        return sim.feed_generated(self.plan.gen, self.plan.args, self.start, self.stop,
                                  self.plan.per_iteration, chunk, progress)  # fmt: skip


def accounting(source: dict | None) -> dict:
    """The accounting of a result's ``source``: ``{"mode": "cold"|"steady",
    "warmup_sweeps", "counted_sweeps"}`` (results written before it existed, and
    traces, count the whole run from empty caches: cold).

    >>> accounting({"kernel": "triad", "params": {}})["mode"]
    'cold'
    """
    acc = (source or {}).get("accounting")
    if isinstance(acc, dict) and acc.get("mode") in ("cold", "steady"):
        return {"mode": acc["mode"], "warmup_sweeps": int(acc.get("warmup_sweeps", 0)),
                "counted_sweeps": int(acc.get("counted_sweeps", 1))}  # fmt: skip
    sweeps = ((source or {}).get("params") or {}).get("sweeps", 1)
    return {"mode": "cold", "warmup_sweeps": 0, "counted_sweeps": int(sweeps or 1)}


def accounting_text(source: dict | None, *, short: bool = False) -> str:
    """One phrase saying which accounting a result's numbers are.

    >>> accounting_text({"accounting": {"mode": "steady", "warmup_sweeps": 1,
    ...                  "counted_sweeps": 1}}, short=True)
    'steady state, 1 warm-up sweep'
    >>> accounting_text({}, short=True)
    'cold, from empty caches'
    """
    a = accounting(source)
    w, c = a["warmup_sweeps"], a["counted_sweeps"]
    sw = "sweep" if w == 1 else "sweeps"
    cs = "sweep" if c == 1 else "sweeps"
    if a["mode"] == "steady":
        if short:
            return f"steady state, {w} warm-up {sw}"
        return (f"steady state: {w} warm-up {sw} simulated and not counted, then {c} counted "
                f"{cs} (no final flush; figures are per {c} {cs})")  # fmt: skip
    if short:
        return "cold, from empty caches"
    if "trace" in (source or {}):
        return "cold: the whole trace, from empty caches, first touches and final writebacks"
    return (f"cold: {c} {cs} from empty caches, compulsory misses and the final "
            "writebacks counted (kernel parameter warmup=N: steady state)")  # fmt: skip


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
        try:
            plan = self.build(params)
        except OverflowError:  # a builder's int64 array of addresses or offsets
            raise ResourceError(
                f"{_label(self.name, values)}: an address or size is beyond the 64-bit range "
                f"({INT_MAX:.3e}); choose smaller sizes"
            ) from None
        _check_int64(plan, self.name, values)  # before any generator sees a number
        return replace(plan, kernel=self.name, params=params, notes=plan.notes or self.notes)


def _label(kernel: str, params: dict) -> str:
    return f"{kernel} ({', '.join(f'{k}={v}' for k, v in params.items())})"


def _check_int64(plan: Plan, kernel: str, params: dict) -> None:
    """Every count and address of ``plan`` fits the 64-bit integers the generators, the
    simulator and the trace files hold; else one line naming the parameters."""
    what = _label(kernel, params)
    figures = [
        ("accesses", plan.accesses),
        ("flops", plan.flops),
        ("iterations", plan.iterations),
        ("footprint in bytes", plan.footprint),
    ]
    figures += [(f"array {a.name} ends at byte", a.end) for a in plan.arrays]
    figures += [("a generator argument", v) for v in plan.args
                if isinstance(v, int) and not isinstance(v, bool)]  # fmt: skip
    for name, value in figures:
        if abs(int(value)) > INT_MAX:
            raise ResourceError(
                f"{what}: {name} {int(value):.3e} is beyond the 64-bit range "
                f"({INT_MAX:.3e}); choose smaller sizes"
            )


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
    """The registered kernel ``name``; an unknown name gets the closest suggestion. A name
    ending in ``.c`` is a kernel file (:mod:`hroof.traces.filekernel`), parsed here."""
    if isinstance(name, str) and name.lower().endswith(".c"):
        from hroof.traces.filekernel import load_kernel_file

        return load_kernel_file(name)
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


#: ``KEY=VALUE`` words that set how a kernel runs rather than what it computes: the
#: number of cores its outer loop is split across, and the round-robin grain of the
#: shared levels (docs/cache-model.md, "Several cores"). No kernel parameter has these
#: names.
RUN_WORDS = ("cores", "grain")


def split_run_words(values: dict) -> tuple[dict, dict]:
    """Split ``KEY=VALUE`` values into the kernel's parameters and the run words
    (:data:`RUN_WORDS`, as whole numbers).

    >>> split_run_words({"n": "64", "cores": "4"})
    ({'n': '64'}, {'cores': 4})
    """
    params = {k: v for k, v in values.items() if k not in RUN_WORDS}
    run = {k: parse_int(v, k) if isinstance(v, str) else v
           for k, v in values.items() if k in RUN_WORDS}  # fmt: skip
    for k, v in run.items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise HroofError(f"{k} must be a positive whole number, got {v!r}")
    return params, run


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
