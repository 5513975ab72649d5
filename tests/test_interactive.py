"""The interactive report without a browser: the sentences and hover texts of
:mod:`hroof.studies.explain` say what the data says (change the data, the words change),
and the page (:mod:`hroof.plots.interactive`) is self-contained and carries them, one
slider step per size."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from hroof.machine.model import load_machine
from hroof.studies import explain
from hroof.studies.sweep import expand_grid, run_sweep, sweep_walls

SIZES = "8,16,32"


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    machine = load_machine("teaching")
    grid = expand_grid("stencil7", {"n": SIZES, "warmup": "2"})
    points = run_sweep("stencil7", grid, machine.hierarchy, workers=1, use_cache=False)
    return points, machine, sweep_walls(points, machine, "n")


def test_sentences_name_the_binding_level_and_its_numbers(sweep):
    from hroof.roofline.analysis import roofline

    points, machine, walls = sweep
    views = explain.views(points, machine, walls, "n")
    assert [v["value"] for v in views] == [8, 16, 32]
    for p, v in zip(points, views, strict=True):
        r = roofline(p.result, machine)
        b = r.level(r.binding)
        assert v["roofline"].startswith(f"At n = {p.params['n']} the {r.binding} dot touches")
        assert (
            f"{b.ai:.3g} FLOP/byte x {b.bandwidth:g} GB/s = {r.bound:.3g} GFLOP/s" in v["roofline"]
        )
        assert f"at {r.bound:.3g} GFLOP/s" in v["carm"]
        assert f"one AI, {r.carm.ai:.3g} FLOP/byte" in v["carm"]
        assert f"the bound is {r.bound:.3g} GFLOP/s ({r.binding} binds)" in v["bound"]
        # Levels that move nothing have no dot, and the sentence says which.
        absent = [lv.name for lv in r.levels if lv.ai is None]
        assert ("no dot" in v["roofline"]) == bool(absent)
    # n = 8 on the teaching machine: the grid stays in L2 (L3 and DRAM move nothing), L2
    # binds; the CARM reads L2's roof below the dot at its one AI.
    assert "L3 and DRAM move nothing" in views[0]["roofline"]
    assert "L2 binds, but its roof at the CARM AI lies below the dot" in views[0]["carm"]


def test_changing_the_data_changes_the_sentences(sweep):
    points, machine, walls = sweep
    p = points[-1]  # n = 32: DRAM binds on the teaching machine
    before = explain.roofline_sentence(p, machine, "n")
    carm_before = explain.carm_sentence(p, machine, "n")
    assert "the DRAM dot touches" in before
    # Ten times the DRAM bandwidth: DRAM no longer binds, and the words follow the numbers.
    fast = replace(machine, memory_bandwidth=machine.memory_bandwidth * 10)
    after = explain.roofline_sentence(p, fast, "n")
    assert after != before and "the DRAM dot touches" not in after
    assert re.search(r"the (L1|L2|L3) dot touches", after)
    assert explain.carm_sentence(p, fast, "n") != carm_before
    # Twice DRAM's bytes in the result: its AI halves, and so does the bound the sentence
    # prints.
    mem = p.result.memory
    heavy = replace(p, result=replace(p.result, memory=replace(
        mem, bytes_read=mem.bytes_read * 2, bytes_written=mem.bytes_written * 2,
        ai=mem.ai / 2)))  # fmt: skip
    doubled = explain.roofline_sentence(heavy, machine, "n")
    old_ai = float(re.search(r"\(([\d.]+) FLOP/byte", before).group(1))
    new_ai = float(re.search(r"\(([\d.]+) FLOP/byte", doubled).group(1))
    assert new_ai == pytest.approx(old_ai / 2, rel=0.01)
    bound_before = explain.bound_sentence(points, machine, walls, "n", 32)
    bound_after = explain.bound_sentence([*points[:-1], heavy], machine, walls, "n", 32)
    assert bound_after != bound_before
    # No wall, and the bound sentence says so instead of naming one.
    assert "found no wall" in explain.bound_sentence(points, machine, [], "n", 16)


def test_hover_text_splits_the_bytes_by_cause(sweep):
    from hroof._base.units import format_bytes
    from hroof.roofline.analysis import traffic_parts

    points, machine, _ = sweep
    p = points[-1]
    text = explain.level_hover(p, machine, "n", 3)  # DRAM
    parts = traffic_parts(p.result, 2)
    assert text.startswith("<b>stencil7 n = 32: DRAM</b>")
    for cause, nbytes in parts.items():
        if nbytes:
            assert f"{cause.replace('_', '-')} {format_bytes(nbytes)}" in text
    wb = p.result.levels[2].writebacks * p.result.levels[2].line
    assert f"writebacks from L3 (inside compulsory and capacity): {format_bytes(wb)}" in text
    assert "binds: DRAM's roof is the lowest" in text
    lb = explain.level_bytes(p.result)
    assert [x.name for x in lb] == ["L1", "L2", "L3", "DRAM"]
    assert all(sum(x.parts.values()) == x.total for x in lb[1:])


def test_page_is_self_contained_and_carries_every_sentence(sweep):
    from hroof.plots import interactive

    points, machine, walls = sweep
    page = interactive.interactive_html(points, machine, walls, "n", title="t")
    assert not re.search(r"<script[^>]*\ssrc=", page)  # nothing to fetch: plotly.js inline
    assert len(page) > 1_000_000  # plotly.js inline
    fig, views = interactive._figure_dict(points, machine, walls, "n", None)
    steps = fig["layout"]["sliders"][0]["steps"]
    assert [s["label"] for s in steps] == ["8", "16", "32"]
    for step, v in zip(steps, views, strict=True):
        texts = [t.replace("<br>", " ") for k, t in step["args"][1].items()
                 if k.startswith("annotations[")]  # fmt: skip
        for key in ("roofline", "carm", "bound"):
            assert v[key] in texts
    # Every trace a reader sees in a legend has a name; every axis its unit.
    assert all(t.get("name") for t in fig["data"] if t.get("showlegend", True))
    for ax in ("xaxis", "yaxis", "xaxis2", "xaxis3", "yaxis3"):
        assert fig["layout"][ax]["title"]["text"]
    json.dumps(fig)  # plain data


def test_non_temporal_stores_are_a_cause_of_their_own():
    """triad nt=true: DRAM's bytes include the core's non-temporal stores, named in the
    hover text; the CARM's AI counts them as bytes the core moves."""
    from hroof.studies.runs import simulate_kernel
    from hroof.studies.sweep import SweepPoint

    machine = load_machine("teaching")
    r = simulate_kernel("triad", machine.hierarchy, n=1 << 14, nt=True)
    p = SweepPoint({"n": 1 << 14}, 0, r)
    text = explain.level_hover(p, machine, "n", 3)
    assert f"non-temporal {r.core.bytes_nt // 1024}.0 KiB" in text
    assert "non-temporal 128.0 KiB" in explain.carm_hover(p, machine, "n")
    assert "CARM AI = flops / (L1 bytes + non-temporal bytes) = 0.0833" in explain.carm_hover(
        p, machine, "n"
    )
