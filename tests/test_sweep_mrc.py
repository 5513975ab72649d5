"""The miss-ratio curve of a sweep's point in its report (``hroof.studies.sweep_mrc``)."""

from __future__ import annotations

import pytest

from hroof._base.errors import HroofError
from hroof.cachesim.mrc import miss_ratio_curve
from hroof.machine.model import load_machine
from hroof.studies import sweep_mrc as SM
from hroof.studies.sweep import expand_grid, run_sweep
from hroof.traces import plan_kernel


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HROOF_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def swept():
    machine = load_machine("skylake-sp")
    grid = expand_grid("stencil7", {"n": "8,16,24", "warmup": "1"})
    points = run_sweep("stencil7", grid, machine.hierarchy, workers=1, use_cache=False)
    return points, machine


def test_auto_draws_the_largest_point_exactly_with_its_warmup(swept):
    points, machine = swept
    sc, note = SM.sweep_curve(points, machine, "n")
    assert sc.point.params["n"] == 24 and note == sc.how and note.startswith("exact")
    rep = sc.report
    plan = plan_kernel("stencil7", n=24, warmup=1)
    warm = miss_ratio_curve(
        plan.chunks(start=plan.warmup), machine.hierarchy, warmup=plan.chunks(stop=plan.warmup)
    )
    assert rep.curve.lookups == warm.lookups == sc.point.result.levels[0].lookups
    l1, l2 = rep.levels[0], rep.levels[1]
    sim = sc.point.result.levels
    assert l1.simulated_misses == sim[0].misses == rep.curve.sa_misses[7]  # 8-way L1 exactly
    assert l2.simulated_miss_ratio == sim[1].misses / sim[0].lookups
    assert rep.layer_conditions  # a stencil: the knees have conditions to stand beside


def test_modes_points_and_the_cheap_limit(swept, monkeypatch):
    points, machine = swept
    sc, _ = SM.sweep_curve(points, machine, "n", mode="sample", at=16)
    assert sc.point.params["n"] == 16 and sc.report.curve.sampled
    assert "SHARDS" in sc.how and f"rate {sc.report.curve.sample['rate']:.3g}" in sc.how
    assert SM.sweep_curve(points, machine, "n", mode="off") == (
        None, "The miss-ratio curve was not drawn (--mrc off).")  # fmt: skip
    with pytest.raises(HroofError, match="no point with n=9"):
        SM.sweep_curve(points, machine, "n", at=9)
    with pytest.raises(HroofError, match="--mrc must be one of"):
        SM.sweep_curve(points, machine, "n", mode="fast")
    accesses = {n: plan_kernel("stencil7", n=n, warmup=1).accesses for n in (8, 16, 24)}
    monkeypatch.setattr(SM, "AUTO_MAX_ACCESSES", accesses[16])
    monkeypatch.setattr(SM, "EXACT_MAX_ACCESSES", accesses[8])
    sc, note = SM.sweep_curve(points, machine, "n")
    assert sc.point.params["n"] == 16 and sc.report.curve.sampled
    assert "the largest point with at most" in note
    monkeypatch.setattr(SM, "AUTO_MAX_ACCESSES", accesses[8] - 1)
    sc, note = SM.sweep_curve(points, machine, "n")
    assert sc is None and "every point has more than" in note


@pytest.mark.slow  # two reports, every figure: 10-40 s on a loaded machine
def test_report_has_the_figure_and_its_caption(swept, tmp_path):
    from hroof.plots.report import write_report

    points, machine = swept
    written = write_report(points, machine, tmp_path, title="t")
    names = [p.name for p in written]
    assert names.index("ai_vs_size.png") < names.index("mrc.png") < names.index("traffic.png")
    page = (tmp_path / "report.html").read_text()
    assert (
        "Every cache size at one point" in page
        and "The miss ratio of the stream into L1 at n=24" in page
    )
    # Again into the same directory without the curve: its old figure does not linger.
    write_report(points, machine, tmp_path, title="t", mrc="off")
    assert not (tmp_path / "mrc.png").exists() and not (tmp_path / "mrc.svg").exists()
    assert (tmp_path / "traffic.png").exists()
    assert "not drawn (--mrc off)" in (tmp_path / "report.html").read_text()
