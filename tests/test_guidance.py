"""Optimisation guidance: which ceilings a kernel can still break through at its AI, and
what the traffic partition says about data movement (the lecture's three strategies)."""

from __future__ import annotations

import numpy as np
import pytest

from hroof._base.errors import ConfigError
from hroof.plots.roofline import plot_hierarchical
from hroof.roofline import machine_from_dict, roofline
from hroof.roofline.guidance import guidance, guidance_for_ais
from hroof.studies.runs import simulate_kernel

DOC = {
    "machine": {"name": "lecture"},
    "compute": {"peak": 40.0, "ceilings": {"no FMA": 20.0, "no SIMD": 5.0, "no ILP": 1.0}},
    "level": [
        {"name": "L1", "size": "4 KiB", "ways": 4, "bandwidth": 200.0},
        {"name": "L2", "size": "32 KiB", "ways": 8, "bandwidth": 100.0},
    ],
    "memory": {"bandwidth": 10.0, "ceilings": {"no prefetch": 6.0, "no NUMA-aware placement": 4.0}},
}


@pytest.fixture(scope="module")
def machine():
    return machine_from_dict(DOC)


def test_memory_bound_kernel_need_not_vectorise(machine):
    # DRAM AI 0.25: roof 2.5 GFLOP/s. No SIMD (5) and no FMA (20) are above it: moot.
    # No ILP (1) is below it; both DRAM ceilings (1.5 and 1.0 GFLOP/s at 0.25) too.
    g = guidance_for_ais({"L1": 0.1, "L2": 0.2, "DRAM": 0.25}, machine)
    assert (g.bound, g.binding) == (pytest.approx(2.5), "DRAM")
    assert {s.what for s in g.moot} == {"no FMA", "no SIMD"}
    live = {s.what: s for s in g.steps}
    assert set(live) == {"no ILP", "DRAM no prefetch", "DRAM no NUMA-aware placement",
                         "DRAM traffic"}  # fmt: skip
    assert live["DRAM no NUMA-aware placement"].limit == pytest.approx(4.0 * 0.25)
    assert live["DRAM no NUMA-aware placement"].gain == pytest.approx(2.5)
    assert live["no ILP"].gain == pytest.approx(2.5)
    assert live["DRAM no prefetch"].gain == pytest.approx(2.5 / 1.5)
    # the largest gain first; the DRAM step says how far the AI is from the ridge (4)
    assert [s.gain for s in g.steps] == sorted((s.gain for s in g.steps), reverse=True)
    assert "ridge point 4" in live["DRAM traffic"].text
    text = "\n".join(g.lines())
    assert "no need to vectorise with SIMD instructions" in text
    assert "place data on the NUMA node" in text


def test_compute_bound_kernel_must_break_every_in_core_ceiling(machine):
    g = guidance_for_ais({"L1": 10.0, "L2": 20.0, "DRAM": 50.0}, machine)
    assert (g.bound, g.binding) == (40.0, "compute")
    assert [s.what for s in g.steps] == ["no ILP", "no SIMD", "no FMA"]  # gains 40, 8, 2
    assert [s.gain for s in g.steps] == [40.0, 8.0, 2.0]
    # at AI 50 even the NUMA ceiling allows 200 GFLOP/s: bandwidth work is moot
    assert {s.what for s in g.moot} == {"DRAM no prefetch", "DRAM no NUMA-aware placement"}
    assert all(s.strategy != "data movement" for s in g.steps)


def test_guidance_for_ais_bad_input(machine):
    with pytest.raises(ConfigError, match="no AI for DRAM"):
        guidance_for_ais({"L1": 1.0, "L2": 1.0}, machine)
    with pytest.raises(ConfigError, match="must be positive"):
        guidance_for_ais({"L1": 1.0, "L2": 0.0, "DRAM": 1.0}, machine)
    bare = machine_from_dict({"level": DOC["level"]})
    with pytest.raises(ConfigError, match="compute peak"):
        guidance_for_ais({"L1": 1.0, "L2": 1.0, "DRAM": 1.0}, bare)


@pytest.mark.parametrize("l2_bandwidth", [100.0, 14.0])
def test_simulated_stencil_traffic_steps(l2_bandwidth):
    """stencil7 n=64 on 4 KiB / 32 KiB: DRAM-bound with capacity misses at L2 and write
    allocates; each step's gain is the bound recomputed without that part of the traffic.
    With L2 at 14 GB/s its roof (AI 0.168: 2.36 GFLOP/s) lies between the bound (1.68) and
    the bound without L2's capacity misses (2.77): L2 binds then, and the text says so."""
    doc = dict(DOC, level=[DOC["level"][0], dict(DOC["level"][1], bandwidth=l2_bandwidth)])
    machine = machine_from_dict(doc)
    res = simulate_kernel("stencil7", machine.hierarchy, n=64)
    r = roofline(res, machine)
    g = guidance(res, machine)
    assert (g.bound, g.binding) == (pytest.approx(r.bound), r.binding) == (g.bound, "DRAM")
    parts = res.levels[-1].traffic_below
    total = res.memory.bytes
    steps = {s.what: s for s in g.steps}
    for part, what in (("capacity", "capacity misses at L2"),
                       ("write_allocate", "write-allocate fills at L2")):  # fmt: skip
        assert parts[part] / total >= 0.05, part
        ai = res.flops / (total - parts[part])
        expected = min(40.0, 10.0 * ai, *(lv.attainable for lv in r.levels[:-1]))
        assert steps[what].gain == pytest.approx(expected / r.bound)
        assert steps[what].gain > 1
        # the text names the limit that binds instead when it is not DRAM any more (why
        # the gain can be small), and says nothing of the kind when DRAM still binds
        roofs = {lv.name: lv.attainable for lv in r.levels[:-1]}
        roofs.update(compute=40.0, DRAM=10.0 * ai)
        then = min(roofs, key=roofs.get)
        name = "the compute peak" if then == "compute" else f"{then} bandwidth"
        assert (f"; then {name} binds" in steps[what].text) == (then != "DRAM")
        assert "; then DRAM" not in steps[what].text
    assert "block or tile" in steps["capacity misses at L2"].text
    assert "32 KiB" in steps["capacity misses at L2"].text
    assert "non-temporal" in steps["write-allocate fills at L2"].text
    floor = steps["compulsory traffic at DRAM"]
    assert floor.gain is None and floor.limit > r.bound
    assert g.steps[-1] is floor  # the floor comes last: nothing to apply
    handed = [s for s in g.steps if "; then L2 bandwidth binds" in s.text]
    assert len(handed) == (2 if l2_bandwidth < 20 else 0)  # capacity misses, the floor


def test_l1_bound_kernel_gets_register_advice():
    m = machine_from_dict({"compute": {"peak": 1000.0},
                           "level": [{"name": "L1", "size": "32 KiB", "ways": 8,
                                      "bandwidth": 1.0}],
                           "memory": {"bandwidth": 1000.0}})  # fmt: skip
    g = guidance(simulate_kernel("daxpy", m.hierarchy, n=256), m)
    assert g.binding == "L1"
    assert any("register" in s.text for s in g.steps)


def test_guidance_needs_flops(machine):
    from hroof.cachesim import simulate

    addr = np.arange(0, 8 * 64, 8, dtype=np.uint64)
    res = simulate(machine.hierarchy, [(addr, np.full(64, 8, np.uint32), np.zeros(64, np.uint8))])
    with pytest.raises(ConfigError, match="flops"):
        guidance(res, machine)


def test_plot_draws_bandwidth_ceilings(machine):
    res = simulate_kernel("stencil7", machine.hierarchy, n=16)
    fig = plot_hierarchical([res], machine)
    (ax,) = fig.axes
    texts = [t.get_text() for t in ax.texts]
    assert "DRAM no prefetch 6 GB/s" in texts
    assert "DRAM no NUMA-aware placement 4 GB/s" in texts
    dashed = [ln for ln in ax.lines if ln.get_linestyle() == "--" and "DRAM" in ln.get_label()]
    assert len(dashed) == 2
    x, y = dashed[1].get_data()
    assert np.allclose(y[x < 1], 4.0 * x[x < 1])  # under its roof, at its bandwidth


def test_simulate_prints_guidance(capsys):
    from hroof.cli import main

    assert main(["simulate", "stencil7", "n=16", "--machine", "teaching", "-q"]) == 0
    out = capsys.readouterr().out
    assert "Roofline guidance on teaching" in out
    assert "What to optimise next" in out and "Need not" in out
    assert main(["simulate", "stencil7", "n=16", "--machine", "generic", "-q"]) == 0
    assert "guidance" not in capsys.readouterr().out  # no figures, no guidance


@pytest.mark.parametrize(
    ("ceilings", "words"),
    [
        ('{ "no SIMD" = 2.0, "no FMA" = 5.0 }', "unordered ceilings"),
        ('{ "no FMAA" = 5.0 }', "unknown ceiling 'no FMAA'"),
    ],
)
def test_cli_bad_ceilings_exit_2(tmp_path, capsys, ceilings, words):
    from hroof.cli import main

    path = tmp_path / "m.toml"
    path.write_text(
        f"[compute]\npeak = 10.0\nceilings = {ceilings}\n[[level]]\nsize = 4096\nways = 4\n"
    )
    assert main(["machine", "show", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and words in err and "Traceback" not in err


def test_compute_ceilings_drawn_under_the_roofs(machine):
    """A compute ceiling is flat from where it meets the highest roof, as in the lecture's
    figure: never above the highest bandwidth roof (an axhline across the plot would run
    above the roofs at low AI and strike through their labels). Labels sit on a light
    background so the dashed lines that cross them do not strike them through."""
    res = simulate_kernel("stencil7", machine.hierarchy, n=16)
    fig = plot_hierarchical([res], machine)
    (ax,) = fig.axes
    top = max(bw for _, bw in machine.all_bandwidths())
    lo, hi = ax.get_xlim()
    starts = []
    for c in machine.ceilings:
        (line,) = [ln for ln in ax.lines if ln.get_label() == f"_ceiling {c.name}"]
        x, y = (np.asarray(v, dtype=float) for v in line.get_data())
        assert line.get_linestyle() == "--"
        assert np.all(y == c.value) and np.all(y <= top * x * (1 + 1e-12))
        assert x.min() == pytest.approx(max(lo, c.value / top)) and x.max() == pytest.approx(hi)
        starts.append(x.min())
    # "no FMA" (20 GFLOP/s) meets the 200 GB/s roof at 0.1 FLOP/byte, inside the plot
    assert starts[0] == pytest.approx(0.1) and starts[0] > lo
    labelled = [t for t in ax.texts if "GB/s" in t.get_text() or "GFLOP/s" in t.get_text()]
    assert labelled and all(t.get_bbox_patch() is not None for t in labelled)


def test_equal_compute_ceilings_share_one_label():
    """skylake-sp's "no FMA" and "no AVX-512" are both 38.4 GFLOP/s: one label names both
    (two labels at one spot would print on top of each other, one hiding the other)."""
    from hroof.roofline import load_machine

    m = load_machine("skylake-sp")
    res = simulate_kernel("stencil7", m.hierarchy, n=8)
    (ax,) = plot_hierarchical([res], m).axes
    texts = [t.get_text() for t in ax.texts]
    assert "no FMA / no AVX-512 38.4 GFLOP/s" in texts
    assert not any(t.startswith(("no FMA 38.4", "no AVX-512 38.4")) for t in texts)
    assert "scalar 9.6 GFLOP/s" in texts
    assert sum("_ceiling" in ln.get_label() for ln in ax.lines) == 3


def test_guidance_for_ais_data_movement_gain_stops_at_the_next_roof(machine):
    """Raising DRAM's AI to its ridge point (4) lifts the bound only until the next roof
    binds: L2 at AI 0.2 x 100 GB/s = 20 GFLOP/s, not the 40 GFLOP/s peak. DRAM now: 0.25 x
    10 = 2.5, so the step gains 20 / 2.5 = 8x, not 16x."""
    g = guidance_for_ais({"L1": 0.5, "L2": 0.2, "DRAM": 0.25}, machine)
    (step,) = [s for s in g.steps if s.what == "DRAM traffic"]
    assert step.gain == pytest.approx(8.0)
    assert "rises to 20 GFLOP/s (8x; then L2 bandwidth binds)" in step.text
    g = guidance_for_ais({"L1": 0.5, "L2": 1.0, "DRAM": 0.25}, machine)
    (step,) = [s for s in g.steps if s.what == "DRAM traffic"]
    assert "(16x; then the compute peak binds)" in step.text  # the ridge reaches the peak


def test_kernel_without_flops_gets_no_guidance(capsys):
    """copy does no flops: 'hroof simulate' prints its table without guidance (it exited 2
    with "needs traffic at every level" and no table), the sweep report leaves the section
    out, and guidance() says what is missing."""
    from hroof.cli import main
    from hroof.plots.report import _guidance_html
    from hroof.roofline import load_machine
    from hroof.studies.sweep import run_sweep

    assert main(["simulate", "copy", "n=1000", "--machine", "teaching", "-q"]) == 0
    out, err = capsys.readouterr()
    assert "DRAM" in out and "guidance" not in out and err == ""
    m = load_machine("teaching")
    points = run_sweep("copy", [{"n": 1000}], m.hierarchy, use_cache=False)
    assert points[0].result.flops == 0
    assert _guidance_html(points, m, "n") == []
    with pytest.raises(ConfigError, match="no flops"):
        guidance(points[0].result, m)


def test_compulsory_floor_is_not_called_a_ceiling():
    """daxpy without write-allocate traffic is all compulsory at DRAM: the compulsory step
    gains nothing and is listed under "Need not", whose heading must then not call every
    entry a ceiling."""
    from hroof.roofline import load_machine

    m = load_machine("teaching")
    res = simulate_kernel("daxpy", m.hierarchy, n=1000, flush=False)
    g = guidance(res, m)
    assert any(s.what == "compulsory traffic at DRAM" for s in g.moot)
    lines = g.lines()
    (head,) = [ln for ln in lines if ln.startswith("Need not")]
    assert "traffic is already at its compulsory floor" in head
    g2 = guidance_for_ais({"L1": 0.1, "L2": 0.2, "DRAM": 0.25}, machine_from_dict(DOC))
    assert "Need not (these ceilings lie above the kernel's roof at its AI):" in g2.lines()


def test_lines_wrap_to_a_width(machine):
    g = guidance(simulate_kernel("stencil7", machine.hierarchy, n=64), machine)
    wide, narrow = g.lines(), g.lines(width=60)
    assert max(len(ln) for ln in wide) > 60
    assert all(len(ln) <= 60 for ln in narrow)
    assert " ".join(" ".join(wide).split()) == " ".join(" ".join(narrow).split())
