"""The roofline model of energy (hroof.roofline.energy), its plots and ``hroof energy``.

Formulas are checked by hand on a tiny made-up machine written to ``tmp_path``; the
numbers of references/energy-roofline.zh.txt (Ghane et al.) and of the i7-950 preset
(Choi et al., IPDPS 2013) are recomputed through hroof's own functions.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from helpers import run_cli as run

from hroof._base.errors import ConfigError, HroofError
from hroof.plots.energy import (
    plot_efficiency,
    plot_energy,
    plot_energy_breakdown,
    plot_power,
)
from hroof.roofline import load_machine, roofline
from hroof.roofline.energy import EnergyModel, LevelCost, energy_model, run_energy
from hroof.studies.runs import simulate_kernel
from hroof.studies.sweep import Wall, expand_grid, find_walls, run_sweep

# A made-up machine with round numbers (every figure invented for the test):
# 10 GFLOP/s, L1 40 GB/s at 1 pJ/B, L2 20 GB/s with no energy figure, DRAM 5 GB/s at
# 400 pJ/B; 100 pJ a flop, 2 W constant; ceilings at 5 and 2 GFLOP/s and at 2.5 GB/s (DRAM).
TOY = """\
[machine]
name = "toy"

[compute]
peak = 10.0
ceilings = { "no FMA" = 5.0, "scalar" = 2.0 }

[[level]]
name = "L1"
size = "1 KiB"
ways = 2
line = 64
bandwidth = 40.0

[[level]]
name = "L2"
size = "4 KiB"
ways = 4
line = 64
bandwidth = 20.0

[memory]
name = "DRAM"
bandwidth = 5.0
ceilings = { "no prefetch" = 2.5 }

[energy]
flop_pj = 100.0
constant_w = 2.0
byte_pj = { L1 = 1.0, DRAM = 400.0 }
source = "made up for the tests"
"""


@pytest.fixture
def toy_path(tmp_path):
    path = tmp_path / "toy.toml"
    path.write_text(TOY)
    return path


@pytest.fixture
def toy(toy_path):
    return load_machine(toy_path)


@pytest.fixture
def model(toy):
    return energy_model(toy)


def _model(**kw):
    """DRAM only: 10 GFLOP/s, 5 GB/s, 100 pJ/flop, 400 pJ/B, 2 W (overridable)."""
    args = {"peak": 10.0, "flop_pj": 100.0, "constant_w": 2.0, "bw": 5.0, "byte_pj": 400.0}
    args.update(kw)
    return EnergyModel("m", args["peak"], args["flop_pj"], args["constant_w"],
                       (LevelCost("DRAM", args["bw"], args["byte_pj"]),))  # fmt: skip


# --------------------------------------------------------------------------- formulas
def test_model_from_machine_file(model):
    assert model.level_names == ["L1", "L2", "DRAM"]
    assert model.uncharged == ("L2",) and model.untimed == ()
    assert [c.name for c in model.ceilings] == ["no FMA", "scalar"]
    assert model.ceilings[0].means  # the machine file's known name carries its meaning
    assert [(c.level, c.name, c.value) for c in model.bandwidth_ceilings] == [
        ("DRAM", "no prefetch", 2.5)]  # fmt: skip
    assert model.source == "made up for the tests"


def test_balances_by_hand(model):
    # time balance = peak / bandwidth; energy balance = pJ per byte / pJ per flop
    assert model.time_balance() == 2.0 and model.time_balance("L1") == 0.25
    assert model.energy_balance() == 4.0 and model.energy_balance("L1") == 0.01
    # eps_hat = 100 pJ + 2 W x (1 / 10 GFLOP/s) = 100 + 200 pJ; 1/300 pJ = 3.33 GFLOP/J
    assert model.min_pj_per_flop == pytest.approx(300.0)
    assert model.max_efficiency == pytest.approx(1000 / 300)
    assert model.flop_power == pytest.approx(1.0)  # 100 pJ x 1e10 flop/s


def test_estimate_by_hand(model):
    e = model.estimate(1e9, {"L1": 4e9, "L2": 2e9, "DRAM": 1e9})
    # times: flops 0.1 s, L1 0.1 s, L2 0.1 s, DRAM 0.2 s -> DRAM binds, T = 0.2 s
    assert e.time_s == pytest.approx(0.2) and e.binding == "DRAM"
    # E = 1e9 x 100 pJ + 4e9 x 1 pJ + (L2 not charged) + 1e9 x 400 pJ + 2 W x 0.2 s
    assert e.part("flops").joules == pytest.approx(0.1)
    assert e.part("L1").joules == pytest.approx(0.004)
    assert e.part("DRAM").joules == pytest.approx(0.4)
    assert e.part("constant").joules == pytest.approx(0.4)
    assert e.total_j == pytest.approx(0.904)
    assert e.power_w == pytest.approx(0.904 / 0.2)
    assert e.gflop_per_j == pytest.approx(1 / 0.904)
    assert e.pj_per_flop == pytest.approx(904.0)
    assert e.performance == pytest.approx(5.0)
    assert e.uncharged == ("L2",) and not e.complete
    assert e.dominant.name in ("DRAM", "constant")
    assert [p.name for p in e.parts] == ["flops", "L1", "DRAM", "constant"]
    d = e.to_dict()
    assert d["energy_j"] == pytest.approx(0.904) and d["uncharged"] == ["L2"]


def test_estimate_compute_bound_and_empty(model):
    e = model.estimate(1e9, {"DRAM": 1e8})  # 0.1 s of flops, 0.02 s of DRAM
    assert e.binding == "compute" and e.time_s == pytest.approx(0.1)
    assert e.total_j == pytest.approx(0.1 + 0.04 + 0.2)
    empty = model.estimate(0, {})
    assert empty.time_s == 0 and empty.binding is None and empty.power_w is None
    assert empty.gflop_per_j is None and empty.pj_per_flop is None
    with pytest.raises(ConfigError, match="no level 'L9'"):
        model.estimate(1, {"L9": 1})
    with pytest.raises(HroofError, match="flops"):
        model.estimate(-1, {})


def test_curves_by_hand(model):
    # I = 1 FLOP/B on DRAM: bandwidth-bound (ridge 2): 5 GFLOP/s; per flop 100 + 400 + 2 W x
    # (1 / 5 GFLOP/s) = 100 + 400 + 400 pJ = 900 pJ; power 900 pJ x 5e9 /s = 4.5 W
    assert model.pj_per_flop(1.0) == pytest.approx(900.0)
    assert model.efficiency(1.0) == pytest.approx(1000 / 900)
    assert model.performance(1.0) == pytest.approx(5.0)
    assert model.power(1.0) == pytest.approx(4.5)
    # vectorised, and equal to a one-level estimate at every AI
    ai = np.geomspace(0.01, 100, 41)
    for a, eff, p in zip(ai, model.efficiency(ai), model.power(ai), strict=True):
        e = model.estimate(1e9, {"DRAM": 1e9 / a})
        assert eff == pytest.approx(e.gflop_per_j) and p == pytest.approx(e.power_w)
    with pytest.raises(HroofError, match="positive"):
        model.efficiency(0.0)
    with pytest.raises(ConfigError, match="no energy per byte for L2"):
        model.efficiency(1.0, "L2")


def test_energy_ridge_is_half_the_maximum(model):
    # eta = 100 / 300; the root of I = eta B_eps + (1 - eta)(B_tau - I) is
    # (4/3 + 4/3) / (5/3) = 1.6 < B_tau = 2
    assert model.energy_ridge() == pytest.approx(1.6)
    assert model.efficiency(1.6) == pytest.approx(model.max_efficiency / 2)
    # and by bisection on the curve itself, for machines on either side of the ridge
    for m in (model, _model(constant_w=0.5), _model(byte_pj=4000.0), _model(bw=50.0)):
        lo, hi = 1e-6, 1e6
        for _ in range(200):
            mid = math.sqrt(lo * hi)
            lo, hi = (mid, hi) if m.efficiency(mid) < m.max_efficiency / 2 else (lo, mid)
        assert m.energy_ridge() == pytest.approx(lo, rel=1e-9)


def test_without_constant_power_the_ridge_is_the_energy_balance():
    m = _model(constant_w=0.0)
    assert m.energy_ridge() == pytest.approx(m.energy_balance()) == pytest.approx(4.0)
    # flops and bytes cost the same at the balance: half the flop-only efficiency
    assert m.efficiency(4.0) == pytest.approx(0.5 * 1000 / 100)


def test_the_arch_bends_smoothly_where_the_time_roofline_has_a_corner():
    """Energies add while times overlap (the max): without constant power the efficiency's
    log-log slope is continuous at the time ridge, where the time roofline's jumps 1 -> 0."""
    m = _model(constant_w=0.0)
    ridge, h = m.time_balance(), 1e-4

    def slope(f, a, b):
        return (math.log(f(b)) - math.log(f(a))) / (math.log(b) - math.log(a))

    left = slope(m.efficiency, ridge * (1 - 2 * h), ridge * (1 - h))
    right = slope(m.efficiency, ridge * (1 + h), ridge * (1 + 2 * h))
    assert left == pytest.approx(right, rel=1e-3)
    assert slope(m.performance, ridge * (1 - 2 * h), ridge * (1 - h)) == pytest.approx(1.0)
    assert slope(m.performance, ridge * (1 + h), ridge * (1 + 2 * h)) == pytest.approx(0.0)


def test_constant_power_puts_a_corner_back_at_the_time_ridge():
    """With constant power the arch's log-log slope drops at the time ridge by the constant
    energy's share of the energy per flop there (docs/energy.md quotes it per preset)."""

    def slopes(m):
        r, h = m.time_balance(), 1e-6

        def slope(a, b):
            return (math.log(m.efficiency(b)) - math.log(m.efficiency(a))) / math.log(b / a)

        return slope(r * (1 - 2 * h), r * (1 - h)), slope(r * (1 + h), r * (1 + 2 * h))

    for name, quoted in (("i7-950", (0.8, 0.11)), ("gtx580", (0.84, 0.38))):
        m = energy_model(load_machine(name))
        left, right = slopes(m)
        share = m.constant_pj_per_flop / m.pj_per_flop(m.time_balance())
        assert left - right == pytest.approx(share, rel=1e-3)
        assert (round(left, 2), round(right, 2)) == pytest.approx(quoted, abs=0.006)


def test_power_peaks_at_the_time_ridge(model):
    # at the ridge (2 FLOP/B): 100 + 200 + 200 pJ a flop at 10 GFLOP/s = 5 W
    assert model.power_peak() == pytest.approx(5.0)
    ai = np.geomspace(0.05, 80, 2001)
    assert ai[np.argmax(model.power(ai))] == pytest.approx(model.time_balance(), rel=0.01)
    assert model.power(1.9) < 5.0 and model.power(2.1) < 5.0
    # far from the ridge the power tends to the constant power plus the flops' or bytes'
    assert model.power(1e6) == pytest.approx(model.flop_power + model.constant_w, rel=1e-3)
    assert model.power(1e-6) == pytest.approx(400e-12 * 5e9 + 2.0, rel=1e-3)


def test_ceilings_cost_constant_energy(model):
    low = model.with_peak(5.0)  # "no FMA"
    # compute-bound (I = 10): the flops take 2x longer, 2 W x (1/5 - 1/10) ns = 200 pJ more
    assert low.pj_per_flop(10.0) - model.pj_per_flop(10.0) == pytest.approx(200.0)
    assert low.efficiency(10.0) < model.efficiency(10.0)
    assert low.power(10.0) < model.power(10.0)
    # bandwidth-bound far below both ridges, a ceiling changes nothing
    assert low.efficiency(0.1) == pytest.approx(model.efficiency(0.1))
    # a bandwidth ceiling ("no prefetch", 2.5 GB/s): at I = 0.1 the bytes of a flop take
    # 1 / (0.1 x 2.5) = 4 ns instead of 2 ns: 2 W x 2 ns = 4000 pJ more, same bytes' energy
    slow = model.with_bandwidth("DRAM", 2.5)
    assert slow.pj_per_flop(0.1) - model.pj_per_flop(0.1) == pytest.approx(4000.0)
    assert slow.power(0.1) < model.power(0.1)
    assert slow.efficiency(100.0) == pytest.approx(model.efficiency(100.0))  # compute-bound
    assert slow.level("L1") == model.level("L1")


# --------------------------------------------------------------------------- from runs
def test_run_energy_takes_the_roofline_time(toy):
    result = simulate_kernel("triad", toy.hierarchy, n=2048)
    e = run_energy(result, toy)
    rf = roofline(result, toy)
    assert e.time_s == pytest.approx(result.flops / (rf.bound * 1e9))
    assert e.binding == rf.binding
    assert e.part("L1").bytes == result.levels[0].bytes
    assert e.part("DRAM").bytes == result.memory.bytes
    assert "L2" in e.uncharged  # it moved bytes and has no energy figure
    expected = (result.flops * 100 + result.levels[0].bytes * 1 + result.memory.bytes * 400) * 1e-12
    assert e.total_j == pytest.approx(expected + 2.0 * e.time_s)


def test_missing_figures_are_named(tmp_path, toy):
    result = simulate_kernel("triad", toy.hierarchy, n=256)
    no_energy = tmp_path / "plain.toml"
    no_energy.write_text(TOY.split("[energy]")[0])
    with pytest.raises(ConfigError) as info:
        energy_model(load_machine(no_energy))
    msg = str(info.value)
    for word in ("flop_pj", "constant_w", "byte_pj for DRAM", "[energy]", "plain.toml"):
        assert word in msg
    no_dram = tmp_path / "nodram.toml"
    no_dram.write_text(TOY.replace("DRAM = 400.0", "L2 = 3.0"))
    with pytest.raises(ConfigError, match="byte_pj for DRAM"):
        run_energy(result, load_machine(no_dram))
    no_bw = tmp_path / "nobw.toml"
    no_bw.write_text(TOY.replace("bandwidth = 20.0\n", ""))
    e = run_energy(result, load_machine(no_bw))
    assert e.untimed == ("L2",)
    with pytest.raises(ConfigError, match="no L2 bandwidth"):
        energy_model(load_machine(no_bw)).time_balance("L2")
    no_peak = tmp_path / "nopeak.toml"
    no_peak.write_text(TOY.replace("peak = 10.0\n", "").replace(
        'ceilings = { "no FMA" = 5.0, "scalar" = 2.0 }\n', ""))  # fmt: skip
    with pytest.raises(ConfigError, match="compute peak"):
        energy_model(load_machine(no_peak))
    with pytest.raises(ConfigError, match="levels"):
        run_energy(simulate_kernel("triad", n=64), toy)  # the default machine's hierarchy


# --------------------------------------------------------------------------- the articles
def test_ghane_power_is_flop_rate_times_energy_per_flop(model):
    """references/energy-roofline.zh.txt: P = W/t eps_flop + Q/t eps_mem = W/t (eps_flop +
    Q/W eps_mem) = W/t E_W, the power above the constant power (Ghane et al. keep E_0 apart)."""
    for ai in (0.05, 0.5, 2.0, 7.0, 300.0):
        e = model.estimate(1e9, {"DRAM": 1e9 / ai})
        w_over_t = e.flops / e.time_s
        dynamic = e.part("flops").joules / e.time_s + e.part("DRAM").joules / e.time_s
        e_w = (model.flop_pj + 1 / ai * model.memory.byte_pj) * 1e-12  # J per flop
        assert e.power_w - model.constant_w == pytest.approx(dynamic)
        assert dynamic == pytest.approx(w_over_t * e_w)
        assert model.power(ai) == pytest.approx(w_over_t * e_w + model.constant_w)


def test_ghane_dot_product_double_needs_twice_the_bandwidth():
    """Ghane et al.'s kernel: a dot product of two arrays of 67,108,864 elements; double
    precision needs (almost) twice the bandwidth of single precision. Both precisions do 2
    flops an element; fp64 moves 16 bytes an element, fp32 8: at the same flop rate, twice
    the bytes per second, and twice the memory energy."""
    n = 67_108_864
    m = energy_model(load_machine("i7-950"))
    fp64 = m.estimate(2 * n, {"DRAM": 2 * n * 8})
    fp32 = m.estimate(2 * n, {"DRAM": 2 * n * 4})
    assert fp64.part("DRAM").bytes / fp64.flops == 8.0  # AI 1/8 FLOP/byte
    assert fp64.part("DRAM").joules == pytest.approx(2 * fp32.part("DRAM").joules)
    assert fp64.time_s == pytest.approx(2 * fp32.time_s)  # both bandwidth-bound
    # the same through simulated kernels: daxpy in both precisions, DRAM bytes per flop
    runs = {dt: simulate_kernel("daxpy", "teaching", n=8192, dtype=dt)
            for dt in ("float64", "float32")}  # fmt: skip
    ratio = (runs["float64"].memory.bytes / runs["float64"].flops) / (
        runs["float32"].memory.bytes / runs["float32"].flops
    )
    assert ratio == pytest.approx(2.0)


def test_ghane_removing_a_ceiling_gains_efficiency_for_a_few_watts():
    """Ghane et al.: enabling ILP raises the energy efficiency while drawing only a few more
    watts. As a ceiling: a compute-bound kernel under 'scalar' gains GFLOP/J when vectorised,
    and the power rises by the flops' extra rate times their energy."""
    m = energy_model(load_machine("i7-950"))
    scalar = m.with_peak(next(c.value for c in m.ceilings if c.name == "scalar"))
    ai = 8.0  # above both time ridges
    assert m.efficiency(ai) > scalar.efficiency(ai)
    extra = m.power(ai) - scalar.power(ai)
    per_flop = (m.flop_pj + m.memory.byte_pj / ai) * 1e-12
    assert extra == pytest.approx(per_flop * (m.peak - scalar.peak) * 1e9)


def test_choi_i7_950_preset():
    """The i7-950 preset's figures (Choi et al., IPDPS 2013) and the balances its file quotes:
    time balance 53.28 / 25.6 = 2.08 FLOP/byte, energy balance 795 / 670 = 1.19 FLOP/byte."""
    machine = load_machine("i7-950")
    m = energy_model(machine)
    assert (m.flop_pj, m.constant_w, m.memory.byte_pj) == (670.0, 122.0, 795.0)
    assert round(m.time_balance(), 2) == 2.08 and round(m.energy_balance(), 2) == 1.19
    text = Path(machine.source).read_text()
    assert "2.08 FLOP/byte" in text and "1.19 FLOP/byte" in text
    assert machine.peak == pytest.approx(4 * 4 * 3.33) and machine.memory_bandwidth == 25.6
    assert m.uncharged == ("L1", "L2", "L3") == m.untimed


def test_choi_gtx580_preset():
    """The GPU preset of the same paper: time balance 197.632 / 192.4 = 1.03 FLOP/byte,
    energy balance 513 / 212 = 2.42; between the two, a kernel is compute-bound in time
    while memory takes the larger share of the (non-constant) energy."""
    machine = load_machine("gtx580")
    m = energy_model(machine)
    assert (m.flop_pj, m.constant_w, m.memory.byte_pj) == (212.0, 122.0, 513.0)
    assert round(m.time_balance(), 2) == 1.03 and round(m.energy_balance(), 2) == 2.42
    assert machine.kind == "gpu" and machine.sms == 16
    assert machine.peak == pytest.approx(512 * 2 * 1.544 / 8)
    assert machine.peak_for("fp32") == pytest.approx(512 * 2 * 1.544)
    text = Path(machine.source).read_text()
    assert "1.03 FLOP/byte" in text and "2.42 FLOP/byte" in text and "IPDPS 2013" in text
    ai = 2.0  # between the balances
    est = m.estimate(ai * 1e9, {"GDDR5": 1e9})
    assert est.time_s == pytest.approx(ai * 1e9 / (machine.peak * 1e9))  # compute-bound
    joules = {p.name: p.joules for p in est.parts}
    assert joules["GDDR5"] > joules["flops"]  # yet memory takes more energy than the flops
    assert joules["GDDR5"] == pytest.approx(1e9 * 513e-12)


# --------------------------------------------------------------------------- plots
def _texts(ax):
    return [t.get_text() for t in ax.texts]


@pytest.fixture
def sweep(toy, tmp_path, monkeypatch):
    monkeypatch.setenv("HROOF_CACHE_DIR", str(tmp_path / "cache"))
    return run_sweep("stencil7", expand_grid("stencil7", {"n": "4..16:x2"}), toy.hierarchy,
                     workers=1)  # fmt: skip


def test_plot_efficiency(toy, model):
    result = simulate_kernel("stencil7", toy.hierarchy, n=8)
    fig = plot_efficiency(toy, [result])
    (ax,) = fig.axes
    assert ax.get_xlabel() == "arithmetic intensity (FLOP/byte)"
    assert ax.get_ylabel() == "energy efficiency (GFLOP/J)"
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
    labels = [line.get_label() for line in ax.lines]
    assert "L1 (1 pJ/B, 40 GB/s)" in labels and "DRAM (400 pJ/B, 5 GB/s)" in labels
    assert not any(lab.startswith("L2") for lab in labels)  # no energy figure: no arch
    t = " ".join(_texts(ax))
    for word in (
        "no FMA (5 GFLOP/s)",
        "scalar (2 GFLOP/s)",
        "DRAM time ridge 2",
        "DRAM no prefetch (2.5 GB/s)",
        "energy balance 4",
        "energy ridge 1.6",
        "max 3.33 GFLOP/J",
        "run: ",
    ):
        assert word in t, word  # fmt: skip
    dashed = [line for line in ax.lines if line.get_linestyle() == "--"]
    assert len(dashed) == 3  # one per compute ceiling + the energy ridge's vertical
    dashdot = [line for line in ax.lines if line.get_linestyle() == "-."]
    assert len(dashdot) == 2  # the bandwidth ceiling + the time ridge's vertical
    dots = [line for line in ax.lines if line.get_marker() == "o" and len(line.get_xdata())]
    assert len(dots) == 2  # the run's L1 and DRAM AIs, each on its level's arch
    assert "a run: each level's AI, on its curve" in labels
    l1 = next(d for d in dots if d.get_label() == "_L1 AI")
    x, y = l1.get_xdata()[0], l1.get_ydata()[0]
    assert x == pytest.approx(result.levels[0].ai)
    assert y == pytest.approx(model.efficiency(x, "L1"))


def test_plot_power(toy):
    result = simulate_kernel("stencil7", toy.hierarchy, n=8)
    fig = plot_power(toy, [result])
    (ax,) = fig.axes
    assert ax.get_ylabel() == "power (W)" and ax.get_xscale() == "log"
    t = " ".join(_texts(ax))
    for word in ("constant power 2 W", "no FMA (5 GFLOP/s)", "scalar", "DRAM time ridge 2"):
        assert word in t, word
    assert "energy ridge" not in t


def _axes_y(ax, text):
    return ax.transAxes.inverted().transform(ax.transData.transform(text.get_position()))[1]


def test_plot_labels_stay_legible():
    """Lines cross the labels behind a white box, not through the text; ceilings whose curves
    end close together (the power plot's lower ceilings) get labels that do not overlap."""
    from hroof.machine.model import Ceiling

    m = EnergyModel("m", 20.0, 20.0, 0.2, (LevelCost("DRAM", 10.0, 60.0),),
                    ceilings=(Ceiling("scalar", 2.5), Ceiling("no ILP", 1.25)))  # fmt: skip
    for plot in (plot_power, plot_efficiency):
        ax = plot(m).axes[0]
        labels = {t.get_text(): t for t in ax.texts}
        assert all(t.get_bbox_patch() is not None for t in labels.values())
        a, b = labels["scalar (2.5 GFLOP/s)"], labels["no ILP (1.25 GFLOP/s)"]
        assert abs(_axes_y(ax, a) - _axes_y(ax, b)) >= 0.04 - 1e-9, plot.__name__


def test_plot_sweep_labels_do_not_pile_up(toy, sweep):
    """A sweep's points labelled by their parameter: labels of points that would overlap
    are left out (the first one of a cluster is kept)."""
    ax = plot_power(toy, sweep + sweep, param="n").axes[0]  # every point twice
    points = [t for t in ax.texts if t.get_text().startswith("n=")]
    assert [t.get_text() for t in points] == [f"n={p.params['n']}" for p in sweep][: len(points)]
    assert 1 <= len(points) <= len(sweep)


def test_plot_energy_two_panels(toy):
    result = simulate_kernel("stencil7", toy.hierarchy, n=8)
    fig = plot_energy(result, toy, title="stencil7 n=8")
    assert len(fig.axes) == 2
    assert [a.get_ylabel() for a in fig.axes] == ["energy efficiency (GFLOP/J)", "power (W)"]
    assert fig._suptitle.get_text() == "stencil7 n=8"


def test_plot_breakdown(toy, sweep):
    walls = find_walls(sweep, "n")
    fig = plot_energy_breakdown(sweep, toy, "n", walls=walls)
    (ax,) = fig.axes
    assert ax.get_ylabel() == "energy per flop (pJ/FLOP)" and ax.get_xlabel() == "n"
    # one bar per point for each term: flops, L1, DRAM, constant (L2 is not charged)
    assert len(ax.patches) == len(sweep) * 4
    assert [t.get_text() for t in ax.get_xticklabels()] == ["4", "8", "16"]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["flops (100 pJ each)", "L1 bytes (1 pJ/B)", "DRAM bytes (400 pJ/B)",
                      "constant (2 W x time)"]  # fmt: skip
    assert "not charged, no energy per byte: L2" in ax.get_title()
    # the stacked heights are the estimates' energies per flop
    tops = [float(t) for t in _texts(ax) if "wall" not in t]
    est = [run_energy(p.result, toy).pj_per_flop for p in sweep]
    assert tops == pytest.approx(est, rel=2e-3)
    gaps = {(w.before, w.after) for w in walls}
    assert sum("wall" in t for t in _texts(ax)) == len(gaps)


def test_plot_breakdown_names_walls_in_the_same_gap_once(toy, sweep):
    """Two levels overflowing between the same two sizes get one label naming both, not two
    labels printed over each other."""

    def wall(level, before, after):
        return Wall(level, "n", before, after, 1.0, 2.0, 0, 0, None)

    walls = [wall("L1", 4, 8), wall("L1", 8, 16), wall("L2", 8, 16)]
    fig = plot_energy_breakdown(sweep, toy, "n", walls=walls)
    labels = [t for t in _texts(fig.axes[0]) if "wall" in t]
    assert labels == ["L1 wall", "L1, L2 walls"]


def test_locality_walls_are_energy_walls(toy, sweep):
    """Past a wall the bytes below the level that overflowed jump per flop, and so does
    their energy per flop when that level below is charged."""
    walls = find_walls(sweep, "n")
    assert walls
    names = [lv.name for lv in sweep[0].result.levels] + [sweep[0].result.memory.name]
    by_n = {p.params["n"]: run_energy(p.result, toy) for p in sweep}
    checked = 0
    for w in walls:
        below = names[names.index(w.level) + 1]
        if below in energy_model(toy).uncharged:
            continue
        before, after = (by_n[v].part(below).joules / by_n[v].flops for v in (w.before, w.after))
        assert after >= 1.25 * before
        checked += 1
    assert checked


def test_plots_refuse_a_machine_without_energy():
    with pytest.raises(ConfigError, match=r"\[energy\]"):
        plot_efficiency(load_machine("skylake-sp"))


# --------------------------------------------------------------------------- command line


@pytest.mark.slow
def test_cli_one_run(capsys, toy_path, tmp_path):
    png = tmp_path / "e.png"
    code, out, err = run(capsys, "energy", "stencil7", "n=8", "--machine", toy_path,
                         "--plot", png, "-q")  # fmt: skip
    assert code == 0, err
    for word in (
        "flops",
        "L1 bytes",
        "L2 bytes",
        "not charged",
        "DRAM bytes",
        "constant",
        "GFLOP/J",
        "power",
        "dominant",
        "pJ/FLOP",
        f"wrote {png}",
    ):
        assert word in out, word  # fmt: skip
    assert png.read_bytes()[:4] == b"\x89PNG"
    code, out, _ = run(capsys, "energy", "stencil7", "n=8", "--machine", toy_path, "--json", "-q")
    doc = json.loads(out)
    assert doc["schema"] == "hroof.energy/1"
    assert doc["energy"]["uncharged"] == ["L2"] and doc["model"]["flop_pj"] == 100.0
    e = doc["energy"]
    assert e["energy_j"] == pytest.approx(sum(p["joules"] for p in e["parts"]))


@pytest.mark.slow
def test_cli_sweep(capsys, toy_path, tmp_path, monkeypatch):
    monkeypatch.setenv("HROOF_CACHE_DIR", str(tmp_path / "cache"))
    out_dir = tmp_path / "out"
    code, out, err = run(capsys, "energy", "stencil7", "n=4..16:x2", "--machine", toy_path,
                         "--out", out_dir, "--workers", 1, "-q")  # fmt: skip
    assert code == 0, err
    assert sorted(p.name for p in out_dir.iterdir()) == [
        "breakdown.png", "efficiency.png", "energy.json", "power.png"]  # fmt: skip
    doc = json.loads((out_dir / "energy.json").read_text())
    assert doc["schema"] == "hroof.energy-sweep/1" and len(doc["points"]) == 3
    assert "GFLOP/J" in out and "pJ/FLOP" in out and "not charged: L2" in out


@pytest.mark.slow
def test_cli_sweep_of_a_kernel_without_flops(capsys, toy_path, tmp_path, monkeypatch):
    """copy does no flops: its energy and power are still estimated and plotted; only the
    breakdown (pJ per flop) is left out, and the output says why."""
    monkeypatch.setenv("HROOF_CACHE_DIR", str(tmp_path / "cache"))
    out_dir = tmp_path / "out"
    code, out, err = run(capsys, "energy", "copy", "n=256,512", "--machine", toy_path,
                         "--out", out_dir, "--workers", 1, "-q")  # fmt: skip
    assert code == 0, err
    assert sorted(p.name for p in out_dir.iterdir()) == [
        "efficiency.png", "energy.json", "power.png"]  # fmt: skip
    assert "breakdown.png not drawn: the run at n=256 does no flops" in out


def test_cli_says_when_the_flops_are_not_at_the_machines_precision(capsys, toy_path, tmp_path):
    """flop_pj and the peak are at the machine's precision; a kernel in another one is
    charged them unscaled, and the output says so (an fp32 machine file too)."""
    code, out, _ = run(capsys, "energy", "triad", "n=512", "--machine", toy_path, "-q")
    assert code == 0 and "100 pJ/flop (fp64)" in out and "precision:" not in out
    code, out, _ = run(capsys, "energy", "triad", "n=512", "dtype=float32", "--machine",
                       toy_path, "-q")  # fmt: skip
    assert code == 0
    note = next(line for line in out.splitlines() if line.startswith("precision:"))
    assert "fp32" in note and "machine's fp64 figures" in note
    fp32 = tmp_path / "fp32.toml"
    fp32.write_text(TOY.replace("peak = 10.0\n", 'peak = 10.0\nprecision = "fp32"\n'))
    code, out, _ = run(capsys, "energy", "triad", "n=512", "--machine", fp32, "--json", "-q")
    assert json.loads(out)["model"]["precision"] == "fp32"
    code, out, _ = run(capsys, "energy", "triad", "n=512", "--machine", fp32, "-q")
    assert "flops are fp64 but flop_pj and the peak are the machine's fp32 figures" in out


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["stencil7", "n=8", "--machine", "skylake-sp"],
         ["flop_pj", "constant_w", "byte_pj for DRAM", "[energy]", "skylake-sp.toml"]),
        (["stencil7", "n=8", "--out", "OUT"], ["--out is for a sweep"]),
        (["stencil7", "n=4,8", "--plot", "OUT/x.png"], ["--plot is for one run"]),
        (["stencil7", "n=8", "--plot", "OUT/x.pdf"], [".png or .svg"]),
        (["stencil7", "m=8"], ["no parameter 'm'"]),
    ],
)  # fmt: skip
def test_cli_errors(capsys, toy_path, tmp_path, argv, words):
    argv = [str(tmp_path / a[4:]) if a.startswith("OUT/") else a for a in argv]
    argv = [str(tmp_path / "out") if a == "OUT" else a for a in argv]
    if "--machine" not in argv:
        argv += ["--machine", str(toy_path)]
    code, out, err = run(capsys, "energy", *argv, "-q")
    assert code == 2 and out == ""
    assert err.startswith("hroof: error: ") and err.count("\n") == 1, err
    for word in words:
        assert word in err, (word, err)
    assert not any(p.name != "toy.toml" for p in tmp_path.iterdir())  # no partial output


def test_cli_help(capsys):
    code, out, _ = run(capsys, "energy", "--help")
    assert code == 0
    for word in ("flop_pj", "constant_w", "byte_pj", "--plot", "--out", "Choi"):
        assert word in out
    # the machines it names exist, with the energy figures it says they have
    from hroof.machine.catalog import DEFAULT_MACHINE

    flat = " ".join(out.split())
    assert f"(default: {DEFAULT_MACHINE}, which has none)" in flat
    with pytest.raises(ConfigError, match=r"\[energy\]"):
        energy_model(load_machine(DEFAULT_MACHINE))
    for name in ("i7-950", "gtx580"):
        assert name in flat and energy_model(load_machine(name))
