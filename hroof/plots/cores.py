"""A sweep over a size and ``cores = P``: the traffic below the shared level against the
size, one line per P, with the walls the layer conditions predict for each P
(docs/cache-model.md, "Several cores")."""

from __future__ import annotations

from hroof.plots.figure import COLOURS
from hroof.plots.figure import figure as _figure


def plot_cores(points, machine, param: str, predicted: dict, *, ax=None):
    """Bytes per flop below the first shared level against ``param``, one line per core
    count; ``predicted`` maps a core count to its predicted walls of that level
    (``(n, condition)`` pairs), drawn as dashed lines of the same colour. Returns the
    figure."""
    if ax is None:
        fig = _figure(7.5, 4.6)
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    counts = sorted({p.result.cores for p in points})
    shared = next((p.result.shared_levels for p in points if p.result.shared_levels), ())
    names = [lv.name for lv in machine.hierarchy.levels]
    level = shared[0] if shared else names[-1]
    idx = names.index(level)
    below = names[idx + 1] if idx + 1 < len(names) else machine.hierarchy.memory_name
    for j, cores in enumerate(counts):
        mine = sorted((p for p in points if p.result.cores == cores), key=lambda p: p.params[param])
        xs = [p.params[param] for p in mine]
        ys = []
        for p in mine:
            r = p.result
            nbytes = r.levels[idx + 1].bytes if idx + 1 < len(r.levels) else r.memory.bytes
            ys.append(nbytes / r.flops if r.flops else float("nan"))
        col = COLOURS[j % (len(COLOURS) - 1)]
        ax.plot(xs, ys, marker="o", color=col, lw=1.6, label=f"{cores} core{'s' * (cores > 1)}")
        lo, hi = min(xs), max(xs)
        for n, condition in predicted.get(cores, []):
            if lo <= n <= hi:
                ax.axvline(n + 0.5, color=col, ls="--", lw=1.0, alpha=0.8)
                ax.annotate(f"{condition}, P={cores}: n={n}", (n + 0.5, 0.02),
                            xycoords=("data", "axes fraction"), rotation=90, fontsize=8,
                            color=col, ha="right", va="bottom")  # fmt: skip
    ax.set_xlabel(f"{param} (interior points per dimension)")
    ax.set_ylabel(f"bytes per flop, {level} -> {below}")
    ax.set_ylim(bottom=0)
    ax.set_title(f"{level} shared by P cores: traffic below it, and the layer conditions' walls "
                 f"(dashed: {level} capacity / P)", fontsize=9)  # fmt: skip
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    return fig
