"""The analytic kernel table (hroof.roofline.table, hroof table): the formulas at a few N
by hand, the lecture's orders, the simulator reaching the compulsory bound where the cache
holds everything, and bad input."""

from __future__ import annotations

import json

import pytest
from helpers import run_cli as run

from hroof._base.errors import HroofError
from hroof.cachesim import hierarchy
from hroof.machine.model import load_machine, machine_from_dict
from hroof.roofline.table import (
    KERNELS,
    LECTURE,
    MAX_COUNT,
    build_table,
    check_n,
    largest_n,
    mg_points,
    simulation,
    table_row,
)
from hroof.studies.runs import simulate_kernel
from hroof.traces import plan_kernel


@pytest.mark.parametrize(
    ("kernel", "n", "flops", "nbytes"),
    [
        ("daxpy", 1000, 2 * 1000, 24 * 1000),
        ("dot", 1000, 2 * 1000, 16 * 1000),
        ("dgemv", 10, 2 * 100, 8 * 100 + 8 * 10 + 8 * 10),
        ("dgemm", 4, 2 * 64, 4 * 8 * 16),
        ("fft", 8, 5 * 8 * 3, 2 * 16 * 8),
        ("fft", 2, 10, 64),
        ("cg", 100, 24 * 100, 144 * 100 + 4),
        ("mg", 64, 30 * (64 + 8 + 1), 26 * (64 + 8 + 1)),
        ("mg", 27, 30 * 27, 26 * 27),
        ("nbody", 10, 20 * 100, 56 * 10),
        ("spmv", 10, 2 * 7 * 10, (12 * 7 + 16) * 10 + 4),
        ("stencil5", 100, 500, 1600),
        ("stencil7", 1000, 7000, 16000),
        ("stencil27", 8, 240, 128),
    ],
)
def test_formulas_by_hand(kernel, n, flops, nbytes):
    r = table_row(kernel, n)
    assert (r.flops, r.bytes) == (flops, nbytes)
    assert r.ai == flops / nbytes


def test_nnz_per_row():
    assert table_row("cg", 100, nnz_per_row=27).flops == (2 * 27 + 10) * 100
    assert table_row("cg", 100, nnz_per_row=27).bytes == (12 * 27 + 60) * 100 + 4
    assert table_row("spmv", 5, nnz_per_row=1).bytes == 28 * 5 + 4
    assert table_row("spmv", 5, nnz_per_row=1).nnz_per_row == 1
    assert table_row("daxpy", 5).nnz_per_row is None


def test_constants_quoted():
    """daxpy 1/12, dgemm N/16, fft (5/32) log2 N, mg 30/26, nbody 5N/14, stencil7 7/16,
    dgemv -> 1/4 and cg -> 1/6 as N grows."""
    assert table_row("daxpy", 7).ai == pytest.approx(1 / 12)
    assert table_row("dgemm", 48).ai == pytest.approx(48 / 16)
    assert table_row("fft", 2**20).ai == pytest.approx(5 * 20 / 32)
    assert table_row("mg", 4096).ai == pytest.approx(30 / 26)
    assert table_row("nbody", 14).ai == pytest.approx(5)
    assert table_row("stencil7", 3).ai == 7 / 16
    assert table_row("dgemv", 10**6).ai == pytest.approx(0.25, rel=1e-5)
    assert table_row("cg", 10**9).ai == pytest.approx(1 / 6, rel=1e-9)
    assert mg_points(8**5) * 7 == 8**6 - 1  # the geometric series, 8N/7 - 1/7


def test_spmv_below_the_lectures_0166():
    """The lecture: SpMV's 'flop:byte < 0.166'. 2k/(12k + 16) stays below 1/6 for every
    nonzeros-per-row k and approaches it as k grows (index and value bytes dominate)."""
    ais = [table_row("spmv", 10**6, nnz_per_row=k).ai for k in (1, 7, 27, 1000, 10**5)]
    assert all(a < 0.1667 for a in ais)
    assert ais == sorted(ais)
    assert ais[-1] > 0.1666
    # hroof's own CSR kernel too, at L1 and at memory on a cache that holds nothing twice
    res = simulate_kernel("spmv", hierarchy({"name": "L1", "size": 4096, "ways": 4}),
                          matrix="random", rows=2000, nnz_per_row=30)  # fmt: skip
    assert res.levels[0].ai < 1 / 6 and res.memory.ai < 1 / 6


@pytest.mark.parametrize("kernel", LECTURE)
def test_orders_match_the_lecture(kernel):
    """AI(2^20) / AI(2^10): about 1 for O(1), 2^10 for O(N), 2 for O(log N)."""
    lo, hi = table_row(kernel, 2**10), table_row(kernel, 2**20)
    growth = hi.ai / lo.ai
    want = {"1": 1.0, "N": 2.0**10, "log N": 2.0}[lo.orders[2]]
    assert growth == pytest.approx(want, rel=0.01)
    lecture = lo.lecture[2]
    if kernel == "nbody":  # the lecture counts N^2 data (no reuse); compulsory is O(N)
        assert (lo.orders[2], lecture) == ("N", "1")
    else:
        assert lo.orders == lo.lecture


def test_bound_ridge_and_region():
    m = load_machine("teaching")  # peak 20 GFLOP/s, DRAM 10 GB/s, ridge 2 FLOP/byte
    r = table_row("daxpy", 100, machine=m)
    assert (r.ridge, r.region) == (2.0, "memory-bound")
    assert r.bound == pytest.approx(10 / 12)
    r = table_row("dgemm", 64, machine=m)  # AI 4
    assert (r.bound, r.region) == (20.0, "compute-bound")
    r = table_row("fft", 2**6, machine=m)  # AI 30/32 * ... = 5*6/32
    assert r.bound == pytest.approx(10 * 30 / 32)
    bare = table_row("daxpy", 100, machine=load_machine("generic"))
    assert (bare.ridge, bare.bound, bare.region) == (None, None, None)


# ------------------------------------------------------------------ against simulation
BIG = hierarchy({"name": "L1", "size": "1 MiB", "ways": 16})


def test_daxpy_reaches_the_ideal_exactly():
    """x and y are read (compulsory) and y written back once (the flush): memory moves
    exactly 24N bytes when N elements fill whole lines; no write-allocate, y is read."""
    for n in (64, 4096):
        name, params, _ = simulation("daxpy", n)
        res = simulate_kernel(name, BIG, **params)
        assert res.memory.ai == table_row("daxpy", n).ai == 1 / 12
        assert res.flops / res.levels[-1].traffic_below["compulsory"] == 1 / 12


def test_dot_reaches_the_ideal_exactly():
    """x and y read once, nothing written: 16N bytes at memory, AI 1/8 (1/4 in fp32)."""
    for n in (64, 4096):
        name, params, _ = simulation("dot", n)
        res = simulate_kernel(name, BIG, **params)
        assert res.memory.ai == table_row("dot", n).ai == 1 / 8
        assert res.memory.bytes_written == 0
    assert simulate_kernel("dot", BIG, n=4096, dtype="float32").memory.ai == 1 / 4


def test_dgemv_compulsory_equals_the_ideal():
    """Compulsory traffic (A, x read; y's first writeback) is exactly 8N^2 + 16N; the
    memory AI adds y's write-allocate read (8N), nothing else, when A fits."""
    n = 64
    name, params, _ = simulation("dgemv", n)
    res = simulate_kernel(name, BIG, **params)
    row = table_row("dgemv", n)
    assert res.flops == row.flops
    assert res.flops / res.levels[-1].traffic_below["compulsory"] == row.ai
    assert res.memory.bytes == row.bytes + 8 * n


def test_gemm_compulsory_equals_the_ideal():
    n = 16
    name, params, _ = simulation("dgemm", n)
    assert (name, params) == ("gemm", {"m": 16, "n": 16, "k": 16})
    res = simulate_kernel(name, BIG, **params)
    row = table_row("dgemm", n)
    assert res.memory.bytes == row.bytes == 32 * n * n
    assert res.memory.ai == row.ai == 1.0


def test_stencil_and_spmv_below_their_ideal():
    for kernel, n in (("stencil7", 4096), ("stencil5", 1024), ("spmv", 512)):
        name, params, _ = simulation(kernel, n)
        res = simulate_kernel(name, BIG, **params)
        comp = res.flops / res.levels[-1].traffic_below["compulsory"]
        ideal = table_row(kernel, n).ai
        assert res.memory.ai <= comp <= ideal
        assert comp > 0.6 * ideal  # the halo / boundary rows only


def test_simulation_sizes():
    assert simulation("stencil7", 1000)[1] == {"n": 10}
    assert simulation("stencil7", 1100)[1] == {"n": 10}
    assert simulation("stencil5", 4096)[1] == {"n": 64}
    assert simulation("spmv", 4096)[1] == {"matrix": "poisson3d", "n": 16}
    assert simulation("spmv", 4096, 9) is None
    for kernel in ("fft", "cg", "mg", "nbody"):
        assert simulation(kernel, 1024) is None
    from hroof.roofline.table import _accesses

    kernels = ("daxpy", "dot", "dgemv", "dgemm", "spmv", "stencil5", "stencil7", "stencil27")
    for kernel in kernels:
        name, params, _ = simulation(kernel, 300)
        assert _accesses(name, params) == plan_kernel(name, **params).accesses


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    ("kernel", "n", "words"),
    [
        ("fftw", 8, r"unknown table kernel 'fftw' \(did you mean 'fft'\?\); known: daxpy"),
        ("daxpy", 0, "N must be a whole number >= 1, got 0"),
        ("daxpy", -3, "N must be a whole number >= 1, got -3"),
        ("daxpy", 1.5, "N must be a whole number >= 1, got 1.5"),
        ("daxpy", True, "N must be a whole number >= 1, got True"),
        ("fft", 1000, "fft needs N a power of two >= 2"),
        ("fft", 1, "fft needs N a power of two >= 2"),
        ("cg", 5, "7 nonzeros per row need N >= 7 rows, got N = 5"),
        ("dgemm", 2**40, r"overflows dgemm's counts .*the largest N is 1,664,510"),
        ("nbody", 10**20, "overflows nbody's counts"),
    ],
)
def test_bad_input(kernel, n, words):
    with pytest.raises(HroofError, match=words):
        table_row(kernel, n)


def test_largest_n_is_the_largest():
    for k in KERNELS.values():
        top = largest_n(k)
        assert max(k.flops(top, 7), k.data(top, 7)) <= MAX_COUNT
        assert max(k.flops(top + 1, 7), k.data(top + 1, 7)) > MAX_COUNT
    with pytest.raises(HroofError, match="nnz_per_row must be a whole number >= 1, got 0"):
        check_n("spmv", 10, 0)


def test_build_table_strict_and_lenient():
    rows, notes = build_table(["fft", "daxpy"], [1000, 1024], strict=False)
    assert [(r.kernel, r.n) for r in rows] == [("fft", 1024), ("daxpy", 1000), ("daxpy", 1024)]
    assert notes == ["fft at N=1,000 left out: fft needs N a power of two >= 2 (radix-2), got 1000"]
    with pytest.raises(HroofError, match="power of two"):
        build_table(["fft"], [1000])
    with pytest.raises(HroofError, match="got 0"):
        build_table(["daxpy"], [0], strict=False)


# ------------------------------------------------------------------ command line
def test_cli_table(capsys):
    code, out, err = run(capsys, "table", "--n", "1024", "--machine", "teaching")
    assert code == 0, err
    for word in ("daxpy", "dgemm", "fft", "nbody", "stencil27", "memory-bound", "O(log N)"):
        assert word in out
    argv = ["table", "--n", "1000", "--kernel", "daxpy", "--explain", "--machine", "generic"]
    code, out, _ = run(capsys, *argv)
    assert "no bounds" in out and "daxpy: 2 flops an element" in out
    code, out, _ = run(capsys, "table", "--n", "1000")
    assert "note: fft at N=1,000 left out" in out


def test_cli_table_simulate_json(capsys, tmp_path):
    path = tmp_path / "big.toml"
    path.write_text(
        '[machine]\nname = "big"\n[compute]\npeak = 10.0\n[[level]]\nname = "L1"\n'
        'size = "1 MiB"\nways = 16\n[memory]\nbandwidth = 5.0\n'
    )
    argv = ["table", "--kernel", "daxpy", "dgemm", "fft", "--n", "64", "--simulate",
            "--machine", path, "--max-accesses", "100000", "--json", "-q"]  # fmt: skip
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["schema"] == "hroof.table/1"
    assert doc["machine"]["ridge_point"] == 2.0
    daxpy, dgemm, fft = doc["rows"]
    assert daxpy["simulated"]["levels"][-1]["ai"] == daxpy["ai"] == 1 / 12
    assert dgemm["simulated"]["skipped"] == "1,048,576 accesses > 100,000"
    assert fft["simulated"] is None
    code, out, _ = run(capsys, *argv[:-2])  # the text table
    assert "not simulated: dgemm at N=64" in out and "ideal /" in out


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--kernel", "fftw"], ["unknown table kernel 'fftw'", "did you mean 'fft'?"]),
        (["--kernel", "fft", "--n", "1000"], ["power of two"]),
        (["--n", "0"], ["got 0"]),
        (["--n", "-4"], ["got -4"]),
        (["--n", "abc"], ["n must be a whole number"]),
        (["--n", "1e400"], ["n must be a whole number"]),
        (["--kernel", "dgemm", "--n", "1e30"], ["overflows dgemm", "largest n"]),
        (["--kernel", "cg", "--n", "4"], ["need n >= 7"]),
        (["--nnz-per-row", "0"], ["positive number of nonzeros"]),
        (["--machine", "nosuch"], ["nosuch"]),
    ],
)
def test_cli_bad_input(capsys, argv, words):
    code, out, err = run(capsys, "table", *argv)
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("hroof: error: ")
    for w in words:
        assert w.lower() in err.lower()


def test_machine_from_dict_roundtrip():
    """The table works on a Machine built in Python (no file)."""
    m = machine_from_dict({"compute": {"peak": 8.0}, "memory": {"bandwidth": 4.0},
                           "level": [{"name": "L1", "size": 1024, "ways": 2}]})  # fmt: skip
    assert table_row("stencil7", 8, machine=m).bound == pytest.approx(4 * 7 / 16)


def test_bound_uses_the_fp64_peak():
    """Every row is double precision: a machine whose roof is fp32 is compared at its fp64
    peak, and one that gives no fp64 peak gets no bound."""
    level = [{"name": "L1", "size": 1024, "ways": 2}]
    gpu = machine_from_dict({"compute": {"peak": 100.0, "precision": "fp32",
                                         "peaks": {"fp64": 50.0}},
                             "memory": {"bandwidth": 10.0}, "level": level})  # fmt: skip
    r = table_row("dgemm", 64, machine=gpu)  # AI 4: 40 GFLOP/s against the fp64 roof
    assert (r.ridge, r.bound, r.region) == (5.0, 40.0, "memory-bound")
    fp32 = machine_from_dict({"compute": {"peak": 100.0, "precision": "fp32"},
                              "memory": {"bandwidth": 10.0}, "level": level})  # fmt: skip
    assert table_row("dgemm", 64, machine=fp32).bound is None


def test_cli_simulate_says_why_spmv_is_not_simulated(capsys):
    """spmv is simulated as poisson3d (7 nonzeros a row) only: with another
    --nnz-per-row the row is not silently left without its simulation."""
    argv = ["table", "--kernel", "spmv", "--n", "64", "--nnz-per-row", "5", "--simulate",
            "--machine", "teaching", "-q"]  # fmt: skip
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    assert "note: spmv not simulated: hroof simulates it on poisson3d, 7 nonzeros a row" in out
    code, out, err = run(capsys, *argv, "--json")
    assert any("spmv not simulated" in n for n in json.loads(out)["notes"])
