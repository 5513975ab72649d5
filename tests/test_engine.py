"""``hroof simulate --engine``: a small kernel run on the reference model gives the
simulator's result exactly, and never loads Numba.

The reference engine (:mod:`hroof.cachesim.reference.engine`) runs the plain-Python model
that the other tests hold the Numba simulator to; here the two engines run the same
command and their JSON must agree in every field but the timing and the engine's name,
their tables in every line but those two.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from helpers import assert_cli_bad, run_cli

from hroof.cachesim import SimResult
from hroof.cachesim.reference.engine import AUTO_MAX_ACCESSES
from hroof.traces import plan_kernel
from hroof.traces.reference import reference_trace

#: Prefetchers at L2 and L3, an exclusive L3 below a prefetching L2.
PREFETCH = """\
[machine]
name = "prefetching"

[[level]]
name = "L1"
size = "1 KiB"
ways = 2

[[level]]
name = "L2"
size = "4 KiB"
ways = 4
prefetch = "stride"

[[level]]
name = "L3"
size = "16 KiB"
ways = 4
prefetch = "next-line"
"""

#: The other policies: a no-write-allocate L1, a victim L2, an inclusive L3 with an
#: adjacent-line prefetcher.
POLICIES = """\
[machine]
name = "policies"

[[level]]
name = "L1"
size = "1 KiB"
ways = 2
write_allocate = false

[[level]]
name = "L2"
size = "2 KiB"
ways = 4
inclusion = "victim"

[[level]]
name = "L3"
size = "8 KiB"
ways = 4
inclusion = "inclusive"
prefetch = "adjacent"
"""

KERNELS = [
    ("triad", "n=1000"),
    ("copy", "n=500 nt=true"),
    ("stencil7", "n=6"),
    ("stencil5", "n=12 warmup=1"),
    ("triad", "n=300 warmup=1 sweeps=2"),
    ("spmv", "n=8"),
    ("spmv", "matrix=random rows=64 nnz_per_row=3 storage=bcsr r=2 c=2"),
    ("gemm", "m=8 n=8 k=8 order=kij ti=4"),
    ("dgemv", "n=24 m=16"),
]
MACHINES = ["default", "generic", "prefetch", "policies"]
FLAGS = [(), ("--no-classify",), ("--no-flush",), ("--no-classify", "--no-flush")]
CASES = [(k, m, f) for k in KERNELS for m in MACHINES for f in FLAGS]


def _fast(case) -> bool:
    """The fast lane's share: every kernel, machine and flag set, each kernel twice."""
    k, m, f = KERNELS.index(case[0]), MACHINES.index(case[1]), FLAGS.index(case[2])
    return m == k % 4 and f in (k % 4, (k + 1) % 4)


PARAMS = [
    pytest.param(*c, marks=() if _fast(c) else pytest.mark.slow,
                 id=f"{c[0][0]}-{c[0][1]}-{c[1]}-{'+'.join(c[2]) or 'default'}")
    for c in CASES
]  # fmt: skip


@pytest.fixture
def machines(tmp_path):
    files = {"prefetch": PREFETCH, "policies": POLICIES}
    out = {"default": [], "generic": ["--machine", "generic"]}
    for name, text in files.items():
        path = tmp_path / f"{name}.toml"
        path.write_text(text)
        out[name] = ["--machine", path]
    return out


def _run(capsys, *argv):
    code, out, err = run_cli(capsys, "simulate", *argv)
    assert code == 0, err
    return out


def _comparable(doc: dict) -> dict:
    doc = json.loads(json.dumps(doc))
    doc.pop("timing")
    doc["options"].pop("engine")
    return doc


def _table(text: str) -> list[str]:
    """The table without its engine and time lines (the time line may wrap)."""
    keep, skip = [], False
    for line in text.splitlines():
        if line.startswith(("engine ", "time ")):
            skip = True
            continue
        if skip and line.startswith(" "):
            continue
        skip = False
        keep.append(line)
    return keep


@pytest.mark.parametrize("kernel, machine, flags", PARAMS)
def test_reference_engine_gives_the_simulators_result(capsys, machines, kernel, machine, flags):
    argv = [kernel[0], *kernel[1].split(), *machines[machine], *flags]
    auto = json.loads(_run(capsys, *argv, "--json"))
    numba = json.loads(_run(capsys, *argv, "--json", "--engine", "numba"))
    assert auto["accesses"] <= AUTO_MAX_ACCESSES
    assert auto["options"]["engine"] == "reference" and numba["options"]["engine"] == "numba"
    a, b = _comparable(auto), _comparable(numba)
    assert a.keys() == b.keys()
    for key in a:
        assert a[key] == b[key], key
    assert b["levels"][0]["lookups"] > 0  # not two empty results
    if machine == "prefetch" and "--no-classify" not in flags:
        assert sum(lv["prefetches_issued"] for lv in b["levels"]) > 0


@pytest.mark.parametrize("kernel", KERNELS[:3] + KERNELS[-2:], ids=lambda k: f"{k[0]}-{k[1]}")
def test_reference_engine_prints_the_same_table(capsys, kernel):
    argv = [kernel[0], *kernel[1].split()]
    ref = _run(capsys, *argv, "--engine", "reference")
    numba = _run(capsys, *argv, "--engine", "numba")
    assert "engine    reference" in ref and "engine    numba" in numba
    assert _table(ref) == _table(numba)


@pytest.mark.parametrize(
    "argv",
    [["triad", "n=1000"], ["stencil7", "n=8", "warmup=1", "--json"], ["spmv", "n=12", "--json"]],
)
def test_a_small_run_never_imports_numba(argv):
    """``hroof simulate triad n=1000`` (default machine, engine auto) in a fresh process:
    Numba is not in ``sys.modules`` when it ends; forced to numba, it is."""
    code = (
        "import sys, contextlib, io\n"
        "from hroof.cli import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    rc = main(sys.argv[1:])\n"
        "assert rc == 0 and 'L3' in out.getvalue()\n"
        "print('numba' in sys.modules)\n"
    )
    for extra, loaded in (([], "False"), (["--engine", "numba"], "True")):
        cmd = [sys.executable, "-c", code, "simulate", *argv, *extra]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True)
        assert out.stdout.strip() == loaded, (extra, out.stdout, out.stderr)


def test_auto_switches_to_numba_above_the_threshold(capsys):
    # copy: 2 accesses an element; n = threshold / 2 is the largest reference run
    n = AUTO_MAX_ACCESSES // 2
    at = json.loads(_run(capsys, "copy", f"n={n}", "--json", "--no-classify"))
    above = json.loads(_run(capsys, "copy", f"n={n + 1}", "--json", "--no-classify"))
    assert at["accesses"] == AUTO_MAX_ACCESSES and at["options"]["engine"] == "reference"
    assert above["accesses"] == AUTO_MAX_ACCESSES + 2 and above["options"]["engine"] == "numba"


@pytest.mark.parametrize(
    "argv, engine",
    [
        (["triad", "n=100", "cores=2"], "numba"),
        (["triad", "n=100", "--sample-sets", "1/2", "--machine", "generic"], "numba"),
        (["triad", "n=100", "--threads", "2", "--no-classify"], "numba"),
        (["triad", "n=100", "--engine", "numba"], "numba"),
        (["triad", "n=10000", "--engine", "reference", "--no-classify"], "reference"),
    ],
)
def test_auto_keeps_numba_for_what_the_model_does_not_run(capsys, argv, engine):
    doc = json.loads(_run(capsys, *argv, "--json"))
    assert doc["options"]["engine"] == engine


@pytest.mark.parametrize(
    "argv, words",
    [
        (["triad", "n=100", "cores=2"], ["cores > 1"]),
        (["triad", "n=100", "--sample-sets", "1/2", "--machine", "generic"], ["--sample-sets"]),
        (["triad", "n=100", "--threads", "2", "--no-classify"], ["--threads 2"]),
        (["--trace", "x.npz"], ["--trace"]),
        (["triad", "n=1e9"], ["3,000,000,000 accesses", "memory"]),
    ],
)
def test_engine_reference_refuses_what_it_does_not_run(capsys, argv, words):
    assert_cli_bad(capsys, ["simulate", *argv, "--engine", "reference"], "--engine", *words)


def test_a_result_without_an_engine_loads_as_numba():
    from hroof.studies.runs import simulate_kernel

    doc = simulate_kernel("triad", "generic", n=10).to_dict()
    assert doc["options"]["engine"] == "numba"
    del doc["options"]["engine"]
    assert SimResult.from_dict(doc).engine == "numba"


@pytest.mark.parametrize(
    "kernel, params",
    [
        ("triad", {"n": 37, "warmup": 2, "sweeps": 3}),
        ("daxpy", {"n": 20, "warmup": 1, "nt": True}),
        ("dot", {"n": 20, "warmup": 2, "sweeps": 2}),
        ("stencil7", {"n": 4, "warmup": 1, "sweeps": 2}),
        ("stencil27", {"n": 3, "warmup": 2}),
        ("stencil5", {"n": 6, "warmup": 1}),
        ("stencil7", {"n": 5, "warmup": 1, "bj": 2, "bk": 3}),
    ],
)
def test_reference_trace_of_steady_state_plans(kernel, params):
    """The warm-up sweeps written out (the other kernel tests cover cold plans)."""
    plan = plan_kernel(kernel, **params)
    got = [
        (int(a), int(s), int(k))
        for addr, size, kind in plan.chunks(1000)
        for a, s, k in zip(addr, size, kind, strict=True)
    ]
    want = reference_trace(plan)
    assert len(want) == plan.accesses and plan.warmup > 0
    assert np.array_equal(np.array(got), np.array(want))
