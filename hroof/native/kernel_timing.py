"""A measured point: a kernel run natively, timed, in GFLOP/s and GB/s."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hroof.native.core import prepare
from hroof.native.timing import MIN_REPEATS, MIN_TIME, Timing, time_kernel
from hroof.traces.kernels import Plan, plan_kernel


def _rate(amount: float, seconds: float) -> float | None:
    return amount / seconds / 1e9 if seconds > 0 else None


@dataclass(frozen=True)
class Measurement:
    """A kernel run natively on this host, and its rates.

    Attributes
    ----------
    kernel : str
        The kernel's name.
    params : dict
        All its parameters (defaults filled in), as ``hroof simulate`` binds them.
    flops : int
        The kernel's exact flop count (the one ``hroof simulate`` uses).
    footprint : int
        Compulsory bytes: distinct bytes the kernel touches (the plan's footprint).
    core_bytes : int
        Bytes of the kernel's loads and stores (the simulator's L1 bytes).
    timing : Timing
        Seconds per run.
    notes : str
        Where the native run differs from the trace.

    The rates divide by the median run time (``*_best`` by the fastest, ``*_worst``
    by the slowest, ``gflop_s_iqr`` by the quartiles; in the JSON ``gflop_s_min`` ..
    ``gflop_s_max`` and ``gflop_s_q1`` .. ``gflop_s_q3``): ``gflop_s`` in GFLOP/s
    (1e9 FLOP/s), ``footprint_gb_s`` and ``core_gb_s`` in GB/s (1e9 bytes/s).
    """

    kernel: str
    params: dict[str, Any]
    flops: int
    footprint: int
    core_bytes: int
    timing: Timing
    notes: str = ""

    @property
    def gflop_s(self) -> float | None:
        return _rate(self.flops, self.timing.median)

    @property
    def gflop_s_best(self) -> float | None:
        return _rate(self.flops, self.timing.minimum)

    @property
    def gflop_s_worst(self) -> float | None:
        return _rate(self.flops, self.timing.maximum)

    @property
    def gflop_s_iqr(self) -> tuple[float | None, float | None]:
        """GFLOP/s at the third and first quartiles of the run time (slower, faster)."""
        return _rate(self.flops, self.timing.q3), _rate(self.flops, self.timing.q1)

    @property
    def footprint_gb_s(self) -> float | None:
        return _rate(self.footprint, self.timing.median)

    @property
    def core_gb_s(self) -> float | None:
        return _rate(self.core_bytes, self.timing.median)

    def to_dict(self) -> dict:
        """JSON-ready, schema ``hroof.measurement/1``."""
        return {
            "schema": "hroof.measurement/1",
            "source": {"kernel": self.kernel, "params": dict(self.params)},
            "flops": self.flops,
            "footprint_bytes": self.footprint,
            "core_bytes": self.core_bytes,
            "timing": self.timing.to_dict(),
            "gflop_s": self.gflop_s,
            "gflop_s_min": self.gflop_s_worst,
            "gflop_s_max": self.gflop_s_best,
            "gflop_s_q1": self.gflop_s_iqr[0],
            "gflop_s_q3": self.gflop_s_iqr[1],
            "footprint_gb_s": self.footprint_gb_s,
            "core_gb_s": self.core_gb_s,
            "notes": self.notes,
        }


def measure_kernel(
    kernel: str | Plan,
    *,
    min_time: float = MIN_TIME,
    min_repeats: int = MIN_REPEATS,
    warmup: int = 1,
    progress: Callable[[int], object] | None = None,
    **params: Any,
) -> Measurement:
    """Run a kernel natively and time it (see :func:`~hroof.native.timing.time_kernel`).

    ``kernel`` is a registered name (parameters as keywords, validated as
    ``hroof simulate`` validates them) or a bound :class:`~hroof.traces.Plan`.
    The arrays are allocated and filled before the warm-up and freed after;
    ``progress`` is called with 1 after every run.

    Raises
    ------
    HroofError
        Unknown kernel or parameter, a bad value, or no native implementation.
    """
    plan = kernel if isinstance(kernel, Plan) else plan_kernel(kernel, **params)
    if isinstance(kernel, Plan) and params:
        raise TypeError("give parameters to plan_kernel, not with a Plan")
    prep = prepare(plan)
    timing = time_kernel(prep.run, reset=prep.reset, warmup=warmup, min_time=min_time,
                         min_repeats=min_repeats, progress=progress)  # fmt: skip
    return Measurement(plan.kernel, dict(plan.params), plan.flops, plan.footprint,
                       prep.core_bytes, timing, prep.notes)  # fmt: skip


def measurer(min_time: float, min_repeats: int) -> Callable[[Plan], Measurement]:
    """``measure(plan)`` with these timing settings (for sweeps)."""
    return lambda plan: measure_kernel(plan, min_time=min_time, min_repeats=min_repeats)
