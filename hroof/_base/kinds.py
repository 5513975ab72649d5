"""Access kinds of a trace, as stored in the ``kind`` array of every chunk and file.

Numba reads these module-level integers as compile-time constants, so the generators
and the simulator use the names at no cost.
"""

#: A load (a read of ``size`` bytes).
LOAD = 0
#: A store (write-allocate, write-back).
STORE = 1
#: A non-temporal (streaming) store: bypasses the caches, goes to memory.
NT_STORE = 2

#: Names as printed and as written in trace formats that spell them out.
NAMES = {LOAD: "load", STORE: "store", NT_STORE: "nt-store"}
