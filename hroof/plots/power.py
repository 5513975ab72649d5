"""Ghane et al.'s power and energy-efficiency rooflines (matplotlib).

Two panels, one point per launch variant (:mod:`hroof.accel.power`): the compute roofline
(x: energy per flop, pJ; y: power, W) and the memory roofline (x: energy per byte of memory
traffic, pJ; y: W). The line from the origin through a point has the variant's performance
as its slope (GFLOP/s, GB/s): its ceiling. Left is more efficient (the top axis gives
GFLOP/J and GB/J), a steeper line is faster. Both axes are linear, so the lines are straight.
"""

from __future__ import annotations

from hroof.plots.figure import COLOURS, figure

_MARKERS = "osD^v<>pP*Xh"


def _groups(points, xs) -> list[tuple[list, float, float]]:
    """Points at the same place (to 0.1 %) as one group: (points, x, power)."""
    out: list[tuple[list, float, float]] = []
    for p, x in zip(points, xs, strict=True):
        for members, gx, gy in out:
            if abs(gx - x) <= 1e-3 * gx and abs(gy - p.power_w) <= 1e-3 * max(gy, 1e-12):
                members.append(p)
                break
        else:
            out.append(([p], x, p.power_w))
    return out


def _names(members) -> str:
    """The variants of a group, three to a line."""
    names = [p.launch.label for p in members]
    return ",\n".join(", ".join(names[i : i + 3]) for i in range(0, len(names), 3))


def _panel(ax, points, xs, rate_of, unit: str, rate_unit: str, top_unit: str) -> None:
    ys = [p.power_w for p in points]
    xmax = max(xs) * 1.35
    ymax = max(ys) * 1.3
    for i, (members, x, y) in enumerate(_groups(points, xs)):
        c = COLOURS[i % (len(COLOURS) - 1)]
        ax.plot([0, xmax], [0, xmax * y / x], color=c, lw=0.8, alpha=0.6, zorder=1)
        ax.plot([x], [y], _MARKERS[i % len(_MARKERS)], color=c, ms=7, zorder=3,
                label=f"{rate_of(members[0]):.3g} {rate_unit}: {_names(members)}")  # fmt: skip
    ax.set_xlim(0, xmax)
    ax.set_ylim(0, ymax)
    ax.set_xlabel(f"energy per {unit} (pJ)  -  left is more efficient")
    ax.set_ylabel("power (W)")
    ax.grid(True, alpha=0.3)
    top = ax.twiny()
    top.set_xlim(0, xmax)
    effs = _nice_efficiencies(1000.0 / xmax)
    top.set_xticks([1000.0 / e for e in effs], [f"{e:g}" for e in effs])
    top.set_xlabel(f"efficiency ({top_unit} = 1000 / pJ per {unit})")
    # under the axes, never over a point
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14),
              title=f"line slope ({rate_unit}): variants", title_fontsize=7)  # fmt: skip


def _nice_efficiencies(lowest: float) -> list[float]:
    """Round efficiencies from ``lowest`` up, spaced so their ticks (at 1000 / e) do not
    crowd the axis's left end, where they bunch: 1, 2, 5 x 10^k, at most six."""
    import math

    k = math.floor(math.log10(lowest))
    out = []
    while len(out) < 6:
        for m in (1, 2, 5):
            e = m * 10.0**k
            if e >= lowest * 1.02 and (not out or 1000 / out[-1] - 1000 / e > 0.08 * 1000 / lowest):
                out.append(e)
        k += 1
        if k > 12:
            break
    return out[:6]


def plot_power_rooflines(points, nbytes: float, *, title: str):
    """The compute and the memory power rooflines of ``points`` (a figure, two panels)."""
    fig = figure(11.0, 6.2)
    left, right = fig.subplots(1, 2)
    _panel(left, points, [p.pj_per_flop for p in points], lambda p: p.gflops,
           "flop", "GFLOP/s", "GFLOP/J")  # fmt: skip
    left.set_title("compute: power against energy per flop", fontsize=10)
    _panel(right, points, [p.pj_per_byte(nbytes) for p in points],
           lambda p: nbytes / p.time_s * 1e-9, "byte", "GB/s", "GB/J")  # fmt: skip
    right.set_title("memory: power against energy per byte", fontsize=10)
    fig.suptitle(title, fontsize=11)
    return fig


__all__ = ["plot_power_rooflines"]
