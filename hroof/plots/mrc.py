"""The miss-ratio-curve figure: miss ratio against log capacity, with the machine on it.

:func:`plot_mrc` draws the fully-associative LRU curve of a stream (the
sampled estimate as a dashed line with its error band), each cache level's
capacity as a vertical line with the curve's value there, the simulated
(set-associative) miss ratio of the level whose stream it is as a dot (and of
each level below it, per lookup of the same stream, as a square), the
knees as triangles and, for stencils, the layer-condition capacities as
dotted lines: where a knee sits on a layer condition, that condition is the
wall.
"""

from __future__ import annotations

import numpy as np

from hroof.plots.figure import colour as _colour
from hroof.plots.figure import figure as _figure
from hroof.roofline.mrc import MrcReport

_LABEL_BOX = {"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none",
              "alpha": 0.8}  # fmt: skip


def _size(nbytes: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            v = nbytes / scale
            return f"{v:.3g} {unit}"
    return f"{int(nbytes)} B"


def plot_mrc(report: MrcReport, *, ax=None, title: str | None = None):
    """Miss ratio against capacity (bytes, log scale) of ``report``'s curve; returns the figure."""
    curve = report.curve
    if ax is None:
        fig = _figure(7.5, 5.4)
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    top = max(int(curve.distinct_lines) * 2, max(m.bytes for m in report.levels) // curve.line * 2)
    caps = np.unique(np.round(np.geomspace(1, 4 * max(top, 4), 600)).astype(np.int64))
    mr = np.asarray(curve.miss_ratio(caps), dtype=np.float64)
    x = caps * curve.line
    label = "fully-associative LRU (exact)"
    if curve.sampled:
        s = curve.sample
        label = f"SHARDS estimate, R = {s['rate']:.3g}"
        err = s["error_estimate"]
        ax.fill_between(x, mr - err, mr + err, step="post", color="#999999", alpha=0.3, lw=0,
                        label=f"estimated error ±{err:.2g}")  # fmt: skip
        res = s["resolution_lines"] * curve.line
        ax.axvspan(curve.line, res, color="#DDDDDD", alpha=0.5, lw=0,
                   label=f"below the sample's resolution (1/R lines = {_size(res)})")  # fmt: skip
    ax.step(x, mr, where="post", color="black", lw=1.6, label=label,
            ls="--" if curve.sampled else "-")  # fmt: skip
    n = len(report.levels)
    drew_below = False
    for i, m in enumerate(report.levels):
        colour = _colour(i, n + 1)
        ax.axvline(m.bytes, color=colour, lw=1.2, alpha=0.9)
        ax.annotate(f"{m.name} {_size(m.bytes)}", (m.bytes, 0.0),
                    xycoords=("data", "axes fraction"), xytext=(3, 4),
                    textcoords="offset points", color=colour, fontsize=8,
                    bbox=_LABEL_BOX)  # fmt: skip
        ax.plot([m.bytes], [m.miss_ratio], "o", mfc="white", mec=colour, ms=6,
                label="the curve at each level's capacity" if i == 0 else None)  # fmt: skip
        if m.simulated_miss_ratio is None:
            continue
        if m.name == report.level:
            sim_label = f"{m.name} simulated ({report.curve.sets} sets, set-associative)"
            ax.plot([m.bytes], [m.simulated_miss_ratio], "o", color=colour, ms=6, label=sim_label)
        else:
            below_label = None
            if not drew_below:
                below_label = f"levels below, simulated (misses per lookup into {report.level})"
                drew_below = True
            ax.plot([m.bytes], [m.simulated_miss_ratio], "s", color=colour, ms=5,
                    label=below_label)  # fmt: skip
    for j, (name, need) in enumerate(sorted(report.layer_conditions.items(), key=lambda t: t[1])):
        ax.axvline(need, color="#0072B2", ls=":", lw=1.2)
        ax.annotate(f"layer condition {name}: {_size(need)}", (need, 0.98 - 0.04 * j),
                    xycoords=("data", "axes fraction"), xytext=(-3, 0), textcoords="offset points",
                    color="#0072B2", fontsize=8, rotation=90, va="top", ha="right",
                    bbox=_LABEL_BOX)  # fmt: skip
    if report.knees:
        kx = [k.bytes for k in report.knees]
        ky = [k.after for k in report.knees]
        ax.plot(kx, ky, "v", color="#D55E00", ms=7, label="knees (90 % of a steep drop)")
        for k in report.knees:  # the capacity each knee needs, below its triangle
            ax.annotate(_size(k.bytes), (k.bytes, k.after), xytext=(4, -13),
                        textcoords="offset points", color="#D55E00", fontsize=8,
                        bbox=_LABEL_BOX)  # fmt: skip
    ax.set_xscale("log", base=2)
    ax.set_xlim(curve.line, 4 * top * curve.line)
    low = float(mr[mr > 0].min()) if (mr > 0).any() else 0.0
    if low > 0 and mr.max() / low > 8:  # the later knees would be squashed at the bottom
        ax.set_yscale("log")
        lo, hi = low / 1.5, 1.5 * float(mr.max())
        ax.set_ylim(lo, hi)
        marks = [m * 10.0**e for e in range(-6, 1) for m in (1, 2, 5) if lo <= m * 10.0**e <= hi]
        ax.set_yticks(marks, [f"{t:g}" for t in marks])
        ax.minorticks_off()
        ylabel_scale = ", log scale"
    else:
        ax.set_ylim(0, 1.05 * max(float(mr.max()), 0.05))
        ylabel_scale = ""
    ticks = [
        2.0**k for k in range(int(np.log2(curve.line)), int(np.log2(4 * top * curve.line)) + 1, 3)
    ]
    ax.set_xticks(ticks, [_size(t) for t in ticks])
    ax.set_xlabel("cache capacity (bytes, log scale; fully associative LRU)")
    ax.set_ylabel(f"miss ratio of the stream into {report.level}{ylabel_scale}")
    src = curve.source
    what = src.get("kernel", src.get("trace", "trace"))
    ax.set_title(title or f"Miss-ratio curve: {what}, stream into {report.level}", fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    # Below the axes: inside, it would cover a knee's or a level's label on some curve.
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, fontsize=8,
              frameon=False)  # fmt: skip
    return fig


__all__ = ["plot_mrc"]
