"""Access traces: kernel trace generators and trace-file readers/writers.

Kernels (:mod:`hroof.traces.kernels`) generate the exact access stream of a
loop kernel chunk by chunk; :mod:`hroof.traces.stream` registers STREAM's copy,
scale, add and triad, DAXPY and DOT; :mod:`hroof.traces.stencils` the 5-, 7- and
27-point stencils; :mod:`hroof.traces.dense` dgemv and gemm;
:mod:`hroof.traces.sparse` CSR SpMV over generated or Matrix Market matrices.
Those modules (and so Numba) are imported on the first look-up in the kernel
registry, not with this package, so that reading a trace file or ``hroof
--help`` does not pay for them.

A trace is a stream of core accesses handed out in chunks of three flat arrays,
``addr`` (uint64, byte address), ``size`` (uint32, bytes) and ``kind`` (uint8:
0 load, 1 store, 2 non-temporal store). :mod:`hroof.traces.io` reads and writes
the file formats of ``docs/architecture.md`` ("Trace files"): npz, Dinero din and valgrind
lackey.
"""

from hroof.traces.io import (
    DEFAULT_CHUNK,
    FORMATS,
    TraceChunk,
    count_accesses,
    detect_format,
    iter_trace,
    write_din,
    write_npz,
)
from hroof.traces.kernels import (
    Array,
    Kernel,
    Param,
    Plan,
    accounting,
    accounting_text,
    get_kernel,
    kernels,
    layout,
    parse_assignments,
    plan_kernel,
    register_kernel,
    unregister_kernel,
)

__all__ = [
    "DEFAULT_CHUNK",
    "FORMATS",
    "Array",
    "Kernel",
    "Param",
    "Plan",
    "TraceChunk",
    "accounting",
    "accounting_text",
    "count_accesses",
    "detect_format",
    "get_kernel",
    "iter_trace",
    "kernels",
    "layout",
    "parse_assignments",
    "plan_kernel",
    "register_kernel",
    "unregister_kernel",
    "write_din",
    "write_npz",
]
