"""Native runs: the registered kernels executed for real (Numba), timed on this host.

Every kernel that :mod:`hroof.traces` can trace has (or may have) a native twin
here that runs the same loops over arrays laid out as the trace's layout says
(:mod:`hroof.native.core`), so a measured point and a simulated one describe
the same program. Parameters are validated by the same :class:`~hroof.traces.Kernel`
definitions, so ``hroof run`` and ``hroof simulate`` accept and refuse the
same ``KEY=VALUE`` words.

>>> from hroof.native import measure_kernel
>>> m = measure_kernel("triad", n=1000, min_time=0.0, min_repeats=3)
>>> m.flops, m.timing.repeats >= 3
(2000, True)
"""

from __future__ import annotations

from hroof.native.core import Prepared, native_kernels, prepare
from hroof.native.kernel_timing import Measurement, measure_kernel
from hroof.native.timing import Timing, time_kernel

__all__ = [
    "Measurement",
    "Prepared",
    "Timing",
    "measure_kernel",
    "native_kernels",
    "prepare",
    "time_kernel",
]
