"""Sweeps: value ranges, the grid, parallel runs equal to single ones, the result cache,
and wall detection where a level stops holding the stencil's planes."""

from __future__ import annotations

import json

import pytest

from hroof._base.errors import HroofError
from hroof.cachesim import SimResult, hierarchy
from hroof.studies import cache as result_cache
from hroof.studies.cache import cache_key
from hroof.studies.runs import simulate_kernel
from hroof.studies.sweep import expand_grid, find_walls, parse_values, run_sweep
from hroof.traces import plan_kernel

SMALL = hierarchy(
    {"name": "L1", "size": "4 KiB", "ways": 4},
    {"name": "L2", "size": "32 KiB", "ways": 8},
    {"name": "L3", "size": "256 KiB", "ways": 16},
)


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HROOF_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("16..512:x2", ["16", "32", "64", "128", "256", "512"]),
        ("10..40:x1.5", ["10", "15", "22", "34"]),
        ("8..32:+8", ["8", "16", "24", "32"]),
        ("3..5", ["3", "4", "5"]),
        ("1,2,4..8:x2", ["1", "2", "4", "8"]),
        ("float32,float64", ["float32", "float64"]),
    ],
)
def test_parse_values(text, values):
    assert parse_values(text) == values


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("a..b", "range start must be a whole number"),
        ("1.5..4", "whole number"),
        ("9..3", "backwards"),
        ("4..64:x1", "F > 1"),
        ("4..64:+0", "step as"),
        ("4..64:-2", "step as"),
        ("", "no values"),
        ("1..100000", "100,000 values; at most"),
        ("1..1e15", "1,000,000,000,000,000 values"),  # counted, never built
    ],
)
def test_parse_values_errors(text, words):
    with pytest.raises(HroofError, match=words):
        parse_values(text)


def test_grid_is_the_product_and_checks_names():
    grid = expand_grid("stencil7", {"n": "8,16", "pad_row": "0,1", "sweeps": "2"})
    assert grid == [
        {"n": "8", "pad_row": "0", "sweeps": "2"},
        {"n": "8", "pad_row": "1", "sweeps": "2"},
        {"n": "16", "pad_row": "0", "sweeps": "2"},
        {"n": "16", "pad_row": "1", "sweeps": "2"},
    ]
    with pytest.raises(HroofError, match=r"no parameter 'size'.*did you mean 'sweeps'|no param"):
        expand_grid("stencil7", {"size": "8"})


def test_sweep_equals_single_runs_in_parallel_and_cached(private_cache):
    grid = expand_grid("stencil7", {"n": "4..32:x2"})
    par = run_sweep("stencil7", grid, SMALL, workers=2)
    assert [p.cached for p in par] == [False] * 4
    for p in par:
        one = simulate_kernel("stencil7", SMALL, n=p.params["n"])
        assert p.result.to_dict()["levels"] == one.to_dict()["levels"]
        assert p.footprint == plan_kernel("stencil7", n=p.params["n"]).footprint
    again = run_sweep("stencil7", grid, SMALL, workers=2)
    assert [p.cached for p in again] == [True] * 4
    assert [p.result.to_dict()["levels"] for p in again] == [
        p.result.to_dict()["levels"] for p in par
    ]
    assert len(list(private_cache.glob("*.json"))) == 4
    serial = run_sweep("stencil7", grid, SMALL, workers=1, use_cache=False)
    assert [p.result.to_dict()["levels"] for p in serial] == [
        p.result.to_dict()["levels"] for p in par
    ]


def test_cache_key_depends_on_what_changes_a_result():
    base = cache_key("triad", {"n": 8}, SMALL, {"classify": True, "flush": True})
    assert base != cache_key("triad", {"n": 9}, SMALL, {"classify": True, "flush": True})
    assert base != cache_key("triad", {"n": 8}, SMALL, {"classify": False, "flush": True})
    other = hierarchy({"name": "L1", "size": "8 KiB", "ways": 4})
    assert base != cache_key("triad", {"n": 8}, other, {"classify": True, "flush": True})
    assert base == cache_key("triad", {"n": 8}, SMALL, {"flush": True, "classify": True})


def test_cache_key_depends_on_the_inclusion_policy():
    """An exclusive L2 simulates differently, so it must not reuse the NINE result (the key
    once left the policy out); every policy gets its own key, and NINE keeps the old one."""
    from hroof.studies.cache import canonical_hierarchy

    opts = {"classify": True, "flush": True}
    keys = {pol: cache_key("triad", {"n": 8}, SMALL.with_inclusion(pol), opts)
            for pol in ("nine", "exclusive", "victim", "inclusive")}  # fmt: skip
    assert len(set(keys.values())) == 4
    assert keys["nine"] == cache_key("triad", {"n": 8}, SMALL, opts)
    plain = canonical_hierarchy(SMALL)["levels"]
    assert all(len(lv) == 5 for lv in plain)  # the pre-policy form


def test_cache_key_depends_on_the_prefetcher():
    """A prefetcher changes what is simulated: each kind, table size and distance gets its
    own key (the key once left prefetchers out, so a preset's new prefetcher read back the
    plain model's cached results); no prefetcher keeps the old key."""
    from dataclasses import replace

    from hroof.cachesim import HierarchyConfig

    opts = {"classify": True, "flush": True}

    def with_l2(**kw):
        levels = list(SMALL.levels)
        levels[1] = replace(levels[1], **kw)
        return HierarchyConfig(tuple(levels), name=SMALL.name)

    variants = [with_l2(prefetch="none"), with_l2(prefetch="next-line"),
                with_l2(prefetch="adjacent"), with_l2(prefetch="stride"),
                with_l2(prefetch="stride", prefetch_streams=4),
                with_l2(prefetch="stride", prefetch_distance=2)]  # fmt: skip
    keys = [cache_key("triad", {"n": 8}, h, opts) for h in variants]
    assert len(set(keys)) == len(keys)
    assert keys[0] == cache_key("triad", {"n": 8}, SMALL, opts)


def test_corrupt_cache_entry_is_simulated_again(private_cache):
    grid = [{"n": "1000"}]
    first = run_sweep("triad", grid, SMALL, workers=1)
    (entry,) = private_cache.glob("*.json")
    entry.write_text("{not json")
    again = run_sweep("triad", grid, SMALL, workers=1)
    assert not again[0].cached
    assert again[0].result.to_dict()["levels"] == first[0].result.to_dict()["levels"]
    assert SimResult.from_dict(json.loads(entry.read_text())).flops == 2000


def test_walls_where_levels_stop_holding_the_planes():
    """3 planes of old + a row of new: n=8 fits the 4 KiB L1 (3*100*8 = 2.4 KiB), n=16 does
    not (3*324*8 = 7.8 KiB); n=16 fits the 32 KiB L2, n=32 (3*1156*8 = 27 KiB + ...) is
    at its edge and n=64 is not."""
    grid = expand_grid("stencil7", {"n": "4..64:x2"})
    walls = find_walls(run_sweep("stencil7", grid, SMALL, workers=2), "n")
    by_level = {w.level: (w.before, w.after) for w in walls}
    assert by_level["L1"] == (8, 16)
    assert by_level["L2"] in ((16, 32), (32, 64))
    for w in walls:
        assert w.bytes_per_flop_after >= 1.25 * w.bytes_per_flop_before
        assert w.footprint_after > w.capacity


def test_cache_never_returns_another_machines_result(private_cache):
    """Machines A and B with the same geometry: B's sweep simulates (its own key) and its
    result names B, never A."""
    a = hierarchy({"name": "L1", "size": "4 KiB", "ways": 4}, name="machine A")
    b = hierarchy({"name": "L1", "size": "4 KiB", "ways": 4}, name="machine B")
    (pa,) = run_sweep("triad", [{"n": "1000"}], a, workers=1)
    (pb,) = run_sweep("triad", [{"n": "1000"}], b, workers=1)
    assert (pa.result.machine, pb.result.machine, pb.cached) == ("machine A", "machine B", False)
    (again,) = run_sweep("triad", [{"n": "1000"}], b, workers=1)
    assert again.cached and again.result.machine == "machine B"
    assert again.result.to_dict()["levels"] == pa.result.to_dict()["levels"]


def test_cache_key_covers_the_simulators_code(private_cache, monkeypatch):
    """A changed cachesim or traces source gives every point a new key: nothing cached by
    the old code is returned."""
    (first,) = run_sweep("triad", [{"n": "1000"}], SMALL, workers=1)
    key = cache_key("triad", first.params, SMALL, {"classify": True, "flush": True})
    monkeypatch.setattr(result_cache, "code_fingerprint", lambda: "changed simulator")
    assert cache_key("triad", first.params, SMALL, {"classify": True, "flush": True}) != key
    (again,) = run_sweep("triad", [{"n": "1000"}], SMALL, workers=1)
    assert not again.cached


def test_code_fingerprint_reads_cachesim_and_traces():
    fp = result_cache.code_fingerprint()
    assert len(fp) == 16 and fp == result_cache.code_fingerprint()
    assert {"cachesim", "traces"} <= set(result_cache._CODE)


def test_cache_entry_naming_another_machine_is_ignored(private_cache):
    run_sweep("triad", [{"n": "1000"}], SMALL, workers=1)
    (entry,) = private_cache.glob("*.json")
    doc = json.loads(entry.read_text())
    doc["machine"] = "somebody else"
    entry.write_text(json.dumps(doc))
    (again,) = run_sweep("triad", [{"n": "1000"}], SMALL, workers=1)
    assert not again.cached and again.result.machine == SMALL.name
