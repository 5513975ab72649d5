"""The demo: the 7-point stencil at a small and a large size, then swept across the walls.

:func:`run_demo` runs it on a machine (the result cache makes a second run free);
:func:`summary_table` is what ``hroof demo`` prints; :func:`predicted_walls` puts the
layer condition's prediction beside each wall a sweep finds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hroof.cachesim import SimResult
from hroof.machine.model import Machine, load_machine
from hroof.roofline.analysis import roofline
from hroof.roofline.layers import stencil_layer_conditions
from hroof.studies.sweep import SweepPoint, Wall, expand_grid, find_walls, run_sweep

DEMO_KERNEL = "stencil7"
DEMO_SMALL = 16
DEMO_LARGE = 256
DEMO_SWEEP = "8..256:x2"


@dataclass(frozen=True)
class Demo:
    """What :func:`run_demo` made: the machine, the two runs, the sweep and its walls."""

    machine: Machine
    small: SimResult
    large: SimResult
    points: list[SweepPoint]
    walls: list[Wall]
    conditions: dict


def run_demo(
    machine: Machine | None = None, *, progress: Callable[[int], None] | None = None
) -> Demo:
    """The 7-point stencil small and large, then swept across the walls (cached)."""
    from hroof.studies.runs import simulate_kernel

    machine = machine or load_machine(None)
    machine.require("hroof demo")
    h = machine.hierarchy
    small = simulate_kernel(DEMO_KERNEL, h, n=DEMO_SMALL)
    large = simulate_kernel(DEMO_KERNEL, h, n=DEMO_LARGE)
    grid = expand_grid(DEMO_KERNEL, {"n": DEMO_SWEEP})
    points = run_sweep(DEMO_KERNEL, grid, h, progress=progress)
    walls = find_walls(points, "n")
    conditions = {c.level: c for c in stencil_layer_conditions({"n": 8}, h, safety=1.0)}
    return Demo(machine, small, large, points, walls, conditions)


#: The size whose miss-ratio curve the demo draws: both stencil walls within the L3.
DEMO_MRC_N = 64


def demo_mrc(machine: Machine):
    """The miss-ratio curve of the demo's stencil at ``DEMO_MRC_N`` into L1, read against
    the layer conditions (:class:`hroof.roofline.mrc.MrcReport`): the walls of the size
    sweep seen from the cache-size axis."""
    from hroof.cachesim.mrc import miss_ratio_curve
    from hroof.roofline.mrc import layer_capacities, report
    from hroof.traces import plan_kernel

    h = machine.hierarchy
    plan = plan_kernel(DEMO_KERNEL, n=DEMO_MRC_N)
    curve = miss_ratio_curve(plan.chunks(), h, source=plan.source())
    lcs = layer_capacities(DEMO_KERNEL, plan.params, h)
    return report(curve, h, flops=plan.flops, layer_conditions=lcs)


def summary_table(demo: Demo) -> list[list[str]]:
    """Rows: per level, AI small vs large, the binding level, the wall measured and predicted."""
    rs, rl = roofline(demo.small, demo.machine), roofline(demo.large, demo.machine)
    rows = [["level", f"AI n={DEMO_SMALL}", f"AI n={DEMO_LARGE}", "wall (swept)",
             "layer condition: 3D holds up to n"]]  # fmt: skip
    walls = {w.level: w for w in demo.walls}
    for a, b in zip(rs.levels, rl.levels, strict=True):
        w = walls.get(a.name)
        cond = demo.conditions.get(a.name)
        rows.append([
            a.name,
            f"{a.ai:.3f}" if a.ai else "-",
            f"{b.ai:.3f}" if b.ai else "-",
            f"between n={w.before} and n={w.after}" if w else "-",
            str(cond.max_n.get("3D")) if cond and cond.max_n.get("3D") else "-",
        ])  # fmt: skip
    rows.append(["bound", f"{rs.bound:.3g} GFLOP/s ({rs.binding})",
                 f"{rl.bound:.3g} GFLOP/s ({rl.binding})", "", ""])  # fmt: skip
    return rows


def format_rows(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                     for r in rows)  # fmt: skip
