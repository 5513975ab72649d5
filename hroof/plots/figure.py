"""What every hroof figure shares: a pyplot-free figure, the level colours.

Figures are built with :func:`figure` (no global pyplot state, no backend switched,
nothing to close) and saved with :func:`hroof._base.files.save_figure`.
"""

from __future__ import annotations

from matplotlib.figure import Figure

#: One colour per level, L1 first, memory last (colour-blind-safe Okabe-Ito).
COLOURS = ["#0072B2", "#009E73", "#E69F00", "#CC79A7", "#56B4E9", "#D55E00", "#000000"]
PART_COLOURS = {
    "compulsory": "#56B4E9",
    "write_allocate": "#E69F00",
    "capacity": "#D55E00",
    "conflict": "#CC79A7",
}


def figure(width: float, height: float) -> Figure:
    """A figure outside pyplot: no global state, no backend switched, nothing to close;
    ``fig.savefig`` writes PNG and SVG with matplotlib's own renderers."""
    return Figure(figsize=(width, height), layout="constrained")


def colour(i: int, n: int) -> str:
    """The colour of level ``i`` of ``n`` (memory, the last, is black)."""
    return COLOURS[-1] if i == n - 1 else COLOURS[i % (len(COLOURS) - 1)]
