"""Progress on stderr for long runs, drawn by ``tqdm``.

:class:`Progress` counts work items (trace accesses by default, or points of a
sweep) and is callable, so it plugs straight into the ``progress`` callback of
:func:`hroof.cachesim.simulate`::

    with Progress(total=count_accesses(path)) as bar:
        result = simulate(h, iter_trace(path), progress=bar)

It draws only when stderr is a terminal, or when the environment variable
``HROOF_PROGRESS=1`` forces it (``HROOF_PROGRESS=0`` switches it off, as does
``--quiet``), and never writes to stdout. On a terminal it waits
:attr:`Progress.delay` seconds before the first draw, so quick runs leave no
trace. A successful run leaves the final line (count, rate, elapsed time); a run
that fails clears it, so an error message starts on a clean line.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import TextIO

__all__ = ["ENV_VAR", "Progress", "format_duration", "shown_on"]

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


def shown_on(stream: TextIO) -> bool:
    """Whether progress and notices are shown on ``stream`` (a terminal, or
    ``HROOF_PROGRESS=1``; never with ``HROOF_PROGRESS=0``)."""
    return _enabled_by_default(stream)[0]


class Progress:
    """A one-line progress display on stderr (a ``tqdm`` bar).

    Parameters
    ----------
    total : int or None
        Items expected; with it the bar shows a percentage and the time left,
        without it only the count and the rate.
    label : str
        Text in front of the bar.
    unit : str
        Name of the items counted, plural ("accesses", "points").
    enabled : bool or None
        Draw at all. None (the default) decides from ``HROOF_PROGRESS`` and
        whether the stream is a terminal; False draws nothing whatever the
        environment says (``--quiet``).
    stream : file-like or None
        Where to draw; ``sys.stderr`` (looked up when the bar is created) by default.
    interval : float
        Least time between two redraws, in seconds.
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
        self.delay = 0.0 if forced else float(delay)
        self.done = 0
        self._closed = not self.enabled  # disabled: no bar, and tqdm is never imported
        if not self.enabled:
            return
        from tqdm import tqdm

        counts = "{n:,}/{total:,} " if self.total is not None else "{n:,} "
        self._bar = tqdm(
            total=self.total,
            desc=label,
            unit=f" {unit}",
            unit_scale=True,
            file=self.stream,
            mininterval=float(interval),
            delay=self.delay,
            dynamic_ncols=True,
            leave=True,
            bar_format=(
                "{desc} {percentage:3.0f}%|{bar:24}| " + counts + f"{unit} "
                "[{elapsed}<{remaining}, {rate_fmt}{postfix}]"
                if self.total is not None
                else "{desc}  " + counts + f"{unit} [{{elapsed}}, {{rate_fmt}}{{postfix}}]"
            ),
        )

    def __call__(self, n: int) -> None:
        """Count ``n`` more items (the ``progress(n)`` callback of ``simulate``)."""
        self.update(n)

    def update(self, n: int) -> None:
        """Count ``n`` more items; the bar redraws when its interval has passed."""
        self.done += int(n)
        if not self._closed:
            try:
                self._bar.update(int(n))
            except (OSError, ValueError):  # a closed or broken stderr must not end the run
                self._bar.disable = True

    def status(self, text: str) -> None:
        """Show ``text`` after the counts (e.g. "running 2, failed 0"), at the next redraw."""
        if not self._closed:
            with contextlib.suppress(OSError, ValueError):
                self._bar.set_postfix_str(text, refresh=False)

    def close(self, ok: bool = True) -> None:
        """End the display: the final line stays if ``ok``, else the line is cleared.
        Calling it again does nothing."""
        if self._closed:
            return
        self._closed = True
        self._bar.leave = ok
        with contextlib.suppress(OSError, ValueError):  # a stderr closed under us
            self._bar.close()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close(ok=exc_type is None)
