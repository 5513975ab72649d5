"""The SpMV register-blocking figure (:func:`hroof.studies.spmv_blocking.run_blocking`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hroof._base.errors import HroofError
from hroof.cachesim import SimResult
from hroof.plots.figure import colour, figure
from hroof.studies.spmv_blocking import BlockingPoint


def _names(points: Sequence[BlockingPoint]) -> list[str]:
    r = points[0].result
    return [lv.name for lv in r.levels] + [r.memory.name]


def _level_bytes(result: SimResult) -> list[int]:
    return [lv.bytes for lv in result.levels] + [result.memory.bytes]


def plot_blocking(points: Sequence[BlockingPoint], *, title: str | None = None):
    """Two panels against the storage (CSR, then each block size): each level's AI
    (FLOP/byte, useful flops) with the ideal AI and the fill ratio on a second axis;
    and each level's bytes per useful flop. Returns the figure."""
    if not points:
        raise HroofError("no points to plot")
    fig = figure(11, 4.6)
    ax_ai, ax_tr = fig.subplots(1, 2)
    names = _names(points)
    x = np.arange(len(points))
    labels = [p.label for p in points]
    all_ais: list[list[float]] = []
    for i, name in enumerate(names):
        ais = []
        for p in points:
            f = p.result.flops
            b = _level_bytes(p.result)[i]
            ais.append(f / b if f and b else np.nan)
        all_ais.append(ais)
        ax_ai.plot(x, ais, "o-", color=colour(i, len(names)), label=f"{name} AI")
    ideal = [p.ideal_ai if p.ideal_ai else np.nan for p in points]
    ax_ai.plot(x, ideal, "k:", marker="x", label="ideal (footprint once)")
    top = np.nanmax([*ideal, *[np.nanmax(a) for a in all_ais]])
    ax_ai.set_ylim(0, top * 1.15)
    ax_ai.set_xticks(x, labels)
    ax_ai.set_xlabel("storage (block size r x c)")
    ax_ai.set_ylabel("arithmetic intensity (FLOP/byte, useful flops)")
    ax_ai.grid(True, alpha=0.3)
    fill = ax_ai.twinx()
    fill.plot(x, [p.fill_ratio for p in points], "s--", color="grey", label="fill ratio")
    for xi, p in zip(x, points, strict=True):
        fill.annotate(f"{p.fill_ratio:.2f}", (xi, p.fill_ratio), xytext=(0, 5),
                      textcoords="offset points", ha="center", fontsize=7,
                      color="dimgrey")  # fmt: skip
    fill.set_ylabel("fill ratio (stored entries / nonzeros)")
    fill.set_ylim(bottom=0, top=max(p.fill_ratio for p in points) * 1.6)
    lines = ax_ai.get_legend_handles_labels()
    more = fill.get_legend_handles_labels()
    ax_ai.legend(lines[0] + more[0], lines[1] + more[1], fontsize=7, loc="upper center",
                 bbox_to_anchor=(0.5, -0.16), ncol=3)  # fmt: skip
    ax_ai.set_title("AI of each level: blocking pays where it rises")

    width = 0.8 / len(names)
    for i, name in enumerate(names):
        vals = []
        for p in points:
            f = p.result.flops
            vals.append(_level_bytes(p.result)[i] / f if f else 0.0)
        ax_tr.bar(x + (i - (len(names) - 1) / 2) * width, vals, width * 0.95,
                  color=colour(i, len(names)), label=name)  # fmt: skip
    ax_tr.set_xticks(x, labels)
    ax_tr.set_xlabel("storage (block size r x c)")
    ax_tr.set_ylabel("bytes moved per useful flop (bytes/FLOP)")
    ax_tr.set_title("Traffic of each level")
    ax_tr.grid(True, axis="y", alpha=0.3)
    ax_tr.legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig
