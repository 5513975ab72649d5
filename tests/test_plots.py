"""Every plot rendered with Agg and checked for content: labels, roofs, dots, legends."""

from __future__ import annotations

import matplotlib
import numpy as np
import pytest

from hroof._base.errors import ConfigError
from hroof.machine.model import machine_from_dict
from hroof.plots import roofline as plots
from hroof.studies.sweep import expand_grid, find_walls, run_sweep

TEACH = {
    "machine": {"name": "teach"},
    "compute": {"peak": 40.0, "ceilings": {"no FMA": 20.0, "scalar": 5.0}},
    "level": [
        {"name": "L1", "size": "4 KiB", "ways": 4, "bandwidth": 200.0},
        {"name": "L2", "size": "32 KiB", "ways": 8, "bandwidth": 100.0},
        {"name": "L3", "size": "256 KiB", "ways": 16, "bandwidth": 50.0},
    ],
    "memory": {"bandwidth": 15.0},
}


@pytest.fixture(scope="module")
def machine():
    return machine_from_dict(TEACH)


@pytest.fixture(scope="module")
def sweep(machine, tmp_path_factory):
    import os

    os.environ["HROOF_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    return run_sweep("stencil7", expand_grid("stencil7", {"n": "4..64:x2"}), machine.hierarchy)


def texts(ax):
    return [t.get_text() for t in ax.texts]


def test_figures_leave_pyplot_alone(machine, sweep):
    """Figures are made outside pyplot: no backend switched, no open figure left behind."""
    import matplotlib.pyplot as plt

    before = matplotlib.get_backend()
    open_before = plt.get_fignums()
    fig = plots.plot_side_by_side(sweep, machine, param="n")
    assert plt.get_fignums() == open_before
    assert matplotlib.get_backend() == before
    assert fig.canvas is not None


def test_hierarchical(machine, sweep):
    fig = plots.plot_hierarchical(sweep, machine, param="n")
    (ax,) = fig.axes
    assert ax.get_xlabel() == "arithmetic intensity (FLOP/byte)"
    assert ax.get_ylabel() == "performance (GFLOP/s)"
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
    t = texts(ax)
    for label in ("L1 200 GB/s", "L2 100 GB/s", "L3 50 GB/s", "DRAM 15 GB/s",
                  "peak 40 GFLOP/s", "no FMA 20 GFLOP/s", "scalar 5 GFLOP/s"):  # fmt: skip
        assert label in t
    assert [h.get_label() for h in ax.get_legend().legend_handles] == [
        "L1 AI", "L2 AI", "L3 AI", "DRAM AI"
    ]  # fmt: skip
    # One trajectory per level with one dot per sweep point.
    tracks = {ln.get_label(): ln for ln in ax.lines if ln.get_label().endswith(" AI")}
    assert all(len(ln.get_xdata()) == len(sweep) for ln in tracks.values())
    # A run's dots share one height: its bound.
    for p in sweep:
        perf, _ = plots.bound(p.result, machine)
        assert perf <= 40.0
    # Every run is named by a label, alone ("n=4") or in a merged range ("n=16..64") where
    # the runs' labels would overlap; no label stands on another.
    named = []
    for label in (x for x in t if x.startswith("n=")):
        lo, _, hi = label[2:].partition("..")
        ns = [p.params["n"] for p in sweep]
        named += ns[ns.index(int(lo)) : ns.index(int(hi or lo)) + 1]
    assert named == [p.params["n"] for p in sweep]
    anchors = [np.log10(a.xy) for a in ax.texts if a.get_text().startswith("n=")]
    for i, (x1, y1) in enumerate(anchors):
        for x2, y2 in anchors[i + 1 :]:
            assert abs(y1 - y2) >= 0.02 or abs(x1 - x2) >= 0.3, (x1, y1, x2, y2)


def test_carm_dots_at_constant_ai(machine, sweep):
    fig = plots.plot_carm(sweep, machine, param="n")
    (ax,) = fig.axes
    (dots,) = [ln for ln in ax.lines if ln.get_label() == "run (L1 AI)"]
    xs = dots.get_xdata()
    assert len(xs) == len(sweep) and max(xs) == pytest.approx(min(xs)) == pytest.approx(7 / 64)
    assert any("(DRAM)" in t for t in texts(ax))


def test_side_by_side(machine, sweep):
    fig = plots.plot_side_by_side(sweep, machine, param="n")
    assert len(fig.axes) == 2
    assert "Hierarchical" in fig.axes[0].get_title() and "Cache-aware" in fig.axes[1].get_title()


def test_ai_vs_size_marks_walls(sweep):
    walls = find_walls(sweep, "n")
    fig = plots.plot_ai_vs_size(sweep, "n", walls=walls)
    (ax,) = fig.axes
    assert ax.get_xlabel() == "n" and "FLOP/byte" in ax.get_ylabel()
    assert [t.get_text() for t in ax.get_legend().texts] == ["L1", "L2", "L3", "DRAM"]
    assert sum("wall" in t for t in texts(ax)) == len(walls) >= 2
    assert "L1 wall\n(4 KiB)" in texts(ax)


def test_ai_vs_size_marks_predicted_walls(machine, sweep):
    from hroof.studies.sweep import predicted_walls

    predicted = predicted_walls(sweep, machine, "n")
    assert predicted == {"L1": 9, "L2": 30}  # 3D layer conditions of 4 KiB and 32 KiB
    fig = plots.plot_ai_vs_size(sweep, "n", walls=find_walls(sweep, "n"), predicted=predicted)
    (ax,) = fig.axes
    assert "L1: predicted\nn=9" in texts(ax) and "L2: predicted\nn=30" in texts(ax)


def test_traffic_bars(sweep):
    fig = plots.plot_traffic(sweep, "n")
    (ax,) = fig.axes
    legend = [t.get_text() for t in ax.get_legend().texts]
    assert legend == ["compulsory", "write-allocate", "capacity", "conflict"]
    assert len(ax.patches) == len(sweep) * 3 * 4  # sizes x levels x parts
    assert [t.get_text() for t in ax.get_xticklabels()] == [str(p.params["n"]) for p in sweep]


def test_rooflines_need_the_figures(sweep):
    bare = machine_from_dict({"level": TEACH["level"][:1]})
    words = r"has no .*DRAM bandwidth, compute peak; a roofline plot"
    with pytest.raises(ConfigError, match=words):
        plots.plot_hierarchical(sweep, bare)


def test_roofline_of_runs_without_flops_is_a_clear_error(machine):
    from hroof._base.errors import HroofError
    from hroof.studies.runs import simulate_kernel

    copy = simulate_kernel("copy", machine.hierarchy, n=512)
    with pytest.raises(HroofError, match="needs runs with flops"):
        plots.plot_hierarchical([copy], machine)
    with pytest.raises(HroofError, match="needs runs with flops"):
        plots.plot_carm([copy], machine)
    # runs without flops are left out beside runs with them
    triad = simulate_kernel("triad", machine.hierarchy, n=512)
    (ax,) = plots.plot_carm([copy, triad], machine).axes
    (dots,) = [ln for ln in ax.lines if ln.get_label() == "run (L1 AI)"]
    assert len(dots.get_xdata()) == 1
