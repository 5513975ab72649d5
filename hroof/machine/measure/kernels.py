"""Numba microkernels for ``hroof machine measure``: compute ceilings and bandwidths.

Every kernel is a pure function over NumPy arrays (or scalars), compiled with
``nogil=True`` so that several Python threads run it at once on their own data,
and returns a value that depends on all its work, so the compiler cannot drop it.
The flops or bytes of one call are counted from the loop (see ``FLOPS_*`` and
``BYTES_PER_ELEMENT``), never estimated.

What the compiler emits (checked with ``kernel.inspect_asm()`` on an AMD EPYC
Zen 5 host with AVX-512, Numba 0.68 / LLVM 20; :func:`instruction_census` repeats
the check and a test asserts it on any host with FMA):

* ``fma4``/``fma8``, fastmath with ``contract``: the chain ``b = b * a + c`` over
  an array is vectorised across elements and fused: ``vfmadd213pd``/``ps`` on
  ``zmm`` registers (8 doubles or 16 floats a vector), plus a scalar remainder.
* ``mul_add4``/``mul_add8``, no fastmath (so no ``contract``): the same loop is
  vectorised but the multiply and the add stay apart: ``vmulpd`` + ``vaddpd`` on
  ``zmm``; no ``vfmadd``.
* ``scalar8``: eight independent scalar chains in straight-line code; the loop
  carries them, so the loop vectoriser cannot vectorise it and the SLP vectoriser
  does not pack them: ``vfmadd213sd``/``ss`` on ``xmm`` only (scalar FMA).
* bandwidth: ``read`` is a sum vectorised with four interleaved ``zmm``
  accumulators, fresh each pass; ``write`` fills with a value that changes every pass (vector
  stores on ``zmm``, never ``memset``); ``copy`` copies a to b and back on
  alternate passes, a vectorised loop of ``zmm`` loads and stores (a copy in one
  direction only compiled to library calls in a first try); ``triad`` is
  vectorised ``vfmadd`` with ``zmm`` loads and stores. No kernel uses
  non-temporal stores, so every store that misses allocates the line (the
  bytes counted are STREAM's: read plus written, without that extra read).
"""

from __future__ import annotations

import re

import numpy as np

from hroof._base.jit import MICRO, njit

#: fastmath flags that allow fusing a multiply and an add (``contract``) but do
#: not reassociate, so the dependency chains stay as written.
FUSE = {"contract", "nnan", "ninf", "nsz", "arcp", "afn"}
#: fastmath flags for the bandwidth kernels: ``reassoc`` lets the read sum use
#: several vector accumulators.
REDUCE = {"contract", "nnan", "ninf", "nsz", "arcp", "afn", "reassoc"}
_BASE = MICRO


# ----------------------------------------------------------------------- compute
@njit(fastmath=FUSE, **_BASE)
def fma4(x, reps, a, c):  # pragma: no cover (jitted)
    """``reps`` passes over ``x``; per element a chain of 4 ``b = b*a + c``: 8 flops."""
    n = x.shape[0]
    for _ in range(reps):
        for i in range(n):
            b = x[i]
            b = b * a + c
            b = b * a + c
            b = b * a + c
            b = b * a + c
            x[i] = b
    return x[0]


@njit(fastmath=FUSE, **_BASE)
def fma8(x, reps, a, c):  # pragma: no cover (jitted)
    """As :func:`fma4` with a chain of 8: 16 flops per element and pass."""
    n = x.shape[0]
    for _ in range(reps):
        for i in range(n):
            b = x[i]
            b = b * a + c
            b = b * a + c
            b = b * a + c
            b = b * a + c
            b = b * a + c
            b = b * a + c
            b = b * a + c
            b = b * a + c
            x[i] = b
    return x[0]


@njit(fastmath=False, **_BASE)
def mul_add4(x, reps, a, c):  # pragma: no cover (jitted)
    """:func:`fma4` compiled without ``contract``: separate multiply and add, 8 flops."""
    n = x.shape[0]
    for _ in range(reps):
        for i in range(n):
            b = x[i]
            b = b * a + c
            b = b * a + c
            b = b * a + c
            b = b * a + c
            x[i] = b
    return x[0]


@njit(fastmath=False, **_BASE)
def mul_add8(x, reps, a, c):  # pragma: no cover (jitted)
    """:func:`fma8` compiled without ``contract``: separate multiply and add, 16 flops."""
    n = x.shape[0]
    for _ in range(reps):
        for i in range(n):
            b = x[i]
            b = b * a + c
            b = b * a + c
            b = b * a + c
            b = b * a + c
            b = b * a + c
            b = b * a + c
            b = b * a + c
            b = b * a + c
            x[i] = b
    return x[0]


@njit(fastmath=FUSE, **_BASE)
def scalar8(x, reps, a, c):  # pragma: no cover (jitted)
    """Eight independent scalar chains ``b = b*a + c``, ``reps`` steps: 16 flops a step.

    ``x`` holds the eight start values (and gets the results), so the dtype
    (float64 or float32) comes from the array as in the other kernels.
    """
    b0, b1, b2, b3 = x[0], x[1], x[2], x[3]
    b4, b5, b6, b7 = x[4], x[5], x[6], x[7]
    for _ in range(reps):
        b0 = b0 * a + c
        b1 = b1 * a + c
        b2 = b2 * a + c
        b3 = b3 * a + c
        b4 = b4 * a + c
        b5 = b5 * a + c
        b6 = b6 * a + c
        b7 = b7 * a + c
    x[0], x[1], x[2], x[3] = b0, b1, b2, b3
    x[4], x[5], x[6], x[7] = b4, b5, b6, b7
    return b0


#: Compute kernels: name -> (function, flops per element and pass, vectorised over x).
COMPUTE_KERNELS = {
    "fma4": (fma4, 8, True),
    "fma8": (fma8, 16, True),
    "mul_add4": (mul_add4, 8, True),
    "mul_add8": (mul_add8, 16, True),
    "scalar8": (scalar8, 16, False),
}
#: Which kernels stand for which compute figure (the best of them is kept).
COMPUTE_VARIANTS = {
    "fma": ("fma4", "fma8"),
    "no FMA": ("mul_add4", "mul_add8"),
    "scalar": ("scalar8",),
}


def compute_flops(kernel: str, n: int, reps: int) -> int:
    """Floating-point operations of one call of a compute kernel (an FMA counts 2).

    >>> compute_flops("fma8", 256, 10), compute_flops("scalar8", 8, 10)
    (40960, 160)
    """
    _, per, vector = COMPUTE_KERNELS[kernel]
    return per * (n if vector else 1) * reps


# --------------------------------------------------------------------- bandwidth
@njit(fastmath=REDUCE, **_BASE)
def read(a, reps):  # pragma: no cover (jitted)
    """Sum ``a`` ``reps`` times: 8 bytes read per element and pass.

    Each pass sums into a fresh ``t``, added to ``s`` after the pass: the next pass's
    vector accumulators then do not wait for this pass's horizontal reduction (with
    ``s += a[i]`` straight through, that chain cost about 20 cycles a pass: 270
    instead of 435 GB/s at 4 KiB on this host).
    """
    s = 0.0
    for _ in range(reps):
        t = 0.0
        for i in range(a.shape[0]):
            t += a[i]
        s += t
    return s


@njit(fastmath=REDUCE, **_BASE)
def write(a, reps, v):  # pragma: no cover (jitted)
    """Fill ``a`` with ``v + pass``: 8 bytes written per element and pass."""
    for r in range(reps):
        w = v + r
        for i in range(a.shape[0]):
            a[i] = w
    return a[0]


@njit(fastmath=REDUCE, **_BASE)
def copy(a, b, reps):  # pragma: no cover (jitted)
    """Copy ``a`` to ``b`` and back, ``reps`` copies: 16 bytes per element and copy."""
    for r in range(reps):
        if r & 1:
            for i in range(a.shape[0]):
                a[i] = b[i]
        else:
            for i in range(a.shape[0]):
                b[i] = a[i]
    return a[0] + b[0]


@njit(fastmath=REDUCE, **_BASE)
def triad(a, b, c, reps, s):  # pragma: no cover (jitted)
    """STREAM triad ``a = b + s*c``, ``reps`` times: 24 bytes per element and pass."""
    for _ in range(reps):
        for i in range(a.shape[0]):
            a[i] = b[i] + s * c[i]
    return a[0]


#: Bandwidth kernels: name -> (arrays it takes, bytes per element of each array and pass
#: counted as STREAM does: bytes the loop reads plus bytes it writes, no write-allocate).
BANDWIDTH_KERNELS = {"read": 1, "write": 1, "copy": 2, "triad": 3}
BYTES_PER_ELEMENT = {"read": 8, "write": 8, "copy": 16, "triad": 24}


def run_bandwidth(kernel: str, arrays: list[np.ndarray], reps: int) -> float:
    """Call a bandwidth kernel on its arrays (float64) for ``reps`` passes."""
    if kernel == "read":
        return read(arrays[0], reps)
    if kernel == "write":
        return write(arrays[0], reps, 1.0)
    if kernel == "copy":
        return copy(arrays[0], arrays[1], reps)
    if kernel == "triad":
        return triad(arrays[0], arrays[1], arrays[2], reps, 0.5)
    raise ValueError(f"unknown bandwidth kernel {kernel!r}; known: {', '.join(BANDWIDTH_KERNELS)}")


def bandwidth_bytes(kernel: str, elements: int, reps: int) -> int:
    """Bytes one call moves (STREAM counting), ``elements`` per array.

    >>> bandwidth_bytes("triad", 1000, 2)
    48000
    """
    return BYTES_PER_ELEMENT[kernel] * elements * reps


# ----------------------------------------------------------------- instruction check
_OPS = re.compile(
    r"\b(v?(?:fmadd\d*[ps][sd]|mul[ps][sd]|add[ps][sd]|movnt\w*))\s+[^\n]*?%(zmm|ymm|xmm)"
)
_STORES = re.compile(r"\b(vmov\w+)\s+%(zmm|ymm)\d+, [-\w]*\(")


def _fresh(kernel: str) -> tuple:
    """An uncached compilation of a kernel (cached code cannot be inspected) and its args."""
    fn = COMPUTE_KERNELS[kernel][0] if kernel in COMPUTE_KERNELS else globals()[kernel]
    opts = {**fn.targetoptions}
    opts.pop("cache", None)
    opts.pop("boundscheck", None)
    opts.pop("nopython", None)
    return njit(**opts)(fn.py_func)


def instruction_census(kernel: str, dtype=np.float64) -> dict[str, int]:
    """Count the arithmetic and store instructions in a kernel's machine code.

    Compiles a fresh, uncached copy of the kernel (Numba cannot inspect code it
    loaded from its cache) with the same options, and reads its assembly.

    Parameters
    ----------
    kernel : str
        A name of :data:`COMPUTE_KERNELS` or :data:`BANDWIDTH_KERNELS`.
    dtype : numpy dtype
        float64 or float32 (for the compute kernels; bandwidth kernels use float64).

    Returns
    -------
    dict
        ``"vfmadd213pd zmm" -> count`` for FMA, multiply, add and non-temporal moves,
        ``"store zmm"``/``"store ymm"`` for vector stores, and ``"call memcpy"``
        when the code copies with ``memcpy``.
    """
    fn = _fresh(kernel)
    dt = np.dtype(dtype).type
    if kernel in COMPUTE_KERNELS:
        fn(np.full(8, 0.5, dtype=dt), 1, dt(0.5), dt(0.5))
    elif kernel == "read":
        fn(np.ones(64), 1)
    elif kernel == "write":
        fn(np.ones(64), 1, 1.0)
    elif kernel == "copy":
        fn(np.ones(64), np.ones(64), 1)
    elif kernel == "triad":
        fn(np.ones(64), np.ones(64), np.ones(64), 1, 0.5)
    else:
        raise ValueError(f"unknown kernel {kernel!r}")
    sig = fn.signatures[0]
    asm = fn.inspect_asm(sig)
    out: dict[str, int] = {}
    for op, reg in _OPS.findall(asm):
        out[f"{op} {reg}"] = out.get(f"{op} {reg}", 0) + 1
    for _, reg in _STORES.findall(asm):
        out[f"store {reg}"] = out.get(f"store {reg}", 0) + 1
    calls = fn.inspect_llvm(sig).count("@llvm.memcpy") + len(
        re.findall(r"call\w*\s+\S*memcpy", asm)
    )
    if calls:
        out["call memcpy"] = calls
    return out
