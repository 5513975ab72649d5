"""Access kinds of a trace, as stored in the ``kind`` array of every chunk and file, and
the dtype of its ``size`` array.

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

#: The dtype of a chunk's ``size`` array, in memory as in trace files: 4 bytes, so an
#: access of a chunk in memory is 13 bytes (int64 address, uint32 size, uint8 kind).
SIZE_DTYPE = "uint32"
#: Every access size is below this (what :data:`SIZE_DTYPE` holds).
SIZE_LIMIT = 1 << 32
