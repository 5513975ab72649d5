"""The demo and sweep reports: a summary table, figures, and a self-contained HTML page.

:func:`write_report`
turns any sweep (the demo's, or ``hroof sweep --out DIR``'s ``results.json``)
into PNG and SVG figures plus ``report.html``, with the figures embedded, the
tables, and a paragraph per figure saying what it shows.
"""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path

from hroof._base.errors import HroofError
from hroof._base.files import save_figure, write_text
from hroof.machine.model import Machine
from hroof.roofline.analysis import roofline
from hroof.studies.sweep import (
    SweepPoint,
    Wall,
    missing_walls_text,
    predicted_walls,
    sweep_walls,
    varying,
)

#: The interactive page written beside report.html (:mod:`hroof.plots.interactive`).
INTERACTIVE = "interactive.html"

#: Section headings in words.
_HEADINGS = {
    "roofline": "The same runs in the hierarchical and the cache-aware roofline",
    "ai_vs_size": "Each level's arithmetic intensity against size",
    "traffic": "Where each level's traffic comes from",
    "measured": "Measured on this host against the predicted bound",
    "mrc": "Every cache size at one point: the miss-ratio curve",
}

_MEASURED_CAPTION = (
    "Performance measured on the host that ran the sweep (the kernel run natively, one "
    "thread; the dot is the median run, the bar the middle half of the runs) beside the "
    "bound the simulation predicts on the machine model (the line, with the level that "
    "binds). Below the dashed line (half the bound) a point is POOR. Unless the sweep ran "
    "with --machine host, the model is another machine than the host."
)


def captions(points: list[SweepPoint], machine: Machine, walls: list[Wall], param: str) -> dict:
    """Each figure's caption, computed from the data: only what is true of these runs."""
    from hroof.traces import accounting_text

    pts = sorted(points, key=lambda p: p.params[param])
    acc = accounting_text(pts[0].result.source)
    out = {"measured": _MEASURED_CAPTION}
    flops = [p for p in pts if p.result.flops]
    if flops and not machine.missing():
        r0, r1 = roofline(flops[0].result, machine), roofline(flops[-1].result, machine)
        c = r1.carm
        above = [lv.name for lv in c.levels if lv.attainable and r1.bound > lv.attainable * 1.001]
        verb = "falls" if r1.bound < r0.bound else "rises"
        text = (f"Counted in {acc}. Left, hierarchical: a run is a row of dots at its bound, "
                "one dot per level at that level's own AI (flops / the bytes that level "
                f"moves). Right, cache-aware (CARM): a run is one dot at its one AI, flops / "
                "(L1 bytes + non-temporal store bytes), at the same bound; every roof is read "
                f"at that AI. From {param}={flops[0].params[param]} to "
                f"{param}={flops[-1].params[param]} the bound {verb} from {r0.bound:.3g} "
                f"GFLOP/s ({r0.binding} binds) to {r1.bound:.3g} GFLOP/s ({r1.binding} "
                "binds).")  # fmt: skip
        if above and c.ai:
            roofs = (", ".join(above[:-1]) + " and " + above[-1] + " roofs" if len(above) > 1
                     else above[0] + " roof")  # fmt: skip
            text += (f" At {param}={flops[-1].params[param]} the dot (CARM AI {c.ai:.3g}) sits "
                     f"above the {roofs} at that AI: the caches above filter the traffic, so "
                     "fewer bytes cross those levels than the core moves. The CARM cannot say "
                     "which level binds; the hierarchical roofline does, from each level's "
                     "own AI.")  # fmt: skip
        out["roofline"] = text
    if flops:
        wl = "; ".join(f"{w.level} between {param}={w.before} and {w.after}"
                       + (f" ({w.condition}, predicted after {w.predicted})" if w.condition
                          else "") for w in walls)  # fmt: skip
        found = f"Walls: {wl}." if walls else "No wall in this range."
        out["ai_vs_size"] = (f"Counted in {acc}. A level's AI falls where the level above "
                             "it stops holding data it reuses (a locality wall, dotted; the "
                             "layer conditions' predictions dashed red). A level with no "
                             f"traffic at a size has no dot. {found}")  # fmt: skip
    out["traffic"] = (f"Counted in {acc}. The bytes each level receives from the level "
                      "above per flop, split by cause: compulsory (first touch and first "
                      "writeback), write-allocate, capacity, conflict, and non-temporal "
                      "stores (from the core straight to memory); the parts sum to the "
                      "level's bytes.")  # fmt: skip
    return out


def _figures(points: list[SweepPoint], machine: Machine, walls: list[Wall], param: str):
    from hroof.plots import roofline as plots

    figs = {}
    # Rooflines and AI need flops: a kernel without (copy) gets its traffic figure only.
    flops = any(p.result.flops for p in points)
    if flops and not machine.missing():
        figs["roofline"] = plots.plot_side_by_side(points, machine, param=param)
    if flops:
        figs["ai_vs_size"] = plots.plot_ai_vs_size(
            points, param, walls=walls, predicted=predicted_walls(points, machine, param)
        )
    if points[0].result.classified:
        figs["traffic"] = plots.plot_traffic(points, param)
    if not machine.missing() and any(p.measured for p in points):
        figs["measured"] = plots.plot_measured(points, machine, param)
    return figs


def mrc_caption(sc, walls: list[Wall]) -> str:
    """The miss-ratio figure's caption, from its data: knees, layer conditions, the
    levels' simulated points, and the sweep's walls beside them."""
    from hroof._base.units import format_bytes

    rep, param = sc.report, sc.param
    at = f"{param}={sc.point.params[param]}"
    text = (f"The miss ratio of the stream into {rep.level} at {at} against the cache "
            f"capacity (log scale, fully associative LRU), {sc.how}. ")  # fmt: skip
    if rep.knees:
        text += "It falls sharply (knees, triangles) at " + ", ".join(
            f"{format_bytes(k.bytes)} ({k.before:.3f} to {k.after:.3f})" for k in rep.knees
        )
        text += "; "
    else:
        text += "It has no knee (no drop of at least 0.02 within a few doublings); "
    if rep.layer_conditions:
        text += "the layer conditions (dotted) need " + ", ".join(
            f"{n} {format_bytes(v)}" for n, v in sorted(rep.layer_conditions.items(),
                                                       key=lambda t: t[1])
        ) + "; "  # fmt: skip
    marks = [m for m in rep.levels if m.simulated_miss_ratio is not None]
    text += "the levels' capacities (solid lines) read " + ", ".join(
        f"{m.name} {m.miss_ratio:.4f} on the curve"
        + (f" and {m.simulated_miss_ratio:.4f} simulated" if m in marks else "")
        for m in rep.levels
    ) + f" (simulated below {rep.level}: misses per lookup into {rep.level}). "  # fmt: skip
    if walls:
        wl = "; ".join(f"{w.level} ({format_bytes(w.capacity)}) between {param}={w.before} and "
                       f"{w.after}" for w in walls)  # fmt: skip
        text += (f"The size sweep's walls ({wl}) are the same reuses seen from the size axis: "
                 "a level left of a knee misses the reuse behind it, and the problem size at "
                 "which a knee crosses a level's capacity is that level's wall.")  # fmt: skip
    else:
        text += "The size sweep found no wall in its range."
    return text


def write_report(
    points: list[SweepPoint],
    machine: Machine,
    out: Path,
    *,
    title: str,
    summary: list[list[str]] | None = None,
    notes: list[str] | None = None,
    mrc: str = "auto",
    mrc_at=None,
    mrc_curve=None,
) -> list[Path]:
    """PNG and SVG figures, a self-contained ``report.html`` and, when the machine has its
    roofline figures, the interactive ``interactive.html`` in ``out``.

    ``mrc`` (``auto``, ``exact``, ``sample``, ``off``) and ``mrc_at`` choose the
    miss-ratio curve drawn beside the walls (:func:`hroof.studies.sweep_mrc.sweep_curve`:
    by default the largest point, when cheap); ``mrc_curve`` passes one computed
    already (``(SweepCurve or None, note)``).
    """
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise HroofError(f"cannot write the report to {out}: {exc.strerror or exc}") from None
    vary = varying(points)
    if len(vary) != 1 or not isinstance(points[0].params[vary[0]], int):
        raise HroofError("a report needs a sweep over one integer parameter (e.g. n)")
    param = vary[0]
    walls = sweep_walls(points, machine, param)
    if mrc_curve is None:
        from hroof.studies.sweep_mrc import sweep_curve

        mrc_curve = sweep_curve(points, machine, param, mode=mrc, at=mrc_at)
    sc, mrc_note = mrc_curve
    figs = _figures(points, machine, walls, param)
    if sc is not None:  # beside the size axis's walls
        from hroof.plots.figure import figure
        from hroof.plots.mrc import plot_mrc

        at = f"{param}={sc.point.params[param]}"
        ax = figure(12.5, 6.2).add_subplot()  # the page's width, as the other figures
        fig = plot_mrc(sc.report, ax=ax, title=f"Miss-ratio curve at {at}: stream into "
                       f"{sc.report.level}" + (" (SHARDS estimate)" if sc.report.curve.sampled
                                                else ""))  # fmt: skip
        order = [k for k in figs if k in ("roofline", "ai_vs_size")]
        figs = {**{k: figs[k] for k in order}, "mrc": fig,
                **{k: v for k, v in figs.items() if k not in order}}  # fmt: skip
    written = []
    embedded = []
    for name, fig in figs.items():
        for ext in ("png", "svg"):
            written.append(save_figure(fig, out / f"{name}.{ext}"))
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
        embedded.append((name, base64.b64encode(buf.getvalue()).decode()))
    caps = captions(points, machine, walls, param)
    caps["mrc"] = mrc_caption(sc, walls) if sc is not None else ""
    # The interactive page (a slider through the sizes), beside the static one; it needs
    # the rooflines' figures, as the roofline figure does.
    interactive = "roofline" in figs
    if interactive:
        from hroof.plots.interactive import interactive_html

        live = interactive_html(points, machine, walls, param, title=f"{title}: interactive",
                                curve=sc)  # fmt: skip
        written.append(write_text(out / INTERACTIVE, live))
    else:
        (out / INTERACTIVE).unlink(missing_ok=True)
    page = _html(title, machine, points, walls, param, embedded, summary, notes or [], caps,
                 None if sc is not None else mrc_note, interactive)  # fmt: skip
    written.append(write_text(out / "report.html", page))
    # A figure this report does not have (no measurements, --mrc off) must not linger
    # from an earlier report in the same directory, beside a page that does not show it.
    for name in _HEADINGS.keys() - figs.keys():
        for ext in ("png", "svg"):
            (out / f"{name}.{ext}").unlink(missing_ok=True)
    return written


def _table_html(rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in rows[0])
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows[1:]
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _measured_cells(point: SweepPoint, machine: Machine) -> list[str]:
    """Measured GFLOP/s, its interquartile range, measured/predicted and the verdict (or dashes)."""
    from hroof.roofline.measured import compare
    from hroof.roofline.measured import iqr_text as _iqr

    m = point.measured
    if not m:
        return ["-"] * 4
    c = compare(point.result, m["gflop_s"], machine)
    return [f"{m['gflop_s']:.3g}", _iqr(m),
            f"{c.ratio:.2f}" if c else "-", c.verdict if c else "-"]  # fmt: skip


def _guidance_html(points: list[SweepPoint], machine: Machine, param: str) -> list[str]:
    """'What to optimise next' for the largest point, when the machine has every figure."""
    from hroof.roofline.guidance import guidance

    last = points[-1]
    res = last.result
    if machine.missing() or not res.flops or not all(lv.bytes for lv in res.levels):
        return []
    if not res.memory.bytes:
        return []
    lines = guidance(res, machine).lines()
    import re

    marker = re.compile(r"^(\d+\.|-)\s*")  # the list's own numbers and dashes: the <ol> has its
    steps = [ln for ln in lines[1:] if marker.match(ln.strip()) and ln.strip()[0].isdigit()]
    moot = [ln for ln in lines[1:] if ln.strip().startswith("- ")]
    items = "".join("<li>" + html.escape(marker.sub("", ln.strip())) + "</li>" for ln in steps)
    if not steps:
        items = "<li>Nothing left to break through: the bound is the roof itself.</li>"
    moot_html = "".join("<li>" + html.escape(marker.sub("", ln.strip())) + "</li>" for ln in moot)
    return [
        f"<h2>What to optimise next ({html.escape(param)}={last.params[param]})</h2>",
        f"<p>{html.escape(lines[0])}</p>",
        f"<ol>{items}</ol>",
        *(
            [f"<details><summary>What need not be done yet</summary><ul>{moot_html}</ul></details>"]
            if moot
            else []
        ),
        "<details><summary>How this list is made</summary><p>The ceilings of the machine "
        "file, and the traffic into the binding level by cause, ranked by what each would "
        "gain (the lecture's three strategies: in-core, bandwidth, data movement); the last "
        "ones listed do not matter at this arithmetic intensity.</p></details>",
    ]


def _html(title, machine, points, walls, param, embedded, summary, notes, caps,
          mrc_note, interactive=False) -> str:  # fmt: skip
    names = [lv.name for lv in points[0].result.levels] + [points[0].result.memory.name]
    measured = any(p.measured for p in points)
    rows = [[param, "footprint", *(f"{n} AI" for n in names), "bound GFLOP/s", "binds"]]
    if measured:
        rows[0] += ["measured GFLOP/s", "IQR GFLOP/s", "measured / predicted", "verdict"]
    for p in points:
        r = roofline(p.result, machine)
        rows.append([str(p.params[param]), f"{p.footprint:,} B",
                     *(f"{lv.ai:.3f}" if lv.ai else "-" for lv in r.levels),
                     f"{r.bound:.3g}" if r.bound else "-", r.binding or "-"])  # fmt: skip
        if measured:
            rows[-1] += _measured_cells(p, machine)
    wall_rows = [["level", "capacity", f"{param} before", f"{param} after", "bytes/flop below",
                  "what broke", "predicted: breaks after"]]  # fmt: skip
    for w in walls:
        change = f"{w.bytes_per_flop_before:.3g} -> {w.bytes_per_flop_after:.3g}"
        why = w.explanation.split(": ", 1)[-1] if w.explanation else "-"
        pred = f"{param}={w.predicted}" if w.predicted is not None else "-"
        if w.predicted is not None and not w.matched:
            pred += " (outside the interval)"
        wall_rows.append([w.level, f"{w.capacity:,} B", str(w.before), str(w.after), change,
                          why, pred])  # fmt: skip
    missing = missing_walls_text(walls, points, machine, param)
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title><style>body{{font-family:sans-serif;max-width:"
        "1100px;margin:2em auto;line-height:1.45}table{border-collapse:collapse;margin:1em 0}"
        "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}img{max-width:100%}"
        "</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p>Machine: <b>{html.escape(machine.name)}</b> "
        f"({html.escape(machine.hierarchy.describe())}). "
        f"Kernel: {html.escape(str(points[0].result.source.get('kernel')))}.</p>",
    ]
    from hroof.traces import accounting_text

    parts.append(f"<p>Counted in {html.escape(accounting_text(points[0].result.source))}.</p>")
    if interactive:
        parts.append(f"<p>Interactive version, one size at a time (a slider through the sizes; "
                     f"hover a dot or a wall for its numbers): <a href='{INTERACTIVE}'>"
                     f"{INTERACTIVE}</a>.</p>")  # fmt: skip
    if summary:
        parts += ["<h2>Summary</h2>", _table_html(summary)]
    if notes:
        parts += ["<ul class='notes'>", *(f"<li>{html.escape(n)}</li>" for n in notes), "</ul>"]
    parts += ["<h2>Every point</h2>", _table_html(rows)]
    if any(p.measured for p in points):
        parts.append(
            "<p>Measured: the kernel run natively on the host that ran the sweep (one "
            "thread; median GFLOP/s of the timed runs and their interquartile range: the "
            "middle half). Predicted: the bound of the machine model "
            f"<b>{html.escape(machine.name)}</b>, which is another machine than the host "
            "unless the sweep used <code>--machine host</code>. POOR: under half the "
            "bound, the roofline's poor-performance region.</p>"
        )
    parts += ["<h2>Locality walls</h2>",
              _table_html(wall_rows) if walls else "<p>No wall in this range.</p>"]  # fmt: skip
    if missing:
        parts += ["<ul>", *(f"<li>{html.escape(m)}</li>" for m in missing), "</ul>"]
    parts += _guidance_html(points, machine, param)
    for name, data in embedded:
        parts += [f"<h2>{html.escape(_HEADINGS.get(name, name.replace('_', ' ')))}</h2>",
                  f"<p>{html.escape(caps.get(name, ''))}</p>",
                  f"<img alt='{name}' src='data:image/png;base64,{data}'>"]  # fmt: skip
    if mrc_note:
        parts += [f"<h2>{html.escape(_HEADINGS['mrc'])}</h2>", f"<p>{html.escape(mrc_note)}</p>"]
    parts.append("<p><small>Made by hroof.</small></p></body></html>")
    return "\n".join(parts)
