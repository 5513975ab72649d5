"""Exact set sampling: sampled sets simulated exactly; the error bars cover the truth."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import random_trace
from naive import simulate as naive_simulate

from hroof._base.errors import HroofError
from hroof.cachesim import HierarchyConfig, LevelConfig, SimResult, simulate
from hroof.cachesim.sampling import SampledSimulator, parse_sample, set_modulus
from hroof.traces import plan_kernel

EXACT_FIELDS = (
    "lookups", "misses", "write_allocate_fills", "forwarded_stores", "forwarded_store_bytes",
    "writebacks_in", "writebacks", "invalidations", "traffic_below_bytes",
)  # fmt: skip


def levels_from(spec, line=64):
    return HierarchyConfig(
        tuple(
            LevelConfig(f"L{i + 1}", sets * ways * line, ways, line, write_allocate=wa)
            for i, (sets, ways, wa) in enumerate(spec)
        )
    )


def sampled(h, addr, size, kind, k, residue, *, classify=False, flush=True, groups=1):
    sim = SampledSimulator(h, k, residue=residue, groups=groups, classify=classify)
    for part in np.array_split(np.arange(len(addr)), 3):
        sim.feed(addr[part], size[part], kind[part])
    return sim.finish(flush=flush)


@pytest.mark.parametrize(
    "spec",
    [
        [(4, 2, True)],
        [(4, 2, True), (8, 2, True)],
        [(4, 1, True), (12, 2, False), (8, 3, True)],
        [(8, 2, False), (4, 4, True)],
    ],
)
@pytest.mark.parametrize("k", [2, 4])
def test_residue_classes_partition_the_whole_simulation(spec, k):
    """Summed over every residue, the unscaled sampled counts are the whole run's, exactly."""
    h = levels_from(spec)
    rng = np.random.default_rng(k * 100 + len(spec))
    for flush in (True, False):
        addr, size, kind = random_trace(rng, 2000, lines=300, p=(0.55, 0.35, 0.1))
        whole = simulate(h, [(addr, size, kind)], classify=True, flush=flush)
        parts = [sampled(h, addr, size, kind, k, j, classify=True, flush=flush) for j in range(k)]
        for i, lv in enumerate(whole.levels):
            for name in EXACT_FIELDS:
                total = sum(getattr(p.levels[i], name) for p in parts)
                assert total == k * getattr(lv, name), (lv.name, name)
            # Compulsory misses are per line: exact under sampling too.
            comp = sum(p.levels[i].misses_by_class["compulsory"] for p in parts)
            assert comp == k * lv.misses_by_class["compulsory"]
        assert all(p.core == whole.core for p in parts)
        # Each part: K x its traffic below the last level + the (exact) NT bytes.
        assert sum(p.memory.bytes for p in parts) == k * whole.memory.bytes


def test_sampled_counts_are_k_times_the_naive_twin_on_the_sampled_lines():
    """Sampled counts scaled by K equal the plain-Python model fed only the sampled lines."""
    h = levels_from([(8, 2, True), (16, 2, True)])
    rng = np.random.default_rng(5)
    addr, size, kind = random_trace(rng, 3000, lines=200, p=(0.6, 0.3, 0.1), max_size=8)
    addr &= ~15  # no access straddles a line, so each is sampled whole
    k, residue = 4, 3
    r = sampled(h, addr, size, kind, k, residue, groups=2)
    keep = (addr >> 6) % k == residue
    levels = [{"name": lv.name, "size": lv.size, "ways": lv.ways, "line": 64} for lv in h.levels]
    naive = naive_simulate(
        levels, zip(addr[keep].tolist(), size[keep].tolist(), kind[keep].tolist(), strict=True),
        classify=False,
    )  # fmt: skip
    for lv, nv in zip(r.levels, naive["levels"], strict=True):
        for name in ("lookups", "misses", "writebacks_in", "writebacks", "invalidations"):
            assert getattr(lv, name) == k * nv[name], (lv.name, name)


def bound(result, field, se):
    """The documented interval: 3 standard errors plus the resolution (in lines or bytes)."""
    res = result.sampling["resolution"] * (64 if field.endswith("bytes") else 1)
    return 3 * se + res


def relative_errors(result, whole):
    out = []
    for lv, est, se in zip(
        whole.levels, result.levels, result.sampling["stderr"]["levels"], strict=True
    ):
        for name in ("misses", "traffic_below_bytes"):
            out.append((lv.name, name, getattr(est, name) - getattr(lv, name), se[name]))
    return out


STREAMS = {
    "stencil7": lambda: plan_kernel("stencil7", n=40).chunks(1 << 16),
    "triad": lambda: plan_kernel("triad", n=200_000).chunks(1 << 16),
    "spmv": lambda: plan_kernel("spmv", n=150).chunks(1 << 16),
}


@pytest.mark.parametrize("name", sorted(STREAMS))
@pytest.mark.parametrize("k", [4, 16])
def test_error_bound_covers_the_true_total(name, k):
    # L1 8 KiB/2-way (64 sets), L2 64 KiB/4-way (256 sets), L3 256 KiB/8-way (512 sets).
    h = levels_from([(64, 2, True), (256, 4, True), (512, 8, True)])
    whole = simulate(h, STREAMS[name](), classify=False)
    est = simulate(h, STREAMS[name](), classify=False, sample_sets=k)
    assert est.sampling["k"] == k and est.sampling["groups"] >= 2
    assert est.sampling["warning"] is None
    for level, field, err, se in relative_errors(est, whole):
        assert abs(err) <= bound(est, field, se), (level, field, err, se)


def test_random_stream_error_bound():
    h = levels_from([(16, 4, True), (64, 8, True)])
    rng = np.random.default_rng(11)
    addr = rng.integers(0, 1 << 22, 200_000) * 8
    size = np.full(addr.size, 8)
    kind = (rng.random(addr.size) < 0.3).astype(np.uint8)
    whole = simulate(h, [(addr, size, kind)], classify=False)
    est = simulate(h, [(addr, size, kind)], classify=False, sample_sets=4)
    for _, field, err, se in relative_errors(est, whole):
        assert se > 0 and abs(err) <= bound(est, field, se)


def test_too_regular_stream_is_flagged():
    """A stride of K lines puts every access in one residue class."""
    h = levels_from([(16, 2, True)])
    addr = np.arange(0, 4 * 64 * 1000, 4 * 64)
    r = simulate(h, [(addr, np.full(addr.size, 8), np.zeros(addr.size, np.uint8))],
                 sample_sets=4)  # fmt: skip
    assert "too regular" in r.sampling["warning"]
    assert r.sampling["class_share"]["max"] == 1.0


def test_k_must_divide_the_set_counts_gcd():
    h = levels_from([(4, 2, True), (12, 2, True)])
    assert set_modulus(h) == 4
    with pytest.raises(HroofError, match="divide"):
        SampledSimulator(h, 8)
    with pytest.raises(HroofError, match="residue"):
        SampledSimulator(h, 4, residue=4)
    assert parse_sample("1/16") == 16 and parse_sample("8") == 8
    for bad in ("1/0", "2/16", "x", "1/-4"):
        with pytest.raises(HroofError):
            parse_sample(bad)


def test_sampling_round_trips_through_json():
    h = levels_from([(8, 2, True), (16, 2, True)])
    addr = np.arange(0, 64 * 4000, 8)
    r = simulate(h, [(addr, np.full(addr.size, 8), np.zeros(addr.size, np.uint8))],
                 sample_sets=2)  # fmt: skip
    d = r.to_dict()
    assert d["sampling"]["k"] == 2 and d["sampling"]["stderr"] is not None
    assert SimResult.from_dict(d).sampling == d["sampling"]
    whole = simulate(h, [(addr, np.full(addr.size, 8), np.zeros(addr.size, np.uint8))])
    assert "sampling" not in whole.to_dict()


def test_cli_simulate_and_sweep_sample_sets(capsys, tmp_path):
    import json

    from helpers import assert_cli_bad, run_cli

    args = ["simulate", "triad", "n=20000", "--machine", "skylake-sp", "--no-classify", "-q"]
    code, out, _ = run_cli(capsys, *args, "--sample-sets", "1/16", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["sampling"]["k"] == 16 and doc["sampling"]["groups"] == 4
    code, whole, _ = run_cli(capsys, *args, "--json")
    whole = json.loads(whole)
    for est, lv, se in zip(doc["levels"], whole["levels"], doc["sampling"]["stderr"]["levels"],
                           strict=True):  # fmt: skip
        assert abs(est["misses"] - lv["misses"]) <= 3 * se["misses"] + 64
    code, out, _ = run_cli(capsys, *args, "--sample-sets", "1/16")
    assert code == 0 and "Set sampling 1/16" in out
    assert_cli_bad(capsys, [*args, "--sample-sets", "1/3"], "1/3", "divide", "64")
    assert_cli_bad(capsys, [*args, "--sample-sets", "3"], "--sample-sets", "1/K")
    code, out, _ = run_cli(
        capsys, "sweep", "triad", "n=20000,40000", "--machine", "skylake-sp", "--no-classify",
        "--sample-sets", "1/4", "--workers", "1", "-q", "--json",
    )  # fmt: skip
    assert code == 0
    points = json.loads(out)["points"]
    assert [p["result"]["sampling"]["k"] for p in points] == [4, 4]


def test_study_sample_sets_from_file_and_option(tmp_path, capsys, monkeypatch):
    import json

    from helpers import assert_cli_bad, run_cli

    from hroof.studies.study import load_study

    study = tmp_path / "s.toml"
    study.write_text(
        'name = "s"\nmachines = ["skylake-sp"]\n[options]\nclassify = false\n'
        'sample_sets = "1/16"\n[[kernel]]\nname = "triad"\nparams = { n = "20000,40000" }\n'
    )
    spec = load_study(study)
    assert spec.sample_sets == 16 and spec.options["sample_sets"] == 16
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_cli(capsys, "study", study, "--json", "-q", "--workers", "1")
    assert code == 0
    doc = json.loads(out)
    assert [p["result"]["sampling"]["k"] for p in doc["points"]] == [16, 16]
    assert_cli_bad(capsys, ["study", study, "--sample-sets", "1/3", "-q"], "1/3", "divide")
    bad = tmp_path / "bad.toml"
    bad.write_text(study.read_text().replace('"1/16"', '"16/1"'))
    assert_cli_bad(capsys, ["study", bad, "-q"], "sample_sets", "1/K")
