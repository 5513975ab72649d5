"""Output directories written as a unit, signals that clean up, and worker pools that stop.

:func:`output_dir` stages every file of a command's ``--out DIR`` in a per-process hidden
directory beside ``DIR`` (``.DIR.PID.partial``) and moves them into ``DIR`` only once all
are written, under an exclusive lock (``flock`` on ``DIR`` itself), so two runs writing the
same ``DIR`` never mix their files and a failed or interrupted run leaves ``DIR`` as it was. Staging
directories of processes that no longer exist (a ``kill -9``) are removed by the next run.

:func:`signals_raise` turns SIGTERM and SIGHUP into :class:`Terminated` (a
``KeyboardInterrupt``), so the same cleanup that follows Ctrl-C (every
:func:`hroof._base.files.replace_with` temporary, every staging directory) runs on every
signal a user or a batch system sends.

:func:`worker_init` makes worker processes ignore the terminal's Ctrl-C; the parent alone
handles it and :func:`kill_pool` kills every worker at once, so an interrupt prints one
line and leaves no worker behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
from collections.abc import Iterable, Iterator
from pathlib import Path

from hroof._base.errors import HroofError


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where the program is so that every cleanup runs."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise(signum, frame):
    raise Terminated(signum)


#: Seconds :func:`_redeliver` waits before it sends a lost interrupt again.
REDELIVER_S = 0.05


def _redeliver(args, previous) -> None:
    """``sys.unraisablehook`` within :func:`signals_raise`: an interrupt that landed where
    Python cannot raise it (a weakref callback, such as an import lock's cleanup, or a
    ``__del__``) would be printed as "Exception ignored" with a traceback, and lost. Send
    the signal again instead, from another thread a moment later (sent from here, its
    handler would raise inside this hook, and be lost the same way): the main thread's
    handler raises it at the next point the program can act on, and the usual one-line
    message and cleanup follow."""
    exc = args.exc_value
    if isinstance(exc, KeyboardInterrupt):
        signum = getattr(exc, "signum", signal.SIGINT)
        if callable(signal.getsignal(signum)):  # a Python handler, that raises
            import threading

            # To the main thread itself, so that a wait it is in ends (EINTR).
            main = threading.main_thread().ident
            again = threading.Timer(REDELIVER_S, signal.pthread_kill, (main, signum))
            again.daemon = True
            again.start()
        return
    previous(args)


@contextlib.contextmanager
def signals_raise() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise :class:`Terminated` in the main thread,
    and an interrupt raised where Python cannot raise it is sent again (:func:`_redeliver`);
    the previous handlers come back after it (a library caller's own are kept)."""
    import sys

    old = {}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(ValueError, OSError):  # not the main thread
            old[sig] = signal.signal(sig, _raise)
    previous = sys.unraisablehook
    sys.unraisablehook = lambda args: _redeliver(args, previous)
    try:
        yield
    finally:
        sys.unraisablehook = previous
        for sig, handler in old.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(sig, handler)


# ---------------------------------------------------------------------------- directories
def _staging(out: Path, pid: int | None = None) -> Path:
    return out.parent / f".{out.name}.{os.getpid() if pid is None else pid}.partial"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_stale(out: Path) -> None:
    """Remove staging directories of ``out`` whose process is gone."""
    with contextlib.suppress(OSError):
        for p in out.parent.glob(f".{out.name}.*.partial"):
            pid = p.name[len(out.name) + 2 : -len(".partial")]
            if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
                shutil.rmtree(p, ignore_errors=True)


@contextlib.contextmanager
def output_dir(out: str | Path) -> Iterator[Path]:
    """Stage the files of ``out`` and move them in together on success.

    Yields the staging directory; write every file into it (through
    :mod:`hroof._base.files` as usual). On success every file (and folder) it holds
    replaces its namesake in ``out``, all under one lock; files of ``out`` the run did
    not write are kept. On any exception, Ctrl-C or signal the staging directory is
    removed and ``out`` is untouched. Error messages name ``out``, never the staging
    directory.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise HroofError(f"--out {out}: exists and is not a directory")
    stage = _staging(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale(out)
        shutil.rmtree(stage, ignore_errors=True)
        stage.mkdir()
    except OSError as exc:
        raise HroofError(f"cannot write {out}: {exc.strerror or exc}") from None
    try:
        try:
            yield stage
        except HroofError as exc:
            raise type(exc)(str(exc).replace(str(stage), str(out))) from None
        _commit(stage, out)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _commit(stage: Path, out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd = os.open(out, os.O_RDONLY)  # the directory itself is the lock: nothing to leave
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            for item in sorted(stage.iterdir()):
                target = out / item.name
                if item.is_dir():
                    if target.exists():
                        shutil.rmtree(target)
                    shutil.move(os.fspath(item), os.fspath(target))
                else:
                    os.replace(item, target)
        finally:
            os.close(fd)
    except OSError as exc:
        raise HroofError(f"cannot write {out}: {exc.strerror or exc}") from None


def moved(paths: Iterable[Path], stage: Path, out: Path) -> list[Path]:
    """The final paths of files written under ``stage`` (for "wrote ..." messages)."""
    return [out / Path(p).relative_to(stage) if Path(p).is_relative_to(stage) else Path(p)
            for p in paths]  # fmt: skip


# ---------------------------------------------------------------------------- worker pools
def worker_init() -> None:
    """Initializer of worker processes: the terminal sends Ctrl-C to every process of the
    group, and the parent alone answers it (killing the workers with :func:`kill_pool`), so
    no worker prints a KeyboardInterrupt traceback or lingers on a lock."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def kill_pool(pool) -> None:
    """Kill every process of a ``concurrent.futures.ProcessPoolExecutor`` at once and reap
    them (on Ctrl-C, a signal or an error: never wait on a worker that holds a lock)."""
    # The executor keeps its processes in a private dict; there is no public kill.
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        with contextlib.suppress(OSError, AttributeError):
            proc.kill()
    for proc in procs:
        with contextlib.suppress(OSError, AttributeError, ValueError):
            proc.join(5)


__all__ = ["Terminated", "kill_pool", "moved", "output_dir", "signals_raise", "worker_init"]
