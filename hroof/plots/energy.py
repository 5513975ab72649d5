"""Energy plots (matplotlib): the energy-efficiency arch, the power line, the breakdown.

The model and its formulas are in :mod:`hroof.roofline.energy` (Choi et al.,
"A roofline model of energy", IPDPS 2013). Every function takes a machine (or
an :class:`~hroof.roofline.energy.EnergyModel`) and runs, draws on ``ax`` (or
a new figure made without pyplot) and returns the figure.

* :func:`plot_efficiency`: GFLOP/J against AI (log-log), one arch per level
  that has an energy per byte; the time ridge, the energy balance and the
  energy ridge of memory marked; the compute ceilings as labelled dashed arches
  and memory's bandwidth ceilings as dash-dotted ones (a lower ceiling, a
  longer run, more constant energy); a run as one dot per
  level, on that level's arch at that level's AI, and its total efficiency.
* :func:`plot_power`: W against AI (log AI), the same curves: each climbs while
  bandwidth-bound and falls once compute-bound, peaking at the time ridge.
* :func:`plot_energy_breakdown`: a size sweep as stacked bars of pJ per flop
  (flops, each level, constant energy): where a level stops holding the data
  the bytes below it jump, and so does their energy (the locality walls as
  energy walls).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hroof._base.errors import HroofError
from hroof.cachesim import SimResult
from hroof.machine.model import Machine
from hroof.plots.figure import colour as level_colour
from hroof.plots.figure import figure
from hroof.roofline.energy import EnergyModel, energy_model, level_bytes, run_energy
from hroof.studies.sweep import SweepPoint, Wall

FLOP_COLOUR = "#F0E442"  # Okabe-Ito yellow: no level uses it
CONSTANT_COLOUR = "#BBBBBB"  # light grey, hatched
#: Behind a label drawn inside the axes: the lines crossing it stay visible but do not strike
#: through the text.
_LABEL_BOX = {"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none",
              "alpha": 0.75}  # fmt: skip


def _model(machine: Machine | EnergyModel, command: str) -> EnergyModel:
    return machine if isinstance(machine, EnergyModel) else energy_model(machine, command)


def _results(runs) -> list[SimResult]:
    return [r.result if isinstance(r, SweepPoint) else r for r in runs]


def _run_ais(result: SimResult) -> dict[str, float]:
    """FLOP/byte of every level of a run that has flops and bytes there."""
    out = {lv.name: lv.ai for lv in result.levels if lv.ai}
    if result.memory.ai:
        out[result.memory.name] = result.memory.ai
    return out


def _xlim(model: EnergyModel, results: list[SimResult]) -> tuple[float, float]:
    vals = []
    for name in model.curve_levels:
        vals += [model.time_balance(name), model.energy_balance(name), model.energy_ridge(name)]
    for r in results:
        vals += list(_run_ais(r).values())
    vals = [v for v in vals if v and v > 0]
    return min(vals) / 8, max(vals) * 8


def _charged(model: EnergyModel) -> list[tuple[int, str]]:
    """(index, name) of the levels whose curves can be drawn (bandwidth and energy known)."""
    return [(model.level_names.index(n), n) for n in model.curve_levels]


def _marks(ax, model: EnergyModel, *, energy: bool = True) -> None:
    """Memory's time ridge, energy balance and (``energy``) energy ridge, as labelled verticals."""
    mem = model.memory.name
    marks = [(model.time_balance(), f"{mem} time ridge {model.time_balance():.3g}", "-.")]
    marks.append((model.energy_balance(), f"energy balance {model.energy_balance():.3g}", ":"))
    if energy:
        marks.append((model.energy_ridge(), f"energy ridge {model.energy_ridge():.3g}", "--"))
    for i, (x, text, ls) in enumerate(marks):
        ax.axvline(x, color="tab:red", ls=ls, lw=0.9, alpha=0.8)
        ax.annotate(text + " FLOP/B", (x, 0.02 + 0.29 * i), xycoords=("data", "axes fraction"),
                    xytext=(3, 0), textcoords="offset points", rotation=90, fontsize=7,
                    color="tab:red", va="bottom", ha="left", bbox=_LABEL_BOX)  # fmt: skip


def _ceiling_label(c) -> str:
    return f"{c.name} ({c.value:g} {c.unit})"


def _axes_xy(ax, t) -> tuple[float, float]:
    """Where text ``t`` (placed in data coordinates; an annotation: its point) sits, in axes
    fraction."""
    xy = t.xy if hasattr(t, "xy") else t.get_position()
    return tuple(ax.transAxes.inverted().transform(ax.transData.transform(xy)))


def _unstack(ax, texts, gap: float = 0.04) -> None:
    """Move labels down so that no two are closer than ``gap`` (axes fraction) vertically.

    The compute ceilings' labels sit at the right end of their curves, which can end close
    together (the power plot's lower ceilings). Call once the axes' limits are final.
    """
    ax.get_xlim(), ax.get_ylim()  # settle the autoscaled limits before converting
    placed: list[float] = []
    for t in sorted(texts, key=lambda t: -_axes_xy(ax, t)[1]):
        fx, fy = _axes_xy(ax, t)
        if placed and placed[-1] - fy < gap:
            fy = placed[-1] - gap
            xy = ax.transData.inverted().transform(ax.transAxes.transform((fx, fy)))
            t.set_position((float(xy[0]), float(xy[1])))
        placed.append(fy)


def _thin(ax, texts, dx: float = 0.05, dy: float = 0.03) -> None:
    """Drop labels of a sweep's points that would overlap one already kept (axes fraction).

    Call once the axes' limits are final.
    """
    ax.get_xlim(), ax.get_ylim()
    kept: list[tuple[float, float]] = []
    for t in texts:
        fx, fy = _axes_xy(ax, t)
        if any(abs(fx - kx) < dx and abs(fy - ky) < dy for kx, ky in kept):
            t.remove()
        else:
            kept.append((fx, fy))


def _draw(ax, model: EnergyModel, runs, what: str, param: str | None) -> tuple[list, list]:
    """The curves of ``what`` ("efficiency" or "power"), ceilings and the runs' dots.

    Returns the compute ceilings' labels and the sweep points' labels (to place once the
    axes' limits are final: :func:`_unstack`, :func:`_thin`).
    """
    results = _results(runs)
    xlim = _xlim(model, results)
    x = np.geomspace(*xlim, 400)
    n = len(model.levels)
    curve = getattr(model, what)
    for i, name in _charged(model):
        lv = model.level(name)
        ax.plot(x, curve(x, name), color=level_colour(i, n), lw=1.6,
                label=f"{name} ({lv.byte_pj:g} pJ/B, {lv.bandwidth:g} GB/s)")  # fmt: skip
    mem = model.memory.name
    labels = []
    for c in model.ceilings:
        low = model.with_peak(c.value)
        y = getattr(low, what)(x, mem)
        ax.plot(x, y, color="grey", lw=1.0, ls="--")
        labels.append(ax.text(x[-1], y[-1], _ceiling_label(c), fontsize=7, color="dimgrey",
                              ha="right", va="bottom", bbox=_LABEL_BOX))  # fmt: skip
    for c in model.bandwidth_ceilings:
        if c.level != mem:
            continue  # the caches' ceilings would bury their curves; memory's is the one drawn
        low = model.with_bandwidth(mem, c.value)
        y = getattr(low, what)(x, mem)
        ax.plot(x, y, color="grey", lw=1.0, ls="-.")
        ax.text(x[0], y[0], f"{mem} {c.name} ({c.value:g} GB/s)", fontsize=7, color="dimgrey",
                ha="left", va="top", bbox=_LABEL_BOX)  # fmt: skip
    unit = "GFLOP/J" if what == "efficiency" else "W"
    points = []
    for k, (run, r) in enumerate(zip(runs, results, strict=True)):
        est = model.estimate(r.flops, level_bytes(r)) if r.flops else None
        ais = _run_ais(r)
        xs = []
        for i, name in _charged(model):
            if name in ais:
                xs.append(ais[name])
                ax.plot(ais[name], curve(ais[name], name), "o", color=level_colour(i, n), ms=7,
                        mec="black", mew=0.6, zorder=4, label=f"_{name} AI")  # fmt: skip
        total = None if est is None else (est.gflop_per_j if what == "efficiency" else est.power_w)
        if total and len(xs) > 1:
            ax.plot([min(xs), max(xs)], [total, total], "k-", lw=0.8, zorder=3,
                    label="the run, all levels charged" if k == 0 else None)  # fmt: skip
        if total and xs and len(results) == 1:
            ax.annotate(f"run: {total:.3g} {unit}", (max(xs), total), xytext=(6, -10),
                        textcoords="offset points", fontsize=7, bbox=_LABEL_BOX)  # fmt: skip
        elif xs and param and isinstance(run, SweepPoint):
            last = [name for _, name in _charged(model) if name in ais][-1]
            points.append(ax.annotate(f"{param}={run.params[param]}",
                                      (ais[last], curve(ais[last], last)), xytext=(6, -10),
                                      textcoords="offset points", fontsize=6))  # fmt: skip
    if any(_run_ais(r) for r in results):
        ax.plot([], [], "o", color="white", mec="black", mew=0.6, ms=7,
                label="a run: each level's AI, on its curve")  # fmt: skip
    ax.set_xlim(*xlim)
    ax.set_xscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.grid(True, which="major", alpha=0.3)
    return labels, points


def plot_efficiency(
    machine: Machine | EnergyModel, runs: Sequence[SimResult | SweepPoint] = (), *, ax=None,
    param: str | None = None, title: str = "Energy efficiency (roofline model of energy)",
):  # fmt: skip
    """GFLOP/J against AI (log-log): the arch of each level with an energy per byte.

    Marked: memory's time ridge, energy balance and energy ridge (half the
    maximum efficiency); the maximum efficiency ``1 / eps_hat`` (dotted); the
    compute ceilings (dashed, labelled with their name and GFLOP/s) and memory's
    bandwidth ceilings (dash-dotted, with their GB/s). Each run
    is one dot per level, at that level's AI on that level's arch, and a black
    segment at the run's total efficiency (every level charged at once).
    """
    model = _model(machine, "an energy-efficiency plot")
    if ax is None:
        ax = figure(9, 5).subplots()
    ceiling_labels, point_labels = _draw(ax, model, runs, "efficiency", param)
    top = model.max_efficiency
    ax.axhline(top, color="black", ls=":", lw=0.9)
    ax.annotate(f"max {top:.3g} GFLOP/J (no traffic)", (0.01, top),
                xycoords=("axes fraction", "data"), xytext=(0, 2), textcoords="offset points",
                fontsize=7, va="bottom", bbox=_LABEL_BOX)  # fmt: skip
    _marks(ax, model)
    ax.set_yscale("log")
    _unstack(ax, ceiling_labels)
    _thin(ax, point_labels)
    ax.set_ylabel("energy efficiency (GFLOP/J)")
    ax.set_title(title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=7)
    return ax.figure


def plot_power(
    machine: Machine | EnergyModel, runs: Sequence[SimResult | SweepPoint] = (), *, ax=None,
    param: str | None = None, title: str = "Power (roofline model of energy)",
):  # fmt: skip
    """W against AI (log AI): each level's power line, peaking at its time ridge.

    The constant power is a dotted line (every run draws at least that);
    ceilings, marks and run dots as in :func:`plot_efficiency`.
    """
    model = _model(machine, "a power plot")
    if ax is None:
        ax = figure(9, 5).subplots()
    ceiling_labels, point_labels = _draw(ax, model, runs, "power", param)
    ax.axhline(model.constant_w, color="black", ls=":", lw=0.9)
    ax.annotate(f"constant power {model.constant_w:g} W", (0.01, model.constant_w),
                xycoords=("axes fraction", "data"), xytext=(0, 2), textcoords="offset points",
                fontsize=7, va="bottom", bbox=_LABEL_BOX)  # fmt: skip
    _marks(ax, model, energy=False)
    ax.set_ylim(bottom=0)
    _unstack(ax, ceiling_labels)
    _thin(ax, point_labels)
    ax.set_ylabel("power (W)")
    ax.set_title(title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=7)
    return ax.figure


def plot_energy(result: SimResult, machine: Machine | EnergyModel, *, title: str | None = None):
    """One run: the efficiency arch and the power line side by side."""
    model = _model(machine, "an energy plot")
    fig = figure(16, 5.2)
    a, b = fig.subplots(1, 2)
    plot_efficiency(model, [result], ax=a)
    plot_power(model, [result], ax=b)
    if title:
        fig.suptitle(title)
    return fig


def plot_energy_breakdown(
    points: Sequence[SweepPoint], machine: Machine | EnergyModel, param: str, *,
    walls: Sequence[Wall] = (), ax=None,
):  # fmt: skip
    """Stacked bars of a sweep's energy per flop (pJ/FLOP): flops, each level, constant.

    One bar per value of ``param`` (sorted); the walls found by
    :func:`hroof.studies.sweep.find_walls` are dotted verticals between the
    bars they fall between. Levels without an energy per byte are named under
    the title (they take time, which the constant energy counts, but no energy
    of their own).
    """
    model = _model(machine, "an energy breakdown")
    pts = sorted(points, key=lambda p: p.params[param])
    if not pts:
        raise HroofError("an energy breakdown needs at least one sweep point")
    ests = []
    for p in pts:
        if not p.result.flops:
            raise HroofError(f"the run at {param}={p.params[param]} has no flops; "
                             "energy per flop needs them")  # fmt: skip
        ests.append(run_energy(p.result, model))
    if ax is None:
        ax = figure(8, 4.8).subplots()
    xs = np.arange(len(pts))
    bottom = np.zeros(len(pts))
    names = [part.name for part in ests[0].parts]
    n = len(model.levels)
    for name in names:
        vals = np.array([e.part(name).joules / e.flops * 1e12 for e in ests])
        hatch = None
        if name == "flops":
            colour, label = FLOP_COLOUR, f"flops ({model.flop_pj:g} pJ each)"
        elif name == "constant":
            colour, label = CONSTANT_COLOUR, f"constant ({model.constant_w:g} W x time)"
            hatch = "//"
        else:
            i = model.level_names.index(name)
            colour, label = level_colour(i, n), f"{name} bytes ({model.level(name).byte_pj:g} pJ/B)"
        ax.bar(xs, vals, 0.7, bottom=bottom, color=colour, label=label, edgecolor="white",
               lw=0.4, hatch=hatch)  # fmt: skip
        bottom += vals
    for j, total in enumerate(bottom):
        ax.text(j, total, f"{total:.3g}", ha="center", va="bottom", fontsize=7)
    order = [str(p.params[param]) for p in pts]
    gaps: dict[float, list[str]] = {}  # several levels can hit their walls in the same gap
    for w in walls:
        if str(w.before) in order and str(w.after) in order:
            mid = (order.index(str(w.before)) + order.index(str(w.after))) / 2
            gaps.setdefault(mid, []).append(w.level)
    for mid, levels in gaps.items():
        ax.axvline(mid, color="grey", ls=":", lw=1)
        text = f"{', '.join(levels)} wall{'s' if len(levels) > 1 else ''}"
        ax.annotate(text, (mid, 1), xycoords=("data", "axes fraction"), xytext=(0, -4),
                    textcoords="offset points", ha="center", va="top", fontsize=7,
                    bbox=_LABEL_BOX)  # fmt: skip
    ax.set_xticks(xs, order)
    ax.set_xlabel(param)
    ax.set_ylabel("energy per flop (pJ/FLOP)")
    title = "Energy per flop by level"
    if model.uncharged:
        title += f"\n(not charged, no energy per byte: {', '.join(model.uncharged)})"
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.set_ylim(top=bottom.max() * 1.12)
    return ax.figure


__all__ = ["plot_efficiency", "plot_energy", "plot_energy_breakdown", "plot_power"]
