"""Timing a run: warm-up apart, repeats until a minimum total time, median and spread."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hroof._base.errors import HroofError

#: Default least total timed seconds of a measurement.
MIN_TIME = 0.2
#: Default least number of timed repeats.
MIN_REPEATS = 5
#: Most timed repeats, whatever the minimum time asks (a microsecond kernel).
MAX_REPEATS = 100_000


@dataclass(frozen=True)
class Timing:
    """The timed repeats of a run, seconds each, in the order they ran.

    The median is the figure to quote (robust to the odd interrupted repeat);
    ``minimum`` .. ``maximum`` and the interquartile range ``q1`` .. ``q3`` are
    its spread. ``warmup`` runs came first and are not in ``times``.
    """

    times: tuple[float, ...]
    warmup: int

    @property
    def repeats(self) -> int:
        return len(self.times)

    @property
    def total(self) -> float:
        return float(sum(self.times))

    @property
    def median(self) -> float:
        return float(np.median(self.times))

    @property
    def minimum(self) -> float:
        return float(min(self.times))

    @property
    def maximum(self) -> float:
        return float(max(self.times))

    @property
    def q1(self) -> float:
        return float(np.percentile(self.times, 25))

    @property
    def q3(self) -> float:
        return float(np.percentile(self.times, 75))

    def to_dict(self) -> dict:
        return {
            "repeats": self.repeats,
            "warmup": self.warmup,
            "total_s": self.total,
            "median_s": self.median,
            "min_s": self.minimum,
            "max_s": self.maximum,
            "q1_s": self.q1,
            "q3_s": self.q3,
        }


def time_kernel(
    run: Callable[[], object],
    *,
    reset: Callable[[], object] | None = None,
    warmup: int = 1,
    min_time: float = MIN_TIME,
    min_repeats: int = MIN_REPEATS,
    max_repeats: int = MAX_REPEATS,
    clock: Callable[[], float] = time.perf_counter,
    progress: Callable[[int], object] | None = None,
) -> Timing:
    """Time ``run()``: ``warmup`` untimed runs (the first pays the JIT compile), then
    timed repeats until at least ``min_repeats`` ran and together took ``min_time``
    seconds, or ``max_repeats`` ran.

    Parameters
    ----------
    run : callable
        One execution of the kernel.
    reset : callable, optional
        Called before every run, outside the timed region (restores the inputs).
    warmup : int
        Untimed runs first (>= 0).
    min_time : float
        Least total of the timed repeats, seconds (>= 0).
    min_repeats, max_repeats : int
        Least and most timed repeats (1 <= min_repeats <= max_repeats).
    clock : callable
        Seconds, monotonic (``time.perf_counter``; a fake one in tests).
    progress : callable, optional
        Called with 1 after every run, warm-up included (outside the timed region).

    Returns
    -------
    Timing

    Examples
    --------
    >>> ticks = iter(range(100))
    >>> t = time_kernel(lambda: None, min_time=5, min_repeats=2, clock=lambda: next(ticks))
    >>> t.repeats, t.median, t.warmup     # each repeat takes one tick
    (5, 1.0, 1)
    """
    if warmup < 0:
        raise HroofError(f"warmup must be 0 or more runs, got {warmup}")
    if not min_time >= 0:
        raise HroofError(f"the minimum time must be 0 or more seconds, got {min_time}")
    if not 1 <= min_repeats <= max_repeats:
        raise HroofError(
            f"repeats must satisfy 1 <= minimum ({min_repeats}) <= maximum ({max_repeats})"
        )
    for _ in range(warmup):
        if reset is not None:
            reset()
        run()
        if progress is not None:
            progress(1)
    times: list[float] = []
    total = 0.0
    while len(times) < min_repeats or (total < min_time and len(times) < max_repeats):
        if reset is not None:
            reset()
        t0 = clock()
        run()
        dt = clock() - t0
        times.append(dt)
        total += dt
        if progress is not None:
            progress(1)
    return Timing(tuple(times), warmup)
