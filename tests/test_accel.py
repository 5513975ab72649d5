"""Accelerators and AI workloads (hroof.accel): the figures of
references/accelerator-analysis.zh.txt recomputed through hroof's own functions, GPU
presets, network counts, coalescing against its naive twin, the MWP/CWP model, plots
under Agg and the command-line contract (exit 2, one line, no partial file)."""

from __future__ import annotations

import itertools
import json
import math

import matplotlib
import numpy as np
import pytest
from helpers import assert_cli_bad
from helpers import run_cli as run
from naive import naive_coalescing

from hroof._base.errors import ConfigError, HroofError
from hroof.accel import coalescing, gemm, mwp, network
from hroof.accel.device import Device, device, element_size
from hroof.machine.model import bundled_machines, load_machine, machine_from_dict
from hroof.traces import plan_kernel, write_npz


def assert_bad(capsys, argv, *words):
    assert_cli_bad(capsys, argv, *words, ignore_case=False)


GPUS = ["v100", "gtx1080ti", "a100", "h100"]


@pytest.fixture(scope="module")
def v100():
    return device(load_machine("v100"), "fp16")


@pytest.fixture(scope="module")
def gtx():
    return device(load_machine("gtx1080ti"), "fp32")


# ---------------------------------------------------------------------------- presets
@pytest.mark.slow
@pytest.mark.parametrize("name", GPUS)
def test_gpu_presets_load_with_sourced_figures(name):
    assert name in bundled_machines()
    m = load_machine(name)
    assert m.kind == "gpu" and m.sms and m.sms > 0
    assert [lv.name for lv in m.hierarchy.levels] == ["L1", "L2"]
    assert all(lv.line == 128 for lv in m.hierarchy.levels)
    assert m.memory_bandwidth and m.peak and m.peak == m.peak_for(m.precision)
    text = bundled_machines()[name].read_text()
    assert "CHOSEN" in text and "not published" in text.lower()  # the ways are ours
    assert "whitepaper" in text.lower() or "specifications" in text.lower()


def test_preset_numbers():
    v, g = load_machine("v100"), load_machine("gtx1080ti")
    a, h = load_machine("a100"), load_machine("h100")
    assert (v.sms, g.sms, a.sms, h.sms) == (80, 28, 108, 132)
    assert v.peak_for("fp16") == 125000 and v.memory_bandwidth == 900 and v.bandwidth("L2") == 3100
    assert g.peak_for("fp32") == pytest.approx(3584 * 2 * 1.582) and g.memory_bandwidth == 484
    assert g.peak_for("fp16") is None  # not published for the GeForce part: absent
    assert a.peak_for("tf32") == 156000 and a.peak_for("bf16") == 312000
    assert h.peak_for("int8") == 1978900 and h.bandwidth("L1") is None
    # dense tensor figures: half the datasheets' with-sparsity ones (A100 exactly; H100's
    # whitepaper 989.4 against the datasheet's 1,979 rounded)
    assert a.peak_for("fp16") == 624000 / 2 and a.peak_for("int8") == 1248000 / 2
    assert h.peak_for("fp16") == pytest.approx(1979000 / 2, rel=1e-3)
    assert h.peak_for("tf32") == pytest.approx(989000 / 2, rel=1e-3)
    assert v.hierarchy.levels[1].size == 6 * 2**20 and a.hierarchy.levels[1].size == 40 * 2**20


def test_gpu_hierarchy_simulates(capsys):
    code, out, err = run(capsys, "simulate", "stencil7", "n=12", "--machine", "v100")
    assert code == 0, err
    assert "L2" in out and "HBM2" in out


# ---------------------------------------------------------------------------- ridge points
def test_v100_ridge_points_of_the_article(v100):
    m = load_machine("v100")
    hbm = m.peak_for("fp16") / m.bandwidth("HBM2")
    l2 = m.peak_for("fp16") / m.bandwidth("L2")
    assert round(hbm, 1) == 138.9  # the article: 125 / 0.9 = 138.9
    assert round(l2) == 40  # the article: 125 / 3.1 = 40
    assert v100.ridge("HBM2") == pytest.approx(hbm) and v100.ridge("L2") == pytest.approx(l2)
    assert m.ridge_point("HBM2") == pytest.approx(7800 / 900)  # the fp64 roof


def test_1080ti_ridge_point(gtx):
    # The article: 11.3 TFLOP/s over 484 GB/s, "max arithmetic intensity 24" (23.4, rounded up).
    assert 23 < gtx.ridge("GDDR5X") < 24.5


def test_device_errors():
    with pytest.raises(ConfigError, match="unknown dtype 'fp17'"):
        element_size("fp17")
    with pytest.raises(HroofError, match="has no fp16 peak"):
        device(load_machine("gtx1080ti"), "fp16")
    no_bw = machine_from_dict(
        {"machine": {"name": "nobw"}, "compute": {"peak": 10.0},
         "level": [{"name": "L1", "size": "1 KiB", "ways": 2}]}
    )  # fmt: skip
    with pytest.raises(HroofError, match="no memory bandwidth"):
        device(no_bw, "fp64")
    with pytest.raises(ConfigError, match="last level must be memory"):
        Device("d", "fp16", 1.0, (("L2", 1.0),), "HBM")


# ---------------------------------------------------------------------------- GEMM
def test_gemm_ai_of_the_article(v100):
    ai = gemm.gemm_ai(8192, 128, 8192, "fp16")
    assert round(ai, 1) == 124.1 and ai < v100.ridge("HBM2")
    big = gemm.gemm_ai(8192, 8192, 8192, "fp16")
    assert math.floor(big) == 2730 and big > v100.ridge("HBM2")
    assert gemm.gemm_flops(2, 3, 4) == 48 and gemm.gemm_bytes(2, 3, 4, 2) == 2 * (8 + 12 + 6)
    assert gemm.gemm_ai(8192, 128, 8192, 2) == ai  # an element size works as well


def test_gemm_classes(v100):
    a = gemm.analyse_gemm(8192, 128, 8192, v100, (128, 128))
    assert a.bound == "memory" and a.binding == "HBM2"
    assert a.blocks == 64 and a.min_blocks == 320 and a.klass == "latency"
    assert "64 thread blocks" in a.reason and "memory-bound" in a.reason
    b = gemm.analyse_gemm(8192, 128, 8192, v100, (32, 32))
    assert b.blocks == 1024 and b.klass == "memory"
    c = gemm.analyse_gemm(8192, 8192, 8192, v100, (128, 128))
    assert c.klass == c.bound == "compute" and c.attainable == v100.peak
    assert c.time_s == pytest.approx(c.flops / (v100.peak * 1e9))
    # The article's summary: N small -> memory-bound (enough blocks with a small tile).
    d = gemm.analyse_gemm(8192, 64, 8192, v100, (16, 64))
    assert d.klass == "memory"
    # Too few tiles -> latency-bound whatever the AI.
    e = gemm.analyse_gemm(1024, 1024, 65536, v100, (128, 128))
    assert e.bound == "compute" and e.klass == "latency" and e.blocks == 64


def test_default_tile_fills_the_device(v100):
    """With no tile given, the largest-AI tensor-core tile (64x64 at the smallest) that
    still gives 4 x SMs blocks, else 64x64 with split-K: the article's 8192 x 128 x 8192
    is then memory-bound (as the article says), 8192^3 compute-bound with the biggest
    tile, and a shape too small for any tile and too short to split latency-bound."""
    a = gemm.analyse_gemm(8192, 128, 8192, v100)
    assert a.tile == (64, 64) and a.split_k == 2 and a.blocks == 512 >= a.min_blocks
    assert a.klass == "memory" and a.article == "memory"
    for tile in gemm.TILES:
        assert gemm.thread_blocks(8192, 128, tile) < 320  # no unsplit tile fills the SMs
    # serial split-K: one more read and write of C per extra slice
    assert a.level("HBM2").bytes == gemm.gemm_bytes(8192, 128, 8192, 2) + 2 * 8192 * 128 * 2
    assert min(gemm.tile_ai(*t, 2) for t in gemm.TILES) == gemm.tile_ai(64, 64, 2) == 32
    c = gemm.analyse_gemm(8192, 8192, 8192, v100)
    assert c.tile == (256, 128) and c.split_k == 1 and c.klass == "compute"
    tiny = gemm.analyse_gemm(128, 128, 8192, v100)
    assert tiny.tile == (64, 64) and tiny.split_k == 32 and tiny.blocks == 128  # K / 256
    assert tiny.klass == "latency" and tiny.article is None
    assert gemm.choose_tile(8192, 128, v100) == (64, 64)
    assert gemm.choose_config(8192, 128, 8192, v100) == ((64, 64), 2)
    # square shapes do not split: the partial sums would outweigh A and B
    assert gemm.choose_config(1024, 1024, 1024, v100) == ((64, 64), 1)
    assert gemm.choose_config(4096, 16, 4096, v100) == ((64, 64), 5)  # 64 tiles x 5 = 320
    # a tile given without --split-k is not split; both given are used as given
    assert gemm.analyse_gemm(8192, 128, 8192, v100, (64, 64)).split_k == 1
    assert gemm.analyse_gemm(8192, 128, 8192, v100, (64, 64), 4).blocks == 1024
    with pytest.raises(HroofError, match="cannot split K = 8 into 16"):
        gemm.analyse_gemm(64, 64, 8, v100, (64, 64), 16)


def test_tile_ai_and_tiled_traffic():
    # Per tile: 2 Mt Nt K flops over (Mt + Nt) K elements; K cancels.
    assert gemm.tile_ai(128, 128, "fp16") == 2 * 128 * 128 / (256 * 2)
    assert gemm.tile_ai(256, 128, 4) > gemm.tile_ai(128, 128, 4) > gemm.tile_ai(64, 64, 4)
    # Whole tiles, C not counted: the tiled GEMM's AI is the tile's.
    m, n, k, t = 512, 256, 300, (64, 32)
    flops = gemm.gemm_flops(m, n, k)
    no_c = gemm.tiled_bytes(m, n, k, t, 2) - 2 * m * n
    assert flops / no_c == pytest.approx(gemm.tile_ai(*t, 2))


@pytest.mark.parametrize(
    ("m", "n", "k", "tile"), [(7, 5, 3, (2, 3)), (16, 9, 4, (4, 4)), (5, 5, 1, (8, 8))]
)
def test_tiled_bytes_against_a_loop_over_tiles(m, n, k, tile):
    mt, nt = tile
    loaded = 0
    for i0 in range(0, m, mt):
        for j0 in range(0, n, nt):
            rows, cols = min(mt, m - i0), min(nt, n - j0)
            loaded += (rows + cols) * k + rows * cols  # A panel, B panel, C tile once
    assert gemm.tiled_bytes(m, n, k, tile, 4) == 4 * loaded
    assert gemm.thread_blocks(m, n, tile) == math.ceil(m / mt) * math.ceil(n / nt)


def test_gemm_uses_the_l2_roof_only_when_the_l2_bandwidth_is_known():
    doc = {
        "machine": {"name": "l1 only", "kind": "gpu", "sms": 2},
        "compute": {"peak": 100.0},
        "level": [
            {"name": "L1", "size": "1 KiB", "ways": 2, "line": 128, "bandwidth": 50.0},
            {"name": "L2", "size": "4 KiB", "ways": 2, "line": 128},
        ],
        "memory": {"name": "HBM", "bandwidth": 10.0},
    }
    dev = device(machine_from_dict(doc), "fp64")
    assert dev.cache_level is None  # L1 is not the level above memory
    a = gemm.analyse_gemm(64, 64, 64, dev, (32, 32))
    assert [lv.name for lv in a.levels] == ["HBM"]
    doc["level"][1]["bandwidth"] = 20.0
    b = gemm.analyse_gemm(64, 64, 64, device(machine_from_dict(doc), "fp64"), (32, 32))
    assert [(lv.name, lv.traffic) for lv in b.levels] == [("L2", "tiled"), ("HBM", "unique")]


def test_gemm_bad_input(v100):
    with pytest.raises(HroofError, match="GEMM dimension M must be a positive whole number"):
        gemm.analyse_gemm(0, 128, 8192, v100)
    with pytest.raises(HroofError, match="tile"):
        gemm.parse_tile("128by128")
    assert gemm.parse_tile("64x32") == (64, 32)
    with pytest.raises(HroofError, match="can vary m, n or k"):
        gemm.gemm_family(1, 1, 1, "q", [1], v100)


# ---------------------------------------------------------------------------- networks
def test_vgg16_counts():
    cs = network.layer_costs(network.vgg16())
    macs = sum(c.macs for c in cs)
    params = sum(c.params for c in cs)
    assert round(macs / 1e9, 1) == 15.5  # "15.5 GFLOPs" counting MACs
    assert round(2 * macs / 1e9, 1) == 30.9 and sum(c.flops for c in cs) == 2 * macs
    assert params == 138_357_544  # ~138 M, biases included
    assert cs[-1].out_shape == (1000, 1, 1)
    assert sum(c.type == "pool" and c.bytes == 0 and c.flops == 0 for c in cs) == 5


def test_mobilenet_counts():
    cs = network.layer_costs(network.mobilenet_v1())
    assert round(sum(c.macs for c in cs) / 1e6) == 569  # the paper: 569 M mult-adds
    assert round(sum(c.params for c in cs) / 1e6, 1) == 4.2  # the paper: 4.2 M
    # Keras's MobileNet: 4,231,976 trainable parameters, 21,888 of them batch-norm scales
    # and shifts (2 per channel of the 27 convolutions), which hroof does not count.
    bn = 2 * sum(c.out_shape[0] for c in cs if c.type in ("conv", "dwconv", "pwconv"))
    assert bn == 21_888 and sum(c.params for c in cs) == 4_231_976 - bn
    assert cs[0].out_shape == (32, 112, 112) and cs[-2].out_shape == (1024, 1, 1)


def test_networks_on_the_1080ti_as_the_article_says(gtx):
    vgg = network.analyse_network(network.vgg16(), gtx)
    mob = network.analyse_network(network.mobilenet_v1(), gtx)
    assert vgg.bound == "compute" and vgg.ai > vgg.ridge and vgg.attainable == gtx.peak
    assert mob.bound == "memory" and mob.ai < mob.ridge
    assert mob.attainable == pytest.approx(mob.ai * 484)
    # The article's own AIs (about 25 and 7 FLOP/byte) fall on the same sides:
    assert gtx.bound(25) == "compute" and round(gtx.attainable(25) / 1e3, 1) == 11.3
    assert gtx.bound(7) == "memory" and gtx.attainable(7) == pytest.approx(7 * 484)
    assert vgg.time_s == pytest.approx(sum(lb.time_s for lb in vgg.layers))
    # Counting a MAC as one operation (as the article's sources do) gives VGG16 about 24,
    # still compute-bound, and MobileNet about 10, still memory-bound.
    assert gtx.bound(vgg.macs / vgg.bytes) == "compute" and round(vgg.macs / vgg.bytes) == 24
    assert gtx.bound(mob.macs / mob.bytes) == "memory"
    # per layer (docs/accelerators.md): VGG16's first convolution and fc layers are the
    # memory-bound ones; in MobileNet every depthwise layer and then some
    assert [lb.cost.name for lb in vgg.layers if lb.bound == "memory"] == [
        "conv1_1", "fc6", "fc7", "fc8"]  # fmt: skip
    mem = [lb.cost for lb in mob.layers if lb.bound == "memory"]
    dw = [c for c in mob.layers if c.cost.type == "dwconv"]
    assert len(dw) == 13 and all(lb.bound == "memory" for lb in dw)
    assert {c.name for c in mem if c.type != "dwconv"} == {
        "conv1", "conv2_pw", "conv3_pw", "conv13_pw", "conv14_pw", "fc"}  # fmt: skip
    assert 0.85 < min(c.ai for c in mem if c.type == "dwconv") < 0.9
    assert 2.2 < max(c.ai for c in mem if c.type == "dwconv") < 2.3


def test_batch_and_dtype_scale_what_they_should():
    one = network.layer_costs(network.vgg16(), "fp32", 1)
    four = network.layer_costs(network.vgg16(), "fp16", 4)
    for a, b in zip(one, four, strict=True):
        assert b.flops == 4 * a.flops and b.weight_bytes * 2 == a.weight_bytes
        assert b.in_bytes == 2 * a.in_bytes  # 4x the activations at half the bytes each


def test_network_files(tmp_path):
    toml = tmp_path / "tiny.toml"
    toml.write_text(
        'name = "tiny"\ninput = [3, 8, 8]\n'
        '[[layer]]\ntype = "conv"\nout = 4\nkernel = 3\npadding = 1\n'
        '[[layer]]\ntype = "pool"\n'
        '[[layer]]\ntype = "dwconv"\n'
        '[[layer]]\ntype = "pwconv"\nout = 6\nbias = false\n'
        '[[layer]]\ntype = "fc"\nout = 10\n'
    )
    net = network.load_network(toml)
    cs = network.layer_costs(net)
    assert [c.out_shape for c in cs] == [(4, 8, 8), (4, 4, 4), (4, 2, 2), (6, 2, 2), (10, 1, 1)]
    # dwconv defaults: 3x3, stride 1, no padding -> 2x2
    conv = cs[0]
    assert conv.macs == 8 * 8 * 4 * 3 * 9 and conv.params == 4 * 3 * 9 + 4
    assert conv.bytes == 4 * (conv.params + 3 * 64 + 4 * 64)
    assert cs[3].params == 4 * 6 and cs[4].params == 24 * 10 + 10
    js = tmp_path / "tiny.json"
    js.write_text(json.dumps({"input": [3, 8, 8], "layers": [{"type": "fc", "out": 2}]}))
    assert network.load_network(js).name == "tiny"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"input": [3, 8, 8], "layers": [{"type": "lstm", "out": 2}]}))
    with pytest.raises(ConfigError, match="unknown layer type 'lstm'"):
        network.load_network(bad)
    with pytest.raises(ConfigError, match="unknown network"):
        network.load_network("resnet50")
    with pytest.raises(ConfigError, match="needs 'out'"):
        network.network_from_dict({"input": [1, 4, 4], "layers": [{"type": "conv", "kernel": 3}]})
    with pytest.raises(ConfigError, match="needs 'kernel'"):
        network.network_from_dict({"input": [1, 4, 4], "layers": [{"type": "conv", "out": 2}]})
    with pytest.raises(ConfigError, match=r"unknown key 'kernal'.*did you mean 'kernel'"):
        network.network_from_dict({"input": [1, 4, 4], "layers": [{"type": "dwconv", "kernal": 3}]})
    only_pool = network.network_from_dict({"input": [1, 4, 4], "layers": [{"type": "pool"}]})
    with pytest.raises(ConfigError, match="no counted layer"):
        network.analyse_network(only_pool, Device("d", "fp32", 1.0, (("M", 1.0),), "M"))
    with pytest.raises(ConfigError, match="does not fit"):
        network.layer_costs(network.network_from_dict(
            {"input": [1, 2, 2], "layers": [{"type": "conv", "out": 1, "kernel": 5}]}))  # fmt: skip


# ---------------------------------------------------------------------------- coalescing
def test_coalescing_of_the_article():
    scattered = coalescing.warp_transactions([128 * t for t in range(32)], 4)
    assert scattered.waste(32) == 32 / 4 == 8  # 28 useless bytes per 32-byte transaction
    assert scattered.waste(128) == 32
    together = coalescing.warp_transactions([4 * t for t in range(32)], 4)
    assert together.transactions == (4, 2, 1) and together.efficiency(128) == 1
    straddle = coalescing.warp_transactions([30], 4, (32,))
    assert straddle.transactions == (2,) and straddle.used_bytes == 4
    dup = coalescing.warp_transactions([0] * 32, 8)  # a broadcast uses 8 bytes once
    assert dup.used_bytes == 8 and dup.transactions == (1, 1, 1)


@pytest.mark.parametrize("per_thread", [1, 3])
@pytest.mark.parametrize("chunk", [7, 64, 1000])
def test_coalescing_matches_naive_twin(per_thread, chunk):
    rng = np.random.default_rng(per_thread * 100 + chunk)
    n = 421
    addr = rng.integers(0, 4096, size=n) * rng.choice([1, 4, 8], size=n)
    size = rng.choice([1, 4, 8, 16, 200], size=n)
    size[rng.random(n) < 0.05] = 0
    chunks = [(addr[i : i + chunk], size[i : i + chunk]) for i in range(0, n, chunk)]
    fast = coalescing.coalesce_chunks(chunks, (32, 64, 128), per_thread)
    warps, used, tr = naive_coalescing(addr, size, per_thread)
    assert (fast.warps, fast.used_bytes) == (warps, used)
    assert fast.transactions == (tr[32], tr[64], tr[128])
    assert fast.accesses == n


def test_coalescing_of_a_trace_file_and_a_kernel(tmp_path):
    plan = plan_kernel("triad", n=200)
    path = tmp_path / "t.npz"
    write_npz(path, plan.chunks(64, reuse=False))
    a, s = [], []
    for addr, size, _ in plan.chunks(64, reuse=False):
        a.extend(addr.tolist())
        s.extend(size.tolist())
    from_file = coalescing.coalesce_trace(path, per_thread=plan.per_iteration)
    from_plan = coalescing.coalesce_plan(plan)
    assert from_file == from_plan
    _, used, tr = naive_coalescing(a, s, plan.per_iteration)
    assert from_plan.transactions == (tr[32], tr[64], tr[128]) and from_plan.used_bytes == used
    # Triad on doubles, one iteration per thread: each warp instruction reads 256
    # consecutive bytes: 2 x 128-byte segments when aligned.
    assert from_plan.efficiency(32) > 0.9


# ---------------------------------------------------------------------------- MWP / CWP
def test_mwp_cwp_figure_of_the_article():
    comp, mem = 100.0, 200.0  # a memory waiting period is twice a computation period
    left = mwp.mwp_cwp(mem_latency=mem, departure_delay=100, comp_cycles=comp, mem_cycles=mem,
                       mem_insts=1, active_warps=8)  # fmt: skip
    right = mwp.mwp_cwp(mem_latency=mem, departure_delay=25, comp_cycles=comp, mem_cycles=mem,
                        mem_insts=1, active_warps=8)  # fmt: skip
    assert left.cwp == right.cwp == 3  # CWP = 2 + 1
    assert (left.mwp, right.mwp) == (2, 8)
    assert left.cwp > left.mwp and left.dominant == "memory"
    assert right.cwp < right.mwp and right.dominant == "compute"
    # right: "8 computation periods + 1 memory period", from the closed form and the replay
    assert right.exec_cycles == 8 * comp + 1 * mem
    assert mwp.timeline(8, comp, mem, 8).total == 8 * comp + 1 * mem
    # left: "2 computation periods + 4 memory periods" in the replay; the paper's closed
    # form leaves out the first warp's computation period (documented)
    assert mwp.timeline(8, comp, mem, 2).total == 2 * comp + 4 * mem
    assert left.exec_cycles == 1 * comp + 4 * mem


def test_mwp_other_cases():
    # One memory request at a time: the replay serialises every memory period.
    t = mwp.timeline(4, 10, 100, 1)
    assert t.total == 10 + 4 * 100
    periods = sorted(p for per in t.memory for p in per)
    assert all(b[0] >= a[1] for a, b in itertools.pairwise(periods))
    # Few warps: MWP = CWP = N, nothing hides: Mem + Comp + Comp_p (MWP - 1).
    r = mwp.mwp_cwp(1000, 10, 50, 1000, 1, 2)
    assert r.case == "no-overlap" and r.exec_cycles == 1000 + 50 + 50 * 1
    # The bandwidth limit: 1 GHz x 128 B / 100 cycles = 1.28 GB/s per warp.
    b = mwp.mwp_cwp(100, 1, 10, 100, 1, 64, bandwidth_gbs=12.8, bytes_per_warp=128, clock_ghz=1)
    assert b.mwp_peak_bw == pytest.approx(10) and b.mwp == pytest.approx(10)
    with pytest.raises(HroofError, match="needs --bandwidth"):
        mwp.mwp_cwp(100, 1, 10, 100, 1, 64, bandwidth_gbs=12.8)
    with pytest.raises(HroofError, match="active warps"):
        mwp.mwp_cwp(100, 1, 10, 100, 1, 0)


# ---------------------------------------------------------------------------- plots
def test_plots_under_agg(v100, gtx):
    from hroof.plots.accel import gemm_figure, network_figure

    assert matplotlib.get_backend().lower() == "agg"
    fam = gemm.gemm_family(1024, 1, 1024, "n", [16, 128, 1024, 8192], v100)
    ax = gemm_figure(fam, v100).axes[0]
    texts = [t.get_text() for t in ax.texts]
    assert any("HBM2 900 GB/s" in t and "138.9" in t for t in texts)
    assert any("L2 3100 GB/s" in t for t in texts)
    assert any("peak 125,000 GFLOP/s (fp16)" in t for t in texts)
    # a family is labelled by the varied dimension, the fixed ones are in the title
    assert "n=16" in texts and "n=8192" in texts and "1024xNx1024" in ax.get_title()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "compute-bound" in labels and any("latency" in t for t in labels)
    assert "FLOP/byte" in ax.get_xlabel() and "GFLOP/s" in ax.get_ylabel()
    # a shape bound by its tiled traffic also shows that AI, on the L2 roof that binds
    assert "tiled AI on the L2 roof (binds)" in labels
    l2_bound = [a for a in fam if a.binding == "L2"]
    assert l2_bound
    hollow = [
        (line.get_xdata()[0], line.get_ydata()[0])
        for line in ax.lines
        if line.get_markerfacecolor() == "none"
    ]
    for a in l2_bound:
        x = a.level("L2").ai
        assert (x, a.attainable) in hollow and a.attainable == pytest.approx(x * 3100)
    # the roofs' labels run along their lines (a horizontal one is crossed by the roofs)
    fig = ax.figure
    fig.canvas.draw()
    for t in ax.texts:
        if "GB/s" not in t.get_text():
            continue
        x, y = t.get_position()
        (x0, y0), (x1, y1) = ax.transData.transform([(x, y), (10 * x, 10 * y)])
        assert t.get_rotation() == pytest.approx(
            math.degrees(math.atan2(y1 - y0, x1 - x0)), abs=0.01
        )
    # a single shape: the labels still fit along the roofs' diagonals (they end before
    # the ridge, where the roof turns flat)
    ax = gemm_figure([gemm.analyse_gemm(8192, 128, 8192, v100)], v100).axes[0]
    ax.figure.canvas.draw()
    for t in ax.texts:
        for name, _ in v100.levels:
            if t.get_text().startswith(f"{name} "):
                ridge_x = ax.transData.transform((v100.ridge(name), v100.peak))[0]
                assert t.get_window_extent().x1 < ridge_x, name
    na = network.analyse_network(network.mobilenet_v1(), gtx)
    ax = network_figure(na, gtx).axes[0]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"conv", "dwconv", "pwconv", "fc"} <= set(legend)
    assert any("memory-bound" in t for t in legend)
    assert len(ax.collections) == sum(lb.bound != "fused" for lb in na.layers) == 28
    from hroof.plots.accel import timeline_figure

    r = mwp.mwp_cwp(200, 100, 100, 200, 1, 8)
    ax = timeline_figure(mwp.timeline(8, 100, 200, 2), r).axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [f"warp {8 - y}" for y in range(8)]
    assert len(ax.collections) == 16  # a computation and a memory row per warp
    assert "MWP 2, CWP 3, memory dominates" in ax.get_title()
    assert any("total 1000 cycles" in t.get_text() for t in ax.texts)
    assert ax.get_xlabel() == "time (cycles)"


# ---------------------------------------------------------------------------- CLI
@pytest.mark.slow
def test_cli_gemm(capsys, tmp_path):
    code, out, err = run(capsys, "gemm", 8192, 128, 8192, "--machine", "v100", "--dtype", "fp16")
    assert code == 0, err
    assert "124.1" in out and "138.9" in out and "40.3" in out
    assert "class          memory-bound" in out and "tile 64x64, split-K 2 slices" in out
    assert "without them 124.1" in out and "as the article's rule says" in out
    code, out, err = run(capsys, "gemm", 8192, 128, 8192, "--machine", "v100", "--tile", "128x128")
    assert code == 0, err
    assert "latency-bound" in out and "64 thread blocks" in out
    code, out, _ = run(capsys, "gemm", 8192, 8192, 8192, "--json")
    doc = json.loads(out)
    assert doc["class"] == "compute" and math.floor(doc["ai"]) == 2730
    png = tmp_path / "g.png"
    code, out, err = run(capsys, "gemm", 4096, "n", 4096, "--sweep", "n=16..256:x4", "--plot", png)
    assert code == 0 and png.stat().st_size > 1000
    assert len([ln for ln in out.splitlines() if ln.startswith("4096 ")]) == 3


def test_gemm_help_examples_say_what_the_command_prints(capsys):
    code, text, _ = run(capsys, "gemm", "--help")
    assert code == 0
    claims = [ln.split("  ") for ln in text.splitlines() if " blocks: " in ln]
    assert len(claims) >= 2
    for parts in claims:
        argv = parts[1].split()[1:]  # drop "hroof"
        blocks, klass = next(p for p in parts if " blocks: " in p).strip().split(" blocks: ")
        code, out, err = run(capsys, *argv)
        assert code == 0, err
        assert f"thread blocks  {int(blocks):,} " in out and f"class          {klass}" in out


def test_cli_network(capsys, tmp_path):
    code, out, err = run(capsys, "network", "vgg16", "--machine", "gtx1080ti")
    assert code == 0, err
    assert "compute-bound" in out and "138.36 M parameters" in out and "30.94 GFLOP" in out
    png = tmp_path / "m.svg"
    code, out, _ = run(capsys, "network", "mobilenet", "--plot", png, "--json")
    assert json.loads(out)["bound"] == "memory" and png.read_text().startswith("<?xml")


def test_cli_coalesce_and_mwp(capsys, tmp_path):
    code, out, _ = run(capsys, "coalesce", "--stride", 128, "--size", 4)
    assert code == 0 and "8.00x" in out and "32.00x" in out
    plan = plan_kernel("triad", n=64)
    code, out, _ = run(capsys, "coalesce", "triad", "n=64", "--json", "-q")
    by_kernel = json.loads(out)
    assert by_kernel["accesses"] == plan.accesses
    path = tmp_path / "t.npz"
    write_npz(path, plan_kernel("triad", n=64).chunks(100, reuse=False))
    code, out, _ = run(capsys, "coalesce", "--trace", path, "--per-thread", plan.per_iteration,
                       "--json", "-q")  # fmt: skip
    assert json.loads(out) == by_kernel
    code, out, _ = run(capsys, "mwp", "--mem-latency", 200, "--departure-delay", 100,
                       "--comp-cycles", 100, "--mem-cycles", 200, "--warps", 8)  # fmt: skip
    assert code == 0 and "CWP   3" in out and "MWP   2" in out and "memory dominates" in out
    png = tmp_path / "replay.png"
    code, out, _ = run(capsys, "mwp", "--mem-latency", 200, "--departure-delay", 25,
                       "--comp-cycles", 100, "--mem-cycles", 200, "--warps", 8, "--json",
                       "--plot", png)  # fmt: skip
    doc = json.loads(out)
    assert doc["dominant"] == "compute" and doc["exec_cycles"] == doc["replay_cycles"] == 1000
    assert png.stat().st_size > 1000


def test_cli_errors(capsys, tmp_path):
    assert_bad(capsys, ["gemm", 0, 128, 8192], "GEMM dimension M", "0")
    assert_bad(capsys, ["gemm", 8192, "x", 8192], "GEMM dimension N")
    assert_bad(capsys, ["gemm", 64, 64, 64, "--machine", "gtx1080ti", "--dtype", "fp16"],
               "no fp16 peak", "fp32")  # fmt: skip
    assert_bad(capsys, ["gemm", 64, 64, 64, "--dtype", "fp8"], "unknown dtype 'fp8'")
    assert_bad(capsys, ["gemm", 64, 64, 64, "--tile", "0x4"], "tile")
    bad = tmp_path / "net.toml"
    bad.write_text('input = [3, 8, 8]\n[[layer]]\ntype = "attention"\n')
    assert_bad(capsys, ["network", bad], "unknown layer type 'attention'")
    assert_bad(capsys, ["network", "alexnet"], "unknown network")
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe\x00 not text")
    assert_bad(capsys, ["network", binary], "binary.toml is not a UTF-8 text file")
    plot = tmp_path / "never.png"
    assert_bad(capsys, ["network", bad, "--plot", plot], "unknown layer type")
    assert not plot.exists() and not list(tmp_path.glob(".*partial*"))
    assert_bad(capsys, ["gemm", 64, 64, 64, "--plot", tmp_path / "x.txt"], ".png")
    assert not (tmp_path / "x.txt").exists()
    assert_bad(capsys, ["coalesce"], "exactly one of")
    assert_bad(capsys, ["coalesce", "--trace", tmp_path / "t.npz", "--format", "csv"],
               "unknown trace format")  # fmt: skip
    assert_bad(capsys, ["coalesce", "--stride", 4, "--size", 0], "--size")
    assert_bad(capsys, ["coalesce", "--stride", 10**20], "below 2**62 bytes")
    assert_bad(capsys, ["coalesce", "--stride", 2**58], "below 2**62 bytes", "address")
    assert_bad(capsys, ["coalesce", "--trace", tmp_path / "missing.din"], "missing.din")
    assert_bad(capsys, ["mwp", "--mem-latency", 0, "--departure-delay", 1, "--comp-cycles", 1,
                        "--mem-cycles", 1, "--warps", 1], "memory latency")  # fmt: skip
