"""The stencil story told true: steady state, NT-store accounting, walls with their
conditions and predictions, and results a script can read."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from hroof.cachesim import SimResult, hierarchy, simulate
from hroof.machine.model import load_machine
from hroof.roofline.analysis import roofline, traffic_parts
from hroof.roofline.layers import stencil_layer_conditions, stencil_walls
from hroof.studies.runs import simulate_kernel
from hroof.studies.sweep import (
    expand_grid,
    missing_walls_text,
    run_sweep,
    sweep_doc,
    sweep_walls,
)
from hroof.traces import accounting, accounting_text, plan_kernel


def _counts(r: SimResult) -> np.ndarray:
    rows = [[lv.lookups, lv.hits, lv.misses, lv.write_allocate_fills, lv.writebacks, lv.bytes,
             lv.traffic_below_bytes] for lv in r.levels]  # fmt: skip
    c = r.core
    flat = [x for row in rows for x in row]
    return np.array([*flat, r.memory.bytes_read, r.memory.bytes_written, c.loads, c.stores,
                     c.bytes_loaded, c.bytes_stored])  # fmt: skip


@pytest.mark.parametrize("kernel, params", [("stencil7", {"n": 6}), ("triad", {"n": 700}),
                                            ("stencil5", {"n": 20, "sweeps": 2})])  # fmt: skip
def test_steady_state_is_the_whole_run_minus_its_warm_up(kernel, params):
    """The naive twin of the counter reset: without a final flush, the counted part's
    integer counts are exactly the whole run's minus those of the warm-up alone."""
    h = hierarchy({"name": "L1", "size": 512, "ways": 2}, {"name": "L2", "size": 4096, "ways": 4})
    steady = simulate_kernel(kernel, h, warmup=2, **params)
    assert accounting(steady.source)["mode"] == "steady" and not steady.flushed
    plan = plan_kernel(kernel, warmup=2, **params)
    whole = simulate(h, plan.chunks(), flush=False)
    warm = simulate(h, plan.chunks(stop=plan.warmup), flush=False)
    assert_array_equal(_counts(steady), _counts(whole) - _counts(warm))
    assert steady.flops == plan_kernel(kernel, **params).flops  # flops of the counted sweeps


def test_stencil_steady_state_bytes_per_point():
    """Small n: the grid stays in cache between iterations, DRAM moves ~nothing; large n:
    each iteration streams from DRAM, 24 B/point while the planes fit in L3, about 40
    when they do not (the layer conditions' figures, halo included)."""
    m = load_machine("teaching")  # L1 4 KiB, L2 32 KiB, L3 256 KiB
    h = m.hierarchy

    def dram_per_point(n):
        r = simulate_kernel("stencil7", h, n=n, warmup=2)
        return r.memory.bytes / n**3

    assert dram_per_point(8) < 0.5
    assert dram_per_point(8) < 0.05 * simulate_kernel("stencil7", h, n=8).memory.bytes / 8**3
    lc48 = stencil_layer_conditions({"n": 48}, h, safety=1.0)[-1]
    assert lc48.holds == "3D" and lc48.bytes_per_point == 24
    assert dram_per_point(48) == pytest.approx(lc48.predicted_bytes_per_point, rel=0.1)
    lc96 = stencil_layer_conditions({"n": 96}, h, safety=1.0)[-1]
    assert lc96.holds == "2D" and lc96.bytes_per_point == 40
    assert dram_per_point(96) == pytest.approx(lc96.predicted_bytes_per_point, rel=0.1)


def test_stream_steady_state_in_cache():
    h = hierarchy({"name": "L1", "size": 32768, "ways": 8}, {"name": "L2", "size": 1 << 20,
                                                            "ways": 16})  # fmt: skip
    cold = simulate_kernel("triad", h, n=1000)
    steady = simulate_kernel("triad", h, n=1000, warmup=1, sweeps=2)
    assert cold.levels[1].bytes > 0 and steady.levels[1].bytes == 0 == steady.memory.bytes
    assert steady.flops == 2 * 2 * 1000 and steady.core.loads == 2 * 2 * 1000


def test_triad_nt_carm_ai_and_traffic_by_cause_sum():
    """The lecture's CARM AI: flops / (L1 bytes + NT bytes) = 2/24 for triad nt=true; the
    CARM bound is not above the hierarchical one; every level's traffic by cause (NT
    stores a part of their own) sums to the bytes of the level below."""
    m = load_machine(None)
    r = simulate_kernel("triad", m.hierarchy, n=100_000, nt=True)
    rf = roofline(r, m)
    assert rf.carm.ai == pytest.approx(2 / 24)
    assert rf.level("L1").ai == pytest.approx(2 / 16)
    assert rf.carm.bound <= rf.bound * (1 + 1e-9)
    below = [lv.bytes for lv in r.levels[1:]] + [r.memory.bytes]
    for i, nbytes in enumerate(below):
        parts = traffic_parts(r, i)
        assert sum(parts.values()) == nbytes
    assert traffic_parts(r, len(r.levels) - 1)["non_temporal"] == 8 * 100_000
    assert rf.walls[-1].total == pytest.approx(r.memory.ai)  # locality walls: NT included


def test_walls_each_with_its_condition_and_prediction(tmp_path, monkeypatch):
    monkeypatch.setenv("HROOF_CACHE_DIR", str(tmp_path))
    m = load_machine("teaching")
    grid = expand_grid("stencil7", {"n": "4,8,12,24,32,48", "warmup": "2"})
    points = run_sweep("stencil7", grid, m.hierarchy, workers=1)
    walls = sweep_walls(points, m, "n")
    got = {(w.level, w.condition, w.predicted, w.matched) for w in walls}
    preds = {(w.level, w.condition): w.n for w in stencil_walls({}, m.hierarchy, steady=True)}
    # L1 (4 KiB) loses the whole grid and its planes, L2 (32 KiB) the whole grid, then
    # its planes; L3 (256 KiB) the whole grid: several walls per level, each its own.
    for key in (("L1", "whole"), ("L1", "3D"), ("L2", "whole"), ("L2", "3D"), ("L3", "whole")):
        assert (*key, preds[key], True) in got, (key, got)
    for w in walls:
        assert w.condition and w.explanation.startswith(w.level)
        assert w.matched == (w.before <= w.predicted < w.after)
        assert "predicts it after n=" in w.text()
    late = [w for w in walls if not w.matched]  # L3 past its whole-grid wall, 16-way LRU
    assert all("still breaking" in w.explanation for w in late)
    whole = next(w for w in walls if w.condition == "whole")
    assert whole.bytes_per_flop_before == 0  # steady state: nothing went below
    doc = sweep_doc(points, m, walls)
    assert {w["condition"] for w in doc["walls"]} >= {"whole", "3D"}
    a = doc["points"][0]["result"]["analysis"]
    assert a["accounting"]["mode"] == "steady" and a["roofline"]["binding"]
    assert "carm" in a["roofline"] and "parts" in a["roofline"]["walls"][0]
    assert SimResult.from_dict(doc["points"][0]["result"]).flops == points[0].result.flops


def test_no_wall_in_range_says_where_the_nearest_is(tmp_path, monkeypatch):
    monkeypatch.setenv("HROOF_CACHE_DIR", str(tmp_path))
    m = load_machine(None)
    points = run_sweep("stencil7", expand_grid("stencil7", {"n": "4,6"}), m.hierarchy,
                       workers=1)  # fmt: skip
    walls = sweep_walls(points, m, "n")
    assert walls == []
    (first, *rest) = missing_walls_text(walls, points, m, "n")
    assert first.startswith("No wall in this range (n=4..6). The nearest predicted wall: L1")
    assert any(line.startswith("Left out (beyond n=6)") for line in rest)


def test_blocking_moves_the_3d_wall():
    h = load_machine(None).hierarchy
    plain = {(w.level, w.condition): w.n for w in stencil_walls({}, h)}
    blocked = {(w.level, w.condition): w for w in stencil_walls({"bj": 16}, h)}
    assert blocked["L1", "3D"].n > plain["L1", "3D"]
    assert "bj=16" in blocked["L1", "3D"].explanation
    assert f"moved this wall from after n={plain['L1', '3D']}" in blocked["L1", "3D"].explanation


def test_old_results_are_cold():
    assert accounting({"kernel": "stencil7", "params": {"n": 8}})["mode"] == "cold"
    assert accounting_text({"trace": "x.npz"}).startswith("cold")
    assert "steady state" in accounting_text(plan_kernel("stencil7", n=4, warmup=1).source())


def test_trace_npz_round_trip_carries_flops_and_kernel(capsys, tmp_path):
    from helpers import run_cli as run

    path = tmp_path / "s7.npz"
    code, out, err = run(capsys, "trace", "stencil7", "n=10", "warmup=2", "--out", path)
    assert code == 0, err
    code, out, err = run(capsys, "simulate", "--trace", path, "--json")
    assert code == 0, err
    import json

    traced = json.loads(out)
    direct = simulate_kernel("stencil7", None, n=10, warmup=2)
    assert traced["flops"] == direct.flops == 7 * 10**3
    assert traced["source"]["kernel"] == "stencil7" and traced["source"]["params"]["n"] == 10
    assert traced["source"]["accounting"]["mode"] == "steady"
    assert [lv["bytes"] for lv in traced["levels"]] == [lv.bytes for lv in direct.levels]
    assert traced["memory"]["bytes"] == direct.memory.bytes
    assert traced["analysis"]["roofline"]["levels"][0]["ai"] == pytest.approx(7 / 64)


def test_trace_warns_before_a_file_over_the_limit(capsys, tmp_path, monkeypatch):
    from helpers import run_cli as run

    from hroof.studies import runs

    monkeypatch.setattr(runs, "TRACE_WARN_BYTES", 1000)
    code, _, err = run(capsys, "trace", "triad", "n=100", "--out", tmp_path / "t.npz")
    assert code == 0 and err.startswith("hroof: warning: ") and "3.8 KiB" in err
    code, _, err = run(capsys, "trace", "triad", "n=10", "--out", tmp_path / "s.npz")
    assert code == 0 and err == ""


def test_gallery_images_are_wide_enough_to_read():
    """Every PNG of the gallery is at least 1200 px wide (7-8 pt labels stay readable)."""
    import struct
    from pathlib import Path

    pngs = sorted((Path(__file__).parent.parent / "docs" / "gallery").glob("*.png"))
    assert len(pngs) >= 9
    for png in pngs:
        width, _ = struct.unpack(">II", png.read_bytes()[16:24])
        assert width >= 1200, (png.name, width)


def test_save_figure_raises_the_dpi_of_a_narrow_figure(tmp_path):
    import struct

    from hroof._base.files import MIN_WIDTH_PX, save_figure
    from hroof.plots.figure import figure

    fig = figure(4, 3)
    fig.subplots().plot([1, 2], [1, 2])
    path = save_figure(fig, tmp_path / "narrow.png")
    width, _ = struct.unpack(">II", path.read_bytes()[16:24])
    assert MIN_WIDTH_PX <= width <= MIN_WIDTH_PX + 2
