"""Kernel files (issue 32): a C loop nest parsed (:mod:`hroof.traces.cfile`) and run by
the one compiled interpreter (:mod:`hroof.traces.affine`).

The files of ``examples/kernels/`` each: parse, have the flops and bytes worked out by
hand below, and equal their naive twin (the nest run as written in plain Python,
:func:`hroof.traces.reference.naive_nest`) access for access; the files that write a
built-in kernel out give exactly its stream; one size runs on the reference model and
the simulator with equal counters.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import examples
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from hroof._base.errors import HroofError
from hroof.traces import plan_kernel
from hroof.traces.cfile import parse_text
from hroof.traces.reference import naive_nest

KERNELS = Path(__file__).resolve().parent.parent / "examples" / "kernels"


def k(name: str) -> str:
    return str(KERNELS / name)


def stream(plan, chunk: int = 1 << 12):
    """The whole trace as three arrays."""
    parts = list(zip(*plan.chunks(chunk, reuse=False), strict=True))
    return [np.concatenate(p) for p in parts]


def assert_same_stream(a, b, chunk: int = 1 << 12):
    x, y = stream(a, chunk), stream(b, chunk)
    for u, v in zip(x, y, strict=True):
        np.testing.assert_array_equal(u, v)


# ------------------------------------------------------------------ built-in twins
@pytest.mark.parametrize("n", [5, 9])
def test_stencil7_file_is_the_builtin_stream(n):
    assert_same_stream(plan_kernel(k("3d-7pt.c"), N=n), plan_kernel("stencil7", n=n))
    p, q = plan_kernel(k("3d-7pt.c"), N=n), plan_kernel("stencil7", n=n)
    assert (p.flops, p.accesses, p.iterations) == (q.flops, q.accesses, q.iterations)


@pytest.mark.parametrize(("n", "bj", "bk"), [(10, 3, 4), (7, 7, 2), (6, 1, 6)])
def test_blocked_file_is_the_blocked_builtin(n, bj, bk):
    assert_same_stream(plan_kernel(k("3d-7pt-blocked.c"), N=n, BJ=bj, BK=bk),
                       plan_kernel("stencil7", n=n, bj=bj, bk=bk))  # fmt: skip


def test_stencil5_file_is_the_builtin_stream():
    assert_same_stream(plan_kernel(k("2d-5pt.c"), N=13), plan_kernel("stencil5", n=13))


@pytest.mark.parametrize(
    ("file", "kernel"), [("triad.c", "triad"), ("daxpy.c", "daxpy"), ("dot.c", "dot")]
)
@pytest.mark.parametrize("n", [1, 1000, 4097])
def test_stream_files_are_the_builtin_stream(file, kernel, n):
    p, q = plan_kernel(k(file), N=n), plan_kernel(kernel, n=n)
    assert_same_stream(p, q)
    assert (p.flops, p.accesses, p.footprint) == (q.flops, q.accesses, q.footprint)


@pytest.mark.parametrize(("m", "n"), [(7, 13), (16, 16), (1, 5)])
def test_matvec_file_is_dgemv(m, n):
    p, q = plan_kernel(k("matvec.c"), M=m, N=n), plan_kernel("dgemv", m=m, n=n)
    assert_same_stream(p, q)
    assert (p.flops, p.accesses) == (q.flops, q.accesses)


def test_steady_state_repeats_the_nest():
    p = plan_kernel(k("triad.c"), N=100, warmup=1, sweeps=2)
    q = plan_kernel("triad", n=100, warmup=1, sweeps=2)
    assert_same_stream(p, q)
    assert (p.flops, p.warmup, p.iterations) == (q.flops, q.warmup, q.iterations)


# ------------------------------------------------------------------ the corpus, by hand
#: file, constants, iterations, flops an iteration, loads and stores an iteration, bytes
#: an element. Worked out from the statements: e.g. 3d-27pt: w0*c + w1*(6 faces) +
#: w2*(12 edges) + w3*(8 corners) = 4 multiplies + (5 + 11 + 7) adds inside + 3 outside.
CORPUS = [
    ("2d-5pt.c", {"N": 6}, 36, 5, 5, 1, 8),  # 1 mul + 4 adds
    ("2d-9pt.c", {"N": 6}, 36, 11, 9, 1, 8),  # 3 mul + 3 + 3 + 2 adds
    ("3d-7pt.c", {"N": 5}, 125, 7, 7, 1, 8),  # 1 mul + 6 adds
    ("3d-27pt.c", {"N": 4}, 64, 30, 27, 1, 8),
    ("3d-long-range.c", {"N": 3}, 27, 29, 25, 1, 8),  # 5 mul + 4*5 + 4 adds
    ("3d-7pt-varcoef.c", {"N": 4}, 64, 10, 11, 1, 8),  # 4 mul + 3 + 3 adds
    ("2d-jacobi.c", {"M": 7, "N": 9}, 35, 4, 4, 1, 8),  # 0.25*(3 adds)
    ("2d-gauss-seidel.c", {"M": 7, "N": 9}, 35, 4, 4, 1, 8),
    ("3d-7pt-blocked.c", {"N": 6, "BJ": 4, "BK": 4}, 216, 7, 7, 1, 8),
    ("triad.c", {"N": 50}, 50, 2, 2, 1, 8),
    ("daxpy.c", {"N": 50}, 50, 2, 2, 1, 8),
    ("dot.c", {"N": 50}, 50, 2, 2, 0, 8),  # s += x*y: 1 mul + 1 add; s in a register
    ("matvec-ji.c", {"M": 6, "N": 5}, 30, 2, 3, 1, 8),  # y[i] += A*x: 1 mul + 1 add (+=)
    ("transpose.c", {"M": 6, "N": 5}, 30, 0, 1, 1, 8),
]


@pytest.mark.parametrize(("file", "consts", "iters", "flops", "loads", "stores", "elem"),
                         CORPUS, ids=[c[0] for c in CORPUS])  # fmt: skip
def test_corpus_hand_counts(file, consts, iters, flops, loads, stores, elem):
    p = plan_kernel(k(file), **consts)
    assert p.iterations == iters
    assert p.flops == flops * iters
    assert p.accesses == (loads + stores) * iters
    _addr, size, kind = stream(p)
    assert int((kind == 0).sum()) == loads * iters
    assert int((kind == 1).sum()) == stores * iters
    assert int(size.astype(np.int64).sum()) == (loads + stores) * elem * iters  # L1 bytes


def test_matvec_hand_counts():
    m, n = 6, 11
    p = plan_kernel(k("matvec.c"), M=m, N=n)
    assert p.flops == 2 * m * n  # s += A*x: 2 a (i, j); s = 0 and y[i] = s: none
    assert p.accesses == 2 * m * n + m  # A and x each (i, j), y once a row


@pytest.mark.parametrize("file", sorted(p.name for p in KERNELS.glob("*.c")))
def test_corpus_equals_naive_twin(file):
    consts = {"N": 6, "M": 5, "BJ": 4, "BK": 3}
    nest = plan_kernel(k(file), **{c: consts[c] for c in _constants(file)})
    want = naive_nest(nest)
    for chunk in (nest.per_iteration, 97, 1 << 16):  # resumes mid-row and at row ends
        addr, size, kind = stream(nest, chunk)
        got = list(zip(addr.tolist(), size.tolist(), kind.tolist(), strict=True))
        assert got == want


def _constants(file: str) -> tuple:
    from hroof.traces import get_kernel

    return get_kernel(k(file)).nest.constants


def test_checkpoints_resume_anywhere(monkeypatch):
    """With a checkpoint every 3 rows or iterations, every start position decodes."""
    from hroof.traces import affine

    monkeypatch.setattr(affine, "CHECK_EVERY", 3)
    p = plan_kernel(k("3d-7pt-blocked.c"), N=5, BJ=2, BK=3)
    want = naive_nest(p)
    per = p.per_iteration
    for start in range(0, p.iterations, 7):
        n, _ = p.gen(
            start, start + 1, *[np.empty(per, t) for t in (np.int64, np.uint32, np.uint8)], p.args
        )
        assert n == per
    addr, size, kind = stream(p, per)
    assert list(zip(addr.tolist(), size.tolist(), kind.tolist(), strict=True)) == want


def test_corpus_on_the_reference_model():
    """One corpus size: the reference model (plain Python) and the simulator agree in
    every counter."""
    from hroof.cachesim import hierarchy
    from hroof.cachesim.reference.engine import simulate_plan
    from hroof.studies.runs import simulate_kernel

    h = hierarchy({"name": "L1", "size": "1 KiB", "ways": 2},
                  {"name": "L2", "size": "4 KiB", "ways": 4})  # fmt: skip
    for file, consts in [("3d-27pt.c", {"N": 5}), ("matvec-ji.c", {"M": 24, "N": 20}),
                         ("2d-gauss-seidel.c", {"M": 12, "N": 30})]:  # fmt: skip
        plan = plan_kernel(k(file), **consts)
        a = simulate_plan(h, plan).to_dict()
        b = simulate_kernel(plan, h).to_dict()
        for doc in (a, b):
            doc.pop("timing")
            doc["options"].pop("engine", None)
        assert a == b


# ------------------------------------------------------------------ semantics
def test_compound_assignment_reads_target_after_the_right_hand_side():
    text = "double a[N], b[N];\nfor (int i = 0; i < N; i++) a[i] += 2.0*b[i];\n"
    nest = parse_text(text, "x.c")
    (st,) = nest.statements
    assert [(acc.array, acc.kind) for acc in st.accesses] == [
        ("b", "load"), ("a", "load"), ("a", "store")]  # fmt: skip
    assert st.flops == 2  # 2.0*b, then the + of +=


def test_constant_arithmetic_is_not_counted():
    nest = parse_text("double a[N];\nfor (int i = 0; i < N; i++) a[i] = 2.0*3.0 + a[i];\n")
    assert nest.statements[0].flops == 1


def test_flops_override():
    p = plan_kernel(k("3d-7pt.c"), N=4, flops=8)
    assert p.flops == 8 * 64


def test_int_arrays_have_4_byte_elements_and_no_flops():
    text = "int a[N], b[N];\nfor (int i = 0; i < N; i++) b[i] = a[i] + a[i];\n"
    path = "ints.c"
    nest = parse_text(text, path)
    assert nest.statements[0].flops == 0
    assert [a.elem for a in nest.arrays] == [4, 4]


def test_strided_loops_and_triangular_bounds(tmp_path):
    f = tmp_path / "tri.c"
    f.write_text("double a[N][N];\ndouble s;\n"
                 "for (int i = 0; i < N; i += 2)\n"
                 "  for (int j = i; j <= N - 1; j++)\n"
                 "    s += a[i][j];\n")  # fmt: skip
    p = plan_kernel(str(f), N=7)
    want = naive_nest(p)
    assert p.iterations == sum(7 - i for i in range(0, 7, 2))
    addr, size, kind = stream(p, 5)
    assert list(zip(addr.tolist(), size.tolist(), kind.tolist(), strict=True)) == want


def test_empty_inner_rows_are_skipped(tmp_path):
    f = tmp_path / "lower.c"
    f.write_text("double a[N][N];\ndouble s;\n"
                 "for (int i = 0; i < N; i++)\n  for (int j = 0; j < i; j++)\n"
                 "    s += a[i][j];\n")  # fmt: skip
    p = plan_kernel(str(f), N=6)
    assert p.iterations == 15
    addr, size, kind = stream(p, 1)
    assert list(zip(addr.tolist(), size.tolist(), kind.tolist(), strict=True)) == naive_nest(p)


def test_statement_around_an_empty_loop_is_refused(tmp_path):
    f = tmp_path / "empty.c"
    f.write_text("double a[N][N], y[N];\ndouble s;\n"
                 "for (int i = 0; i < N; i++) {\n  s = 0.0;\n"
                 "  for (int j = 0; j < i; j++)\n    s += a[i][j];\n  y[i] = s;\n}\n")  # fmt: skip
    with pytest.raises(HroofError, match=r"empty.c:7:\d+: 'y\[i\] = s' runs around loop j"):
        plan_kernel(str(f), N=4)


def test_cache_key_follows_the_file_text(tmp_path):
    from hroof.cachesim import hierarchy
    from hroof.studies.cache import cache_key

    f = tmp_path / "t.c"
    f.write_text("double x[N];\nfor (int i = 0; i < N; i++) x[i] = 2.0*x[i];\n")
    h = hierarchy({"name": "L1", "size": 1024, "ways": 2})
    a = cache_key(str(f), {"N": 8}, h, {})
    f.write_text("double x[N];\nfor (int i = 0; i < N; i++) x[i] = 3.0*x[i] + 1.0;\n")
    import os

    os.utime(f, ns=(1, 1))  # a new mtime: the file is read again
    assert cache_key(str(f), {"N": 8}, h, {}) != a


@pytest.mark.parametrize(("file", "consts", "kernel", "params"), [
    ("3d-7pt.c", {"N": 12}, "stencil7", {"n": 12}),
    ("3d-7pt-blocked.c", {"N": 12, "BJ": 12, "BK": 5}, "stencil7", {"n": 12, "bk": 5}),
    ("triad.c", {"N": 1000}, "triad", {"n": 1000}),
])  # fmt: skip
@pytest.mark.parametrize("cores", [2, 3])
def test_cores_split_the_outermost_loop_as_the_builtins_do(file, consts, kernel, params, cores):
    from hroof.cachesim import hierarchy
    from hroof.studies.runs import simulate_kernel

    h = hierarchy({"name": "L1", "size": "1 KiB", "ways": 2},
                  {"name": "L2", "size": "8 KiB", "ways": 4, "shared": True})  # fmt: skip
    p, q = plan_kernel(k(file), **consts), plan_kernel(kernel, **params)
    assert p.thread_ranges(cores, 0) == q.thread_ranges(cores, 0)
    a = simulate_kernel(p, h, cores=cores).to_dict()
    b = simulate_kernel(q, h, cores=cores).to_dict()
    for doc in (a, b):
        doc.pop("timing")
        doc.pop("source")
    assert a == b


# ------------------------------------------------------------------ every command
def test_trace_of_a_kernel_file_is_its_stream(capsys, tmp_path):
    from helpers import run_cli

    out = tmp_path / "t.npz"
    code, _, err = run_cli(capsys, "trace", k("transpose.c"), "M=20", "N=12", "--out", str(out))
    assert code == 0, err
    z = np.load(out)
    want = naive_nest(plan_kernel(k("transpose.c"), M=20, N=12))
    assert list(zip(z["addr"].tolist(), z["size"].tolist(), z["kind"].tolist(),
                    strict=True)) == want  # fmt: skip


def test_mrc_and_study_take_kernel_files(capsys, tmp_path, monkeypatch):
    from helpers import run_cli

    code, out, err = run_cli(capsys, "mrc", k("2d-jacobi.c"), "M=40", "N=40", "--machine",
                             "teaching")  # fmt: skip
    assert code == 0, err
    assert "Miss-ratio curve of " in out and "2d-jacobi.c" in out
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.toml").write_text(
        'name = "files"\nmachines = ["teaching"]\n\n[[kernel]]\n'
        f'name = "{k("matvec.c")}"\nparams = {{ N = "64..1024:x4", M = 8 }}\naxis = "N"\n'
    )
    code, out, err = run_cli(capsys, "study", "s.toml")
    assert code == 0, err
    assert "matvec.c" in (tmp_path / "study-files" / "study.csv").read_text()


# ------------------------------------------------------------------ random nests
@st.composite
def nests(draw):
    """A random kernel file: 1 to 3 loops (constant, triangular and blocked-style
    bounds, steps 1 to 3), statements in the innermost body and around inner loops,
    affine indices into two arrays large enough for every index."""
    depth = draw(st.integers(1, 3))
    lines = ["double a[8*N+30][8*N+30], b[8*N+30][8*N+30];", "double s, q;"]
    loops = []
    for lv in range(depth):
        outer = [f"i{e}" for e in range(lv)]
        lo = draw(st.sampled_from(["0", "1", *outer]))
        hi = draw(st.sampled_from(["N", "N+1", *(f"{v}+3" for v in outer)]))
        cond = f"i{lv} < {hi}"
        if draw(st.booleans()):
            cond += f" && i{lv} <= N"
        step = draw(st.integers(1, 3))
        loops.append(f"for (int i{lv} = {lo}; {cond}; i{lv} += {step})")

    def index(scope):
        terms = [f"{draw(st.integers(0, 2))}*{v}" for v in scope]
        return " + ".join([*terms, str(draw(st.integers(0, 3)))])

    def statement(scope):
        def ref():
            name = draw(st.sampled_from(["a", "b"]))
            return f"{name}[{index(scope)}][{index(scope)}]"

        target = draw(st.sampled_from(["s", ref()]))
        op = draw(st.sampled_from(["=", "+=", "-=", "*="]))
        rhs = " + ".join(draw(st.lists(st.sampled_from([ref(), "q", "2.0"]), min_size=1,
                                       max_size=3)))  # fmt: skip
        return f"{target} {op} {rhs};"

    body = [statement([f"i{e}" for e in range(depth)])
            for _ in range(draw(st.integers(1, 3)))]  # fmt: skip
    for lv in range(depth - 2, -1, -1):  # wrap: statements before and after the inner loop
        scope = [f"i{e}" for e in range(lv + 1)]
        pre = [statement(scope)] if draw(st.booleans()) else []
        post = [statement(scope)] if draw(st.booleans()) else []
        body = [*pre, loops[lv + 1] + " {", *body, "}", *post]
    lines += [loops[0] + " {", *body, "}"]
    return "\n".join(lines) + "\n"


@settings(max_examples=examples(300), deadline=None)
@given(text=nests(), n=st.integers(1, 6))
def test_random_nests_equal_their_naive_twin(text, n):
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "r.c"
        path.write_text(text)
        try:
            p = plan_kernel(str(path), N=n)
        except HroofError as exc:  # refusals a random nest may earn
            why = ("runs around loop", "no iteration", "touches no array")
            assume(not any(w in str(exc) for w in why))
            raise
        want = naive_nest(p)
        assert p.accesses == len(want)
        for chunk in (p.per_iteration, 3 * p.per_iteration + 1, 1 << 16):
            addr, size, kind = stream(p, chunk)
            got = list(zip(addr.tolist(), size.tolist(), kind.tolist(), strict=True))
            assert got == want
