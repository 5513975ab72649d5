"""Ghane et al.'s power and energy-efficiency rooflines as a model (hroof.accel.power) and
``hroof power``.

The launch model's four rates and the energy are worked by hand on a made-up GPU; the
presets' figures are recomputed from the datasheet numbers their files cite. The experiment's
size (two arrays of 67,108,864 elements, references/energy-roofline.zh.txt) is run by row G4
of docs/fidelity.md (tests/test_fidelity_table.py).
"""

from __future__ import annotations

import dataclasses
import json
import math
import re

import pytest
from helpers import assert_cli_bad
from helpers import run_cli as run

from hroof._base.errors import ConfigError, HroofError
from hroof.accel.power import (
    Gpu,
    Launch,
    Work,
    gpu_of,
    model_point,
    parse_launch,
    residency,
    run_variants,
)
from hroof.machine.model import load_machine, machine_from_dict
from hroof.roofline.energy import EnergyModel, LevelCost

# A made-up GPU (every figure invented): 2 SMs at 1 GHz, 64 GFLOP/s (16 FMA lanes per SM),
# 100 GB/s, 64 warps and 16 blocks resident per SM, 400 cycles to memory, 8 cycles per FMA.
G = Gpu("g", 2, 1.0, 64.0, 100.0, warps_per_sm=64, blocks_per_sm=16, memory_latency=400,
        fma_latency=8)  # fmt: skip
# 10 pJ a flop, 100 pJ a DRAM byte, no constant power.
M = EnergyModel("g", peak=64.0, flop_pj=10.0, constant_w=0.0,
                levels=(LevelCost("DRAM", 100.0, 100.0),))  # fmt: skip
# A dot product of 1e6 doubles: 2e6 flops, 16e6 bytes from DRAM.
DOT = Work("dot", 1_000_000, 2e6, {"DRAM": 16e6}, "DRAM", 8)


def test_residency_fills_sms_up_to_their_warps_and_blocks():
    assert residency(G, Launch(32, 1)) == (32, 1)
    assert residency(G, Launch(1024, 8)) == (4096, 2)  # 2 blocks of 32 warps per SM
    assert residency(G, Launch(64, 100)) == (2048, 2)  # 16 blocks per SM
    assert residency(G, Launch(20, 3)) == (60, 2)  # a partial warp holds 20 threads


def test_one_warp_is_latency_bound_by_littles_law():
    p = model_point(G, DOT, M, Launch(32, 1))
    assert p.rates == {
        "memory bandwidth": 100e9 / 16,
        "memory latency": 32 * 1e9 / 400,
        "issue": 1 * 16 * 1e9 / 2,
        "dependency chain": 32 * 1e9 / 8,
    }
    assert p.bound == "memory latency"
    assert p.time_s == pytest.approx(1e6 / 8e7)
    assert p.gflops == pytest.approx(0.16)


def test_no_more_elements_in_flight_than_the_run_has():
    tiny = Work("dot", 100, 200.0, {"DRAM": 1600.0}, "DRAM", 8)
    p = model_point(G, tiny, M, Launch(1024, 8, ilp=4))
    assert p.rates["memory latency"] == 100 * 1e9 / 400
    assert p.rates["dependency chain"] == 100 * 1e9 / 8
    assert p.bound == "memory latency" and p.time_s == pytest.approx(400e-9)  # one latency


def test_a_full_launch_is_bandwidth_bound():
    p = model_point(G, DOT, M, Launch(1024, 8))
    assert p.bound == "memory bandwidth"
    assert p.time_s == pytest.approx(1.6e-4)
    # E = 2e6 x 10 pJ + 16e6 x 100 pJ = 1.62 mJ; P = E / T
    assert p.energy.total_j == pytest.approx(1.62e-3)
    assert p.power_w == pytest.approx(1.62e-3 / 1.6e-4)
    assert p.pj_per_flop == pytest.approx(810.0)
    assert p.pj_per_byte(16e6) == pytest.approx(101.25)
    assert p.gflop_per_j == pytest.approx(2e6 / 1.62e-3 * 1e-9)


def test_fma_halves_the_issue_time_only_when_issue_binds():
    slow = dataclasses.replace(G, peak=2.0)  # 0.5 FMA lanes per SM
    off = model_point(slow, DOT, M, Launch(1024, 8))
    on = model_point(slow, DOT, M, Launch(1024, 8, fma=True))
    assert off.bound == on.bound == "issue"
    assert off.rates["issue"] == pytest.approx(2 * 0.5 * 1e9 / 2)
    assert on.time_s == pytest.approx(off.time_s / 2)
    # bandwidth-bound: FMA changes nothing (Ghane et al.: no visible effect)
    assert model_point(G, DOT, M, Launch(1024, 8, fma=True)).time_s == pytest.approx(1.6e-4)
    # add has no multiply to fuse: one instruction a flop either way
    add = Work("add", 1_000_000, 1e6, {"DRAM": 24e6}, "DRAM", 8)
    assert (model_point(slow, add, M, Launch(1024, 8, fma=True)).rates["issue"]
            == model_point(slow, add, M, Launch(1024, 8)).rates["issue"])  # fmt: skip


def test_ilp_lifts_the_dependency_chain_of_a_reduction_only():
    slow_fma = dataclasses.replace(G, fma_latency=1000)
    p1 = model_point(slow_fma, DOT, M, Launch(32, 1))
    p4 = model_point(slow_fma, DOT, M, Launch(32, 1, ilp=4))
    assert p1.bound == p4.bound == "dependency chain"
    assert p4.time_s == pytest.approx(p1.time_s / 4)
    triad = Work("triad", 1_000_000, 2e6, {"DRAM": 24e6}, "DRAM", 8)
    t = model_point(slow_fma, triad, M, Launch(32, 1))
    assert math.isinf(t.rates["dependency chain"]) and t.bound == "memory latency"


def test_without_constant_power_every_launch_costs_the_same_per_flop():
    """Ghane et al.'s P = W/t e_flop + Q/t e_mem: launches move the point up or down only."""
    pairs = run_variants(G, DOT, M)
    per_flop = {round(p.pj_per_flop, 9) for p, _ in pairs}
    assert per_flop == {810.0}
    assert len({round(p.power_w, 9) for p, _ in pairs}) > 1
    # with a constant power, the faster launch is the more efficient
    pm = run_variants(G, DOT, dataclasses.replace(M, constant_w=5.0))
    by_speed = sorted((p for p, _ in pm), key=lambda p: p.gflops)
    effs = [p.gflop_per_j for p in by_speed]
    assert effs == sorted(effs) and effs[0] < effs[-1]


def test_the_default_sequence_changes_one_thing_at_a_time():
    pairs = run_variants(G, DOT, M)
    grid = [p for p, b in pairs if b is None]
    assert [p.launch.label for p in grid] == [
        "128x2", "128x4", "128x20", "1024x2", "1024x4", "1024x20"
    ]  # fmt: skip
    changed = [(p.launch, b.launch) for p, b in pairs if b is not None]
    assert [la.label.split(" ", 1)[1] for la, _ in changed] == ["FMA", "ILP4", "FMA ILP4", "ILP4"]
    for la, base in changed:
        assert (la.threads, la.blocks) == (base.threads, base.blocks)
        assert not base.fma and base.ilp == 1
    fastest = max(grid, key=lambda p: p.gflops)
    slowest = min(grid, key=lambda p: p.gflops)
    assert changed[0][1] == fastest.launch and changed[3][1] == slowest.launch


@pytest.mark.parametrize(
    ("text", "want"),
    [("256x26", Launch(256, 26)), ("1024x13+FMA", Launch(1024, 13, True)),
     ("32x1+ilp8+fma", Launch(32, 1, True, 8))],
)  # fmt: skip
def test_parse_launch(text, want):
    assert parse_launch(text) == want


@pytest.mark.parametrize(
    ("text", "word"),
    [("256", "THREADSxBLOCKS"), ("axb", "THREADSxBLOCKS"), ("2048x1", "1 to 1024"),
     ("32x0", "blocks"), ("32x1+fast", "+fma or +ilpN"), ("32x1+ilp0", "ILP")],
)  # fmt: skip
def test_parse_launch_refuses(text, word):
    with pytest.raises(HroofError, match=re.escape(word)):
        parse_launch(text)


def test_work_refuses_a_kernel_the_model_does_not_know():
    with pytest.raises(HroofError, match="dot"):
        Work("stencil7", 10, 70.0, {"DRAM": 1.0}, "DRAM", 8)


# ---------------------------------------------------------------------- machine files
def test_presets_carry_their_cited_figures():
    g = load_machine("gtx970")
    assert g.peaks["fp32"] == pytest.approx(1664 * 2 * 1.05)  # 1664 cores, 1050 MHz
    assert g.peak == pytest.approx(g.peaks["fp32"] / 32)  # FP64 at 1/32 on GM204
    assert g.memory_bandwidth == 256 / 8 * 7  # 256-bit bus, 7 Gbps
    assert g.hierarchy.levels[1].size == 1792 * 1024  # 1.75 MB after NVIDIA's correction
    k = load_machine("k80")
    assert 2 * k.peak == pytest.approx(1870, rel=1e-3)  # the board's 1.87 TFLOP/s FP64 base
    assert 2 * k.peaks["fp32"] == pytest.approx(5600, rel=2e-3)  # and 5.6 TFLOP/s FP32
    assert 2 * k.memory_bandwidth == 480  # 480 GB/s for the board
    for m in (g, k):
        assert m.energy.flop_pj == 40 / 2  # a 40 pJ fp64 FMA is 2 flops
        assert m.energy.byte_pj["GDDR5"] == 16000 / 128  # 16 nJ a 128-byte line
        assert m.energy.constant_w == 0
        assert "ESTIMATE" in m.energy.unverified and "ESTIMATE" not in m.gpu["source"]
        assert m.gpu["warps_per_sm"] == 64
    assert (g.gpu["blocks_per_sm"], k.gpu["blocks_per_sm"]) == (32, 16)
    assert gpu_of(g, "fp64").fma_lanes == pytest.approx(4)  # 128 lanes / 32
    assert gpu_of(k, "fp64").fma_lanes == pytest.approx(64)  # 192 lanes / 3


def test_gpu_table_is_validated():
    base = {"level": [{"name": "L1", "size": 1024, "ways": 2, "line": 64}],
            "memory": {"name": "DRAM"}}  # fmt: skip
    with pytest.raises(ConfigError, match="unknown key 'warps'"):
        machine_from_dict({**base, "gpu": {"warps": 4}})
    with pytest.raises(ConfigError, match="positive integer"):
        machine_from_dict({**base, "gpu": {"fma_latency": 0}})
    with pytest.raises(ConfigError, match="non-empty text"):
        machine_from_dict({**base, "gpu": {"source": " "}})
    m = machine_from_dict({**base, "gpu": {"warps_per_sm": 48}})
    with pytest.raises(ConfigError, match=r"blocks_per_sm.*sms.*clock_ghz.*peak.*bandwidth"):
        gpu_of(m, "fp64")
    assert gpu_of(load_machine("gtx970"), "fp64", memory_latency=200).memory_latency == 200


# ---------------------------------------------------------------------- command line
def test_power_text_names_bounds_estimates_and_changes(capsys):
    code, out, err = run(capsys, "power", "triad", "n=400000", "--machine", "gtx970", "-q")
    assert code == 0, err
    assert "128x13" in out and "memory latency" in out and "memory bandwidth" in out
    assert "ESTIMATE" in out and "model, not measurement" in out
    assert "what each change does" in out and "ILP4 at 128x13: +" in out
    assert "constant: 0 W, Ghane et al.'s equation" in out


def test_power_json_and_plot(capsys, tmp_path):
    png = tmp_path / "power.png"
    code, out, err = run(capsys, "power", "triad", "n=100000", "--machine", "k80", "--json",
                         "--variant", "128x13", "--variant", "128x13+ilp4",
                         "--constant-w", "40", "--plot", png, "-q")  # fmt: skip
    assert code == 0, err
    doc = json.loads(out, parse_constant=lambda c: pytest.fail(f"not JSON: {c}"))
    assert doc["schema"] == "hroof.power/1" and doc["energy_model"]["constant_w"] == 40
    assert doc["variants"][0]["limits_elements_per_s"]["dependency chain"] is None  # no chain
    a, b = doc["variants"]
    assert (a["variant"], b["variant"]) == ("128x13", "128x13 ILP4")
    assert b["time_s"] < a["time_s"] and b["gflop_per_j"] > a["gflop_per_j"]
    assert b["energy_j"] == pytest.approx(
        doc["flops"] * 20e-12 + doc["level_bytes"]["GDDR5"] * 125e-12 + 40 * b["time_s"]
    )
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["power", "stencil7", "n=8"], ["dot", "not 'stencil7'"]),
        (["power", "triad", "n=1000", "--machine", "skylake-sp"], ["energy figures"]),
        (["power", "triad", "n=1000", "--machine", "gtx580"], ["lacks", "[gpu]"]),
        (["power", "triad", "n=1000", "--variant", "12"], ["THREADSxBLOCKS"]),
        (["power", "triad", "n=1000", "--constant-w", "-1"], ["--constant-w"]),
        (["power", "triad", "n=1000", "--plot", "x.gif"], ["--plot", ".png"]),
        (["power", "triad", "n=1000", "warmup=1", "--no-flush"], ["moves no bytes"]),
    ],
)
def test_power_refuses_bad_input(capsys, tmp_path, monkeypatch, argv, words):
    monkeypatch.chdir(tmp_path)
    assert_cli_bad(capsys, argv, *words)
    assert not list(tmp_path.iterdir())
