"""Roofline analysis (AI per level, bounds, CARM, walls, regions) and stencil layer conditions."""

from __future__ import annotations

import dataclasses
import json

import pytest

from hroof._base.errors import ConfigError, HroofError
from hroof.cachesim import hierarchy
from hroof.roofline import machine_from_dict
from hroof.roofline.analysis import REGIONS, region, roofline
from hroof.roofline.layers import cube_limit, stencil_layer_conditions
from hroof.studies.runs import simulate_kernel

N = 1024  # triad elements: 3 arrays of 8 KiB


def _doc(**over):
    doc = {
        "machine": {"name": "tiny"},
        "compute": {"peak": 10.0},
        "level": [
            # one set, fully associative: the triad streams with no conflicts
            {"name": "L1", "size": 1024, "ways": 16, "line": 64, "bandwidth": 96.0},
            {"name": "L2", "size": 32768, "ways": 8, "line": 64, "bandwidth": 40.0},
        ],
        "memory": {"name": "DRAM", "bandwidth": 12.0},
    }
    doc.update(over)
    return doc


@pytest.fixture(scope="module")
def tiny():
    return machine_from_dict(_doc())


@pytest.fixture(scope="module")
def triad(tiny):
    return simulate_kernel("triad", tiny.hierarchy, n=N)


def test_triad_hand_computed(tiny, triad):
    r = roofline(triad, tiny)
    assert r.flops == 2 * N
    # L1: the core moves 24 bytes an element (load b, c; store a) for 2 flops
    l1, l2, mem = r.levels
    assert (l1.name, l2.name, mem.name) == ("L1", "L2", "DRAM")
    assert l1.bytes == 24 * N and l1.ai == pytest.approx(2 / 24)
    # L1 -> L2: 3 lines filled (b, c, RFO of a) + 1 written back per 8 elements: 32 B/element;
    # L2 holds all 24 KiB, so memory sees the same 32 B/element (flushed at the end)
    assert l2.bytes == 32 * N and mem.bytes == 32 * N
    assert l1.attainable == pytest.approx(2 / 24 * 96.0)  # 8 GFLOP/s
    assert l2.attainable == pytest.approx(2 / 32 * 40.0)  # 2.5
    assert mem.attainable == pytest.approx(2 / 32 * 12.0)  # 0.75
    assert r.bound == pytest.approx(0.75) and r.binding == "DRAM"
    assert r.peak == 10.0 and r.unknown == () and r.complete
    assert [lv.ridge_point for lv in r.levels] == pytest.approx([10 / 96, 10 / 40, 10 / 12])
    # CARM: one AI (the L1 one) against each bandwidth
    assert r.carm.ai == l1.ai
    assert [c.attainable for c in r.carm.levels] == pytest.approx(
        [2 / 24 * 96, 2 / 24 * 40, 2 / 24 * 12]
    )
    assert r.carm.bound == pytest.approx(1.0) and r.carm.binding == "DRAM"
    d = json.loads(json.dumps(r.to_dict()))
    assert d["binding"] == "DRAM" and d["levels"][0]["ai"] == pytest.approx(2 / 24)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.bound = 1.0


def test_compute_binds_when_peak_is_low(triad):
    m = machine_from_dict(_doc(compute={"peak": 0.5}))
    r = roofline(triad, m)
    assert r.bound == 0.5 and r.binding == "compute"
    assert r.carm.binding == "compute"


def test_unknown_figures_are_none_and_reported(triad):
    doc = _doc(compute={}, memory={"name": "DRAM"})
    doc["level"][1] = {k: v for k, v in doc["level"][1].items() if k != "bandwidth"}
    m = machine_from_dict(doc)
    r = roofline(triad, m)
    assert r.level("L2").bandwidth is None and r.level("L2").attainable is None
    assert r.level("DRAM").attainable is None and r.level("DRAM").ridge_point is None
    assert r.level("L2").ai == pytest.approx(2 / 32)  # AI needs no machine figure
    assert set(r.unknown) == {"L2 bandwidth", "DRAM bandwidth", "compute peak"}
    assert not r.complete
    # bound over the known figures only: L1's 8 GFLOP/s
    assert r.bound == pytest.approx(8.0) and r.binding == "L1"
    # nothing known at all
    bare = machine_from_dict({"level": _doc()["level"]})
    bare = dataclasses.replace(bare, bandwidths=(None, None))
    r = roofline(triad, bare)
    assert r.bound is None and r.binding is None and r.carm.bound is None


def test_unknown_flops(tiny, triad):
    r = roofline(dataclasses.replace(triad, flops=None), tiny)
    assert all(lv.ai is None and lv.attainable is None for lv in r.levels)
    assert "flops" in r.unknown and r.binding == "compute" and r.bound == 10.0
    assert all(w.total is None for w in r.walls)


def test_mismatched_levels_name_both(triad):
    doc = _doc()
    doc["level"] = [doc["level"][0]]
    with pytest.raises(ConfigError, match=r"\['L1', 'L2'\].*\['L1'\]"):
        roofline(triad, machine_from_dict(doc))
    with pytest.raises(HroofError, match="SimResult"):
        roofline({"flops": 1}, machine_from_dict(doc))


def test_locality_walls_sum_and_order(tiny):
    r = simulate_kernel("stencil7", tiny.hierarchy, n=12)
    rl = roofline(r, tiny)
    for lv, w, below in zip(r.levels, rl.walls, rl.levels[1:], strict=True):
        t = lv.traffic_below
        assert sum(t.values()) == lv.traffic_below_bytes
        assert w.below == below.name
        assert w.compulsory == pytest.approx(r.flops / t["compulsory"])
        assert w.write_allocate == pytest.approx(r.flops / (t["compulsory"] + t["write_allocate"]))
        assert w.compulsory >= w.write_allocate >= w.capacity >= w.total
        # the last wall is the AI of the next level down (L2; memory minus nothing)
        assert w.total == pytest.approx(r.flops / lv.traffic_below_bytes)
    assert rl.walls[0].total == pytest.approx(rl.level("L2").ai)
    assert rl.walls[-1].total == pytest.approx(rl.level("DRAM").ai)
    assert rl.walls[0].capacity > rl.walls[0].total or r.levels[0].traffic_below["conflict"] == 0


def test_walls_none_without_classification(tiny):
    r = roofline(simulate_kernel("triad", tiny.hierarchy, n=256, classify=False), tiny)
    assert all(w.compulsory is None and w.total is None for w in r.walls)
    assert r.bound is not None


# ------------------------------------------------------------------------- regions
@pytest.fixture(scope="module")
def balance():
    # peak 100 GFLOP/s, DRAM 10 GB/s: ridge at 10 FLOP/byte; L1 100 GB/s: ridge at 1
    return machine_from_dict(
        {
            "compute": {"peak": 100.0},
            "level": [{"name": "L1", "size": 1024, "ways": 2, "bandwidth": 100.0}],
            "memory": {"bandwidth": 10.0},
        }
    )


@pytest.mark.parametrize(
    "ai, perf, level, expected",
    [
        (1.0, 10.0, None, "memory-bound"),  # on the bandwidth roof
        (1.0, 5.0, None, "memory-bound"),  # exactly half of it
        (1.0, 4.9, None, "poor (memory side)"),
        (1.0, 10.5, None, "unattainable"),  # above the bandwidth line
        (20.0, 100.0, None, "compute-bound"),
        (20.0, 50.0, None, "compute-bound"),
        (20.0, 49.0, None, "poor (compute side)"),
        (20.0, 101.0, None, "unattainable"),  # above the peak
        (10.0, 60.0, None, "compute-bound"),  # the ridge point counts as compute
        (0.5, 40.0, "L1", "memory-bound"),  # L1 roof: 50 GFLOP/s at AI 0.5
        (2.0, 60.0, "L1", "compute-bound"),
        (2.0, 20.0, "L1", "poor (compute side)"),
    ],
)
def test_regions(balance, ai, perf, level, expected):
    assert region(ai, perf, balance, level) == expected
    assert expected in REGIONS


def test_region_validates(balance):
    with pytest.raises(HroofError, match="ai"):
        region(0.0, 1.0, balance)
    with pytest.raises(HroofError, match="performance"):
        region(1.0, -1.0, balance)
    with pytest.raises(HroofError, match="performance"):
        region(1.0, float("nan"), balance)
    with pytest.raises(ConfigError, match="no level 'L9'"):
        region(1.0, 1.0, balance, "L9")
    no_peak = machine_from_dict({"level": [{"name": "L1", "size": 1024, "ways": 2}]})
    with pytest.raises(ConfigError, match="DRAM bandwidth or compute peak"):
        region(1.0, 1.0, no_peak)


# ------------------------------------------------------------------ layer conditions
# n = 32 with padding (jS = 35, kS = 35*34 + 3 elements): the 3D condition needs
# 4 kS - 2 jS = 4702 elements = 37 616 B, the 2D one 6 jS - 4 = 206 elements = 1648 B.
STENCIL = {"n": 32, "pad_row": 1, "pad_plane": 3}
POINTS = 32**3


@pytest.fixture(scope="module")
def three_walls():
    # one level on each side of each wall, well clear of it (high associativity)
    return hierarchy(
        {"name": "L1", "size": 512, "ways": 8},  # < 2D requirement: no condition
        {"name": "L2", "size": 8192, "ways": 16},  # 2D holds, 3D does not
        {"name": "L3", "size": 65536, "ways": 16},  # 3D holds
    )


def test_stencil7_conditions_vs_simulation(three_walls):
    lcs = stencil_layer_conditions(STENCIL, three_walls, safety=1.0)
    assert [lc.holds for lc in lcs] == ["none", "2D", "3D"]
    assert [lc.bytes_per_point for lc in lcs] == [56, 40, 24]
    assert [lc.below for lc in lcs] == ["L2", "L3", "DRAM"]
    assert lcs[0].requirements == {"3D": 37616, "2D": 1648, "none": None}
    r = simulate_kernel("stencil7", three_walls, **STENCIL)
    for lc, lv in zip(lcs, r.levels, strict=True):
        measured = lv.traffic_below_bytes / POINTS
        assert measured == pytest.approx(lc.bytes_per_point, rel=0.15), lc.level
        assert measured == pytest.approx(lc.predicted_bytes_per_point, rel=0.03), lc.level
    assert r.memory.bytes / POINTS == pytest.approx(lcs[-1].predicted_bytes_per_point, rel=0.03)


def test_prediction_changes_where_simulation_does():
    # one 64 KiB level (3D needs 37 KiB at n = 32) against n on both sides of its limit
    h = hierarchy({"name": "L1", "size": 65536, "ways": 16})
    limit = stencil_layer_conditions(STENCIL, h, safety=1.0)[0].max_n["3D"]
    assert 40 <= limit <= 44
    seen = []
    for n in (limit - 14, limit + 14):
        p = dict(STENCIL, n=n)
        lc = stencil_layer_conditions(p, h, safety=1.0)[0]
        measured = simulate_kernel("stencil7", h, **p).levels[0].traffic_below_bytes / n**3
        # within 15 % of the grid's prediction (bulk 24 / 40 B plus halo rows and planes)
        assert measured == pytest.approx(lc.predicted_bytes_per_point, rel=0.15)
        other = {24: 40, 40: 24}[lc.bytes_per_point]  # the other side of the wall
        assert abs(measured - lc.bytes_per_point) < abs(measured - other)
        seen.append((lc.holds, lc.bytes_per_point))
    assert seen == [("3D", 24), ("2D", 40)]


def test_safety_factor_is_conservative(three_walls):
    # kerncraft's half-the-cache rule moves the 3D wall of the 64 KiB level past n = 32
    half = stencil_layer_conditions(STENCIL, three_walls)
    full = stencil_layer_conditions(STENCIL, three_walls, safety=1.0)
    assert half[2].budget == 32768 and half[2].holds == "2D" and full[2].holds == "3D"
    assert half[2].max_n["3D"] < full[2].max_n["3D"]
    with pytest.raises(HroofError, match="safety"):
        stencil_layer_conditions(STENCIL, three_walls, safety=1.5)


def test_cube_limits_closed_form():
    h = hierarchy({"name": "L1", "size": "48 KiB", "ways": 12})
    for safety in (0.5, 1.0):
        lc = stencil_layer_conditions({"n": 8}, h, safety=safety)[0]
        assert lc.max_n["3D"] == cube_limit("3D", 48 * 1024, safety=safety)
        assert lc.max_n["2D"] == cube_limit("2D", 48 * 1024, safety=safety)
        assert lc.max_n["none"] is None
    assert cube_limit("3D", 48 * 1024) == 25 and cube_limit("2D", 48 * 1024) == 510


def test_blocking_replaces_the_plane(three_walls):
    p = dict(STENCIL, bj=4)
    lcs = stencil_layer_conditions(p, three_walls, safety=1.0)
    # (4 bj + 2) jS elements = 18 * 35 * 8 B: the 3D condition now holds in 8 KiB
    assert lcs[1].requirements["3D"] == 18 * 35 * 8 and lcs[1].holds == "3D"
    r = simulate_kernel("stencil7", three_walls, **p)
    for lc, lv in zip(lcs, r.levels, strict=True):
        assert lv.traffic_below_bytes / POINTS == pytest.approx(
            lc.predicted_bytes_per_point, rel=0.15
        )


@pytest.mark.parametrize(
    "kernel, params, points, expected",
    [
        ("stencil5", {"n": 128, "pad_row": 1}, 128**2, [40, 24]),
        ("stencil27", {"n": 24, "pad_row": 1, "pad_plane": 3}, 24**3, [40, 24]),
    ],
)
def test_other_stencils(kernel, params, points, expected):
    h = hierarchy({"name": "L2", "size": 8192, "ways": 16},
                  {"name": "L3", "size": 65536, "ways": 16})  # fmt: skip
    if kernel == "stencil5":  # the 2D stencil's one condition: 4 jS - 2 = 522 elements
        h = hierarchy({"name": "L1", "size": 512, "ways": 8}, h.levels[0])
    lcs = stencil_layer_conditions(params, h, kernel=kernel, safety=1.0)
    assert [lc.bytes_per_point for lc in lcs] == expected
    r = simulate_kernel(kernel, h, **params)
    for lc, lv in zip(lcs, r.levels, strict=True):
        measured = lv.traffic_below_bytes / points
        assert measured == pytest.approx(lc.bytes_per_point, rel=0.2)
        assert measured == pytest.approx(lc.predicted_bytes_per_point, rel=0.03)


def test_layer_conditions_validate(three_walls):
    with pytest.raises(HroofError, match="triad"):
        stencil_layer_conditions({"n": 8}, three_walls, kernel="triad")
    with pytest.raises(HroofError, match="bogus"):
        stencil_layer_conditions({"n": 8, "bogus": 1}, three_walls)
    with pytest.raises(HroofError, match="bj"):
        stencil_layer_conditions({"n": 8, "bj": 9}, three_walls)
    with pytest.raises(HroofError, match="HierarchyConfig"):
        stencil_layer_conditions({"n": 8}, "generic")
    d = stencil_layer_conditions({"n": 8}, three_walls)[0].to_dict()
    assert json.loads(json.dumps(d))["holds"] == "none"


def test_no_write_allocate_level():
    h = hierarchy({"name": "L1", "size": 65536, "ways": 16, "write_allocate": False})
    lc = stencil_layer_conditions(STENCIL, h, safety=1.0)[0]
    assert lc.holds == "3D" and lc.bytes_per_point == 16
