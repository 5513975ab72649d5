"""Register-blocked SpMV (spmv storage=bcsr): the trace against a naive loop nest, a
hand-computed 5x5 case, padding, fill ratios, dof blocks, bad block sizes, and the
bytes through the simulator."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import collect_plan as collect
from naive import distinct_bytes, naive_bcsr, naive_blocks, naive_spmv

import hroof.traces.sparse  # noqa: F401 (registers spmv)
from hroof._base.errors import HroofError
from hroof.cachesim import hierarchy
from hroof.studies.runs import simulate_kernel
from hroof.traces import plan_kernel
from hroof.traces.kernels import BASE
from hroof.traces.matrices import dof_blocks
from hroof.traces.sparse import blocking, fill_ratio, matrix_csr, to_bcsr

# Rows: 0: cols 0 1; 1: cols 0 1 3; 2: col 2; 3: cols 3 4; 4: cols 0 4 (10 nonzeros).
HAND = """%%MatrixMarket matrix coordinate pattern general
5 5 10
1 1
1 2
2 1
2 2
2 4
3 3
4 4
4 5
5 1
5 5
"""


@pytest.fixture
def hand_mtx(tmp_path):
    path = tmp_path / "hand.mtx"
    path.write_text(HAND)
    return str(path)


SOURCES = [
    {"matrix": "poisson2d", "n": 5},
    {"matrix": "poisson2d", "n": 3, "dof": 2},
    {"matrix": "poisson3d", "n": 3},
    {"matrix": "random", "rows": 23, "nnz_per_row": 4, "seed": 2},
    {"matrix": "banded", "rows": 7, "band": 1},
    {"matrix": "banded", "rows": 1, "band": 0},
]
BLOCKS = [(1, 1), (2, 2), (3, 2), (1, 4), (4, 1), (3, 3)]


@pytest.mark.parametrize("source", [*SOURCES, "mtx"])
@pytest.mark.parametrize("block", BLOCKS)
def test_bcsr_trace_equals_naive_loop(source, block, hand_mtx):
    params = {"matrix": hand_mtx} if source == "mtx" else source
    r, c = block
    nrows, ncols, _, _ = matrix_csr({"dof": 1, **params, **_defaults(params)})
    if r > nrows or c > ncols:
        with pytest.raises(HroofError, match="larger than the"):
            plan_kernel("spmv", **params, storage="bcsr", r=r, c=c)
        return
    plan = plan_kernel("spmv", **params, storage="bcsr", r=r, c=c)
    expected, browptr, bcol = naive_bcsr(plan)
    assert plan.args[0].tolist() == browptr and plan.args[1].tolist() == bcol
    for chunk_size in (plan.per_iteration, 17, 1 << 20):
        assert collect(plan, chunk_size) == expected
    nb = len(bcol)
    assert plan.accesses == len(expected) == 1 + plan.iterations * (1 + r) + nb * (1 + c + r * c)
    assert plan.footprint == distinct_bytes(expected)
    nnz = plan.extra["nnz"]
    assert plan.flops == 2 * nnz
    assert plan.extra["executed_flops"] == 2 * r * c * nb
    assert plan.extra["fill_ratio"] == pytest.approx(r * c * nb / nnz)
    assert [a.name for a in plan.arrays] == ["browptr", "bcol", "bval", "x", "y"]


def _defaults(params):
    from hroof.traces import get_kernel

    k = get_kernel("spmv")
    return {p.name: p.default for p in k.params if p.name not in params}


@pytest.mark.parametrize("types", [{"index_bytes": 8}, {"dtype": "float32", "gap": 24,
                                   "align": 4096}])  # fmt: skip
def test_bcsr_types_and_layout(types):
    plan = plan_kernel("spmv", matrix="poisson2d", n=4, storage="bcsr", r=2, c=3, **types)
    expected, _, _ = naive_bcsr(plan)
    assert collect(plan, 29) == expected
    align = types.get("align", 64)
    assert all(arr.base % align == 0 for arr in plan.arrays)
    pairs = zip(plan.arrays, plan.arrays[1:], strict=False)
    assert all(a.end + types.get("gap", 0) <= b.base for a, b in pairs)


def test_hand_5x5_in_2x2_blocks(hand_mtx):
    """Padded to 6x6 (one zero row, one zero column), 3x3 block grid. Blocks:
    block row 0 (rows 0-1): block cols 0 (4 nonzeros) and 1 ((1,3) alone);
    block row 1 (rows 2-3): block cols 1 ((2,2), (3,3)) and 2 ((3,4) and padding);
    block row 2 (rows 4-5, 5 padding): block cols 0 ((4,0)) and 2 ((4,4)).
    6 blocks x 4 = 24 stored for 10 nonzeros: 14 explicit zeros, fill 2.4."""
    plan = plan_kernel("spmv", matrix=hand_mtx, storage="bcsr", r=2, c=2)
    assert plan.args[0].tolist() == [0, 2, 4, 6]
    assert plan.args[1].tolist() == [0, 1, 1, 2, 0, 2]
    x = plan.extra
    assert (x["blocks"], x["stored"], x["explicit_zeros"]) == (6, 24, 14)
    assert (x["pad_rows"], x["pad_cols"], x["fill_ratio"]) == (1, 1, 2.4)
    assert plan.flops == 20 and x["executed_flops"] == 48
    # 1 + 3 block rows x (1 browptr + 2 y) + 6 blocks x (1 bcol + 2 x + 4 values)
    assert plan.accesses == 52
    # L1 bytes: browptr 4 x 4 + bcol 6 x 4 + x 12 x 8 + values 24 x 8 + y 6 x 8
    assert sum(s for _, s, _ in collect(plan, 100)) == 16 + 24 + 96 + 192 + 48 == 376
    # footprint: browptr 16 + bcol 24 + bval 192 + x (6 padded) 48 + y (6 padded) 48
    assert plan.footprint == 328
    base = {a.name: a.base - BASE for a in plan.arrays}
    assert base == {"browptr": 0, "bcol": 64, "bval": 128, "x": 320, "y": 384}
    head = [(a - BASE, s, k) for a, s, k in collect(plan, 100)[:14]]
    assert head == [
        (0, 4, 0), (4, 4, 0),                             # browptr[0], browptr[1]
        (64, 4, 0), (320, 8, 0), (328, 8, 0),             # bcol[0]; x[0], x[1]
        (128, 8, 0), (136, 8, 0), (144, 8, 0), (152, 8, 0),   # block 0's values
        (68, 4, 0), (336, 8, 0), (344, 8, 0),             # bcol[1]; x[2], x[3]
        (160, 8, 0), (168, 8, 0),                         # block 1's first values
    ]  # fmt: skip
    # The CSR of the same matrix: 1 + 2*5 + 3*10 accesses, 24 + 200 + 40 bytes.
    csr = plan_kernel("spmv", matrix=hand_mtx)
    assert csr.accesses == 41 and sum(s for _, s, _ in naive_spmv(csr)) == 264
    assert fill_ratio(hand_mtx, 2, 2) == 2.4
    assert fill_ratio(hand_mtx, 1, 1) == 1.0
    assert fill_ratio(hand_mtx, 5, 5) == 2.5  # one 5x5 block
    assert blocking(hand_mtx, 1, 5).to_dict()["blocks"] == 5


def test_padding_counted():
    b = blocking("banded", 3, 4, rows=10, band=1)
    assert (b.pad_rows, b.pad_cols, b.nbrows, b.nbcols) == (2, 2, 4, 3)
    nrows, ncols, rowptr, col = matrix_csr({"matrix": "banded", "rows": 10, "band": 1})
    browptr, bcol, pr, pc = naive_blocks(nrows, ncols, rowptr.tolist(), col.tolist(), 3, 4)
    assert (b.browptr.tolist(), b.bcol.tolist(), b.pad_rows, b.pad_cols) == (browptr, bcol, pr, pc)
    plan = plan_kernel("spmv", matrix="banded", rows=10, band=1, storage="bcsr", r=3, c=4)
    x = next(a for a in plan.arrays if a.name == "x")
    y = next(a for a in plan.arrays if a.name == "y")
    assert (x.count, y.count) == (12, 12)
    assert "padding 2 rows, 2 columns)" in plan.notes
    # Tridiagonal 5x5 (13 nonzeros) in 2x2 blocks on 6x6: block rows hold 2, 3 and 2 blocks.
    one = plan_kernel("spmv", matrix="banded", rows=5, band=1, storage="bcsr", r=2, c=2)
    assert one.extra["blocks"] == 7 and one.extra["nnz"] == 13
    assert "execute 56 (2 per stored entry" in one.notes and "padding 1 row, 1 column)" in one.notes


def test_dof_blocks_is_the_kronecker_product():
    nrows, _, rowptr, col = matrix_csr({"matrix": "poisson2d", "n": 3})
    dense = np.zeros((nrows, nrows), dtype=int)
    for i in range(nrows):
        dense[i, col[rowptr[i] : rowptr[i + 1]]] = 1
    for dof in (1, 2, 3):
        rp, cl = dof_blocks(rowptr, col, dof)
        got = np.zeros((nrows * dof, nrows * dof), dtype=int)
        for i in range(nrows * dof):
            row = cl[rp[i] : rp[i + 1]]
            assert (np.diff(row) > 0).all()
            got[i, row] = 1
        assert (got == np.kron(dense, np.ones((dof, dof), dtype=int))).all()


def test_fill_ratio_dense_blocks_versus_random():
    """dof=2 makes every entry a dense 2x2 block aligned with the 2x2 grid: no explicit
    zero. A random matrix's nonzeros rarely share a block: close to r*c stored each."""
    assert fill_ratio("poisson2d", 2, 2, n=8, dof=2) == 1.0
    assert fill_ratio("poisson3d", 3, 3, n=4, dof=3) == 1.0
    assert fill_ratio("poisson2d", 2, 2, n=8, dof=2) < fill_ratio("poisson2d", 4, 4, n=8, dof=2)
    rnd = fill_ratio("random", 2, 2, rows=4096, nnz_per_row=8)
    assert 3.9 < rnd <= 4.0
    nrows, ncols, rowptr, col = matrix_csr({"matrix": "random", "rows": 64,
                                            "nnz_per_row": 8, "seed": 0})  # fmt: skip
    assert fill_ratio((nrows, ncols, rowptr, col), 2, 2) == to_bcsr(
        nrows, ncols, rowptr, col, 2, 2
    ).fill_ratio  # fmt: skip


def test_bcsr_1x1_moves_the_csr_bytes():
    """1x1 blocks are CSR in another access order (index, x, value): the same bytes at L1
    and the same compulsory traffic at every level."""
    h = hierarchy({"name": "L1", "size": 1024, "ways": 4}, {"name": "L2", "size": 8192, "ways": 8})
    a = simulate_kernel("spmv", h, matrix="poisson2d", n=20)
    b = simulate_kernel("spmv", h, matrix="poisson2d", n=20, storage="bcsr")
    assert a.flops == b.flops and a.accesses == b.accesses
    assert a.levels[0].bytes == b.levels[0].bytes
    for la, lb in zip(a.levels, b.levels, strict=True):
        assert la.traffic_below["compulsory"] == lb.traffic_below["compulsory"]


def test_bcsr_pays_on_dense_blocks_not_on_random():
    """Compulsory bytes (big cache): 2x2 blocks cut the index bytes to a quarter on a
    dof=2 matrix, and raise the total on a random one (explicit zeros)."""
    h = hierarchy({"name": "L1", "size": 1 << 22, "ways": 16})
    dense = dict(matrix="poisson2d", n=16, dof=2)
    rnd = dict(matrix="random", rows=512, nnz_per_row=6)
    for params, better in ((dense, True), (rnd, False)):
        csr = simulate_kernel("spmv", h, **params)
        bcsr = simulate_kernel("spmv", h, **params, storage="bcsr", r=2, c=2)
        assert csr.flops == bcsr.flops
        assert (bcsr.memory.ai > csr.memory.ai) is better
        assert (bcsr.levels[0].ai > csr.levels[0].ai) is better


def test_l1_bytes_through_the_simulator():
    h = hierarchy({"name": "L1", "size": 1024, "ways": 4}, {"name": "L2", "size": 8192, "ways": 8})
    plan = plan_kernel("spmv", matrix="poisson2d", n=9, dof=2, storage="bcsr", r=2, c=2)
    r = simulate_kernel(plan, h, chunk_size=500)
    x = plan.extra
    nbr = plan.iterations
    expected = (nbr + 1) * 4 + x["blocks"] * (4 + 2 * 8 + 4 * 8) + nbr * 2 * 8
    assert r.levels[0].bytes == expected
    assert r.flops == plan.flops == 2 * x["nnz"]


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"storage": "bcsr", "r": 0}, "r must be at least 1, got 0"),
        ({"storage": "bcsr", "c": -2}, "c must be at least 1, got -2"),
        ({"storage": "bcsr", "r": 2, "c": "x"}, "c must be a whole number, got 'x'"),
        ({"matrix": "banded", "rows": 5, "storage": "bcsr", "r": 6, "c": 1},
         r"block size 6x1 is larger than the 5x5 matrix; use r <= 5 and c <= 5"),
        ({"matrix": "banded", "rows": 5, "storage": "bcsr", "r": 1, "c": 9}, "larger than"),
        ({"r": 2}, "r and c are for storage=bcsr; storage=csr got r=2 c=1"),
        ({"storage": "blocked"}, "storage must be one of csr, bcsr"),
        ({"dof": 0}, "dof must be at least 1"),
    ],
)  # fmt: skip
def test_bad_block_parameters(params, words):
    with pytest.raises(HroofError, match=words):
        plan_kernel("spmv", **params)


def test_fill_ratio_bad_input(hand_mtx):
    with pytest.raises(HroofError, match="block size r must be a whole number >= 1, got 0"):
        fill_ratio(hand_mtx, 0, 2)
    with pytest.raises(HroofError, match=r"block size c must be a whole number >= 1, got 1\.5"):
        fill_ratio(hand_mtx, 1, 1.5)
    with pytest.raises(HroofError, match="larger than the 5x5 matrix"):
        fill_ratio(hand_mtx, 6, 6)
    with pytest.raises(HroofError, match="must be a generated matrix name"):
        fill_ratio([1, 2], 1, 1)
    with pytest.raises(HroofError, match="parameter n must be at least 1"):
        fill_ratio("poisson2d", 1, 1, n=0)
