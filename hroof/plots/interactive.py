"""The interactive report: one self-contained HTML page (Plotly, its JavaScript inline).

:func:`interactive_html` turns a sweep over one size parameter into a page that
works offline: a slider moves through the sweep's sizes, and with it the dots
of the hierarchical roofline (one per level, each at its own AI) and of the
cache-aware one (one dot at the one AI), side by side on a shared
performance axis; the bound against size, with the walls the sweep found
(hover: the layer condition, its prediction, whether they matched); the
miss-ratio curve of one point, when the report computed one; and under each
view a sentence saying what it shows at the selected size. Every sentence,
title and hover text comes from :mod:`hroof.studies.explain`, computed from
the data; the slider swaps them with Plotly's own ``update`` method, so the
page holds no JavaScript of hroof's.

Plotly is imported here only, when a page is made (``hroof --help`` loads no
plotting library).
"""

from __future__ import annotations

import html
import math
import textwrap

from hroof._base.units import format_bytes
from hroof.machine.model import Machine
from hroof.plots.figure import colour as level_colour
from hroof.roofline.analysis import roofline
from hroof.studies import explain
from hroof.studies.sweep import SweepPoint, Wall, all_predicted_walls
from hroof.traces import accounting_text

#: The page's figure, pixels.
WIDTH, HEIGHT = 1380, 1620
#: Characters per line of a sentence under a view (about the panel's width at 12 px).
WRAP = 92
#: Row domains (paper fractions) of the two rows of views.
ROW1, ROW2 = (0.68, 0.965), (0.16, 0.45)
COL1, COL2 = (0.0, 0.4), (0.47, 0.87)
#: The bottom row's panels, each with its legend on its right.
COL3, COL4 = (0.0, 0.3), (0.57, 0.87)


def _log_ticks(rng: list[float]) -> dict:
    """Tick values 1, 2, 5 x 10^k inside a log axis's range (log10 units), written out."""
    vals = [m * 10.0**k for k in range(math.floor(rng[0]), math.ceil(rng[1]) + 1)
            for m in (1, 2, 5) if rng[0] <= math.log10(m * 10.0**k) <= rng[1]]  # fmt: skip
    return {"tickvals": vals, "ticktext": [f"{v:g}" for v in vals]}


def _wrap(text: str) -> str:
    return "<br>".join(textwrap.wrap(text, WRAP))


def _log_range(values, pad: float = 2.0) -> list[float]:
    vals = [v for v in values if v and v > 0]
    return [math.log10(min(vals) / pad), math.log10(max(vals) * pad)]


def _figure_dict(points, machine, walls, param, curve) -> tuple[dict, list[dict]]:
    """The Plotly figure as plain data, and the per-point views (sentences)."""
    pts = sorted(points, key=lambda p: p.params[param])
    rfs = [roofline(p.result, machine) for p in pts]
    views = explain.views(pts, machine, walls, param, curve)
    names = [lv.name for lv in rfs[0].levels]
    bws = [lv.bandwidth for lv in rfs[0].levels]
    colours = [level_colour(i, len(names)) for i in range(len(names))]
    peak = rfs[0].peak  # a cores = P run: the P-core figures, as its roofline reads them
    kernel = pts[0].result.source.get("kernel", "trace")
    acc = accounting_text(pts[0].result.source, short=True)
    traces: list[dict] = []

    def add(trace: dict) -> int:
        traces.append(trace)
        return len(traces) - 1

    # Rooflines: x range over every AI a dot takes, and the ridge points.
    ais = [lv.ai for r in rfs for lv in r.levels] + [r.carm.ai for r in rfs]
    ais += [peak / bw for bw in bws if bw]
    xr = _log_range(ais, 3.0)
    ys = [r.bound for r in rfs] + [lv.attainable for r in rfs for lv in r.carm.levels]
    yr = [math.log10(min(v for v in ys if v) / 2), math.log10(peak * 2)]
    grid = [10 ** (xr[0] + (xr[1] - xr[0]) * k / 160) for k in range(161)]
    for axis, show in (("", True), ("2", False)):
        for name, bw, col in zip(names, bws, colours, strict=True):
            add({"type": "scatter", "mode": "lines", "x": grid,
                 "y": [min(bw * x, peak) for x in grid], "line": {"color": col, "width": 1.6},
                 "name": f"{name} roof, {bw:g} GB/s", "legendgroup": f"roof{name}",
                 "showlegend": show, "hoverinfo": "skip", "xaxis": f"x{axis}",
                 "yaxis": f"y{axis}", "legend": "legend"})  # fmt: skip
        add({"type": "scatter", "mode": "lines", "x": [grid[0], grid[-1]], "y": [peak, peak],
             "line": {"color": "black", "width": 2}, "name": f"peak {peak:g} GFLOP/s",
             "legendgroup": "peak", "showlegend": show, "hoverinfo": "skip",
             "xaxis": f"x{axis}", "yaxis": f"y{axis}"})  # fmt: skip

    dyn_x: dict[int, list] = {}
    dyn_y: dict[int, list] = {}
    dyn_h: dict[int, list] = {}

    def dynamic(i: int, xs, yv, hv) -> None:
        dyn_x[i], dyn_y[i], dyn_h[i] = xs, yv, hv

    row = add({"type": "scatter", "mode": "lines", "x": [], "y": [], "hoverinfo": "skip",
               "line": {"color": "#bbbbbb", "width": 1}, "name": "the run: one row of dots",
               "showlegend": False, "xaxis": "x", "yaxis": "y"})  # fmt: skip
    dynamic(
        row,
        [[lv.ai for lv in r.levels if lv.ai] for r in rfs],
        [[r.bound] * sum(1 for lv in r.levels if lv.ai) for r in rfs],
        None,
    )
    for k, (name, col) in enumerate(zip(names, colours, strict=True)):
        i = add({"type": "scatter", "mode": "markers", "x": [], "y": [],
                 "marker": {"color": col, "size": 13, "line": {"color": "white", "width": 1}},
                 "name": f"{name} dot (its AI)", "uid": f"dot-{name}",
                 "hovertemplate": "%{hovertext}<extra></extra>", "xaxis": "x",
                 "yaxis": "y"})  # fmt: skip
        dynamic(
            i,
            [[r.levels[k].ai] if r.levels[k].ai else [None] for r in rfs],
            [[r.bound] for r in rfs],
            [[explain.level_hover(p, machine, param, k)] for p in pts],
        )
    marks = add(
        {
            "type": "scatter",
            "mode": "markers",
            "x": [],
            "y": [],
            "xaxis": "x2",
            "yaxis": "y2",
            "marker": {
                "symbol": "x-thin",
                "size": 12,
                "color": colours,
                "line": {"width": 2.5, "color": colours},
            },
            "name": "each roof at the CARM AI",
            "legend": "legend",
            "hoverinfo": "skip",
        }
    )  # fmt: skip (the dot's hover lists them)
    dynamic(
        marks,
        [[r.carm.ai] * len(names) for r in rfs],
        [[lv.attainable for lv in r.carm.levels] for r in rfs],
        None,
    )
    carm = add({"type": "scatter", "mode": "markers", "x": [], "y": [], "xaxis": "x2",
                "yaxis": "y2", "uid": "dot-carm", "legend": "legend",
                "marker": {"symbol": "square", "size": 14, "color": "black"},
                "name": "CARM dot (the run at<br>the CARM AI and the bound)",
                "hovertemplate": "%{hovertext}<extra></extra>"})  # fmt: skip
    dynamic(
        carm,
        [[r.carm.ai] for r in rfs],
        [[r.bound] for r in rfs],
        [[explain.carm_hover(p, machine, param)] for p in pts],
    )

    # Bound against size: the bound, each level's roof at its own AI, the walls.
    xs = [p.params[param] for p in pts]
    add({"type": "scatter", "mode": "lines+markers", "x": xs, "y": [r.bound for r in rfs],
         "xaxis": "x3", "yaxis": "y3", "legend": "legend3", "name": "bound (lowest roof)",
         "line": {"color": "black", "width": 2.5}, "marker": {"size": 8},
         "hovertext": [f"{param} = {x}: bound {r.bound:.3g} GFLOP/s, {r.binding} binds"
                       for x, r in zip(xs, rfs, strict=True)],
         "hovertemplate": "%{hovertext}<extra></extra>"})  # fmt: skip
    for k, (name, col) in enumerate(zip(names, colours, strict=True)):
        add({"type": "scatter", "mode": "lines+markers", "x": xs, "xaxis": "x3", "yaxis": "y3",
             "y": [r.levels[k].attainable for r in rfs], "legend": "legend3",
             "name": f"{name} roof at {name}'s AI", "line": {"color": col, "width": 1.2,
                                                            "dash": "dot"},
             "marker": {"size": 5}, "connectgaps": False,
             "hovertext": [f"{param} = {x}: {name} roof {_num(r.levels[k].attainable)} GFLOP/s"
                           for x, r in zip(xs, rfs, strict=True)],
             "hovertemplate": "%{hovertext}<extra></extra>"})  # fmt: skip
    add({"type": "scatter", "mode": "lines", "x": [xs[0] / 1.3, xs[-1] * 1.3], "y": [peak, peak],
         "xaxis": "x3", "yaxis": "y3", "legend": "legend3", "hoverinfo": "skip",
         "name": f"peak {peak:g} GFLOP/s", "line": {"color": "black", "width": 1}})  # fmt: skip
    b_lo = min(min(v for v in (lv.attainable for r in rfs for lv in r.levels) if v),
               min(r.bound for r in rfs))  # fmt: skip
    b_hi = max(max(v for v in (lv.attainable for r in rfs for lv in r.levels) if v), peak)
    y3 = [math.log10(b_lo / 1.6), math.log10(b_hi * 4)]  # room above the peak for the walls
    preds = all_predicted_walls(pts, machine, param)
    for j, w in enumerate(walls):
        mid = math.sqrt(w.before * w.after)
        top = 10 ** (y3[1] - 0.06 - 0.08 * (j % 4))
        add(
            {
                "type": "scatter",
                "mode": "lines",
                "x": [mid, mid],
                "y": [10 ** y3[0], top],
                "xaxis": "x3",
                "yaxis": "y3",
                "hoverinfo": "skip",
                "showlegend": False,
                "line": {"color": "grey", "width": 1, "dash": "dot"},
                "legendgroup": "walls",
            }
        )
        add({"type": "scatter", "mode": "markers+text", "x": [mid], "y": [top],
             "xaxis": "x3", "yaxis": "y3", "legend": "legend3", "legendgroup": "walls",
             "showlegend": j == 0, "name": "wall found (hover: its layer condition)",
             "marker": {"symbol": "diamond", "size": 11, "color": "grey"},
             "text": [explain.wall_words(w).replace(" wall, ", " ")],
             "textposition": "middle right" if mid < math.sqrt(xs[0] * xs[-1]) else "middle left",
             "textfont": {"size": 10}, "uid": f"wall-{j}",
             "hovertext": [explain.wall_hover(w, preds)],
             "hovertemplate": "%{hovertext}<extra></extra>"})  # fmt: skip
    inside = [pw for pw in preds if pw.n and xs[0] <= pw.n < xs[-1]]
    for j, pw in enumerate(inside):
        add({"type": "scatter", "mode": "lines", "x": [pw.n + 0.5] * 2,
             "y": [10 ** y3[0], 10 ** (y3[0] + 0.12)], "xaxis": "x3", "yaxis": "y3",
             "legend": "legend3", "legendgroup": "pred", "showlegend": j == 0,
             "name": "wall predicted by a layer condition",
             "line": {"color": "#d62728", "width": 1.5, "dash": "dash"},
             "hovertext": [f"predicted: {pw.explanation}, after {param} = {pw.n}"] * 2,
             "hovertemplate": "%{hovertext}<extra></extra>"})  # fmt: skip
    sel = add({"type": "scatter", "mode": "markers", "x": [], "y": [], "xaxis": "x3",
               "yaxis": "y3", "legend": "legend3", "name": "selected size", "hoverinfo": "skip",
               "marker": {"symbol": "circle-open", "size": 20, "color": "#1f77b4",
                          "line": {"width": 3}}})  # fmt: skip
    dynamic(sel, [[x] for x in xs], [[r.bound] for r in rfs], None)

    annotations: list[dict] = []
    shapes = [{"type": "line", "xref": "x3", "yref": "y3 domain", "x0": xs[0], "x1": xs[0],
               "y0": 0, "y1": 1,
               "line": {"color": "#1f77b4", "width": 1, "dash": "dash"}}]  # fmt: skip

    def note(x, y, text, size=12, **kw) -> int:
        annotations.append({"xref": "paper", "yref": "paper", "x": x, "y": y, "text": text,
                            "showarrow": False, "xanchor": "left", "yanchor": "top",
                            "align": "left", "font": {"size": size}, **kw})  # fmt: skip
        return len(annotations) - 1

    t_h = note(COL1[0], ROW1[1] + 0.012, "", 14, yanchor="bottom")
    t_c = note(COL2[0], ROW1[1] + 0.012, "", 14, yanchor="bottom")
    s_h = note(COL1[0], ROW1[0] - 0.05, "")
    s_c = note(COL2[0], ROW1[0] - 0.05, "")
    first, last = rfs[0], rfs[-1]
    verb = explain.trend(first.bound, last.bound)
    found = f"{len(walls)} wall{'s' if len(walls) != 1 else ''} found" if walls else "no wall"
    note(COL3[0], ROW2[1] + 0.012,
         f"<b>Bound against {param}: {verb} {first.bound:.3g} -> {last.bound:.3g} GFLOP/s, "
         f"{found}</b>", 14, yanchor="bottom")  # fmt: skip
    s_b = note(COL3[0], ROW2[0] - 0.055, "")
    s_m = None
    if curve is not None:
        _mrc_traces(add, curve, machine)
        rep = curve.report
        note(COL4[0], ROW2[1] + 0.012,
             f"<b>Miss-ratio curve: stream into {rep.level} at {param} = "
             f"{curve.point.params[param]}" + (" (SHARDS estimate)" if rep.curve.sampled
                                               else " (exact)") + "</b>", 14,
             yanchor="bottom")  # fmt: skip
        s_m = note(COL4[0], ROW2[0] - 0.055, "")

    def titles(r, p) -> tuple[str, str]:
        at = f"{param} = {p.params[param]}"
        return (f"<b>Hierarchical roofline at {at}: {r.binding} binds, {r.bound:.3g} "
                "GFLOP/s</b>",
                f"<b>Cache-aware roofline at {at}: one AI, {r.carm.ai:.3g} "
                "FLOP/byte</b>")  # fmt: skip

    steps = []
    dyn = sorted(dyn_x)
    for i, (p, r, v) in enumerate(zip(pts, rfs, views, strict=True)):
        data = {"x": [dyn_x[t][i] for t in dyn], "y": [dyn_y[t][i] for t in dyn],
                "hovertext": [dyn_h[t][i] if dyn_h[t] else None for t in dyn]}  # fmt: skip
        th, tc = titles(r, p)
        lay = {f"annotations[{t_h}].text": th, f"annotations[{t_c}].text": tc,
               f"annotations[{s_h}].text": _wrap(v["roofline"]),
               f"annotations[{s_c}].text": _wrap(v["carm"]),
               f"annotations[{s_b}].text": _wrap(v["bound"]),
               "shapes[0].x0": xs[i], "shapes[0].x1": xs[i]}  # fmt: skip
        if s_m is not None:
            lay[f"annotations[{s_m}].text"] = _wrap(v["mrc"])
        steps.append({"method": "update", "label": str(xs[i]), "args": [data, lay, dyn]})
    # The page opens at the first size: the figure holds the first step's values.
    for t in dyn:
        traces[t]["x"], traces[t]["y"] = dyn_x[t][0], dyn_y[t][0]
        if dyn_h[t]:
            traces[t]["hovertext"] = dyn_h[t][0]
    for key, value in steps[0]["args"][1].items():
        if key.startswith("annotations["):
            annotations[int(key[12 : key.index("]")])]["text"] = value

    axis = {"showline": True, "linecolor": "#444", "mirror": True, "ticks": "outside",
            "gridcolor": "#e5e5e5", "zeroline": False}  # fmt: skip
    ticks = {"xr": _log_ticks(xr), "yr": _log_ticks(yr), "y3": _log_ticks(y3)}
    layout = {
        "width": WIDTH, "height": HEIGHT, "template": "simple_white",
        "margin": {"l": 70, "r": 30, "t": 190, "b": 20, "autoexpand": False},
        "hovermode": "closest", "hoverlabel": {"align": "left", "font": {"size": 12}},
        "title": {"text": _page_title(kernel, machine, pts, rfs, param, acc), "x": 0.01,
                  "y": 0.985, "yanchor": "top", "font": {"size": 17}},
        "xaxis": {**axis, "type": "log", "domain": COL1, "range": xr, "anchor": "y",
                  **ticks["xr"], "title": {"text": "arithmetic intensity (FLOP/byte)"}},
        "yaxis": {**axis, "type": "log", "domain": ROW1, "range": yr, "anchor": "x",
                  **ticks["yr"], "title": {"text": "performance (GFLOP/s)"}},
        "xaxis2": {**axis, "type": "log", "domain": COL2, "range": xr, "anchor": "y2",
                   **ticks["xr"], "title": {"text": "arithmetic intensity (FLOP/byte)"}},
        "yaxis2": {**axis, "type": "log", "domain": ROW1, "matches": "y", "anchor": "x2",
                   **ticks["yr"], "title": {"text": "performance (GFLOP/s), shared"}},
        "xaxis3": {**axis, "type": "log", "domain": COL3, "anchor": "y3",
                   "range": [math.log10(xs[0] / 1.3), math.log10(xs[-1] * 1.3)],
                   "tickvals": xs, "ticktext": [str(x) for x in xs],
                   "title": {"text": f"{param} (problem size, log scale)"}},
        "yaxis3": {**axis, "type": "log", "domain": ROW2, "range": y3, "anchor": "x3",
                   **ticks["y3"], "title": {"text": "GFLOP/s"}},
        "legend": {"x": COL2[1] + 0.012, "y": ROW1[1], "xanchor": "left", "yanchor": "top",
                   "font": {"size": 11}, "title": {"text": "both rooflines"}},
        "legend3": {"x": COL3[1] + 0.01, "y": ROW2[1], "xanchor": "left", "yanchor": "top",
                    "font": {"size": 11}},
        "annotations": annotations,
        "shapes": shapes,
        "sliders": [{"active": 0, "steps": steps, "x": 0.0, "len": 1.0, "y": 1.035,
                     "yanchor": "bottom", "pad": {"t": 0, "b": 10},
                     "currentvalue": {"prefix": f"selected size: {param} = ",
                                      "font": {"size": 14}}}],
    }  # fmt: skip
    if curve is not None:
        layout["xaxis4"] = {**axis, "type": "log", "domain": COL4, "anchor": "y4",
                            "title": {"text": "cache capacity (bytes, log scale)"}}  # fmt: skip
        layout["yaxis4"] = {**axis, "domain": ROW2, "anchor": "x4", "rangemode": "tozero",
                            "title": {"text": f"miss ratio into {curve.report.level}"}}  # fmt: skip
        layout["legend4"] = {
            "x": COL4[1] + 0.01,
            "y": ROW2[1],
            "xanchor": "left",
            "yanchor": "top",
            "font": {"size": 11},
        }
    return {"data": traces, "layout": layout}, views


def _num(v) -> str:
    return "-" if v is None else f"{v:.3g}"


def _page_title(kernel, machine, pts, rfs, param, acc) -> str:
    """The figure's title, from the data: the kernel, the machine, the sweep and what the
    bound does across it."""
    binding = []
    for r in rfs:
        if not binding or binding[-1] != r.binding:
            binding.append(r.binding)
    cores = pts[0].result.cores
    who = html.escape(machine.name) + (f", {cores} cores" if cores > 1 else "")
    return (f"<b>{kernel} on {who}</b>, {acc}: {param} = "
            f"{pts[0].params[param]}..{pts[-1].params[param]}, binding level "
            + " -> ".join(binding) + "<br><span style='font-size:12px'>Move the slider to "
            "choose the size; hover a dot or a wall for its numbers.</span>")  # fmt: skip


def _mrc_traces(add, curve, machine) -> None:
    """The miss-ratio curve, the levels' capacities, the knees and the layer conditions."""
    import numpy as np

    rep = curve.report
    c = rep.curve
    top = max(int(c.distinct_lines) * 2, max(m.bytes for m in rep.levels) // c.line * 2)
    caps = np.unique(np.round(np.geomspace(1, 4 * max(top, 4), 300)).astype(np.int64))
    mr = np.asarray(c.miss_ratio(caps), dtype=np.float64)
    x = (caps * c.line).tolist()
    add({"type": "scatter", "mode": "lines", "x": x, "y": mr.tolist(), "xaxis": "x4",
         "yaxis": "y4", "legend": "legend4", "line": {"color": "black", "width": 2,
                                                      "shape": "hv"},
         "name": "fully-associative LRU" + (" (SHARDS estimate)" if c.sampled else ""),
         "hovertext": [f"{format_bytes(b)}: miss ratio {m:.3g}" for b, m in zip(x, mr.tolist(),
                                                                                strict=True)],
         "hovertemplate": "%{hovertext}<extra></extra>"})  # fmt: skip
    names = [lv.name for lv in machine.hierarchy.levels] + [machine.memory_name]
    for i, m in enumerate(rep.levels):
        col = level_colour(i, len(names))
        add({"type": "scatter", "mode": "lines+text", "x": [m.bytes, m.bytes], "y": [0, 1.02],
             "xaxis": "x4", "yaxis": "y4", "legend": "legend4",
             "line": {"color": col, "width": 1.4, "dash": "dash"},
             "name": f"{m.name} capacity {format_bytes(m.bytes)}", "text": ["", m.name],
             "textposition": "top center", "textfont": {"color": col},
             "hovertext": [f"{m.name} ({format_bytes(m.bytes)}): curve {m.miss_ratio:.3g}"] * 2,
             "hovertemplate": "%{hovertext}<extra></extra>"})  # fmt: skip
    if rep.knees:
        add({"type": "scatter", "mode": "markers", "xaxis": "x4", "yaxis": "y4",
             "legend": "legend4", "x": [k.bytes for k in rep.knees],
             "y": [k.after for k in rep.knees], "name": "knee (a reuse starts to hit)",
             "marker": {"symbol": "triangle-down", "size": 11, "color": "#d62728"},
             "hovertext": [f"knee at {format_bytes(k.bytes)}: {k.before:.3g} -> {k.after:.3g}"
                           for k in rep.knees],
             "hovertemplate": "%{hovertext}<extra></extra>"})  # fmt: skip
    for j, (name, v) in enumerate(sorted(rep.layer_conditions.items(), key=lambda t: t[1])):
        add({"type": "scatter", "mode": "lines", "x": [v, v], "y": [0, 1], "xaxis": "x4",
             "yaxis": "y4", "legend": "legend4", "legendgroup": "lc", "showlegend": j == 0,
             "name": "layer condition's need", "line": {"color": "grey", "dash": "dot"},
             "hovertext": [f"layer condition {name}: needs {format_bytes(v)}"] * 2,
             "hovertemplate": "%{hovertext}<extra></extra>"})  # fmt: skip


def interactive_html(
    points: list[SweepPoint],
    machine: Machine,
    walls: list[Wall],
    param: str,
    *,
    title: str,
    curve=None,
    report: str | None = "report.html",
) -> str:
    """The interactive page of a sweep over ``param``: one self-contained HTML document
    (Plotly's JavaScript inline: it works offline, with no server).

    ``curve`` is a :class:`hroof.studies.sweep_mrc.SweepCurve` (or None: no miss-ratio
    view); ``report`` the static report to link to (None: no link).
    """
    import plotly.io as pio

    machine.require("an interactive roofline")
    fig, _ = _figure_dict(points, machine, walls, param, curve)
    div = pio.to_html(fig, include_plotlyjs=True, full_html=False, div_id="hroof-interactive",
                      config={"displaylogo": False, "responsive": False})  # fmt: skip
    pts = sorted(points, key=lambda p: p.params[param])
    acc = accounting_text(pts[0].result.source)
    link = (
        f" The static report with the tables and every figure: "
        f"<a href='{html.escape(report)}'>{html.escape(report)}</a>."
        if report
        else ""
    )
    return "\n".join([
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title>",
        "<style>body{font-family:sans-serif;margin:1em 2em;line-height:1.4}"
        "p{max-width:1300px}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p>Machine: <b>{html.escape(machine.name)}</b> "
        f"({html.escape(machine.hierarchy.describe())}). Counted in {html.escape(acc)}. "
        "Units: arithmetic intensity (AI) in FLOP/byte, bandwidth in GB/s (10<sup>9</sup> "
        "bytes/s), performance in GFLOP/s, capacities in binary bytes (KiB, MiB).{link}</p>"
        .replace("{link}", link),
        "<p>Hierarchical roofline (left): each level's dot sits at that level's own AI "
        "(flops / the bytes it moves for the level above) at the run's bound, and the dot "
        "that touches its own roof is the level that binds. Cache-aware roofline (right): one "
        "dot at one AI, flops / the core's bytes, against every roof.</p>",
        div,
        "<p><small>Made by hroof with Plotly (inline).</small></p></body></html>",
    ])  # fmt: skip


__all__ = ["interactive_html"]
