"""Access traces: kernel trace generators and trace-file readers/writers.

A trace is a stream of core accesses handed out in chunks of three flat arrays,
``addr`` (uint64, byte address), ``size`` (uint32, bytes) and ``kind`` (uint8:
0 load, 1 store, 2 non-temporal store). :mod:`hroof.traces.io` reads and writes
the file formats of ``DESIGN.md`` ("Trace files"): npz, Dinero din and valgrind
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

__all__ = [
    "DEFAULT_CHUNK",
    "FORMATS",
    "TraceChunk",
    "count_accesses",
    "detect_format",
    "iter_trace",
    "write_din",
    "write_npz",
]
