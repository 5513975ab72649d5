"""A small, dependency-free progress bar for long simulations, drawn on stderr.

:class:`Progress` counts work items (trace accesses by default) and redraws one
line on stderr at most :attr:`Progress.interval` seconds apart: the count, the
rate in millions per second and, when the total is known, a bar, the
percentage and the estimated time left. It is a context manager and it is
callable, so it plugs straight into the ``progress`` callback of
:func:`hroof.cachesim.simulate`::

    with Progress(total=count_accesses(path)) as bar:
        result = simulate(h, iter_trace(path), progress=bar)

It draws only when stderr is a terminal, or when the environment variable
``HROOF_PROGRESS=1`` forces it (``HROOF_PROGRESS=0`` switches it off), and
never writes to stdout. On a terminal it waits :attr:`Progress.delay` seconds
before the first draw, so quick runs leave no trace. A successful run ends the
line with the final count, rate and elapsed time and a newline; a run that
fails clears the line, so an error message starts on a clean line.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from typing import TextIO

__all__ = ["ENV_VAR", "Progress", "format_duration"]

#: Environment variable: "1" forces the bar on (even when stderr is not a
#: terminal, and from the first update), "0" forces it off.
ENV_VAR = "HROOF_PROGRESS"


def format_duration(seconds: float) -> str:
    """Format a duration as ``M:SS`` or ``H:MM:SS``.

    >>> format_duration(3.4), format_duration(75), format_duration(3725)
    ('0:03', '1:15', '1:02:05')
    """
    s = max(0, round(seconds))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def _enabled_by_default(stream: TextIO) -> tuple[bool, bool]:
    """Return ``(enabled, forced)`` from ``HROOF_PROGRESS`` and whether ``stream`` is a TTY."""
    env = os.environ.get(ENV_VAR, "").strip()
    if env == "1":
        return True, True
    if env == "0":
        return False, False
    try:
        return bool(stream.isatty()), False
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False, False


class Progress:
    """A one-line progress display on stderr.

    Parameters
    ----------
    total : int or None
        Items expected (accesses); with it the bar shows a percentage and an
        ETA, without it only the count and the rate.
    label : str
        Text in front of the bar.
    unit : str
        Name of the items counted, plural ("accesses").
    enabled : bool or None
        Draw at all. None (the default) decides from ``HROOF_PROGRESS`` and
        whether the stream is a terminal; False draws nothing whatever the
        environment says (``--quiet``).
    stream : file-like or None
        Where to draw; ``sys.stderr`` (looked up when the bar is created) by
        default.
    interval : float
        Least time between two redraws, in seconds (0.1: ten per second).
    delay : float
        Seconds to wait before the first draw, so quick runs show nothing;
        0 when ``HROOF_PROGRESS=1`` forces the bar on.

    Examples
    --------
    >>> import io
    >>> out = io.StringIO()
    >>> with Progress(total=10, stream=out, enabled=True, delay=0) as bar:
    ...     bar(4)
    ...     bar(6)
    >>> "10/10 accesses" in out.getvalue(), out.getvalue().endswith("\\n")
    (True, True)
    """

    def __init__(
        self,
        total: int | None = None,
        *,
        label: str = "simulate",
        unit: str = "accesses",
        enabled: bool | None = None,
        stream: TextIO | None = None,
        interval: float = 0.1,
        delay: float = 0.5,
    ):
        self.stream = sys.stderr if stream is None else stream
        forced = False
        if enabled is None:
            enabled, forced = _enabled_by_default(self.stream)
        self.enabled = bool(enabled)
        self.total = None if total is None else max(0, int(total))
        self.label = label
        self.unit = unit
        self.interval = float(interval)
        self.delay = 0.0 if forced else float(delay)
        self.done = 0
        self._start = time.perf_counter()
        self._last_draw = -float("inf")
        self._drawn_width = 0  # characters on the line now (0: nothing drawn)
        self._closed = False

    # ------------------------------------------------------------ counting
    def __call__(self, n: int) -> None:
        """Count ``n`` more items (the ``progress(n)`` callback of ``simulate``)."""
        self.update(n)

    def update(self, n: int) -> None:
        """Count ``n`` more items and redraw if the last draw is old enough."""
        self.done += int(n)
        if not self.enabled or self._closed:
            return
        now = time.perf_counter()
        if now - self._start < self.delay or now - self._last_draw < self.interval:
            return
        self._last_draw = now
        self._draw(self._line(now - self._start, final=False))

    def close(self, ok: bool = True) -> None:
        """End the display: final line and a newline if ``ok``, else clear the line.

        Nothing is written if the bar never drew (disabled, or the run was
        shorter than ``delay``). Calling it again does nothing.
        """
        if self._closed:
            return
        self._closed = True
        if not self._drawn_width:
            return
        if ok:
            self._draw(self._line(time.perf_counter() - self._start, final=True))
            self._write("\n")
        else:
            self._write("\r" + " " * self._drawn_width + "\r")
        self._drawn_width = 0

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close(ok=exc_type is None)

    # ------------------------------------------------------------ drawing
    def _line(self, elapsed: float, final: bool) -> str:
        rate = self.done / elapsed if elapsed > 0 else 0.0
        if self.total is not None:
            total = f"{self.total:,}"
            count = f"{self.done:>{len(total)},}/{total}"
        else:
            count = f"{self.done:,}"
        if self.unit == "accesses":
            speed = f"{rate / 1e6:.2f} M {self.unit}/s"
        else:  # a few points of a sweep a second
            speed = f"{rate:.3g} {self.unit}/s"
        parts = [f"{count} {self.unit}", speed]
        if final:
            parts.append(f"in {format_duration(elapsed)}")
        elif self.total and self.done:
            left = max(0, self.total - self.done) / rate if rate > 0 else 0.0
            parts.append(f"ETA {format_duration(left)}")
        else:
            parts.append(format_duration(elapsed))
        text = "  ".join(parts)
        if self.total is None:
            return f"{self.label}  {text}"
        frac = 1.0 if self.total == 0 else min(1.0, self.done / self.total)
        columns = shutil.get_terminal_size((100, 24)).columns
        room = columns - 1 - len(self.label) - len(text) - 10  # brackets, " 100%  ", spaces
        width = max(10, min(24, room))
        full = int(frac * width)
        bar = "#" * full + "-" * (width - full)
        return f"{self.label} [{bar}] {frac * 100:3.0f}%  {text}"

    def _draw(self, line: str) -> None:
        pad = " " * max(0, self._drawn_width - len(line))
        self._write("\r" + line + pad)
        self._drawn_width = len(line)

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed or broken stderr must not end the run
            self.enabled = False
