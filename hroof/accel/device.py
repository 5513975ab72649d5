"""An accelerator as the analytic models see it: a compute peak at one precision, the
bandwidths that are known, and the number of SMs.

:class:`Device` is built from a machine file (:func:`device`, ``kind = "gpu"`` presets
such as ``v100``) or directly from numbers. Element sizes of the precisions are the
storage sizes: ``tf32`` is stored as a 4-byte float.
"""

from __future__ import annotations

from dataclasses import dataclass

from hroof._base.errors import ConfigError, HroofError, suggest

#: Bytes per element of each precision name a machine file may give a peak for.
DTYPE_BYTES = {"fp64": 8, "fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "int8": 1}


def element_size(dtype: str) -> int:
    """Bytes per element of a precision name (``fp64`` 8 ... ``int8`` 1).

    >>> element_size("fp16")
    2
    """
    try:
        return DTYPE_BYTES[dtype]
    except (KeyError, TypeError):
        raise ConfigError(
            f"unknown dtype {dtype!r}{suggest(str(dtype), DTYPE_BYTES)}; choose one of "
            f"{', '.join(DTYPE_BYTES)}"
        ) from None


@dataclass(frozen=True)
class Device:
    """The figures of an accelerator the GEMM and network models use.

    Attributes
    ----------
    name : str
        As the machine file says.
    dtype : str
        The precision ``peak`` is for (``fp16`` ...).
    peak : float
        GFLOP/s at ``dtype`` (GOP/s for ``int8``).
    levels : tuple of (str, float)
        ``(name, GB/s)`` of every level whose bandwidth is known, memory last.
    memory : str
        The name of the memory level (the last of ``levels``).
    sms : int or None
        Streaming multiprocessors (None: unknown; then no latency-bound check).
    """

    name: str
    dtype: str
    peak: float
    levels: tuple[tuple[str, float], ...]
    memory: str
    sms: int | None = None
    last_cache: str | None = None

    def __post_init__(self):
        element_size(self.dtype)
        if not self.levels or self.levels[-1][0] != self.memory:
            raise ConfigError(f"device {self.name}: the last level must be memory ({self.memory})")
        if not self.peak > 0 or any(not bw > 0 for _, bw in self.levels):
            raise ConfigError(f"device {self.name}: peak and bandwidths must be positive")

    @property
    def element_size(self) -> int:
        """Bytes per element at ``dtype``."""
        return DTYPE_BYTES[self.dtype]

    def bandwidth(self, level: str) -> float:
        """GB/s of a level (ConfigError when unknown)."""
        for name, bw in self.levels:
            if name == level:
                return bw
        known = [n for n, _ in self.levels]
        raise ConfigError(
            f"device {self.name} has no bandwidth for {level!r}{suggest(level, known)}; "
            f"known: {', '.join(known)}"
        )

    def ridge(self, level: str) -> float:
        """The operation:byte ratio (FLOP/byte) of a level: peak / bandwidth."""
        return self.peak / self.bandwidth(level)

    def attainable(self, ai: float, level: str | None = None) -> float:
        """Roofline bound (GFLOP/s) at ``ai`` FLOP/byte under ``level``'s roof (default
        memory): ``min(peak, ai x bandwidth)``."""
        return min(self.peak, ai * self.bandwidth(level or self.memory))

    def bound(self, ai: float, level: str | None = None) -> str:
        """``"compute"`` when ``ai`` is at or above ``level``'s ridge point, else ``"memory"``."""
        return "compute" if ai >= self.ridge(level or self.memory) else "memory"

    @property
    def cache_level(self) -> tuple[str, float] | None:
        """The level just above memory (the GPU's L2) with its GB/s, when known.

        ``last_cache`` names it ("" when the machine does not know its bandwidth); when it
        is None (a Device built by hand) the level before memory in ``levels`` is taken.
        """
        if self.last_cache == "":
            return None
        name = self.last_cache or (self.levels[-2][0] if len(self.levels) > 1 else None)
        known = dict(self.levels)
        return (name, known[name]) if name in known else None


def device(machine, dtype: str | None = None) -> Device:
    """The :class:`Device` view of a machine at one precision.

    Parameters
    ----------
    machine : hroof.roofline.Machine
        A loaded machine (``load_machine("v100")``).
    dtype : str, optional
        Precision (``fp64``, ``fp32``, ``tf32``, ``fp16``, ``bf16``, ``int8``); default the
        precision of the machine's roof.

    Raises
    ------
    HroofError
        When the machine has no peak at ``dtype`` or no memory bandwidth.
    """
    if dtype is None:
        dtype = getattr(machine, "precision", "fp64")
    element_size(dtype)
    peak = machine.peak_for(dtype)
    if peak is None:
        have = ", ".join(sorted(getattr(machine, "peaks", {}) or {})) or "none"
        raise HroofError(
            f"machine {machine.name} has no {dtype} peak (peaks it has: {have}); choose "
            f"another --dtype or add {dtype} to [compute] peaks of its machine file"
        )
    if machine.memory_bandwidth is None:
        raise HroofError(
            f"machine {machine.name} has no memory bandwidth; add [memory] bandwidth (GB/s)"
        )
    levels = tuple((n, bw) for n, bw in machine.all_bandwidths() if bw is not None)
    last = machine.level_names[-1] if machine.level_names else None
    last_cache = last if last is not None and machine.bandwidth(last) is not None else ""
    return Device(
        name=machine.name,
        dtype=dtype,
        peak=float(peak),
        levels=levels,
        memory=machine.memory_name,
        sms=getattr(machine, "sms", None),
        last_cache=last_cache,
    )


def positive_int(value, what: str) -> int:
    """``value`` as a positive int, or a HroofError naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise HroofError(f"{what} must be a positive whole number, got {value!r}")
    return value


def positive_float(value, what: str) -> float:
    """``value`` as a positive finite float, or a HroofError naming ``what``."""
    import math

    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise HroofError(f"{what} must be a positive number, got {value!r}")
    if value <= 0:
        raise HroofError(f"{what} must be a positive number, got {value!r}")
    return float(value)
