"""Layer conditions of any nest (:mod:`hroof.roofline.nest_lc`), from the kernel file
alone: equal to the hand-derived stencil conditions for the stencil files, worked out by
hand for the others, and beside the simulated walls in ``hroof sweep``."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import run_cli

from hroof.cachesim import hierarchy
from hroof.machine.model import load_machine
from hroof.roofline.layers import _conditions, _geometry, stencil_walls
from hroof.roofline.nest_lc import nest_conditions, nest_walls

KERNELS = Path(__file__).resolve().parent.parent / "examples" / "kernels"


def conds(file, line=64, **consts):
    return {c.loop: c for c in nest_conditions(str(KERNELS / file), consts, line)}


@pytest.mark.parametrize(("file", "kernel", "loops"), [
    ("3d-7pt.c", "stencil7", {"k": "3D", "j": "2D"}),
    ("3d-27pt.c", "stencil27", {"k": "3D", "j": "2D"}),
    ("2d-5pt.c", "stencil5", {"j": "2D"}),
])  # fmt: skip
@pytest.mark.parametrize("n", [8, 30, 64, 200])
def test_stencil_files_have_the_stencils_conditions(file, kernel, loops, n):
    mine = conds(file, N=n)
    theirs = {c.name: c for c in _conditions(kernel, _geometry(kernel, {"n": n}))}
    for loop, name in loops.items():
        assert mine[loop].requirement == theirs[name].requirement
        assert mine[loop].bytes_per_iteration == 8 * (theirs[name].reads + 2)
    assert mine["i"].bytes_per_iteration == 8 * (theirs["none"].reads + 2)


@pytest.mark.parametrize("machine", ["teaching", "skylake-sp", "zen4"])
def test_stencil7_file_walls_are_the_stencil_walls(machine):
    h = load_machine(machine).hierarchy
    mine = {(w.level, w.condition): w.n for w in nest_walls(str(KERNELS / "3d-7pt.c"), {}, "N", h)}
    for w in stencil_walls({}, h):
        assert mine[(w.level, {"3D": "k", "2D": "j"}[w.condition])] == w.n


def test_steady_state_adds_the_whole_working_set():
    h = hierarchy({"name": "L1", "size": "32 KiB", "ways": 8})
    mine = nest_walls(str(KERNELS / "3d-7pt.c"), {}, "N", h, steady=True)
    theirs = stencil_walls({}, h, steady=True)
    assert [(w.condition, w.n) for w in mine if w.condition == "whole"] == [("whole", 10)]
    assert (theirs[0].condition, theirs[0].n) == ("whole", 10)


def test_matvec_by_hand():
    # s += A[i][j]*x[j], j inner: x (8N bytes) is reused across i; the window holds x and
    # N elements of A: 16N bytes. Holding: A streams (8 B an iteration); else x too.
    c = conds("matvec.c", M=100, N=100)
    assert c["i"].requirement == 16 * 100
    assert (c["none"].bytes_per_iteration, c["i"].bytes_per_iteration) == (16, 8)


def test_column_matvec_by_hand():
    # y[i] += A[i][j]*x[j], i inner: A walked down a column (a new line an iteration),
    # its lines and y reused one j-iteration (M iterations) later: M lines of A, 8M of y,
    # x's one line. Broken: A 64, y read 8 and written 8; holding: A 8 (a line in 8 columns).
    c = conds("matvec-ji.c", M=100, N=100)
    assert c["j"].requirement == 64 * 100 + 8 * 100 + 64
    assert (c["none"].bytes_per_iteration, c["j"].bytes_per_iteration) == (80, 8)
    assert set(c["j"].arrays) == {"A", "y"}


def test_transpose_by_hand():
    # b[i][j] = a[j][i], j inner: a down a column, its lines met again one i-iteration (N
    # iterations) later; b streams: write-allocate 8 and write-back 8.
    c = conds("transpose.c", M=100, N=100)
    assert c["i"].requirement == 64 * 100 + 8 * 100
    assert (c["none"].bytes_per_iteration, c["i"].bytes_per_iteration) == (80, 24)


def test_gauss_seidel_in_place_by_hand():
    # One array read at -N, -1, +1, +N and written at 0: distances N-1, 1, 1, N-1
    # elements; keeping the row reuse (window N-1) needs 2(N-1) + 2 + (N-1) = 3N - 1
    # elements; while it holds, 8 bytes read and 8 written an iteration.
    c = conds("2d-gauss-seidel.c", M=100, N=100)
    assert c["j"].bytes_per_iteration == 16
    assert c["j"].requirement == 8 * (3 * 100 - 1)


def test_triad_has_no_reuse():
    c = conds("triad.c", N=1000)
    assert list(c) == ["none"] and c["none"].bytes_per_iteration == 32  # x, y, z WA, z WB


def test_blocking_shrinks_the_k_condition():
    plain = conds("3d-7pt-blocked.c", N=64, BJ=64, BK=64)["k"].requirement
    blocked = conds("3d-7pt-blocked.c", N=64, BJ=8, BK=64)["k"].requirement
    assert plain == conds("3d-7pt.c", N=64)["k"].requirement
    assert blocked < plain / 8
    theirs = {c.name: c for c in _conditions("stencil7", _geometry("stencil7", {"n": 64, "bj": 8}))}
    assert 0.8 < blocked / theirs["3D"].requirement <= 1


def test_sweep_prints_the_file_walls_beside_the_simulated(capsys):
    code, out, err = run_cli(capsys, "sweep", str(KERNELS / "3d-27pt.c"), "N=8..32:x2",
                             "--machine", "teaching", "-q")  # fmt: skip
    assert code == 0, err
    walls = out.split("Locality walls", 1)[1]
    assert "layer condition of loop k" in walls
    assert "the layer condition predicts it after N=9 (inside the measured interval)" in walls
    assert "after N=30 (inside the measured interval)" in walls


def test_simulate_prints_the_conditions_beside_the_simulated_bytes(capsys):
    from hroof.roofline.nest_lc import nest_layer_conditions

    path = str(KERNELS / "2d-gauss-seidel.c")
    h = load_machine("skylake-sp").hierarchy
    lcs = nest_layer_conditions(path, {"M": 400, "N": 400}, h)
    assert (lcs[0].holds, lcs[0].bytes_per_iteration) == ("j", 16)
    assert lcs[-1].holds == "every array" and lcs[-1].bytes_per_iteration is None
    code, out, err = run_cli(capsys, "simulate", path, "M=400", "N=400", "-q")
    assert code == 0, err
    table = out.split("Layer conditions predicted from the file", 1)[1]
    row = next(line for line in table.splitlines() if line.startswith("L1 -> L2"))
    assert "loop j" in row
    predicted, simulated = (float(x) for x in row.split()[-2:])
    assert predicted == 16 and abs(simulated - 16) < 0.5  # 1.2 % more: the first rows


def test_report_of_a_sweep_whose_kernel_file_is_gone(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "k.c").write_text((KERNELS / "2d-5pt.c").read_text())
    code, _, err = run_cli(capsys, "sweep", "k.c", "N=16..32:x2", "--machine", "teaching",
                             "--out", "sw", "--mrc", "off", "-q")  # fmt: skip
    assert code == 0, err
    (tmp_path / "k.c").unlink()
    code, _out, err = run_cli(capsys, "report", "sw", "--mrc", "off")
    assert code == 0, err
    assert (tmp_path / "sw" / "report.html").is_file()
