"""Compile every Numba kernel hroof runs, ahead of use, in parallel processes (``hroof warm``).

A kernel compiles on its first use and is kept in Numba's on-disk cache
(``hroof._base.jit.numba_cache_dir``): the first ``hroof simulate`` on a machine pays
10-40 s for the kernels its path needs, each later one loads them in a fraction of a
second. :func:`warm` pays it for every path at once, in two phases (:data:`PHASES`):
first the groups that compile kernels no other group compiles (the access engine, the
plain level passes, the miss-ratio curves, the generators), spread over processes, each
writing its own kernels to the cache; then the paths built of them, which mostly load
from it. The later commands, the demo and the test suite then start warm.

Each group runs tiny simulations through the same entry points the commands use, so it
compiles exactly the specialisations they meet (classification on and off, one thread
and two, every kind of trace chunk), not a list kept by hand.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np

#: Tiny hierarchies, one per path of the simulator. The access engine is the same
#: compiled kernel whatever the policies and prefetchers; these reach every branch of
#: the driver that selects it.
_PLAIN = (
    {"name": "L1", "size": 256, "ways": 2},
    {"name": "L2", "size": 1024, "ways": 4, "write_allocate": False},
)
_ENGINE = {
    "split": (
        {"name": "L1", "size": 256, "ways": 2},
        {"name": "L2", "size": 1024, "ways": 4, "prefetch": "stride"},
        {"name": "L3", "size": 4096, "ways": 4, "inclusion": "exclusive"},
    ),
    "inclusive": (
        {"name": "L1", "size": 256, "ways": 2, "prefetch": "next-line"},
        {"name": "L2", "size": 1024, "ways": 4, "inclusion": "victim", "prefetch": "adjacent"},
        {"name": "L3", "size": 4096, "ways": 4, "inclusion": "inclusive"},
    ),
}


def _trace(n: int = 4096, seed: int = 0):
    rng = np.random.default_rng(seed)
    addr = rng.integers(0, 1 << 16, size=n, dtype=np.int64)
    size = rng.choice(np.array([4, 8, 64], dtype=np.int64), size=n)
    kind = rng.choice(np.array([0, 0, 1, 2], dtype=np.uint8), size=n)
    return addr, size, kind


def _feed_every_dtype(sim) -> None:
    """Feed ``sim`` the kinds of chunks the commands hand it: int64 and uint64 addresses,
    int64 and uint32 sizes (the API's and a trace file's)."""
    addr, size, kind = _trace()
    sim.feed(addr, size, kind)
    sim.feed(addr.astype(np.uint64), size.astype(np.uint32), kind)


def _feed(shapes) -> None:
    """Feed chunks of every kind to each hierarchy of ``shapes``, classification on and
    off, one thread and two (no kernel: no generator compiles here)."""
    from hroof.cachesim import Simulator, hierarchy

    for levels in shapes:
        h = hierarchy(*levels)
        for classify in (True, False):
            for threads in (1, 2):
                sim = Simulator(h, classify=classify, threads=threads)
                _feed_every_dtype(sim)
                sim.finish()


def _kernel_runs(shapes, cores: int = 1) -> None:
    """A kernel's fused generation into each hierarchy of ``shapes`` (on ``cores``)."""
    from hroof.cachesim import hierarchy
    from hroof.studies.runs import simulate_kernel

    for levels in shapes:
        h = hierarchy(*levels)
        for classify in (True, False):
            if cores > 1:
                simulate_kernel("stencil7", h, classify=classify, cores=cores, grain=64, n=6)
            else:
                for threads in (1, 2):
                    simulate_kernel("stencil7", h, classify=classify, threads=threads, n=6)


def warm_plain() -> None:
    """The plain level passes (L1's and a lower level's), the chunk checks and the flush."""
    _feed([_PLAIN])


def warm_engine() -> None:
    """The access engine, on a hierarchy that runs every level in it (nothing else
    compiles)."""
    _feed([_ENGINE["inclusive"]])


def warm_paths() -> None:
    """Every path made of the kernels the first phase compiled: the plain passes on top
    of the engine, a kernel generated straight into the simulation, several cores (plain
    and through the engine), the miss-ratio curve of a level's stream."""
    from hroof.cachesim import hierarchy
    from hroof.cachesim.mrc import miss_ratio_curve
    from hroof.traces import plan_kernel

    _feed([_ENGINE["split"]])
    shapes = [_PLAIN, _ENGINE["split"], _ENGINE["inclusive"]]
    _kernel_runs(shapes)
    _kernel_runs([_PLAIN, _ENGINE["inclusive"]], cores=2)
    for threads in (1, 2):
        miss_ratio_curve(plan_kernel("stencil7", n=6).chunks(1 << 12), hierarchy(*_PLAIN),
                         level="L2", threads=threads)  # fmt: skip


def warm_sampling() -> None:
    """Set sampling (``--sample-sets``): the sampled generators and the sampled feed."""
    from hroof.cachesim import hierarchy
    from hroof.studies.runs import simulate_kernel
    from hroof.traces import kernels

    h = hierarchy({"name": "L1", "size": 1024, "ways": 2}, {"name": "L2", "size": 4096, "ways": 4})
    names = {k.name for k in kernels()}
    for name in ("stencil7", "triad", "stencil5", "stencil27"):
        if name in names:
            for classify in (True, False):
                simulate_kernel(name, h, classify=classify, sample_sets=2, n=8)


def warm_mrc() -> None:
    """Miss-ratio curves (``hroof mrc``): one pass of stack distances, exact and sampled
    (SHARDS), on one thread and two."""
    from hroof.cachesim.mrc import miss_ratio_curve

    addr, size, kind = _trace(1 << 14)
    for threads in (1, 2):
        for rate in (None, 0.5):
            miss_ratio_curve([(addr, size, kind)], rate=rate, threads=threads)


def warm_generators() -> None:
    """Every kernel's trace generator (and the text trace readers): a few chunks each."""
    from hroof.traces import kernels, plan_kernel
    from hroof.traces.io import iter_trace

    for name in sorted(k.name for k in kernels()):
        plan = plan_kernel(name, **_small(name))
        for i, _chunk in enumerate(plan.chunks(1 << 10)):
            if i >= 2:
                break
    data = Path(__file__).resolve().parent.parent / "data" / "example.din"
    for _chunk in iter_trace(data):
        pass
    with tempfile.TemporaryDirectory() as tmp:
        # A kernel file: one compiled interpreter runs every file's loop nest.
        nest = Path(tmp) / "nest.c"
        nest.write_text(_NEST)
        for i, _chunk in enumerate(plan_kernel(str(nest), N=16).chunks(1 << 10)):
            if i >= 2:
                break
        lackey = Path(tmp) / "t.lackey"
        lackey.write_text("I  04000000,3\n L 7ff000398,8\n S 7ff000390,8\n M 0421c7f0,4\n")
        for _chunk in iter_trace(lackey):
            pass


#: A kernel file with a scalar, a 1D and a 2D array, and a triangular inner loop.
_NEST = """
double a[N][N], x[N], y[N];
double s;
for (int i = 1; i < N; ++i)
    for (int j = 0; j < i; j += 2)
        y[i] += s * a[i][j] * x[j];
"""


def _small(name: str) -> dict:
    """Small parameters for kernel ``name`` (its defaults otherwise)."""
    from hroof.traces import get_kernel

    params = {p.name for p in get_kernel(name).params}
    return {k: v for k, v in {"n": 8, "m": 8, "k": 8, "rows": 64}.items() if k in params}


#: Name -> (what it compiles, the function), in phases: the groups of a phase run in
#: processes of their own at once, each compiling kernels no other group of the phase
#: compiles; a later phase's groups start from the kernels the earlier ones cached.
PHASES: tuple[dict[str, tuple[str, Callable[[], None]]], ...] = (
    {
        "engine": ("the access engine", warm_engine),
        "plain": ("the plain level passes", warm_plain),
        "mrc": ("miss-ratio curves", warm_mrc),
        "generators": ("trace generators and readers", warm_generators),
    },
    {
        "paths": ("split hierarchies, threads, cores", warm_paths),
        "sampling": ("set sampling", warm_sampling),
    },
)
GROUPS: dict[str, tuple[str, Callable[[], None]]] = {k: v for p in PHASES for k, v in p.items()}


def _run(name: str) -> tuple[str, float]:
    t0 = time.perf_counter()
    GROUPS[name][1]()
    return name, time.perf_counter() - t0


def warm(
    groups: list[str] | None = None,
    jobs: int | None = None,
    done: Callable[[str, float], None] | None = None,
) -> dict[str, float]:
    """Compile (or load from the cache) every kernel of ``groups`` (default all of
    :data:`GROUPS`), phase by phase (:data:`PHASES`), the groups of a phase in ``jobs``
    processes (default: the CPUs this process may use); return the seconds each group
    took. ``done(name, seconds)`` is called as each ends.

    >>> sorted(GROUPS)
    ['engine', 'generators', 'mrc', 'paths', 'plain', 'sampling']
    """
    wanted = list(GROUPS) if groups is None else list(groups)
    jobs = max(1, jobs or len(os.sched_getaffinity(0)))
    took: dict[str, float] = {}
    for phase in PHASES:
        names = [n for n in phase if n in wanted]
        if not names:
            continue
        if jobs == 1 or len(names) == 1:
            for name in names:
                _, took[name] = _run(name)
                if done is not None:
                    done(name, took[name])
            continue
        with ProcessPoolExecutor(max_workers=min(jobs, len(names))) as pool:
            futures = [pool.submit(_run, name) for name in names]
            for fut in as_completed(futures):
                name, seconds = fut.result()
                took[name] = seconds
                if done is not None:
                    done(name, seconds)
    return took
