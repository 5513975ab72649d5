"""The bandwidth-sweep figure and ``report.html`` of ``hroof machine measure --out DIR``."""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path

from matplotlib.figure import Figure

from hroof._base.files import save_figure
from hroof.cachesim.config import format_size
from hroof.machine.measure.run import Measurement
from hroof.plots.figure import COLOURS, figure

_KERNEL_COLOURS = {"read": COLOURS[0], "write": COLOURS[1], "copy": COLOURS[2], "triad": COLOURS[3]}


def plot_sweeps(m: Measurement, threads: int = 1, ax=None) -> Figure:
    """Bandwidth (GB/s) against working set (bytes, log x): one line per kernel,
    each plateau a thick horizontal segment, each cache capacity a labelled
    vertical line.
    """
    if ax is None:
        fig = figure(9.0, 5.0)
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    sweeps = [s for s in m.sweeps if s.threads == threads]
    for s in sweeps:
        colour = _KERNEL_COLOURS.get(s.kernel, COLOURS[4])
        ax.plot(s.sizes, s.gbs, marker=".", lw=1, color=colour, label=f"{s.kernel}")
        for p in s.plateaus:
            ax.hlines(p.gbs, p.lo_bytes, p.hi_bytes, colors=colour, lw=4, alpha=0.45)
        for lf in s.levels:
            if lf.plateau is not None and s.kernel == sweeps[0].kernel:
                p = lf.plateau
                ax.annotate(
                    f"{lf.name} {lf.gbs:.0f} GB/s",
                    ((p.lo_bytes * p.hi_bytes) ** 0.5, p.gbs),
                    textcoords="offset points",
                    xytext=(0, 6),
                    ha="center",
                    fontsize=8,
                    color=colour,
                )
    if sweeps:
        for name, cap in sweeps[0].capacities:
            ax.axvline(cap, color="0.5", ls="--", lw=0.8)
            ax.annotate(
                f"{name} {format_size(cap)}",
                (cap, 1),
                xycoords=("data", "axes fraction"),
                rotation=90,
                va="top",
                ha="right",
                fontsize=8,
                color="0.3",
            )
    ax.set_xscale("log", base=2)
    ax.set_xlabel("working set (bytes, all arrays" + (" of all threads)" if threads > 1 else ")"))
    ax.set_ylabel("bandwidth (GB/s)")
    ax.set_ylim(bottom=0)
    ax.set_title(
        f"Bandwidth sweep, {threads} thread{'s' if threads != 1 else ''}: "
        f"{m.host.model or 'host'} ({m.settings.name}, {m.date[:10]})"
    )
    ax.xaxis.set_major_formatter(lambda x, _: format_size(int(x)) if x >= 1 else "")
    ax.legend(title="kernel (thick: plateaus)", loc="lower left", fontsize=8)
    ax.grid(True, which="major", alpha=0.3)
    return fig


def write_figures(m: Measurement, out: Path) -> list[Path]:
    """``bandwidth.png``/``.svg`` (one core) and ``bandwidth-all.png``/``.svg`` (all cores)."""
    written = []
    for threads, stem in ((1, "bandwidth"), (m.threads, "bandwidth-all")):
        if threads == 1 and stem == "bandwidth-all":
            continue
        fig = plot_sweeps(m, threads)
        for ext in ("png", "svg"):
            written.append(save_figure(fig, out / f"{stem}.{ext}"))
    return written


def _spread(s) -> str:
    if s is None:
        return ""
    return html.escape(f"{s.lo:.4g}..{s.hi:.4g}") + (" <b>!</b>" if s.wide else "")


def report_html(m: Measurement, machine_text: str) -> str:
    """A self-contained page: the figures, the compute table, the plateaus and the TOML."""
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        "<title>hroof machine measure</title><style>body{font-family:sans-serif;"
        "max-width:1000px;margin:auto}td,th{padding:2px 8px;text-align:right}"
        "pre{background:#f4f4f4;padding:8px;overflow:auto}</style></head><body>",
        f"<h1>Measured ceilings: {html.escape(m.host.model or 'host')}</h1>",
        f"<p>{html.escape(m.date)}, preset <b>{m.settings.name}</b>, {m.threads} cores, "
        f"{m.elapsed_s:.0f} s. Best of {m.settings.trials} trials per figure.</p>",
        "<h2>Compute (GFLOP/s)</h2><p>Each figure the best of its trials; "
        "'trials': their range, <b>!</b> when the middle half spans more than 10 %.</p>"
        "<table><tr><th>precision</th><th>variant</th>"
        "<th>1 thread</th><th>trials</th><th>all cores</th><th>trials</th>"
        "<th>kernel</th></tr>",
    ]
    for f in m.compute:
        if f.threads != 1:
            continue
        try:
            a = m.figure(f.variant, f.precision, m.threads)
            allc, alls = f"{a.gflops:.1f}", _spread(a.spread)
        except KeyError:
            allc, alls = "-", ""
        parts.append(
            f"<tr><td>{f.precision}</td><td>{html.escape(f.variant)}</td>"
            f"<td>{f.gflops:.1f}</td><td>{_spread(f.spread)}</td><td>{allc}</td>"
            f"<td>{alls}</td><td>{f.kernel}</td></tr>"
        )
    parts.append(
        "</table><h2>Bandwidth plateaus (GB/s)</h2><table><tr><th>kernel</th>"
        "<th>threads</th>"
        + "".join(f"<th>{html.escape(lf.name)}</th>" for lf in m.sweeps[0].levels)
        + "</tr>"
    )
    notes = []
    for s in m.sweeps:
        cells = "".join(
            f"<td>{lf.gbs:.1f}<br><small>{_spread(lf.spread)}</small></td>"
            if lf.gbs
            else "<td>-</td>"
            for lf in s.levels
        )
        parts.append(f"<tr><td>{s.kernel}</td><td>{s.threads}</td>{cells}</tr>")
        notes += [f"{s.kernel}, {s.threads} thread(s), {lf.name}: {lf.note}" for lf in s.levels]
    parts.append(
        "</table><p>Each figure the median of its plateau on the best-of-trials curve; "
        "below it the range of the trials' own medians over the plateau. "
        "'-': no clear plateau (see the notes).</p>"
    )
    notes = list(m.notes) + notes
    for threads in sorted({1, m.threads}):
        buf = io.BytesIO()
        plot_sweeps(m, threads).savefig(buf, format="png", dpi=100)
        data = base64.b64encode(buf.getvalue()).decode()
        parts.append(
            f"<h2>Sweep, {threads} thread(s)</h2><img style='max-width:100%' "
            f"src='data:image/png;base64,{data}'>"
        )
    parts.append(
        "<h2>Notes</h2><ul>"
        + "".join(f"<li>{html.escape(n)}</li>" for n in notes)
        + "</ul><h2>Machine file</h2><pre>"
        + html.escape(machine_text)
        + "</pre>"
    )
    parts.append("<p><small>Made by hroof machine measure.</small></p></body></html>")
    return "\n".join(parts)
