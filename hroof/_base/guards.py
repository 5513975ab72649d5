"""Guards against hostile input: what a request costs, checked before anything is allocated.

Every size a user can give (a kernel's ``n``, a sweep's grid, a matrix file's size line,
``--chunk-size``) is turned into the bytes it will take and checked here against the memory
this process can still get, so an absurd request ends with one line saying what it would
need and what the machine has, never a ``MemoryError`` traceback or a kill by the kernel's
out-of-memory killer. The same module validates the numbers read from files (finite, within
64-bit integers) as strictly as :mod:`hroof._base.units` validates what is typed.

>>> check_int64(2**62, "n")
4611686018427387904
>>> check_finite(float("inf"), "bandwidth")
Traceback (most recent call last):
...
hroof._base.guards.ResourceError: bandwidth must be a finite number, got inf
"""

from __future__ import annotations

import math
import numbers
import os
import resource
import shutil
from pathlib import Path

from hroof._base.errors import HroofError
from hroof._base.units import INT_MAX, format_bytes

#: The share of the available memory one request may take (the rest is the interpreter,
#: Numba, the simulator's own state and whatever else runs on the machine).
MEMORY_SHARE = 0.8

#: Environment variable that caps the memory hroof believes it has, in bytes (tests, CI
#: runners that share a machine); the smaller of it and what the system reports counts.
MEMORY_ENV = "HROOF_MEMORY_LIMIT"


class ResourceError(HroofError):
    """A request that would cost more memory (or time) than the machine has, or a number
    out of the range hroof can hold."""


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:  # not Linux: the physical pages free
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return None


def _address_space_left() -> int | None:
    """What ``RLIMIT_AS`` (``ulimit -v``) still lets this process map, if it is set."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            mapped = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        mapped = 0
    return max(0, soft - mapped)


def available_memory() -> int | None:
    """Bytes this process can still allocate: the system's ``MemAvailable``, capped by the
    address-space limit (``ulimit -v``) and by ``HROOF_MEMORY_LIMIT``; None if unknown."""
    figures = [_meminfo_available(), _address_space_left()]
    env = os.environ.get(MEMORY_ENV, "").strip()
    if env:
        try:
            figures.append(int(float(env)))
        except ValueError:
            raise HroofError(f"{MEMORY_ENV} must be a number of bytes, got {env!r}") from None
    known = [f for f in figures if f is not None]
    return min(known) if known else None


def check_memory(nbytes: float, what: str, *, hint: str = "") -> None:
    """Refuse, with one line, a request of ``nbytes`` that the machine cannot hold.

    ``what`` names the request (``"spmv matrix=random rows=1,000,000,000"``); ``hint``
    (``"; lower --chunk-size"``) says what to do instead.

    >>> check_memory(1024, "a tiny buffer")
    """
    avail = available_memory()
    if avail is None or nbytes <= MEMORY_SHARE * avail:
        return
    raise ResourceError(
        f"{what} needs {format_bytes(nbytes)} of memory; this machine has "
        f"{format_bytes(avail)} available{hint}"
    )


def check_time(count: float, rate: float, limit_s: float, what: str, *, hint: str = "") -> None:
    """Refuse ``count`` operations at ``rate`` per second when they would run past
    ``limit_s`` seconds (a request that could only be a typo)."""
    seconds = count / rate
    if seconds <= limit_s:
        return
    hours = seconds / 3600
    span = f"{hours:,.0f} hours" if hours < 48 else f"{hours / 24:,.0f} days"
    raise ResourceError(
        f"{what} would take about {span} (at {rate:,.0f} per second); at most "
        f"{limit_s / 3600:,.0f} hours are accepted{hint}"
    )


def check_disk(nbytes: float, path: str | os.PathLike, what: str) -> None:
    """Refuse to write ``nbytes`` to ``path`` when its file system has not that much free
    (checked before the first byte, so a full disk is said up front, not half-way)."""
    directory = Path(path).parent
    while not directory.exists() and directory != directory.parent:
        directory = directory.parent
    try:
        free = shutil.disk_usage(directory).free
    except OSError:
        return
    if nbytes > free:
        raise ResourceError(
            f"{what} needs {format_bytes(nbytes)} of disk; {directory} has "
            f"{format_bytes(free)} free"
        )


def check_int64(value, what: str, *, minimum: int | None = 0) -> int:
    """``value`` as an int, refused (one line) when it is not a whole number or lies outside
    the 64-bit range the simulator and the trace files hold."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        else:
            raise ResourceError(f"{what} must be a whole number, got {value!r}")
    value = int(value)
    if not -INT_MAX - 1 <= value <= INT_MAX:
        raise ResourceError(f"{what} is {value:,}: beyond the 64-bit range (at most {INT_MAX:,})")
    if minimum is not None and value < minimum:
        raise ResourceError(f"{what} must be at least {minimum:,}, got {value:,}")
    return value


def check_finite(value, what: str, *, positive: bool = False, minimum: float | None = None):
    """``value`` as a float, refused when it is NaN, infinite, negative where ``minimum``
    forbids it, or not positive when ``positive``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ResourceError(f"{what} must be a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise ResourceError(f"{what} must be a finite number, got {value!r}")
    if positive and number <= 0:
        raise ResourceError(f"{what} must be positive, got {value!r}")
    if minimum is not None and number < minimum:
        raise ResourceError(f"{what} must be at least {minimum:g}, got {value!r}")
    return number


__all__ = [
    "MEMORY_ENV",
    "MEMORY_SHARE",
    "ResourceError",
    "available_memory",
    "check_disk",
    "check_finite",
    "check_int64",
    "check_memory",
    "check_time",
]
