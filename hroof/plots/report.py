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
    find_walls,
    predicted_walls,
    varying,
)

_CAPTIONS = {
    "roofline": (
        "Hierarchical (left) and cache-aware (right) rooflines of the same runs. Left: each "
        "run is a row of dots, one per level at that level's arithmetic intensity, at the "
        "performance the slowest level allows; as the grid grows and a level stops holding "
        "the planes the stencil reuses, that level's dot moves left. Right: the cache-aware "
        "view has one intensity (flops per byte the core loads and stores), so the same runs "
        "stay at one AI and drop from under one bandwidth roof to under the next."
    ),
    "ai_vs_size": (
        "Arithmetic intensity of each level against the grid size n. L1's is constant (the "
        "core always moves 64 bytes a point); a lower level's AI falls at the size where the "
        "level above it stops holding the data: the locality walls, marked with the capacity "
        "of the level that overflowed."
    ),
    "measured": (
        "Performance measured on the host that ran the sweep (the kernel run natively, one "
        "thread; the dot is the median run, the bar the middle half of the runs) beside the "
        "bound the simulation predicts on the machine model (the line, with the level that "
        "binds). The number by each dot is measured / predicted. Below the dashed line (half "
        "the bound) a point is in the roofline's poor-performance region and is marked POOR. "
        "Unless the sweep ran with --machine host, the model is another machine than the "
        "host, so the ratio compares the two machines as much as the code."
    ),
    "traffic": (
        "The bytes each level moves to the level below, per flop, split by cause: compulsory "
        "(first touch and first writeback), write-allocate (reading a line before storing "
        "into it), capacity (the level was too small) and conflict (too many lines in one "
        "set). The walls are where capacity traffic appears."
    ),
}


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


def write_report(
    points: list[SweepPoint],
    machine: Machine,
    out: Path,
    *,
    title: str,
    summary: list[list[str]] | None = None,
) -> list[Path]:
    """PNG and SVG figures and a self-contained ``report.html`` in ``out``."""
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise HroofError(f"cannot write the report to {out}: {exc.strerror or exc}") from None
    vary = varying(points)
    if len(vary) != 1 or not isinstance(points[0].params[vary[0]], int):
        raise HroofError("a report needs a sweep over one integer parameter (e.g. n)")
    param = vary[0]
    walls = find_walls(points, param)
    written = []
    embedded = []
    for name, fig in _figures(points, machine, walls, param).items():
        for ext in ("png", "svg"):
            written.append(save_figure(fig, out / f"{name}.{ext}"))
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=100)
        embedded.append((name, base64.b64encode(buf.getvalue()).decode()))
    page = _html(title, machine, points, walls, param, embedded, summary)
    written.append(write_text(out / "report.html", page))
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
    items = "".join(f"<li>{html.escape(ln.strip().lstrip('-').strip())}</li>" for ln in lines[1:]
                    if ln.startswith("  "))  # fmt: skip
    return [
        f"<h2>What to optimise next ({html.escape(param)}={last.params[param]})</h2>",
        f"<p>{html.escape(lines[0])} The ceilings of the machine file, and the traffic "
        "into the binding level by cause, ranked by what each would gain (the lecture's "
        "three strategies: in-core, bandwidth, data movement); the last ones listed do not "
        "matter at this arithmetic intensity.</p>",
        f"<ul>{items}</ul>",
    ]


def _html(title, machine, points, walls, param, embedded, summary) -> str:
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
    wall_rows = [["level", "capacity", f"{param} before", f"{param} after", "bytes/flop below"]]
    for w in walls:
        change = f"{w.bytes_per_flop_before:.3g} -> {w.bytes_per_flop_after:.3g}"
        wall_rows.append([w.level, f"{w.capacity:,} B", str(w.before), str(w.after), change])
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
    if summary:
        parts += ["<h2>Summary</h2>", _table_html(summary)]
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
    parts += _guidance_html(points, machine, param)
    for name, data in embedded:
        parts += [f"<h2>{name.replace('_', ' ')}</h2>",
                  f"<p>{html.escape(_CAPTIONS.get(name, ''))}</p>",
                  f"<img alt='{name}' src='data:image/png;base64,{data}'>"]  # fmt: skip
    parts.append("<p><small>Made by hroof.</small></p></body></html>")
    return "\n".join(parts)
