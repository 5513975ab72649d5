"""Run the microkernels: compute ceilings and bandwidth sweeps of the host.

:func:`measure_host` times the kernels of :mod:`hroof.machine.measure.kernels` on one
core and on all cores (Python threads running ``nogil`` kernels, each on its own
arrays), keeps the best of several trials of each, finds the bandwidth plateaus
of each sweep (:mod:`hroof.machine.measure.plateaus`) and matches them to the host's
cache levels (:func:`hroof.machine.host.read_host`).

Timing. A kernel call is first repeated with more passes until one call takes
at least ``target_s`` seconds (so the timer's resolution and the call overhead
are negligible); then ``trials`` calls are timed and the best rate is kept, as
ERT keeps its maximum: on a shared virtual machine, slower trials measure the
neighbours, not the hardware. The trials are short (2 ms; 1 ms with ``quick``)
and many, because on a busy machine a 20 ms trial is almost always cut by the
scheduler (a first version with 20 ms trials measured a third less on a loaded
host than 3 ms trials did), while a short one often runs undisturbed. With
several threads, the time of a trial is from the first thread's start to the
last one's end.
"""

from __future__ import annotations

import math
import os
import platform
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from hroof._base.errors import ConfigError
from hroof.machine.host import SYSFS_CACHE, HostReport, read_host
from hroof.machine.measure import kernels as K
from hroof.machine.measure.plateaus import LevelFigure, Plateau, Spread, level_figures

KIB = 1024
MIB = 1024 * KIB
#: Working sets are multiples of this many bytes per array and thread (8 zmm vectors).
GRAIN = 512
#: Working sets up to 1/POOL_FRACTION of the largest get arrays of their own; larger ones
#: are slices of one pool per thread. On this host's KVM guest, once a second thread had
#: run, L1-sized slices of a 256 MiB pool (which NumPy asks the kernel to back with huge
#: pages) read at 120-180 GB/s instead of 220: a cost of about 30 ns a pass that a small
#: array of its own does not pay (reproduced in 4 runs out of 4, absent with one thread).
POOL_FRACTION = 4


@dataclass(frozen=True)
class Settings:
    """How thoroughly to measure.

    Attributes
    ----------
    name : str
        "full", "quick" or "tiny" (tests).
    min_bytes : int
        Smallest working set of the sweep, bytes (all arrays, all threads).
    llc_multiple : float
        The sweep goes up to this many times the last-level cache...
    max_bytes : int
        ...but no further than this many bytes (and a quarter of MemAvailable).
    per_octave : int
        Sweep points per doubling of the working set.
    target_s : float
        Least duration of one timed call, seconds.
    trials : int
        Timed calls per figure; the best is kept.
    kernels : tuple of str
        Bandwidth kernels swept.
    compute_elements : int
        Array length (per thread) of the vectorised compute kernels (fits L1).
    """

    name: str
    min_bytes: int = 4 * KIB
    llc_multiple: float = 8.0
    max_bytes: int = 512 * MIB
    per_octave: int = 6
    target_s: float = 0.002
    trials: int = 15
    kernels: tuple[str, ...] = ("read", "write", "copy", "triad")
    compute_elements: int = 512


PRESETS = {
    "full": Settings("full"),
    "quick": Settings("quick", per_octave=3, target_s=0.001, trials=7),
    "tiny": Settings(
        "tiny",
        llc_multiple=2.0,
        max_bytes=64 * MIB,
        per_octave=2,
        target_s=0.002,
        trials=3,
        kernels=("read", "triad"),
    ),
}
#: Compute precisions measured, with their NumPy types.
PRECISIONS = {"fp64": np.float64, "fp32": np.float32}


@dataclass(frozen=True)
class ComputeFigure:
    """A measured compute rate: ``variant`` ("fma", "no FMA", "scalar"), GFLOP/s."""

    variant: str
    precision: str
    threads: int
    gflops: float
    kernel: str  # the kernel (of the variant's) that ran fastest
    trials: tuple[float, ...] = ()  # GFLOP/s of each timed trial of that kernel

    @property
    def spread(self) -> Spread | None:
        """How the trials of the figure's kernel varied (None without trials)."""
        return Spread.of(self.trials) if self.trials else None


@dataclass(frozen=True)
class Sweep:
    """A bandwidth sweep of one kernel on ``threads`` threads, and what it shows.

    ``sizes`` are working sets in bytes (all arrays of all threads), ``gbs`` the best
    GB/s at each; ``capacities`` are the cache capacities the threads share together;
    ``trials[t][i]`` is trial ``t``'s GB/s at point ``i``.
    """

    kernel: str
    threads: int
    sizes: tuple[int, ...]
    gbs: tuple[float, ...]
    plateaus: tuple[Plateau, ...]
    levels: tuple[LevelFigure, ...]
    capacities: tuple[tuple[str, int], ...]
    trials: tuple[tuple[float, ...], ...] = ()

    def level(self, name: str) -> LevelFigure:
        for f in self.levels:
            if f.name == name:
                return f
        raise KeyError(name)


@dataclass(frozen=True)
class Measurement:
    """Everything ``hroof machine measure`` found."""

    date: str
    settings: Settings
    host: HostReport
    threads: int
    compute: tuple[ComputeFigure, ...]
    sweeps: tuple[Sweep, ...]
    elapsed_s: float
    mem_available: int | None
    versions: dict = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def figure(self, variant: str, precision: str = "fp64", threads: int = 1) -> ComputeFigure:
        for f in self.compute:
            if (f.variant, f.precision, f.threads) == (variant, precision, threads):
                return f
        raise KeyError((variant, precision, threads))

    def sweep(self, kernel: str, threads: int = 1) -> Sweep:
        for s in self.sweeps:
            if (s.kernel, s.threads) == (kernel, threads):
                return s
        raise KeyError((kernel, threads))


# ------------------------------------------------------------------ host facts
def mem_available(meminfo: str | Path = "/proc/meminfo") -> int | None:
    """Bytes of MemAvailable in ``/proc/meminfo`` (None if unreadable)."""
    try:
        for line in Path(meminfo).read_text().splitlines():
            if line.startswith("MemAvailable:"):
                parts = line.split()
                return int(parts[1]) * (1024 if parts[2:3] == ["kB"] else 1)
    except (OSError, ValueError, IndexError):
        return None
    return None


def usable_cores() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover (not Linux)
        return os.cpu_count() or 1


def sharing(sysfs: str | Path = SYSFS_CACHE) -> dict[int, int]:
    """Per cache level (kernel numbering), how many CPUs share cpu0's data/unified cache."""
    out: dict[int, int] = {}
    for d in Path(sysfs).glob("index*"):
        try:
            kind = (d / "type").read_text().strip().lower()
            level = int((d / "level").read_text())
            text = (d / "shared_cpu_list").read_text().strip()
        except (OSError, ValueError):
            continue
        if kind not in ("data", "unified"):
            continue
        count = 0
        for part in text.split(","):
            lo, _, hi = part.partition("-")
            count += int(hi or lo) - int(lo) + 1
        out[level] = count
    return out


def shared_capacities(
    host: HostReport, threads: int, shared: dict[int, int]
) -> list[tuple[str, int]]:
    """Capacity of each level that ``threads`` threads on distinct cores have together.

    A level shared by ``s`` CPUs gives ``ceil(threads / s)`` copies; unknown sharing
    counts as private. (Levels are matched to kernel levels by order.)
    """
    out = []
    kernel_levels = sorted(shared)
    for i, lv in enumerate(host.machine.hierarchy.levels):
        s = shared.get(kernel_levels[i], 1) if i < len(kernel_levels) else 1
        out.append((lv.name, lv.size * math.ceil(threads / max(1, s))))
    return out


def sweep_sizes(
    settings: Settings, llc_bytes: int, threads: int, narrays: int, available: int | None
) -> list[int]:
    """Working sets of a sweep, bytes: geometric, rounded to whole grains per array/thread."""
    hi = min(settings.max_bytes, int(settings.llc_multiple * llc_bytes))
    if available:
        hi = min(hi, available // 4)
    grain = GRAIN * narrays * threads
    lo = max(settings.min_bytes, grain)
    if hi < lo:
        raise ConfigError(
            f"no room to measure: the largest working set ({hi} bytes) is "
            f"below the smallest ({lo} bytes)"
        )
    n = max(2, round(math.log2(hi / lo) * settings.per_octave) + 1)
    out: list[int] = []
    for x in np.geomspace(lo, hi, n):
        size = max(grain, round(x / grain) * grain)
        if not out or size > out[-1]:
            out.append(size)
    return out


def aligned(n: int, dtype=np.float64, value: float = 1.0, align: int = 4096) -> np.ndarray:
    """``n`` elements filled with ``value``, the first at an address that is a multiple
    of ``align`` bytes.

    NumPy aligns large arrays to 16 bytes only; a 64-byte vector load from an address
    16 bytes into a cache line touches two lines, and on this host that halved the
    read bandwidth in L1 (about 250 against 460 GB/s).
    """
    itemsize = np.dtype(dtype).itemsize
    raw = np.empty(n + align // itemsize, dtype=dtype)
    skip = (-raw.ctypes.data % align) // itemsize
    out = raw[skip : skip + n]
    out.fill(value)
    return out


# ------------------------------------------------------------------ timing
def _timed(calls: Sequence[Callable[[int], object]], reps: int) -> float:
    """Seconds for every call(reps) to finish, each in its own thread if several."""
    if len(calls) == 1:
        t0 = time.perf_counter()
        calls[0](reps)
        return time.perf_counter() - t0
    barrier = threading.Barrier(len(calls))
    starts = [0.0] * len(calls)
    ends = [0.0] * len(calls)
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            barrier.wait()
            starts[i] = time.perf_counter()
            calls[i](reps)
            ends[i] = time.perf_counter()
        except BaseException as exc:  # pragma: no cover (a kernel cannot fail here)
            errors.append(exc)
            barrier.abort()

    pool = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(len(calls))]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    if errors:  # pragma: no cover
        raise errors[0]
    return max(ends) - min(starts)


def calibrate(calls: Sequence[Callable[[int], object]], target_s: float) -> int:
    """Passes per call for one run of ``calls`` to take at least ``target_s`` seconds.

    The first run (which compiles the kernel, faults the pages in and fills the
    caches) is not timed.
    """
    _timed(calls, 1)
    reps = 1
    for _ in range(40):
        # the shorter of two runs: one run cut by the scheduler must not stop the search
        t = min(_timed(calls, reps), _timed(calls, reps))
        if t >= target_s:
            break
        reps = max(reps * 2, math.ceil(reps * 1.2 * target_s / max(t, 1e-7)))
        reps = min(reps, 1 << 40)
    return reps


def trial_rates(
    calls: Sequence[Callable[[int], object]],
    amount: Callable[[int], int],
    target_s: float,
    trials: int,
) -> list[float]:
    """``amount(reps) / seconds`` of each of ``trials`` timed runs of ``calls``,
    ``reps`` from :func:`calibrate`."""
    reps = calibrate(calls, target_s)
    return [amount(reps) / _timed(calls, reps) for _ in range(trials)]


def best_rate(
    calls: Sequence[Callable[[int], object]],
    amount: Callable[[int], int],
    target_s: float,
    trials: int,
) -> float:
    """Best of :func:`trial_rates`."""
    return max(trial_rates(calls, amount, target_s, trials))


# ------------------------------------------------------------------ measurement
def _loadavg() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:  # pragma: no cover
        return None


def below_single_core(
    compute: Sequence[ComputeFigure], threads: int, load: float | None = None
) -> list[str]:
    """Notes for each all-core figure that came out below its single-core one.

    ``threads`` threads on distinct cores can only add flops, so a lower all-core
    figure means the cores were not all ours: other processes ran on them (``load``,
    the 1-minute load average before the measurement, says how busy the host was).
    """
    one = {(f.variant, f.precision): f.gflops for f in compute if f.threads == 1}
    out = []
    for f in compute:
        single = one.get((f.variant, f.precision))
        if f.threads == threads and single is not None and f.gflops < single:
            busy = f" (load average {load:.2f} before measuring)" if load is not None else ""
            out.append(
                f"{f.precision} {f.variant}: {threads} threads measured {f.gflops:.4g} GFLOP/s, "
                f"below 1 thread's {single:.4g}: the other cores were busy with other "
                f"processes{busy}, so the all-core figure is a lower bound; measure again "
                "on a quiet machine"
            )
    return out


def measure_compute(
    variant: str, precision: str, threads: int, settings: Settings
) -> ComputeFigure:
    """GFLOP/s of a compute variant: the best of its kernels, on ``threads`` threads."""
    dt = PRECISIONS[precision]
    best, best_kernel, best_trials = 0.0, "", []
    for name in K.COMPUTE_VARIANTS[variant]:
        fn, _, vector = K.COMPUTE_KERNELS[name]
        n = settings.compute_elements if vector else 8
        xs = [aligned(n, dt, 0.5) for _ in range(threads)]
        a, c = dt(0.5), dt(0.5)
        calls = [lambda reps, x=x, fn=fn, a=a, c=c: fn(x, reps, a, c) for x in xs]
        rates = trial_rates(
            calls,
            lambda reps, n=n, name=name: threads * K.compute_flops(name, n, reps),
            settings.target_s,
            settings.trials,
        )
        if max(rates) > best:
            best, best_kernel, best_trials = max(rates), name, rates
    return ComputeFigure(
        variant,
        precision,
        threads,
        best / 1e9,
        best_kernel,
        tuple(round(r / 1e9, 3) for r in best_trials),
    )


def measure_bandwidth(
    kernel: str,
    threads: int,
    sizes: Sequence[int],
    settings: Settings,
    progress: Callable[[int], object] | None = None,
) -> list[float]:
    """Best GB/s of a bandwidth kernel at each working set (bytes, all arrays and threads)."""
    trials = bandwidth_trials(kernel, threads, sizes, settings, progress)
    return [max(col) for col in zip(*trials, strict=True)]


def bandwidth_trials(
    kernel: str,
    threads: int,
    sizes: Sequence[int],
    settings: Settings,
    progress: Callable[[int], object] | None = None,
) -> list[list[float]]:
    """GB/s of a bandwidth kernel in each trial (rows) at each working set (columns).

    The trials are passes over the whole sweep (not repeats of one point in a row),
    so a burst of activity from a neighbour spoils one pass at a few points, and
    another pass measures them again.
    """
    narrays = K.BANDWIDTH_KERNELS[kernel]
    big = max(sizes) // POOL_FRACTION
    per_thread = max(sizes) // threads
    pools = [aligned(per_thread // 8) for _ in range(threads)]
    points = []
    for size in sizes:
        m = size // (threads * narrays * 8)  # elements per array and thread
        if size > big:
            arrays = [[pool[j * m : (j + 1) * m] for j in range(narrays)] for pool in pools]
        else:  # small working sets in their own arrays, not in the big pool (see POOL_FRACTION)
            arrays = [[aligned(m) for _ in range(narrays)] for _ in range(threads)]
        calls = [lambda reps, arr=arr: K.run_bandwidth(kernel, arr, reps) for arr in arrays]
        points.append((calls, m, 0))
    out = []
    for trial in range(settings.trials):
        row = []
        for i, (calls, m, reps) in enumerate(points):
            if trial == 0:
                reps = calibrate(calls, settings.target_s)
                points[i] = (calls, m, reps)
            t = _timed(calls, reps)
            row.append(threads * K.bandwidth_bytes(kernel, m, reps) / t / 1e9)
            if progress is not None:
                progress(1)
        out.append(row)
    return out


def plan(settings: Settings, host: HostReport, threads: int, available: int | None) -> dict:
    """The sweeps' working sets per (kernel, threads), and how many points in all."""
    llc = host.machine.hierarchy.levels[-1].size
    counts = sorted({1, threads})
    sizes = {
        (k, t): sweep_sizes(settings, llc, t, K.BANDWIDTH_KERNELS[k], available)
        for t in counts
        for k in settings.kernels
    }
    compute = len(K.COMPUTE_VARIANTS) * len(PRECISIONS) * len(counts)
    points = compute + settings.trials * sum(map(len, sizes.values()))
    return {"sizes": sizes, "threads": counts, "points": points}


def measure_host(
    settings: Settings | str = "full",
    *,
    host: HostReport | None = None,
    threads: int | None = None,
    progress: Callable[[int], object] | None = None,
    sysfs: str | Path = SYSFS_CACHE,
) -> Measurement:
    """Measure the host's compute ceilings and bandwidth plateaus.

    Parameters
    ----------
    settings : Settings or str
        A :data:`PRESETS` name ("full", "quick", "tiny") or settings.
    host : HostReport, optional
        The detected hierarchy (default: :func:`~hroof.machine.host.read_host`).
    threads : int, optional
        Threads of the all-core figures (default: the CPUs this process may use).
    progress : callable, optional
        Called with 1 after each compute figure and each timed sweep point.
    sysfs : str or Path
        Where to read which CPUs share each cache.

    Returns
    -------
    Measurement
    """
    if isinstance(settings, str):
        if settings not in PRESETS:
            raise ConfigError(
                f"unknown measurement preset {settings!r}; known: {', '.join(PRESETS)}"
            )
        settings = PRESETS[settings]
    host = host or read_host(sysfs)
    threads = threads or usable_cores()
    if threads < 1:
        raise ConfigError(f"threads must be at least 1, got {threads}")
    available = mem_available()
    t0 = time.perf_counter()
    date = datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    todo = plan(settings, host, threads, available)
    tick = progress or (lambda n: None)
    load = _loadavg()
    compute = []
    shared = sharing(sysfs)
    memory = host.machine.memory_name
    sweeps = []
    # one thread count at a time, compute then sweeps: the one-thread figures are all
    # measured before any second thread has run
    for t in todo["threads"]:
        for precision in PRECISIONS:
            for variant in K.COMPUTE_VARIANTS:
                compute.append(measure_compute(variant, precision, t, settings))
                tick(1)
        caps = shared_capacities(host, t, shared)
        for kernel in settings.kernels:
            sizes = todo["sizes"][(kernel, t)]
            trials = bandwidth_trials(kernel, t, sizes, settings, tick)
            gbs = [max(col) for col in zip(*trials, strict=True)]
            levels = level_figures(sizes, gbs, caps, memory, trials=trials)
            plateaus = tuple(f.plateau for f in levels if f.plateau is not None)
            sweeps.append(
                Sweep(kernel, t, tuple(sizes), tuple(gbs), plateaus, tuple(levels), tuple(caps),
                      tuple(tuple(round(v, 3) for v in row) for row in trials))
            )  # fmt: skip
    notes = []
    if threads > 1:
        notes += below_single_core(compute, threads, load)
    if available is None:
        notes.append("MemAvailable unreadable: the sweep was not capped by free memory")
    import llvmlite
    import numba

    import hroof

    versions = {
        "hroof": hroof.__version__,
        "numba": numba.__version__,
        "llvmlite": llvmlite.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
    }
    return Measurement(
        date=date,
        settings=settings,
        host=host,
        threads=threads,
        compute=tuple(compute),
        sweeps=tuple(sweeps),
        elapsed_s=time.perf_counter() - t0,
        mem_available=available,
        versions=versions,
        notes=tuple(notes),
    )


__all__ = [
    "PRECISIONS",
    "PRESETS",
    "ComputeFigure",
    "Measurement",
    "Settings",
    "Sweep",
    "bandwidth_trials",
    "below_single_core",
    "best_rate",
    "measure_host",
    "mem_available",
    "sweep_sizes",
    "trial_rates",
    "usable_cores",
]
