"""Text output of the command line: tables laid out for a terminal, numbers for people.

Every command prints through :func:`emit` (a complete result, once) and lays its
tables out with :class:`Col` and :func:`text_table`.
"""

from __future__ import annotations

import shutil
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

from hroof._base.units import format_bytes, format_size

__all__ = [
    "REPORT_WIDTH",
    "Col",
    "ai_text",
    "assignments_text",
    "emit",
    "format_bytes",
    "format_size",
    "header_block",
    "int_text",
    "pct_text",
    "term_width",
    "text_table",
]

#: Width the report is laid out for when stdout is not a terminal.
REPORT_WIDTH = 100


def assignments_text(params: dict) -> str:
    """``KEY=VALUE`` words as a user would type them (booleans lower case)."""
    return " ".join(
        f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in params.items()
    )


def int_text(n: int) -> str:
    return f"{n:,}"


def pct_text(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def ai_text(ai: float | None) -> str:
    """Arithmetic intensity (FLOP/byte) with about three significant digits."""
    if ai is None:
        return "-"
    if ai >= 100:
        return f"{ai:,.0f}"
    if ai >= 10:
        return f"{ai:.1f}"
    if ai >= 1:
        return f"{ai:.2f}"
    return f"{ai:.3f}"


@dataclass(frozen=True)
class Col:
    """One table column: header (``\\n`` for two lines), alignment, spaces before it."""

    header: str
    align: str = ">"
    gap: int = 2


def text_table(cols: Sequence[Col], rows: Sequence[Sequence[str]]) -> list[str]:
    """Lay out a table: headers bottom-aligned, each column as wide as its widest cell."""
    heads = [c.header.split("\n") for c in cols]
    nhead = max(len(h) for h in heads)
    heads = [[""] * (nhead - len(h)) + h for h in heads]
    widths = [max([len(x) for x in heads[i]] + [len(r[i]) for r in rows]) for i in range(len(cols))]

    def line(cells: Sequence[str]) -> str:
        out = []
        for i, (col, cell) in enumerate(zip(cols, cells, strict=True)):
            gap = " " * col.gap if i else ""
            out.append(gap + (cell.rjust(widths[i]) if col.align == ">" else cell.ljust(widths[i])))
        return "".join(out).rstrip()

    return [line([h[k] for h in heads]) for k in range(nhead)] + [line(r) for r in rows]


def term_width() -> int:
    """Columns to lay the report out for: the terminal's if stdout is one, else 100."""
    try:
        if sys.stdout.isatty():
            return max(60, shutil.get_terminal_size((REPORT_WIDTH, 24)).columns)
    except (AttributeError, ValueError):
        pass
    return REPORT_WIDTH


def header_block(items: Sequence[tuple[str, str]], width: int) -> list[str]:
    """``key  value`` lines, values wrapped and indented under each other."""
    keyw = max(len(k) for k, _ in items) + 2
    out = []
    for key, value in items:
        for i, part in enumerate(value.split("\n")):
            wrapped = textwrap.wrap(part, max(20, width - keyw), break_on_hyphens=False) or [""]
            for j, text in enumerate(wrapped):
                label = key if i == 0 and j == 0 else ""
                out.append(f"{label:<{keyw}}{text}".rstrip())
    return out


def emit(text: str) -> None:
    """Write a complete result to stdout."""
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    sys.stdout.flush()
