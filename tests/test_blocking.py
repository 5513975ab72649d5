"""The register-blocking study (hroof.studies.spmv_blocking, hroof spmv-blocking): where 2x2
blocks pay (dense 2x2 blocks) and where explicit zeros eat the gain (random), the
figure, the command and its bad input."""

from __future__ import annotations

import json

import pytest
from helpers import run_cli as run

from hroof._base.errors import HroofError
from hroof.machine.model import load_machine
from hroof.plots.spmv_blocking import plot_blocking
from hroof.studies.spmv_blocking import (
    blocking_doc,
    blocking_grid,
    parse_blocks,
    run_blocking,
)

DENSE = {"matrix": "poisson2d", "n": 24, "dof": 2}  # 1,152 rows of dense 2x2 blocks
RANDOM = {"matrix": "random", "rows": 1024, "nnz_per_row": 6}


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HROOF_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def teaching():
    return load_machine("teaching")


def test_parse_blocks():
    assert parse_blocks("1x1,2x2, 4X2") == [(1, 1), (2, 2), (4, 2)]
    for bad, words in (("0x2", "'0x2' must be RxC"), ("2", "'2' must be RxC"),
                       ("2x2,2x2", "given twice"), ("axb", "must be RxC")):  # fmt: skip
        with pytest.raises(HroofError, match=words):
            parse_blocks(bad)


def test_grid_refuses_own_parameters():
    with pytest.raises(HroofError, match="r is set by the blocking study"):
        blocking_grid({"matrix": "poisson2d", "r": 2}, [(2, 2)])
    with pytest.raises(HroofError, match="at least one block size or CSR"):
        blocking_grid({"matrix": "poisson2d"}, [], csr=False)
    assert blocking_grid({"matrix": "banded"}, [(2, 1)]) == [
        {"matrix": "banded", "storage": "csr"},
        {"matrix": "banded", "storage": "bcsr", "r": 2, "c": 1},
    ]


def test_two_by_two_pays_on_dense_blocks_and_not_on_random(teaching):
    h = teaching.hierarchy
    dense = run_blocking(DENSE, [(1, 1), (2, 2), (4, 4)], h, workers=1)
    assert [p.label for p in dense] == ["CSR", "1x1", "2x2", "4x4"]
    csr, one, two, four = dense
    assert two.fill_ratio == 1.0 and four.fill_ratio > 1.5
    assert csr.result.flops == two.result.flops == four.result.flops
    assert two.blocking["executed_flops"] == two.result.flops
    assert four.blocking["executed_flops"] == 2 * four.blocking["stored"] > four.result.flops
    # 2x2 pays at every level; 4x4 stores twice the entries and loses at memory.
    for lc, lt in zip(csr.result.levels, two.result.levels, strict=True):
        assert lt.ai > lc.ai and lt.bytes < lc.bytes
    assert two.result.memory.ai > csr.result.memory.ai > four.result.memory.ai
    assert one.result.levels[0].bytes == csr.result.levels[0].bytes
    rnd = run_blocking(RANDOM, [(2, 2)], h, workers=1)
    assert rnd[1].fill_ratio > 3.5
    assert rnd[1].result.memory.ai < rnd[0].result.memory.ai
    assert rnd[1].result.levels[0].bytes > rnd[0].result.levels[0].bytes
    # The ideal AI bounds the memory AI from above (footprint moved once, up to lines).
    for p in dense + rnd:
        assert p.result.memory.ai <= p.ideal_ai * 1.05


def test_doc_and_plot(teaching):
    pts = run_blocking(DENSE, [(2, 2), (3, 3)], teaching.hierarchy, workers=1)
    doc = blocking_doc(pts, teaching)
    assert doc["schema"] == "hroof.spmv-blocking/1"
    assert doc["matrix"]["dof"] == 2 and "storage" not in doc["matrix"]
    assert [p["label"] for p in doc["points"]] == ["CSR", "2x2", "3x3"]
    assert doc["points"][2]["blocking"]["pad_rows"] == 0  # 1152 rows: 384 block rows of 3
    assert doc["points"][1]["roofline"]["binding"] == "DRAM"
    json.dumps(doc)
    fig = plot_blocking(pts, title="t")
    ax_ai, ax_tr, fill = fig.axes
    assert [t.get_text() for t in ax_ai.get_xticklabels()] == ["CSR", "2x2", "3x3"]
    assert "FLOP/byte" in ax_ai.get_ylabel() and "bytes" in ax_tr.get_ylabel()
    assert "fill ratio" in fill.get_ylabel()
    legend = [t.get_text() for t in ax_ai.get_legend().get_texts()]
    assert {"L1 AI", "DRAM AI", "fill ratio", "ideal (footprint once)"} <= set(legend)
    assert [t.get_text() for t in ax_tr.get_legend().get_texts()] == ["L1", "L2", "L3", "DRAM"]
    assert [t.get_text() for t in fill.texts] == ["1.00", "1.00", f"{pts[2].fill_ratio:.2f}"]


@pytest.mark.slow
def test_cli_table_out_and_json(capsys, tmp_path, teaching):
    out = tmp_path / "blk"
    argv = ["poisson2d", "n=24", "dof=2", "--blocks", "2x2,4x4", "--machine", "teaching"]
    code, text, err = run(capsys, "spmv-blocking", *argv, "--out", out, "-q")
    assert code == 0, err
    assert "blocking pays at 2x2" in text
    assert "blocking loses at 4x4" in text
    assert "fill" in text and "DRAM AI" in text and "GFLOP/s" in text
    for name in ("blocking.json", "spmv_blocking.png", "spmv_blocking.svg"):
        assert (out / name).stat().st_size > 0
    doc = json.loads((out / "blocking.json").read_text())
    assert [p["label"] for p in doc["points"]] == ["CSR", "2x2", "4x4"]
    code, text, _ = run(capsys, "spmv-blocking", "random", "rows=512", "--blocks", "2x2",
                        "--no-csr", "--json", "-q", "--machine", "teaching")  # fmt: skip
    assert code == 0
    doc = json.loads(text)
    assert [p["label"] for p in doc["points"]] == ["2x2"]


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["poisson2d", "--blocks", "0x2"], ["'0x2' must be rxc"]),
        (["banded", "rows=4", "--blocks", "5x5"], ["block size 5x5 is larger than the 4x4"]),
        (["poisson2d", "storage=bcsr"], ["storage is set by the blocking study"]),
        (["poisson2d", "r=2"], ["r is set by the blocking study"]),
        (["poison2d"], ["did you mean 'poisson2d'"]),
        (["poisson2d", "n=0"], ["n must be at least 1"]),
        (["poisson2d", "matrix=banded"], ["give the matrix once"]),
        (["poisson2d", "--machine", "nosuch"], ["nosuch"]),
        (["empty.mtx", "--blocks", "2x2"], ["has no nonzeros: nothing to block"]),
    ],
)
def test_cli_bad_input(capsys, tmp_path, argv, words):
    out = tmp_path / "never"
    (tmp_path / "empty.mtx").write_text("%%MatrixMarket matrix coordinate pattern general\n4 4 0\n")
    argv = [str(tmp_path / a) if a == "empty.mtx" else a for a in argv]
    code, text, err = run(capsys, "spmv-blocking", *argv, "--out", out, "-q")
    assert code == 2 and text == ""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("hroof: error: ")
    for w in words:
        assert w in err.lower()
    assert not out.exists()


def test_cli_on_a_matrix_market_file(capsys, tmp_path):
    """A .mtx matrix: 5x5 with 10 nonzeros (the hand case of tests/test_bcsr.py); 2x2 pads
    it to 6x6 and stores 24 entries (fill 2.4), one 5x5 block stores 25 (fill 2.5)."""
    from test_bcsr import HAND

    path = tmp_path / "hand.mtx"
    path.write_text(HAND)
    code, out, err = run(capsys, "spmv-blocking", path, "--blocks", "2x2,5x5", "--json", "-q",
                         "--machine", "teaching")  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    fills = [(p["label"], p["blocking"]["fill_ratio"]) for p in doc["points"]]
    assert fills == [("CSR", 1.0), ("2x2", 2.4), ("5x5", 2.5)]
    assert doc["points"][1]["blocking"]["pad_rows"] == 1
    assert doc["matrix"]["matrix"] == str(path)
