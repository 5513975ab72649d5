"""Roofline plots (matplotlib): hierarchical, cache-aware, side by side, AI against size,
the traffic partition, and measured against predicted performance.

Every function takes results (or sweep points) and a machine, draws on ``ax``
(or a new figure, made without pyplot, so the caller's backend is left alone)
and returns the figure; nothing calls ``plt.show()``. The
axes carry units, every roof and ceiling is labelled on its line, and the
legend names each level's trajectory, so a figure reads without a manual.

Where the dots sit. A run's predicted performance is the hierarchical bound
``min(peak, min over levels of AI_level x bandwidth_level)`` (docs/architecture.md). In
the hierarchical roofline a run is one horizontal line of dots at that
performance, one dot per level at that level's AI: as the problem grows and
a level stops holding the data, that level's dot moves left. In the
cache-aware roofline (CARM) a run is one dot at the L1 AI, at the same
predicted performance; as the problem grows the dot drops at constant AI,
from under one bandwidth roof to under the next.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.ticker
import numpy as np

from hroof._base.errors import HroofError
from hroof.cachesim import SimResult
from hroof.machine.model import Machine
from hroof.plots.figure import PART_COLOURS, figure
from hroof.plots.figure import colour as level_colour
from hroof.roofline.analysis import roofline
from hroof.studies.sweep import SweepPoint, Wall
from hroof.traces import accounting_text


def _levels(machine: Machine) -> list[tuple[str, float]]:
    machine.require("a roofline plot")
    return [(name, bw) for name, bw in machine.all_bandwidths()]


def level_ais(result: SimResult) -> list[tuple[str, float | None]]:
    """(name, FLOP/byte) of every cache level and of memory, as the roofline reads them: of
    the bytes each level's bandwidth times (``LevelResult.timed_bytes``: an exclusive level's
    clean victims from above ride along)."""
    flops = result.flops
    out = [(lv.name, flops / lv.timed_bytes if flops is not None and lv.timed_bytes else None)
           for lv in result.levels]  # fmt: skip
    return [*out, (result.memory.name, result.memory.ai)]


def bound(result: SimResult, machine: Machine) -> tuple[float, str]:
    """The hierarchical bound (GFLOP/s) and the level that binds (or ``"compute"``)."""
    r = roofline(result, machine)
    return r.bound, r.binding


#: Behind the roof and ceiling labels: the dashed lines that cross a label do not strike it
#: through (half-transparent, so a line under it still shows faintly).
_LABEL_BOX = {"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none",
              "alpha": 0.8}  # fmt: skip


def _draw_roofs(ax, machine: Machine, xlim: tuple[float, float]) -> None:
    """Bandwidth roofs (diagonals up to the peak), the peak, the compute ceilings
    (dashed grey lines) and the bandwidth ceilings (dashed diagonals in their level's
    colour under its roof), each labelled on its line."""
    levels = _levels(machine)
    x = np.geomspace(*xlim, 200)
    for i, (name, bw) in enumerate(levels):
        y = np.minimum(bw * x, machine.peak)
        ax.plot(x, y, color=level_colour(i, len(levels)), lw=1.6, label=f"_{name} roof")
        xl = xlim[0] * 1.25
        ax.text(xl, bw * xl * 1.12, f"{name} {bw:g} GB/s", color=level_colour(i, len(levels)),
                fontsize=8, rotation=0, ha="left", va="bottom", bbox=_LABEL_BOX)  # fmt: skip
    ax.axhline(machine.peak, color="black", lw=1.8)
    ax.text(xlim[1] / 1.1, machine.peak * 1.05, f"peak {machine.peak:g} GFLOP/s",
            ha="right", va="bottom", fontsize=8, bbox=_LABEL_BOX)  # fmt: skip
    # A compute ceiling is flat from where it meets the highest roof (AI = ceiling / its
    # bandwidth), as in the lecture's figure: under the roofs, never above them where
    # bandwidth binds, and not drawn along the roof itself.
    # Ceilings of equal value (skylake-sp: "no FMA" and "no AVX-512") share one label.
    top = max(bw for _, bw in levels)
    same: dict[float, list[str]] = {}
    for c in machine.ceilings:
        ax.plot([max(xlim[0], c.value / top), xlim[1]], [c.value, c.value], color="grey",
                lw=1.0, ls="--", label=f"_ceiling {c.name}")  # fmt: skip
        same.setdefault(c.value, []).append(c.name)
    for value, names in same.items():
        ax.text(xlim[1] / 1.1, value * 1.05, f"{' / '.join(names)} {value:g} GFLOP/s",
                ha="right", va="bottom", fontsize=7, color="dimgrey", bbox=_LABEL_BOX)  # fmt: skip
    names = [name for name, _ in levels]
    for c in machine.bandwidth_ceilings:
        colour = level_colour(names.index(c.level), len(levels))
        y = np.minimum(c.value * x, machine.peak)
        ax.plot(x, y, color=colour, lw=1.0, ls="--", label=f"_{c.level} {c.name}")
        # labelled just under the line, each of a level's ceilings further right than the
        # one before, so the labels stack along the roof instead of on top of each other
        k = machine.ceilings_of(c.level).index(c)
        xr = xlim[0] * 1.6 * 4.0 ** (k + 1)
        ax.text(xr, c.value * xr / 1.2, f"{c.level} {c.name} {c.value:g} GB/s", color=colour,
                fontsize=7, ha="left", va="top", bbox=_LABEL_BOX)  # fmt: skip


def _axes(ax, title: str):
    if ax is None:
        ax = figure(7, 5).subplots()
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("performance (GFLOP/s)")
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    return ax.figure, ax


def _xlim(ais: list[float], machine: Machine) -> tuple[float, float]:
    ridge = [machine.peak / bw for _, bw in _levels(machine)]
    vals = [a for a in ais if a] + ridge
    return min(vals) / 4, max(vals) * 4


def _label(point: SweepPoint | SimResult, param: str | None) -> str:
    if isinstance(point, SweepPoint) and param:
        return f"{param}={point.params[param]}"
    return ""


def _annotate_runs(ax, labels: list[tuple[str, float, float, str]], *, dx: int = 4) -> None:
    """Label runs at (x, y), merging runs whose labels would overlap.

    ``labels`` holds (value, x, y, suffix) in sweep order, e.g. ("n=64", 0.29, 4.07,
    ""). Consecutive runs within 11 % in y and a factor 2 in x of the first run of their
    group (on these log axes, about the height of a 7-point label) are labelled once,
    "n=64..256"; the suffix (the binding level in the CARM) is kept when the group
    shares it.
    """
    groups: list[list[tuple[str, float, float, str]]] = []
    for item in labels:
        if groups:
            first = groups[-1][0]
            if (
                abs(np.log10(item[2] / first[2])) < 0.045
                and abs(np.log10(item[1] / first[1])) < 0.3
            ):
                groups[-1].append(item)
                continue
        groups.append([item])
    for g in groups:
        text = g[0][0]
        if len(g) > 1:
            text += ".." + g[-1][0].split("=", 1)[-1]
        suffixes = {s for *_, s in g}
        if len(suffixes) == 1 and g[0][3]:
            text += f" ({g[0][3]})"
        x = max(x for _, x, _, _ in g)
        y = float(np.sqrt(min(y for *_, y, _ in g) * max(y for *_, y, _ in g)))
        ax.annotate(text, (x, y), fontsize=7, xytext=(dx, 0), textcoords="offset points",
                    va="center")  # fmt: skip


def _with_ai(points):
    """The points whose runs have an arithmetic intensity (flops), and their results; an
    error naming the problem when none has (a roofline of a kernel without flops)."""
    kept = [p for p in points if (p.result if isinstance(p, SweepPoint) else p).flops]
    if not kept:
        raise HroofError("a roofline plot needs runs with flops (arithmetic intensity); "
                         "these have none")  # fmt: skip
    return kept, [p.result if isinstance(p, SweepPoint) else p for p in kept]


def plot_hierarchical(
    points: Sequence[SweepPoint | SimResult], machine: Machine, *, param: str | None = None,
    ax=None, title: str = "Hierarchical roofline",
):  # fmt: skip
    """One horizontal line of dots per run (a dot per level at its AI, at the run's bound);
    over a sweep, each level's dots joined as a trajectory labelled with the level."""
    points, results = _with_ai(points)
    fig, ax = _axes(ax, title)
    ais = [ai for r in results for _, ai in level_ais(r) if ai]
    xlim = _xlim(ais, machine)
    _draw_roofs(ax, machine, xlim)
    names = [n for n, _ in machine.all_bandwidths()]
    track = {n: ([], []) for n in names}
    labels = []
    for p, r in zip(points, results, strict=True):
        perf, _ = bound(r, machine)
        row = [(n, ai) for n, ai in level_ais(r) if ai]
        ax.plot([ai for _, ai in row], [perf] * len(row), color="lightgrey", lw=0.8, zorder=2)
        for n, ai in row:
            track[n][0].append(ai)
            track[n][1].append(perf)
        if param:
            labels.append((_label(p, param), max(ai for _, ai in row), perf, ""))
    _annotate_runs(ax, labels)
    for i, n in enumerate(names):
        xs, ys = track[n]
        if xs:
            ax.plot(xs, ys, "o-" if len(xs) > 1 else "o", color=level_colour(i, len(names)),
                    ms=6, lw=1.0, label=f"{n} AI", zorder=3)  # fmt: skip
    ax.set_xlim(*xlim)
    ax.legend(loc="lower right", fontsize=8)
    return fig


def plot_carm(
    points: Sequence[SweepPoint | SimResult], machine: Machine, *, param: str | None = None,
    ax=None, title: str = "Cache-aware roofline",
):  # fmt: skip
    """One dot per run at its CARM AI (flops / (L1 bytes + non-temporal store bytes), the
    CARM's single AI), at the run's predicted
    performance (the hierarchical bound): over a sweep the dots drop at constant AI from
    under one bandwidth roof to under the next, as the binding level moves down."""
    points, results = _with_ai(points)
    fig, ax = _axes(ax, title)
    carm = [roofline(r, machine).carm.ai for r in results]
    ais = [a for a in carm if a]
    xlim = _xlim(ais, machine)
    _draw_roofs(ax, machine, xlim)
    xs, ys, labels = [], [], []
    for p, r, cai in zip(points, results, carm, strict=True):
        perf, binding = bound(r, machine)
        xs.append(cai)
        ys.append(perf)
        if param:
            labels.append((_label(p, param), xs[-1], perf, binding))
    _annotate_runs(ax, labels, dx=5)
    ax.plot(xs, ys, "s", color="black", ms=6, label="run (CARM AI, hierarchical bound)",
            zorder=3)  # fmt: skip
    # Every roof read at the CARM AI (the lecture's reading), when the runs share one AI.
    if xs and max(xs) <= min(xs) * 1.01:
        levels = _levels(machine)
        ax.axvline(xs[0], color="grey", ls=":", lw=0.8, zorder=1)
        for i, (name, bw) in enumerate(levels):
            v = min(xs[0] * bw, machine.peak)
            ax.plot([xs[0]], [v], "x", color=level_colour(i, len(levels)), ms=7, mew=1.6,
                    zorder=4, label="roofs at the CARM AI" if i == 0 else None)  # fmt: skip
            ax.annotate(f"{name} {v:.3g}", (xs[0], v), xytext=(-6, 0),
                        textcoords="offset points", ha="right", va="center", fontsize=7,
                        color=level_colour(i, len(levels)), bbox=_LABEL_BOX)  # fmt: skip
    mx = [(a, p.measured["gflop_s"]) for p, a in zip(points, carm, strict=True)
          if isinstance(p, SweepPoint) and p.measured and p.measured.get("gflop_s")]  # fmt: skip
    if mx:
        ax.plot(*zip(*mx, strict=True), "o", mfc="none", mec="tab:red", ms=7, mew=1.4,
                label="measured on this host", zorder=4)  # fmt: skip
    ax.set_xlim(*xlim)
    ax.legend(loc="lower right", fontsize=8)
    return fig


def side_by_side_titles(points: Sequence[SweepPoint], machine: Machine,
                        param: str | None = None) -> tuple[str, str]:  # fmt: skip
    """Titles of the two panels, each stating only what is true of the data: whether the
    lowest level's AI moves left or right and whether the bound falls or rises with size."""
    pts = sorted(points, key=lambda p: p.params[param]) if param else list(points)
    pts = [p for p in pts if p.result.flops]
    acc = accounting_text(pts[0].result.source, short=True) if pts else ""
    if len(pts) < 2 or not param:
        return (f"Hierarchical roofline, {acc}", f"Cache-aware roofline, {acc}")
    first, last = roofline(pts[0].result, machine), roofline(pts[-1].result, machine)
    p0, p1 = pts[0].params[param], pts[-1].params[param]
    moved = [lv0.name for lv0, lv1 in zip(first.levels, last.levels, strict=True)
             if lv0.ai and lv1.ai and lv1.ai < lv0.ai / 1.25]  # fmt: skip
    appeared = [lv0.name for lv0, lv1 in zip(first.levels, last.levels, strict=True)
                if not lv0.ai and lv1.ai]  # fmt: skip
    parts = []
    if moved:
        parts.append(f"{', '.join(moved)} AI moves left")
    if appeared:
        parts.append(f"{', '.join(appeared)} traffic appears")
    left = (f"Hierarchical ({acc}): {param}={p0}..{p1}: "
            + ("; ".join(parts) if parts else "no level's AI moves left"))  # fmt: skip
    verb = "falls" if last.bound < first.bound else "rises"
    right = (f"Cache-aware: one AI; bound {verb} {first.bound:.3g} -> {last.bound:.3g} GFLOP/s, "
             f"{first.binding} -> {last.binding} binds")  # fmt: skip
    return left, right


def plot_side_by_side(points: Sequence[SweepPoint], machine: Machine, *, param: str | None = None):
    """The teaching figure: hierarchical (each level's AI) and cache-aware (one AI), with
    titles computed from the data (:func:`side_by_side_titles`)."""
    fig = figure(15, 6)
    a, b = fig.subplots(1, 2, sharey=True)
    left, right = side_by_side_titles(points, machine, param)
    plot_hierarchical(points, machine, param=param, ax=a, title=left)
    plot_carm(points, machine, param=param, ax=b, title=right)
    for ax in (a, b):
        ax.title.set_fontsize(10)
    return fig


def plot_ai_vs_size(
    points: Sequence[SweepPoint],
    param: str,
    *,
    walls: Sequence[Wall] = (),
    predicted: Sequence | None = None,
    ax=None,
):
    """Each level's AI (FLOP/byte) against the swept parameter, with the walls found
    marked between the sizes where they fall (dotted, annotated with the level and the
    condition that broke) and, if given, the walls the layer conditions predict
    (``predicted``: :class:`~hroof.roofline.layers.PredictedWall` items; dashed red, at
    the bottom). Labels of walls that share a place are stacked, never overprinted; a
    level with no traffic at a size (the steady state of a grid that fits) has no dot."""
    pts = sorted(points, key=lambda p: p.params[param])
    if ax is None:
        ax = figure(12.5, 6.5).subplots()
    fig = ax.figure
    names = [n for n, _ in level_ais(pts[0].result)]
    x = [p.params[param] for p in pts]
    markers = "osD^v<>"
    for i, n in enumerate(names):
        y = [dict(level_ais(p.result))[n] for p in pts]
        # Later levels drawn thinner on top, so a curve that coincides stays visible.
        ax.plot(x, [v if v else np.nan for v in y], marker=markers[i % len(markers)],
                color=level_colour(i, len(names)), label=f"{n} AI", lw=2.4 - 0.4 * i,
                ms=8 - 1.2 * i, mfc="none" if i % 2 else None)  # fmt: skip
        known = [(xv, v) for xv, v in zip(x, y, strict=True) if v]
        if known:  # the value itself, so no reader has to interpolate a log axis
            ax.annotate(f"{known[-1][1]:.3g}", known[-1], xytext=(8, 4 - 10 * (i % 2)),
                        textcoords="offset points", fontsize=8, va="center",
                        color=level_colour(i, len(names)))  # fmt: skip
    for k, w in enumerate(walls):
        mid = (w.before * w.after) ** 0.5
        ax.axvline(mid, color="grey", ls=":", lw=1)
        what = {"whole": "whole grid", "3D": "3D (planes)", "2D": "2D (rows)"}.get(
            w.condition or "", ""
        )
        ax.annotate(f"{w.level} wall" + (f": {what}" if what else ""), (mid, 1),
                    xycoords=("data", "axes fraction"), xytext=(0, -4 - 12 * (k % 3)),
                    textcoords="offset points", ha="center", va="top", fontsize=8,
                    bbox=_LABEL_BOX)  # fmt: skip
    mid_x = (x[0] * x[-1]) ** 0.5
    for k, pw in enumerate(predicted or ()):
        ax.axvline(pw.n + 0.5, color="tab:red", ls="--", lw=0.8)
        right = pw.n + 0.5 > mid_x  # labels on the right half run leftwards: never clipped
        ax.annotate(f"{pw.level} {pw.condition}: predicted after {param}={pw.n}",
                    (pw.n + 0.5, 0), xycoords=("data", "axes fraction"),
                    xytext=(-2 if right else 2, 4 + 12 * (k % 4)), textcoords="offset points",
                    ha="right" if right else "left", va="bottom", fontsize=8, color="tab:red",
                    bbox=_LABEL_BOX)  # fmt: skip
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(x, [str(v) for v in x])
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    # AIs often span less than a decade: label the minor ticks too, at every decade.
    ax.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    ax.yaxis.set_minor_locator(matplotlib.ticker.LogLocator(subs=(0.1, 0.15, 0.2, 0.3, 0.5,
                                                                  0.7)))  # fmt: skip
    ax.yaxis.set_minor_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    ax.tick_params(axis="y", which="minor", labelsize=8)
    ax.set_xlabel(param)
    ax.set_ylabel("arithmetic intensity (FLOP/byte)")
    acc = accounting_text(pts[0].result.source, short=True)
    ax.set_title(f"AI of each level against problem size ({acc})")
    ax.grid(True, alpha=0.3)
    ax.margins(y=0.35)
    ax.legend(fontsize=9, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return fig


def plot_traffic(points: Sequence[SweepPoint], param: str, *, ax=None):
    """Stacked bars of the traffic below each level per size, bytes per flop, by cause:
    compulsory, write-allocate, capacity, conflict and (below the last level) the
    non-temporal stores; one group of bars per size. The parts of a bar sum to the
    bytes of the level below."""
    from hroof.roofline.analysis import traffic_parts

    pts = sorted(points, key=lambda p: p.params[param])
    if ax is None:
        ax = figure(12.5, 6).subplots()
    fig = ax.figure
    nlev = len(pts[0].result.levels)
    width = 0.8 / nlev
    colours = dict(PART_COLOURS)
    if any(p.result.core.bytes_nt for p in pts):
        colours["non_temporal"] = "tab:purple"
    top = 0.0
    for li in range(nlev):
        bottoms = np.zeros(len(pts))
        for part, colour in colours.items():
            vals = []
            for p in pts:
                tb = traffic_parts(p.result, li)
                vals.append(tb.get(part, 0) / p.result.flops if tb and p.result.flops else 0.0)
            xs = np.arange(len(pts)) + (li - (nlev - 1) / 2) * width
            label = part.replace("_", "-") if li == 0 else None
            ax.bar(xs, vals, width * 0.95, bottom=bottoms, color=colour, label=label,
                   edgecolor="white", lw=0.3)  # fmt: skip
            bottoms += np.array(vals)
        top = max(top, float(bottoms.max()))
        names = [lv.name for lv in pts[0].result.levels] + [pts[0].result.memory.name]
        for j, b in enumerate(bottoms):
            ax.text(j + (li - (nlev - 1) / 2) * width, b, names[li + 1], ha="center",
                    va="bottom", fontsize=8, rotation=90)  # fmt: skip
    ax.set_ylim(0, top * 1.25 if top else 1)
    ax.set_xticks(np.arange(len(pts)), [str(p.params[param]) for p in pts])
    ax.set_xlabel(param)
    ax.set_ylabel("bytes per flop (into the labelled level)")
    acc = accounting_text(pts[0].result.source, short=True)
    ax.set_title(f"Traffic into each level from the level above, by cause ({acc})")
    ax.legend(fontsize=9, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return fig


def plot_measured(points: Sequence[SweepPoint], machine: Machine, param: str, *, ax=None):
    """Predicted bound and measured performance (GFLOP/s) against the swept parameter.

    The predicted bound is the hierarchical bound of each simulated point on the
    ``machine`` model (a line, with the level that binds written at each point);
    half of it is dashed: a measured point below that line is in the roofline's
    poor-performance region and is drawn filled red and labelled POOR. Measured
    points (``SweepPoint.measured``: the native run's median on this host) carry
    the interquartile range of their runs as an error bar (the slowest run of a
    noisy host can be far off; min..max stays in the data). Points without a measurement are
    skipped; the machine needs its bandwidths and peak.
    """
    from hroof.roofline.measured import compare

    machine.require("a measured-against-predicted plot")
    pts = sorted(points, key=lambda p: p.params[param])
    if ax is None:
        ax = figure(7, 4.5).subplots()
    fig = ax.figure
    x = [p.params[param] for p in pts]
    bounds = [bound(p.result, machine) for p in pts]
    y = [b for b, _ in bounds]
    ax.plot(x, y, "-", color="black", lw=1.6, label=f"predicted bound ({machine.name})")
    ax.plot(x, [v / 2 for v in y], "--", color="grey", lw=1.0,
            label="half the bound (poor below)")  # fmt: skip
    for xi, (b, binding) in zip(x, bounds, strict=True):
        ax.annotate(binding, (xi, b), xytext=(0, 4), textcoords="offset points", ha="center",
                    va="bottom", fontsize=7)  # fmt: skip
    good, poor = ([], [], [], []), ([], [], [], [])
    for xi, p in zip(x, pts, strict=True):
        m = p.measured
        if not m or not m.get("gflop_s"):
            continue
        c = compare(p.result, m["gflop_s"], machine)
        dest = poor if c is not None and c.poor else good
        dest[0].append(xi)
        dest[1].append(m["gflop_s"])
        dest[2].append(m["gflop_s"] - m.get("gflop_s_q1", m["gflop_s"]))
        dest[3].append(m.get("gflop_s_q3", m["gflop_s"]) - m["gflop_s"])
        if c is not None:
            ax.annotate(f"{c.ratio:.2f}" + (" POOR" if c.poor else ""), (xi, m["gflop_s"]),
                        xytext=(5, -2), textcoords="offset points", va="top", fontsize=7,
                        color="tab:red" if c.poor else "tab:blue")  # fmt: skip
    for (xs, ys, lo, hi), style, label in (
        (good, {"color": "tab:blue", "mfc": "white"}, "measured on this host (median, IQR)"),
        (poor, {"color": "tab:red", "mfc": "tab:red"}, "measured: POOR (under half the bound)"),
    ):
        if xs:
            ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o", ms=6, capsize=3, label=label, **style)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(x, [str(v) for v in x])  # every measured size labelled, not only 2^k
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    lo, hi = ax.get_ylim()
    if hi / lo < 10:  # less than a decade: a log axis would label one or two ticks at most
        ticks = [t for t in matplotlib.ticker.MaxNLocator(8).tick_values(lo, hi) if lo <= t <= hi]
        ax.yaxis.set_major_locator(matplotlib.ticker.FixedLocator(ticks))
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    elif hi / lo < 100:  # two decades or less: label some minor ticks, as plain numbers

        def minor(v, _pos, every=hi / lo >= 10):
            lead = round(v / 10 ** np.floor(np.log10(v)))
            return f"{v:g}" if not every or lead in (2, 5) else ""

        ax.yaxis.set_minor_formatter(matplotlib.ticker.FuncFormatter(minor))
    else:
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel(param)
    ax.set_ylabel("performance (GFLOP/s)")
    acc = accounting_text(pts[0].result.source, short=True)
    ax.set_title(f"Measured on this host against the predicted bound ({acc})")
    ax.margins(x=0.08)  # room for the ratio written right of the last dot
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return fig
