"""The spmv kernel and the Matrix Market reader: traces against a naive CSR loop, the
generated matrices' structure, exact counts and footprint, every malformed-file case,
and the bytes at L1 through the simulator."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import collect_plan as collect
from naive import naive_spmv

import hroof.traces.sparse  # noqa: F401 (registers spmv)
from hroof._base.errors import HroofError, TraceFormatError
from hroof.cachesim import hierarchy
from hroof.studies.runs import simulate_kernel
from hroof.traces import plan_kernel
from hroof.traces.mtx import read_mtx


def csr_dense(plan):
    """The plan's pattern as a dense boolean matrix (tiny sizes only)."""
    rowptr, col = plan.args[0], plan.args[1]
    x = next(a for a in plan.arrays if a.name == "x")
    dense = np.zeros((len(rowptr) - 1, x.count), dtype=bool)
    for i in range(len(rowptr) - 1):
        dense[i, col[rowptr[i] : rowptr[i + 1]]] = True
    return dense


def write(tmp_path, text, name="m.mtx"):
    path = tmp_path / name
    path.write_text(text)
    return path


GENERAL = """%%MatrixMarket matrix coordinate real general
% a comment
4 5 6

1 1 1.5
3 2 -2e3
1 5 4
4 4 1
3 1 0.5
2 3 7
"""


@pytest.fixture
def mtx_file(tmp_path):
    return str(write(tmp_path, GENERAL))


SOURCES = [
    {"matrix": "poisson2d", "n": 1},
    {"matrix": "poisson2d", "n": 5},
    {"matrix": "poisson3d", "n": 3},
    {"matrix": "random", "rows": 40, "nnz_per_row": 5, "seed": 3},
    {"matrix": "random", "rows": 7, "nnz_per_row": 7},
    {"matrix": "banded", "rows": 30, "band": 3},
    {"matrix": "banded", "rows": 5, "band": 0},
    {"matrix": "banded", "rows": 4, "band": 9},
]


@pytest.mark.parametrize("source", [*SOURCES, "mtx"])
@pytest.mark.parametrize(
    "types",
    [{}, {"index_bytes": 8}, {"dtype": "float32"}, {"index_bytes": 8, "dtype": "float32",
     "gap": 24, "align": 4096}],
)  # fmt: skip
def test_spmv_trace_equals_naive_loop(source, types, mtx_file):
    params = {"matrix": mtx_file} if source == "mtx" else source
    plan = plan_kernel("spmv", **params, **types)
    expected = naive_spmv(plan)
    for chunk_size in (plan.per_iteration, 13, 1 << 20):
        assert collect(plan, chunk_size) == expected
    nnz = int(plan.args[0][-1])
    assert plan.accesses == len(expected) == 1 + 2 * plan.iterations + 3 * nnz
    assert plan.flops == 2 * nnz
    touched = {a + b for a, s, _ in expected for b in range(s)}
    assert plan.footprint == len(touched)
    align = types.get("align", 64)
    assert all(arr.base % align == 0 for arr in plan.arrays)
    assert [arr.name for arr in plan.arrays] == ["rowptr", "col", "val", "x", "y"]
    pairs = zip(plan.arrays, plan.arrays[1:], strict=False)
    assert all(a.end + types.get("gap", 0) <= b.base for a, b in pairs)


def test_per_iteration_is_the_longest_row():
    """Row 0 also loads rowptr[0]; the smallest chunk holding any row is per_iteration."""
    plan = plan_kernel("spmv", matrix="banded", rows=6, band=1)
    assert plan.per_iteration == 2 + 3 * 3  # middle rows: 3 nonzeros
    plan = plan_kernel("spmv", matrix="poisson2d", n=1)
    assert plan.per_iteration == 3 + 3 * 1


def test_poisson2d_structure():
    plan = plan_kernel("spmv", matrix="poisson2d", n=3)
    dense = csr_dense(plan)
    assert dense.shape == (9, 9)
    assert dense.sum() == 5 * 9 - 4 * 3 == 33
    for r in range(9):
        a, b = divmod(r, 3)
        want = {(a + da) * 3 + (b + db) for da, db in ((-1, 0), (0, -1), (0, 0), (0, 1), (1, 0))
                if 0 <= a + da < 3 and 0 <= b + db < 3}  # fmt: skip
        assert set(np.flatnonzero(dense[r])) == want
    assert (dense == dense.T).all()
    rowptr, col = plan.args[0], plan.args[1]
    assert rowptr.tolist() == [0, 3, 7, 10, 14, 19, 23, 26, 30, 33]
    assert col[:3].tolist() == [0, 1, 3] and col[14:19].tolist() == [1, 3, 4, 5, 7]
    assert plan.flops == 66


def test_poisson3d_structure():
    plan = plan_kernel("spmv", matrix="poisson3d", n=2)
    dense = csr_dense(plan)
    assert dense.shape == (8, 8)
    assert dense.sum() == 8 * 7 - 6 * 4 == 32
    # n = 2: every point is a corner with 3 neighbours, those differing in one bit.
    for r in range(8):
        assert set(np.flatnonzero(dense[r])) == {r, r ^ 1, r ^ 2, r ^ 4}
    assert plan.flops == 64


def test_banded_structure():
    plan = plan_kernel("spmv", matrix="banded", rows=7, band=2)
    dense = csr_dense(plan)
    i, j = np.indices((7, 7))
    assert (dense == (abs(i - j) <= 2)).all()
    assert plan.flops == 2 * dense.sum()
    full = plan_kernel("spmv", matrix="banded", rows=3, band=10)
    assert csr_dense(full).all()


def test_random_rows_distinct_sorted_and_seeded():
    plan = plan_kernel("spmv", matrix="random", rows=50, nnz_per_row=6, seed=7)
    rowptr, col = plan.args[0], plan.args[1]
    assert (np.diff(rowptr) == 6).all()
    for i in range(50):
        row = col[rowptr[i] : rowptr[i + 1]]
        assert (np.diff(row) > 0).all()
        assert row.min() >= 0 and row.max() < 50
    assert plan.flops == 2 * 50 * 6
    again = plan_kernel("spmv", matrix="random", rows=50, nnz_per_row=6, seed=7)
    other = plan_kernel("spmv", matrix="random", rows=50, nnz_per_row=6, seed=8)
    assert np.array_equal(again.args[1], col)
    assert not np.array_equal(other.args[1], col)


def test_footprint_skips_untouched_x():
    """A matrix with empty columns leaves those x elements untouched."""
    plan = plan_kernel("spmv", matrix="random", rows=64, nnz_per_row=1, seed=1)
    cols = set(plan.args[1].tolist())
    assert len(cols) < 64
    assert plan.footprint == 65 * 4 + 64 * 4 + 64 * 8 + len(cols) * 8 + 64 * 8


# ----------------------------------------------------------------------- Matrix Market


def test_mtx_general_real(mtx_file):
    nrows, ncols, rowptr, col = read_mtx(mtx_file)
    assert (nrows, ncols) == (4, 5)
    assert rowptr.tolist() == [0, 2, 3, 5, 6]
    assert col.tolist() == [0, 4, 2, 0, 1, 3]
    assert rowptr.dtype == col.dtype == np.int64


def test_mtx_integer_and_pattern(tmp_path):
    integer = write(tmp_path, "%%MatrixMarket matrix coordinate integer general\n"
                    "2 2 2\n2 1 -3\n1 2 4\n")  # fmt: skip
    assert [a.tolist() if hasattr(a, "tolist") else a for a in read_mtx(integer)] == [
        2, 2, [0, 1, 2], [1, 0]
    ]  # fmt: skip
    pattern = write(tmp_path, "%%MATRIXMARKET Matrix Coordinate Pattern General\n"
                    "3 3 3\n3 3\n1 1\n3 1\n", "p.mtx")  # fmt: skip
    _, _, rowptr, col = read_mtx(pattern)
    assert rowptr.tolist() == [0, 1, 1, 3] and col.tolist() == [0, 0, 2]


def test_mtx_symmetric_mirrors_off_diagonal(tmp_path):
    path = write(tmp_path, "%%MatrixMarket matrix coordinate real symmetric\n"
                 "3 3 4\n1 1 2\n2 1 -1\n3 2 -1\n3 3 2\n")  # fmt: skip
    nrows, _, rowptr, col = read_mtx(path)
    assert nrows == 3
    assert rowptr[-1] == 4 + 2  # two off-diagonal entries mirrored
    assert rowptr.tolist() == [0, 2, 4, 6]
    assert col.tolist() == [0, 1, 0, 2, 1, 2]
    plan = plan_kernel("spmv", matrix=str(path))
    assert plan.flops == 12
    assert (csr_dense(plan) == csr_dense(plan).T).all()


def test_mtx_duplicates_kept_once(tmp_path):
    path = write(tmp_path, "%%MatrixMarket matrix coordinate real general\n"
                 "2 2 4\n1 2 1\n1 2 2\n2 2 1\n1 2 3\n")  # fmt: skip
    _, _, rowptr, col = read_mtx(path)
    assert rowptr.tolist() == [0, 1, 2] and col.tolist() == [1, 1]
    # A symmetric file that also stores the upper triangle: one entry per position.
    sym = write(tmp_path, "%%MatrixMarket matrix coordinate pattern symmetric\n"
                "2 2 2\n2 1\n1 2\n", "s.mtx")  # fmt: skip
    _, _, rowptr, col = read_mtx(sym)
    assert rowptr.tolist() == [0, 1, 2] and col.tolist() == [1, 0]


def test_mtx_empty_rows_and_no_entries(tmp_path):
    path = write(tmp_path, "%%MatrixMarket matrix coordinate real general\n3 3 1\n3 1 1\n")
    plan = plan_kernel("spmv", matrix=str(path))
    assert collect(plan, plan.per_iteration) == naive_spmv(plan)
    assert plan.accesses == 1 + 2 * 3 + 3
    empty = write(tmp_path, "%%MatrixMarket matrix coordinate real general\n2 2 0\n", "e.mtx")
    plan = plan_kernel("spmv", matrix=str(empty))
    assert plan.flops == 0 and collect(plan, 3) == naive_spmv(plan)
    assert plan.footprint == 3 * 4 + 2 * 8
    no_rows = write(tmp_path, "%%MatrixMarket matrix coordinate real general\n0 0 0\n", "z.mtx")
    assert read_mtx(no_rows)[:2] == (0, 0)
    with pytest.raises(HroofError, match="at least one row"):
        plan_kernel("spmv", matrix=str(no_rows))


BANNER = "%%MatrixMarket matrix coordinate real general\n"


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("", 1, "not a Matrix Market file"),
        ("%MatrixMarket matrix coordinate real general\n1 1 0\n", 1, "banner"),
        ("%%MatrixMarket matrix coordinate real\n1 1 0\n", 1, "the banner must be"),
        ("%%MatrixMarket vector coordinate real general\n1 1 0\n", 1, "'matrix' objects"),
        ("%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n", 1, "array"),
        ("%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n", 1, "complex"),
        ("%%MatrixMarket matrix coordinate real hermitian\n1 1 0\n", 1, "hermitian"),
        ("%%MatrixMarket matrix coordinate real skew-symmetric\n1 1 0\n", 1, "skew-symmetric"),
        ("%%MatrixMarket matrix coordinate double general\n1 1 0\n", 1, "unknown field"),
        ("%%MatrixMarket matrix coordinate real symmetric\n2 3 0\n", 2, "must be square"),
        (BANNER + "% only comments\n", 2, "ends before the size line"),
        (BANNER + "%c\n2 2\n", 3, "size line must be"),
        (BANNER + "2 x 1\n", 2, "size line must be"),
        (BANNER + "2 2 -1\n", 2, "non-negative"),
        (BANNER + "2 2 3\n1 1 1\n2 2 1\n", 4, r"ends after 2 entries.*\(line 2\) declares 3"),
        (BANNER + "2 2 1\n1 1 1\n2 2 1\n", 4, r"more entries than the 1.*\(line 2\)"),
        (BANNER + "2 2 2\n1 1 1\n\n% c\n3 1 1\n", 6, r"index \(3, 1\) out of range"),
        (BANNER + "2 2 1\n1 0 1\n", 3, r"index \(1, 0\) out of range"),
        (BANNER + "2 2 1\n1 1\n", 3, "'i j value'"),
        (BANNER + "2 2 1\n1 1 1 1\n", 3, "'i j value'"),
        (BANNER + "2 2 1\n1 a 1\n", 3, "indices must be integers"),
        (BANNER + "2 2 1\n1.5 1 1\n", 3, "indices must be integers"),
        (BANNER + "2 2 1\n1 1 x\n", 3, "value must be real"),
        (BANNER.replace("real", "integer") + "2 2 1\n1 1 1.5\n", 3, "value must be integer"),
        (BANNER.replace("real", "pattern") + "2 2 1\n1 1 1\n", 3, "'i j'"),
    ],
)
def test_mtx_malformed_names_file_and_line(tmp_path, text, line, words):
    path = write(tmp_path, text, "bad.mtx")
    with pytest.raises(TraceFormatError, match=rf"bad\.mtx, line {line}: .*{words}"):
        read_mtx(path)
    with pytest.raises(TraceFormatError, match=rf"bad\.mtx, line {line}: "):
        plan_kernel("spmv", matrix=str(path))


def test_mtx_missing_file_and_directory(tmp_path):
    with pytest.raises(TraceFormatError, match=r"matrix file not found: .*nope\.mtx"):
        plan_kernel("spmv", matrix=str(tmp_path / "nope.mtx"))
    with pytest.raises(TraceFormatError, match="is a directory"):
        plan_kernel("spmv", matrix=str(tmp_path))


# ----------------------------------------------------------------------- parameters


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"n": 0}, "n must be at least 1"),
        ({"rows": 0}, "rows must be at least 1"),
        ({"matrix": "random", "rows": 4, "nnz_per_row": 5}, "between 1 and rows = 4, got 5"),
        ({"nnz_per_row": 0}, "nnz_per_row must be at least 1"),
        ({"band": -1}, "band must be at least 0"),
        ({"index_bytes": 2}, "index_bytes must be one of 4, 8"),
        ({"dtype": "float16"}, "dtype must be one of float64, float32"),
        ({"matrix": "poison2d"}, r"got 'poison2d'.*did you mean 'poisson2d'"),
        ({"matrix": "dense"}, "must be one of poisson2d, poisson3d, random, banded or a .mtx"),
        ({"align": 48}, "power of two"),
    ],
)
def test_bad_parameters(params, words):
    with pytest.raises(HroofError, match=words):
        plan_kernel("spmv", **params)


# ----------------------------------------------------------------------- simulator


@pytest.mark.parametrize(
    "params",
    [{"matrix": "poisson2d", "n": 24}, {"matrix": "random", "rows": 512, "nnz_per_row": 6,
     "index_bytes": 8, "dtype": "float32"}],
)  # fmt: skip
def test_l1_bytes_through_the_simulator(params):
    """At L1 every access counts its size: 1 + 2*nrows + 3*nnz accesses of
    rowptr (index), then per nonzero val + col + x (20 bytes with 4-byte indices and
    float64), and y per row."""
    h = hierarchy({"name": "L1", "size": 1024, "ways": 4}, {"name": "L2", "size": 8192, "ways": 8})
    plan = plan_kernel("spmv", **params)
    r = simulate_kernel(plan, h, chunk_size=1000)
    nrows, nnz = plan.iterations, int(plan.args[0][-1])
    ib, elem = plan.params["index_bytes"], {"float64": 8, "float32": 4}[plan.params["dtype"]]
    assert r.flops == 2 * nnz
    assert r.accesses == plan.accesses
    expected = (nrows + 1) * ib + nnz * (elem + ib + elem) + nrows * elem
    assert r.levels[0].bytes == expected
    if plan.params["matrix"] == "poisson2d":
        assert expected == 4 * (nrows + 1) + 20 * nnz + 8 * nrows
        assert 20 < r.levels[0].bytes / nnz < 20 + (4 + 8) / 4 + 1
    assert r.source == {"kernel": "spmv", "params": plan.params, "extra": plan.extra,
                        "accounting": {"mode": "cold", "warmup_sweeps": 0,
                                       "counted_sweeps": 1}}  # fmt: skip
    assert r.source["extra"]["storage"] == "csr" and r.source["extra"]["fill_ratio"] == 1.0
