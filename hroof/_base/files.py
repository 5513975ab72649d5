"""Writing output files whole or not at all.

Every file hroof writes (results, reports, figures, machine files, traces) goes to a
hidden temporary file beside its target, ``.NAME.PID.partial.EXT`` (one per process, so
two runs writing the same target never share one), and is renamed over the target only
once complete; on any error or Ctrl-C the temporary file is removed, so no
half-written file is ever left that looks complete. An ``OSError`` becomes a one-line
:class:`~hroof._base.errors.HroofError` naming the target.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from hroof._base.errors import HroofError

#: The figure formats hroof writes, told from the file name's suffix.
FIGURE_FORMATS = ("png", "svg", "pdf")


def partial_path(path: Path) -> Path:
    """The temporary file :func:`replace_with` writes ``path`` through in this process
    (same directory, hidden, the process id in its name, same suffix so writers that go by
    the suffix still do)."""
    return path.with_name(f".{path.stem}.{os.getpid()}.partial{path.suffix}")


def replace_with(path: str | Path, write: Callable[[Path], object]) -> Path:
    """Call ``write(tmp)`` on the temporary file of ``path``, then rename it to ``path``.

    The directory is created if missing. On any exception the temporary file is removed;
    an ``OSError`` is raised again as ``HroofError("cannot write PATH: reason")``.
    """
    path = Path(path)
    tmp = partial_path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write(tmp)
        os.replace(tmp, path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise HroofError(f"cannot write {path}: {exc.strerror or exc}") from None
        raise
    return path


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` whole, flushed to disk before the rename."""

    def write(tmp: Path) -> None:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())

    return replace_with(path, write)


def figure_format(path: str | Path, formats: Sequence[str] = FIGURE_FORMATS,
                  flag: str | None = None) -> str:  # fmt: skip
    """The format of a figure file from its suffix; a HroofError when it is not one of
    ``formats`` (``flag``, e.g. ``"--plot"``, names the option in the message)."""
    ext = Path(path).suffix.lower().lstrip(".")
    if ext not in formats:
        names = [f".{f}" for f in formats]
        choices = " or ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
        where = f"{flag} {path}" if flag else str(path)
        raise HroofError(f"{where}: a figure file must end in {choices}")
    return ext


def save_figure(
    fig, path: str | Path, *, dpi: int = 110, formats: Sequence[str] = FIGURE_FORMATS,
    flag: str | None = None,
) -> Path:  # fmt: skip
    """Save a matplotlib figure to ``path`` whole, in the format its suffix names."""
    ext = figure_format(path, formats, flag)
    return replace_with(path, lambda tmp: fig.savefig(tmp, dpi=dpi, format=ext))


__all__ = [
    "FIGURE_FORMATS",
    "figure_format",
    "partial_path",
    "replace_with",
    "save_figure",
    "write_text",
]
