"""A kernel's stream through `hroof simulate KERNEL` and through `hroof trace` + pycachesim
gives the same per-level misses: load/store streams on one level, and several levels on a
load-only version of a kernel's stream (where pycachesim's quirks cannot act)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import lvl, run_pycachesim
from naive import simulate as naive_simulate

from hroof.cli import main
from hroof.traces import iter_trace

cachesim = pytest.importorskip("cachesim")

ONE_LEVEL = [(16, 4, 64)]  # 4 KiB, 4-way
THREE_LEVELS = [(8, 2, 64), (16, 4, 64), (32, 8, 64)]


def machine_file(tmp_path, geom):
    text = "".join(
        f'[[level]]\nname = "L{i + 1}"\nsize = {s * w * line}\nways = {w}\nline = {line}\n'
        for i, (s, w, line) in enumerate(geom)
    )
    path = tmp_path / "m.toml"
    path.write_text(text)
    return path


def hroof_json(capsys, argv):
    assert main([str(a) for a in argv]) == 0
    return json.loads(capsys.readouterr().out)


def written_trace(capsys, tmp_path, kernel, params):
    path = tmp_path / f"{kernel}.npz"
    assert main(["trace", kernel, *params, "--out", str(path)]) == 0
    capsys.readouterr()
    addr, size, kind = (np.concatenate(a) for a in zip(*iter_trace(path), strict=True))
    return path, addr, size, kind


@pytest.mark.parametrize(
    ("kernel", "params", "quirk_acts"),
    [
        ("copy", ["n=3000"], False),
        ("triad", ["n=2000"], False),
        ("daxpy", ["n=2000", "dtype=float32"], False),
        ("stencil7", ["n=10"], False),
        ("stencil5", ["n=40", "sweeps=2"], False),
        ("gemm", ["m=12", "n=12", "k=12", "order=ikj"], False),
        # y[i] is stored once a row and its line hit again rows later: pycachesim does
        # not refresh a line on a store hit, so it evicts y's line sooner.
        ("dgemv", ["n=64", "m=40"], True),
    ],
)
def test_one_level_load_store_same_misses(capsys, tmp_path, kernel, params, quirk_acts):
    machine = machine_file(tmp_path, ONE_LEVEL)
    ours = hroof_json(capsys, ["simulate", kernel, *params, "--machine", machine, "--json"])
    _, addr, size, kind = written_trace(capsys, tmp_path, kernel, params)
    assert addr.max() < 2**32  # pycachesim 0.3.1 aliases addresses above (kernels start at 2**30)
    trace = list(zip(addr.tolist(), size.tolist(), kind.tolist(), strict=True))
    stats, _ = run_pycachesim(cachesim, ONE_LEVEL, trace)
    theirs = (stats[0]["MISS_count"], stats[0]["EVICT_count"])
    mine = (ours["levels"][0]["misses"], ours["levels"][0]["writebacks"])
    levels = [lvl("L1", *ONE_LEVEL[0])]
    twin = naive_simulate(levels, trace)["levels"][0]
    quirky = naive_simulate(levels, trace, quirks=True)["levels"][0]
    # Ours is the model's twin; the twin with pycachesim's quirks is pycachesim.
    assert mine == (twin["misses"], twin["writebacks"])
    assert theirs == (quirky["misses"], quirky["writebacks"])
    assert (mine == theirs) is not quirk_acts


@pytest.mark.slow
@pytest.mark.parametrize(("kernel", "params"), [("stencil7", ["n=12"]), ("gemm", ["m=10"])])
def test_multi_level_load_only_same_misses(capsys, tmp_path, kernel, params):
    _, addr, size, kind = written_trace(capsys, tmp_path, kernel, params)
    loads = tmp_path / "loads.npz"
    np.savez(loads, addr=addr, size=size, kind=np.zeros_like(kind))
    machine = machine_file(tmp_path, THREE_LEVELS)
    ours = hroof_json(capsys, ["simulate", "--trace", loads, "--machine", machine, "--json"])
    trace = [(a, s, 0) for a, s in zip(addr.tolist(), size.tolist(), strict=True)]
    stats, _ = run_pycachesim(cachesim, THREE_LEVELS, trace)
    assert [lv["misses"] for lv in ours["levels"]] == [s["MISS_count"] for s in stats]
    assert all(s["MISS_count"] > 0 for s in stats)
