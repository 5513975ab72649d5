"""Accelerator rooflines (matplotlib, built outside pyplot): GEMM shapes and network layers
on a device's roofs.

Each function returns a :class:`matplotlib.figure.Figure`; nothing calls ``plt.show()``.
The roofs are the device's known bandwidths (memory and, when known, the L2) capped by
the peak at the precision analysed; every roof is labelled on its line with its GB/s
and its ridge point.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hroof.accel.device import Device
from hroof.accel.gemm import GemmAnalysis
from hroof.accel.mwp import MwpResult, Timeline
from hroof.accel.network import NetworkAnalysis
from hroof.plots.figure import COLOURS, figure

CLASS_STYLE = {
    "compute": ("#009E73", "o", "compute-bound"),
    "memory": ("#D55E00", "s", "memory-bound"),
    "latency": ("#CC79A7", "X", "latency-bound (< 4 blocks/SM)"),
}
TYPE_COLOURS = {
    "conv": "#0072B2",
    "pwconv": "#009E73",
    "dwconv": "#E69F00",
    "fc": "#D55E00",
    "relu": "#CC79A7",
    "bn": "#56B4E9",
    "pool": "#999999",
}


def _xlim(ais: Sequence[float], dev: Device) -> tuple[float, float]:
    ridges = [dev.peak / bw for _, bw in dev.levels]
    # at least 1.5 decades left of the lowest ridge: room for the roofs' labels along
    # their diagonals (and no crowded minor-tick labels on a narrow axis)
    lo = min(*ais, *ridges, min(ridges) / 8) / 4
    hi = max([*ais, *ridges]) * 4
    return lo, hi


def _roofs(ax, dev: Device, xlim: tuple[float, float], unit: str = "FLOP") -> None:
    x = np.geomspace(*xlim, 256)
    n = len(dev.levels)
    for i, (name, bw) in enumerate(dev.levels):
        colour = COLOURS[-1] if i == n - 1 else COLOURS[i % (len(COLOURS) - 1)]
        ax.plot(x, np.minimum(bw * x, dev.peak), color=colour, lw=1.6)
        ridge = dev.peak / bw
        ax.plot([ridge], [dev.peak], marker="|", color=colour, ms=10)
        # on the line, along it: a horizontal label next to a steep roof is crossed by
        # the roof itself and by the roofs to its right
        xl, yl = xlim[0] * 1.5, bw * xlim[0] * 1.5 * 1.3
        ax.text(
            xl,
            yl,
            f"{name} {bw:g} GB/s (ridge {ridge:.1f} {unit}/byte)",
            color=colour,
            fontsize=8,
            ha="left",
            va="bottom",
            # parallel to the roof through (xl, yl): slope yl / xl in data units there,
            # drawn at the angle that has on screen
            rotation=float(np.degrees(np.arctan(yl / xl))),
            transform_rotates_text=True,
            rotation_mode="anchor",
        )
    ax.axhline(dev.peak, color="black", lw=1.8)
    ax.text(
        xlim[1] / 1.15,
        dev.peak * 1.2,  # above the line: the points' labels hang below them
        f"peak {dev.peak:,.0f} G{unit}/s ({dev.dtype})",
        fontsize=8,
        ha="right",
        va="bottom",
    )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(*xlim)
    low = min(bw for _, bw in dev.levels) * xlim[0]
    ax.set_ylim(low / 1.5, dev.peak * 3)
    ax.set_xlabel(f"arithmetic intensity ({unit}/byte)")
    ax.set_ylabel(f"attainable performance (G{unit}/s)")
    ax.grid(True, which="major", alpha=0.3)


def gemm_figure(analyses: Sequence[GemmAnalysis], dev: Device, title: str | None = None):
    """GEMM shapes on the device's roofline: one dot per shape at its AI (unique bytes)
    and roofline bound, marked by class (compute-, memory- or latency-bound) and labelled
    ``MxNxK``."""
    if not analyses:
        raise ValueError("no GEMM shapes to plot")
    fig = figure(7.5, 5.0)
    ax = fig.add_subplot()
    xlim = _xlim([a.ai for a in analyses], dev)
    _roofs(ax, dev, xlim)
    # a family (one dimension varied) is labelled by that dimension, the others go in the
    # title: full MxNxK labels of neighbouring shapes overlap
    varied = [d for d in "mnk" if len({getattr(a, d) for a in analyses}) > 1]
    family = len(varied) == 1 and len(analyses) > 1
    seen = set()
    for a in analyses:
        colour, marker, label = CLASS_STYLE[a.klass]
        ax.plot(
            [a.ai],
            [a.attainable],
            marker=marker,
            color=colour,
            ms=8,
            ls="none",
            label=label if a.klass not in seen else "_",
        )
        seen.add(a.klass)
        tiled = next((lv for lv in a.levels if lv.traffic == "tiled"), None)
        if tiled is not None and a.binding == tiled.name:
            # the bound comes from the tiled traffic: show that AI on the roof that binds
            ax.plot([tiled.ai, a.ai], [a.attainable] * 2, color=colour, lw=0.8, ls=":")
            ax.plot(
                [tiled.ai],
                [a.attainable],
                marker=marker,
                mfc="none",
                color=colour,
                ms=7,
                ls="none",
                label=f"tiled AI on the {tiled.name} roof (binds)" if "tiled" not in seen else "_",
            )
            seen.add("tiled")
        text = f"{varied[0]}={getattr(a, varied[0])}" if family else f"{a.m}x{a.n}x{a.k}"
        ax.annotate(
            text,
            (a.ai, a.attainable),
            textcoords="offset points",
            xytext=(0, -8),  # below: the roofs' labels are above their lines
            fontsize=7,
            rotation=90,
            ha="center",
            va="top",
        )
    ax.legend(loc="lower right", fontsize=8)
    tiles = {a.tile for a in analyses}
    tile = (f"tile {analyses[0].tile[0]}x{analyses[0].tile[1]}" if len(tiles) == 1
            else "tiles chosen to fill the SMs")  # fmt: skip
    if family:
        a0 = analyses[0]
        dims = {"m": "M", "n": "N", "k": "K"}
        shape = "x".join(dims[d] if d == varied[0] else str(getattr(a0, d)) for d in "mnk")
        tile = f"{shape}, {tile}"
    ax.set_title(title or f"GEMM on {dev.name} ({dev.dtype}, {tile})", fontsize=10)
    return fig


def network_figure(na: NetworkAnalysis, dev: Device):
    """A network's layers on the device's roofline: one dot per counted layer (colour by
    type, area by flops) at its AI and bound, and a star for the whole network.

    With ``na.count == "macs"`` the roofs use the halved peak ``na.peak`` and the axes
    say op (a MAC counted once) instead of FLOP."""
    import dataclasses

    layers = [lb for lb in na.layers if lb.bound != "fused"]
    dev = dataclasses.replace(dev, peak=na.peak)
    fig = figure(7.5, 5.0)
    ax = fig.add_subplot()
    xlim = _xlim([lb.cost.ai for lb in layers] + [na.ai], dev)
    # the memory roof's label runs along the diagonal from the left edge: start the axis
    # far enough left of the lowest layer (unfused ReLUs sit at 0.12) that it ends first
    xlim = (min(xlim[0], min(lb.cost.ai for lb in layers) / 80), xlim[1])
    _roofs(ax, dev, xlim, na.unit)
    top = max(lb.cost.flops for lb in layers)
    seen = set()
    for lb in layers:
        t = lb.cost.type
        ax.scatter(
            [lb.cost.ai],
            [lb.attainable],
            s=20 + 180 * lb.cost.flops / top,
            color=TYPE_COLOURS.get(t, "grey"),
            alpha=0.75,
            edgecolor="black",
            linewidth=0.4,
            label=t if t not in seen else "_",
        )
        seen.add(t)
    ax.plot(
        [na.ai],
        [na.attainable],
        marker="*",
        color="black",
        ms=16,
        ls="none",
        label=f"{na.network}: {na.ai:.1f} {na.unit}/byte, {na.bound}-bound",
    )
    ax.annotate(
        na.network,
        (na.ai, na.attainable),
        textcoords="offset points",
        xytext=(8, -16),
        fontsize=9,
        weight="bold",
    )
    ax.legend(loc="lower right", fontsize=8, title=f"layers (area: {na.unit}s)", title_fontsize=8)
    how = f"{na.count}{'' if na.fused else ', unfused'}" + (
        ", outputs only" if na.traffic == "outputs" else ""
    )
    ax.set_title(
        f"{na.network} per layer on {dev.name} ({dev.dtype}, batch {na.batch}; {how})",
        fontsize=10,
    )
    return fig


def timeline_figure(t: Timeline, r: MwpResult | None = None):
    """The MWP/CWP replay as the article draws it: one row per warp, computation periods
    as white boxes, memory waiting periods as coloured ones, time in cycles."""
    n = len(t.compute)
    fig = figure(7.5, 0.6 + 0.32 * n)
    ax = fig.add_subplot()
    for w in range(n):
        y = n - 1 - w
        ax.broken_barh(
            [(a, b - a) for a, b in t.compute[w]],
            (y - 0.35, 0.7),
            facecolor="white",
            edgecolor="black",
            linewidth=0.8,
            label="computation period" if w == 0 else "_",
        )
        ax.broken_barh(
            [(a, b - a) for a, b in t.memory[w]],
            (y - 0.35, 0.7),
            facecolor="#56B4E9",
            edgecolor="black",
            linewidth=0.8,
            label="memory waiting period" if w == 0 else "_",
        )
    ax.set_yticks(range(n), [f"warp {n - y}" for y in range(n)])
    ax.set_xlabel("time (cycles)")
    ax.set_xlim(0, t.total * 1.02)
    ax.axvline(t.total, color="black", lw=1, ls="--")
    ax.set_ylim(-1.2, n - 0.4)
    ax.text(t.total, -0.9, f"total {t.total:g} cycles ", ha="right", va="center", fontsize=8)
    what = "" if r is None else f": MWP {r.mwp:g}, CWP {r.cwp:g}, {r.dominant} dominates"
    ax.set_title(f"MWP/CWP replay{what}", fontsize=10)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    return fig
