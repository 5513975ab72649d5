"""The demo: the 7-point stencil in steady state, swept across the walls of a real machine.

:func:`run_demo` simulates the stencil on the default machine (``skylake-sp``)
at sizes from a grid that fits in L1's reach to one that streams from DRAM,
each point counted in steady state (two warm-up sweeps simulated and not
counted: a Jacobi code iterates, so at small ``n`` the grid stays in cache
between iterations). :func:`summary_table` and :func:`summary_lines` are what
``hroof demo`` prints; every title and caption of the report is computed from
the same numbers (:func:`story`).

On ``skylake-sp`` every wall the steady state shows lies within sizes that
simulate in seconds: L1's 3D layer condition (n = 30), L2 and L3 no longer
holding the whole working set (n = 38, and n = 121 for L2 + L3: the preset's
L3 is exclusive) and L2's 3D layer condition (n = 179). The walls beyond
(L3's 3D condition at n = 964, L1's 2D one at n = 681) are printed as
predictions, not simulated; no reduced (full-socket share) configuration is
needed for this machine.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise

from hroof._base.units import format_bytes
from hroof.machine.model import Machine, load_machine
from hroof.roofline.analysis import roofline
from hroof.studies.sweep import (
    SweepPoint,
    Wall,
    expand_grid,
    missing_walls_text,
    run_sweep,
    sweep_walls,
)
from hroof.traces import accounting_text

DEMO_KERNEL = "stencil7"
#: Warm-up sweeps: two, so that both grids' halos have been read once before counting.
DEMO_WARMUP = 2
DEMO_SWEEP = "16,32,48,64,96,128,192"


@dataclass(frozen=True)
class Demo:
    """What :func:`run_demo` made: the machine, the sweep's points and its walls."""

    machine: Machine
    points: list[SweepPoint]
    walls: list[Wall]

    @property
    def small(self) -> SweepPoint:
        return self.points[0]

    @property
    def large(self) -> SweepPoint:
        return self.points[-1]


def run_demo(
    machine: Machine | None = None, *, progress: Callable[[int], None] | None = None
) -> Demo:
    """The 7-point stencil in steady state swept over :data:`DEMO_SWEEP` (cached)."""
    machine = machine or load_machine(None)
    machine.require("hroof demo")
    grid = expand_grid(DEMO_KERNEL, {"n": DEMO_SWEEP, "warmup": str(DEMO_WARMUP)})
    points = run_sweep(DEMO_KERNEL, grid, machine.hierarchy, progress=progress)
    return Demo(machine, points, sweep_walls(points, machine, "n"))


def story(points: list[SweepPoint], machine: Machine) -> dict:
    """What the numbers of a sweep over ``n`` say, for titles and captions.

    Keys: ``bounds`` [(n, GFLOP/s, binding level)], ``falls`` (the bound at the
    last size is below the first), ``monotone`` (it never rises by more than
    5 % from one size to the next), ``binding`` (the binding levels in order,
    repeats removed), ``moves_down`` (each next binding level is lower in the
    hierarchy), and ``accounting`` (cold or steady state, short).
    """
    pts = sorted(points, key=lambda p: p.params["n"])
    order = [lv.name for lv in machine.hierarchy.levels] + [machine.memory_name, "compute"]
    bounds = []
    for p in pts:
        r = roofline(p.result, machine)
        bounds.append((p.params["n"], r.bound, r.binding))
    binding = []
    for _, _, b in bounds:
        if not binding or binding[-1] != b:
            binding.append(b)
    idx = [order.index(b) if b in order else -1 for b in binding]
    return {
        "bounds": bounds,
        "falls": bounds[-1][1] < bounds[0][1],
        "monotone": all(b2 <= b1 * 1.05 for (_, b1, _), (_, b2, _) in pairwise(bounds)),
        "binding": binding,
        "moves_down": all(a < b for a, b in pairwise(idx)),
        "accounting": accounting_text(pts[0].result.source, short=True),
    }


#: The size whose miss-ratio curve the demo draws: both stencil walls within the L3.
DEMO_MRC_N = 64


def summary_table(demo: Demo) -> list[list[str]]:
    """Rows: per size, the footprint, the bytes per point each level below L1 moves for the
    level above (those its bandwidth times: :func:`victims_lines`), the bound and the level
    that binds."""
    names = [lv.name for lv in demo.machine.hierarchy.levels]
    below = [*names[1:], demo.machine.memory_name]
    rows = [["n", "footprint", *(f"{b} B/point" for b in below), "bound GFLOP/s", "binds"]]
    for p in demo.points:
        r = p.result
        npts = p.params["n"] ** 3
        rf = roofline(r, demo.machine)
        per = [lv.bytes / npts for lv in rf.levels[1:]]  # the bytes each roof divides
        rows.append([str(p.params["n"]), format_bytes(p.footprint), *(f"{v:.1f}" for v in per),
                     f"{rf.bound:.3g}", rf.binding])  # fmt: skip
    return rows


def victims_lines(demo: Demo) -> list[str]:
    """A sentence for each exclusive or victim level that took clean victims: the table's
    bytes for it are those its bandwidth times; the victims moved too."""
    out = []
    for k, lv in enumerate(demo.machine.hierarchy.levels):
        extra = [(p.params["n"], p.result.levels[k].victims_in * lv.line / p.params["n"] ** 3)
                 for p in demo.points]  # fmt: skip
        if not any(v for _, v in extra):
            continue
        n, most = max(extra, key=lambda t: t[1])
        above = demo.machine.hierarchy.levels[k - 1].name
        out.append(f"{lv.name} B/point counts the bytes {lv.name}'s bandwidth times: the clean "
                   f"lines {above} evicts into the {lv.inclusion} {lv.name} move too (up to "
                   f"{most:.1f} more B/point, at n={n}), and a measured load bandwidth of such "
                   "a cache already includes them (docs/cache-model.md).")  # fmt: skip
    return out


def summary_lines(demo: Demo) -> list[str]:
    """The story in sentences, every number from the sweep: what the bound does, which
    level binds, each wall beside its prediction, what is left out."""
    s = story(demo.points, demo.machine)
    (n0, b0, l0), (n1, b1, l1) = s["bounds"][0], s["bounds"][-1]
    verb = "falls" if s["falls"] else "does not fall"
    out = [
        f"Counted in {s['accounting']}: the bound {verb} from {b0:.3g} GFLOP/s ({l0} binds, "
        f"n={n0}) to {b1:.3g} GFLOP/s ({l1} binds, n={n1}); the binding level goes "
        + " -> ".join(s["binding"])
        + (" (down the hierarchy)." if s["moves_down"] else "."),
    ]
    out += victims_lines(demo)
    if not s["monotone"]:
        out.append("Between walls the bound creeps up a little: the halo's share of the "
                   "traffic shrinks as n grows.")  # fmt: skip
    out += ["Walls found by simulation, each beside its layer-condition prediction:"]
    out += [f"  {w.text()}" for w in demo.walls] or ["  (none)"]
    out += missing_walls_text(demo.walls, demo.points, demo.machine, "n")
    return out


def carm_lesson(point: SweepPoint, machine: Machine) -> str:
    """The cache-aware reading of one run, with its numbers: one AI, every roof at it,
    and why the run's bound can sit above a lower level's roof."""
    r = roofline(point.result, machine)
    c = r.carm
    roofs = ", ".join(f"{lv.name} {lv.attainable:.3g}" for lv in c.levels if lv.attainable)
    above = [lv.name for lv in c.levels if lv.attainable and r.bound > lv.attainable * 1.001]
    text = (f"n={point.params['n']}: CARM AI = flops / (L1 bytes + non-temporal store bytes) "
            f"= {c.ai:.3f} FLOP/byte; the roofs at that AI: {roofs} GFLOP/s; the CARM bound "
            f"is {c.bound:.3g} GFLOP/s ({c.binding}). The hierarchical bound is "
            f"{r.bound:.3g} GFLOP/s ({r.binding} binds)")  # fmt: skip
    if above:
        roofs_text = (", ".join(above[:-1]) + " and " + above[-1] + " roofs" if len(above) > 1
                      else above[0] + " roof")  # fmt: skip
        text += (f", above the {roofs_text} at the CARM AI: the caches above filter the "
                 "traffic, so fewer bytes cross those levels than the core moves. The CARM "
                 "cannot say which level binds; the hierarchical roofline can, from each "
                 "level's own AI.")  # fmt: skip
    else:
        text += "."
    return text


def format_rows(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                     for r in rows)  # fmt: skip
