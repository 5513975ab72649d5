"""Where the points of a multi-point run are simulated: one interface, three engines.

Every multi-point command (``sweep``, ``spmv-blocking``, energy sweeps, ``table
--simulate``, ``study``) hands its points to an :class:`Executor` and reads the
outcomes back as they finish:

- :class:`InProcess`: one after the other in this process (``--workers 1``);
- :class:`LocalPool`: a pool of local processes, one per core by default (the
  default, and what ``--workers N`` sets);
- :class:`DaskExecutor`: the tasks of a Dask ``distributed`` scheduler, either one
  already running (``--scheduler tcp://HOST:PORT`` or ``HROOF_SCHEDULER``) or a
  ``LocalCluster`` started on 127.0.0.1 for a try-out (``--scheduler local``).

A point is a call of a module-level function (so any engine can send it) that
returns plain data: a simulation comes back as its ``hroof.result/1`` document
(:func:`simulate_point`), so a result is the same counter for counter wherever it
ran, and only the client writes the result cache. Dask is imported only on the
Dask path (``pip install "hroof[cluster]"``).

A point that raises is an :class:`Outcome` with ``error`` set; the others run on.
"""

from __future__ import annotations

import abc
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from hroof._base.errors import HroofError
from hroof._base.outdir import kill_pool, worker_init

#: Environment variable naming the Dask scheduler when ``--scheduler`` is not given.
SCHEDULER_ENV = "HROOF_SCHEDULER"
#: Environment variable: seconds to wait for a scheduler to answer (default 10).
TIMEOUT_ENV = "HROOF_SCHEDULER_TIMEOUT"
#: Dask's nanny starts workers with ``MALLOC_TRIM_THRESHOLD_=65536``, which also fixes
#: glibc's mmap threshold: every simulator's tag arrays (megabytes for a large L3) are
#: then mapped and page-faulted afresh, point after point, about 10x slower than in a
#: plain process for small points (bench/cluster.py). LocalClusters start without it;
#: docs/cluster.md says how to start ``dask worker`` without it.
_TRIM = "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_"
_ADDRESS = re.compile(r"^(tcp|tls)://[^\s/:]+:\d{1,5}$")

__all__ = [
    "SCHEDULER_ENV",
    "DaskExecutor",
    "Executor",
    "InProcess",
    "LocalPool",
    "Outcome",
    "PointsFailed",
    "open_executor",
    "simulate_point",
    "track",
    "worker_fingerprint",
]


def simulate_point(kernel: str, params: dict, hierarchy, options: dict) -> dict:
    """The task every engine runs: one kernel point simulated, as its ``hroof.result/1`` doc."""
    from hroof.studies.runs import simulate_kernel

    return simulate_kernel(kernel, hierarchy, **options, **params).to_dict()


def worker_fingerprint() -> str:
    """Run on a worker: the hash of the simulator's sources there (see the result cache)."""
    from hroof.studies import cache

    return cache.code_fingerprint()


@dataclass(frozen=True)
class Outcome:
    """One finished point: its index in the list given, its value or the error it raised."""

    index: int
    value: Any = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class PointsFailed(HroofError):
    """Some points of a multi-point run failed; the others finished (and were cached).

    The command line prints the message and exits with status 1 (not 2: the input
    was valid and the finished points are kept).
    """

    def __init__(self, failed: list[tuple[str, str]], total: int):
        self.failed = list(failed)
        self.total = total
        first = "; ".join(f"{label}: {err}" for label, err in self.failed[:3])
        more = f" (and {len(self.failed) - 3} more)" if len(self.failed) > 3 else ""
        super().__init__(f"{len(self.failed)} of {total} points failed: {first}{more}")


def _describe(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class Executor(abc.ABC):
    """Runs calls of one function over a list of argument tuples.

    Subclasses set :attr:`name` (shown to the user) and :attr:`slots` (how many
    points can run at once), and implement :meth:`run`.
    """

    name = "executor"
    slots = 1

    @abc.abstractmethod
    def run(self, fn: Callable, argsets: Sequence[tuple]) -> Iterator[Outcome]:
        """Yield one :class:`Outcome` per argument tuple, in the order they finish."""

    def close(self) -> None:  # noqa: B027 (a no-op unless an engine holds workers)
        """Release workers (a no-op for engines that hold none between runs)."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class InProcess(Executor):
    """Every point in this process, one after the other."""

    name = "in-process"

    def run(self, fn, argsets):
        for i, args in enumerate(argsets):
            try:
                value = fn(*args)
            except (KeyboardInterrupt, SystemExit):
                raise
            except Exception as exc:  # a failed point is reported, the others run on
                yield Outcome(i, error=_describe(exc))
            else:
                yield Outcome(i, value)


class LocalPool(Executor):
    """A pool of local processes (``concurrent.futures``), started per run.

    With one worker, or one point, it runs in-process (no process to start).
    """

    def __init__(self, workers: int | None = None):
        self.workers = max(1, workers or os.cpu_count() or 1)
        self.slots = self.workers
        self.name = f"{self.workers} local process{'es' if self.workers > 1 else ''}"

    def run(self, fn, argsets):
        from concurrent.futures import ProcessPoolExecutor, as_completed

        n = min(self.workers, len(argsets))
        if n <= 1:
            yield from InProcess().run(fn, argsets)
            return
        # Workers ignore Ctrl-C; on it, a signal or an early stop all are killed at once.
        pool = ProcessPoolExecutor(max_workers=n, initializer=worker_init)
        try:
            futures = {pool.submit(fn, *args): i for i, args in enumerate(argsets)}
            for fut in as_completed(futures):
                exc = fut.exception()
                if exc is None:
                    yield Outcome(futures[fut], fut.result())
                else:
                    yield Outcome(futures[fut], error=_describe(exc))
        except BaseException:
            kill_pool(pool)
            raise
        pool.shutdown(wait=True)


def _check_address(address: str) -> str:
    """``tcp://HOST:PORT`` (a bare ``HOST:PORT`` means tcp)."""
    text = address.strip()
    if "://" not in text:
        text = f"tcp://{text}"
    if not _ADDRESS.match(text):
        raise HroofError(
            f"scheduler {address!r} is not an address: give tcp://HOST:PORT (e.g. "
            "tcp://10.0.0.5:8786) or 'local'"
        )
    return text


def _timeout() -> float:
    raw = os.environ.get(TIMEOUT_ENV, "").strip()
    if not raw:
        return 10.0
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if value <= 0:
        raise HroofError(f"{TIMEOUT_ENV}={raw!r} must be a number of seconds > 0")
    return value


class DaskExecutor(Executor):
    """The workers of a Dask scheduler (``address``), or of a ``LocalCluster`` (``"local"``).

    Parameters
    ----------
    address : str
        ``tcp://HOST:PORT`` of a running ``dask scheduler``, or ``"local"``.
    workers : int, optional
        With ``"local"``: worker processes (default: one per core), one thread each.
    timeout : float, optional
        Seconds to wait for the scheduler (default: ``HROOF_SCHEDULER_TIMEOUT`` or 10).

    Raises
    ------
    HroofError
        Dask not installed, a malformed address, or a scheduler that does not answer
        (the message names the address); raised here, before any point is sent.
    """

    def __init__(self, address: str, *, workers: int | None = None, timeout: float | None = None):
        try:
            import distributed
        except ImportError:
            raise HroofError(
                "--scheduler needs Dask: pip install 'hroof[cluster]' (or dask distributed)"
            ) from None
        self.cluster = None
        timeout = _timeout() if timeout is None else timeout
        if address == "local":
            import dask

            n = max(1, workers or os.cpu_count() or 1)
            with dask.config.set({_TRIM: None}):  # see _TRIM
                self.cluster = distributed.LocalCluster(
                    n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                    dashboard_address=None, silence_logs=40,
                    scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},  # loopback HTTP
                )  # fmt: skip
            self.client = distributed.Client(self.cluster, timeout=timeout)
            self.address = self.cluster.scheduler_address
        else:
            self.address = _check_address(address)
            try:
                self.client = distributed.Client(self.address, timeout=timeout)
            except (OSError, TimeoutError) as exc:
                raise HroofError(
                    f"cannot reach the Dask scheduler at {self.address} within {timeout:g} s "
                    f"({_describe(exc)})"
                ) from None
        try:
            self.client.wait_for_workers(1, timeout=timeout)
        except (OSError, TimeoutError):
            self.close()
            raise HroofError(
                f"the Dask scheduler at {self.address} has no workers (waited {timeout:g} s): "
                "start some with 'dask worker ADDRESS' (docs/cluster.md)"
            ) from None
        self._check_workers()
        threads = sum(self.client.nthreads().values())
        self.slots = max(1, threads)
        where = "LocalCluster" if self.cluster is not None else "Dask scheduler"
        self.name = f"{where} {self.address} ({threads} worker threads)"

    def _check_workers(self) -> None:
        """Every worker must run the simulator this client keys its cache with."""
        from hroof.studies import cache

        try:
            theirs = self.client.run(worker_fingerprint)
        except Exception as exc:  # hroof missing on a worker, or a worker lost meanwhile
            self.close()
            raise HroofError(
                f"the workers of {self.address} cannot run hroof ({_describe(exc)}): install "
                "the same hroof on every worker node (docs/cluster.md)"
            ) from None
        other = sorted(w for w, fp in theirs.items() if fp != cache.code_fingerprint())
        if other:
            self.close()
            raise HroofError(
                f"worker {other[0]} of {self.address} runs another version of hroof's "
                f"simulator ({len(other)} of {len(theirs)} workers): install this one there"
            )

    def run(self, fn, argsets):
        from distributed import as_completed

        if not argsets:
            return
        # one batch to the scheduler; results gathered in the background as they finish
        futures = self.client.map(fn, *zip(*argsets, strict=True), pure=False)
        index = {fut.key: i for i, fut in enumerate(futures)}
        try:
            for fut, value in as_completed(futures, with_results=True, raise_errors=False):
                i = index[fut.key]
                if fut.status == "finished":
                    yield Outcome(i, value)
                else:  # an error: (type, exception, traceback); cancelled: the exception
                    exc = value[1] if isinstance(value, tuple) else value
                    yield Outcome(i, error=_describe(exc))
        finally:
            pending = [fut for fut in futures if not fut.done()]
            if pending:
                self.client.cancel(pending)

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def open_executor(scheduler: str | None = None, *, workers: int | None = None) -> Executor:
    """The engine a command asked for.

    ``scheduler`` (``--scheduler``; else ``$HROOF_SCHEDULER``): None or empty, the
    local process pool of ``workers`` processes (one per core by default; one runs
    in-process); ``"local"``, a two-or-more-worker ``LocalCluster`` on 127.0.0.1;
    ``tcp://HOST:PORT``, a running Dask scheduler.

    >>> open_executor(None, workers=1).name
    '1 local process'
    """
    if scheduler is None:
        scheduler = os.environ.get(SCHEDULER_ENV, "").strip() or None
    if not scheduler:
        return LocalPool(workers)
    return DaskExecutor(scheduler.strip(), workers=workers)


def track(
    executor: Executor,
    fn: Callable,
    argsets: Sequence[tuple],
    progress: Callable[[int], None] | None = None,
    weights: Sequence[int] | None = None,
    failed: int = 0,
) -> Iterator[Outcome]:
    """:meth:`Executor.run`, counting on ``progress`` as points finish.

    ``progress(w)`` is called with each finished point's weight (1, or its entry of
    ``weights``) once the caller has taken the point (so a progress callback that
    interrupts never loses a finished point); a progress object with a ``status``
    method (:class:`hroof._base.progress.Progress`) also gets "running R, failed F",
    where R is the points in flight (at most the executor's slots) and F counts from
    ``failed`` (points the caller already knows failed, e.g. rejected parameters).
    """
    total = len(argsets)
    status = getattr(progress, "status", None)
    if status is not None:
        status(f"running {min(executor.slots, total)}, failed {failed}")
    for done, out in enumerate(executor.run(fn, argsets), 1):
        failed += not out.ok
        yield out  # the caller keeps the result (and caches it) before it is counted
        if status is not None:
            status(f"running {min(executor.slots, total - done)}, failed {failed}")
        if progress is not None:
            progress(weights[out.index] if weights is not None else 1)
