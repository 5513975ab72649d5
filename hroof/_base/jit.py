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
