"""Compile options shared by every Numba kernel (one place to change them).

``cache=True`` keeps compiled kernels on disk next to the sources, so only
the first run on a machine pays the compile time. ``error_model="numpy"``
drops the Python-style division checks from the hot loops.

``_nrt=False`` compiles without Numba's reference-counting runtime. The
kernels never allocate, and with the runtime on, every call of a helper that
is passed the state arrays increments and decrements each array's reference
count, which cost ten times more than the cache lookup itself (measured:
~100 ns against ~7 ns per access on the reference stencil stream). The hot
helpers are also inlined at Numba-IR level (``INLINE``).
"""

JIT = {"cache": True, "nogil": True, "error_model": "numpy", "_nrt": False}
INLINE = {**JIT, "inline": "always"}

#: Trace generators: compiled once and cached, GIL released; they may allocate (the
#: sparse builders do), so Numba's runtime stays on.
GEN = {"cache": True, "nogil": True}

#: Measurement microkernels (``hroof machine measure``): as :data:`GEN` with NumPy's
#: error model; each kernel adds its own ``fastmath`` flags (FMA contraction or none).
MICRO = {**GEN, "error_model": "numpy"}
