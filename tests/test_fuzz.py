"""Hostile input (issue 13): every subcommand fed what a hostile user would type or write.

Each case ends in success or in exit 2 with one ``hroof: error:`` line and no traceback;
never a MemoryError, a kill by the memory limit, a hang past its timeout, a corrupt or
partial file, or a wrong answer with exit 0. The cases that could allocate without bound
run in a subprocess under ``resource.setrlimit(RLIMIT_AS)`` and a timeout; the rest run
in-process (cheap). The interrupt tests send SIGINT, SIGTERM and SIGHUP at random moments
of a sweep and of a trace write and check that the run ends promptly, with one line, no
temporary left and the previous output intact. Grow the tables with every defect found.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import examples
from helpers import assert_cli_bad, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hroof._base.errors import HroofError
from hroof._base.guards import MEMORY_ENV, ResourceError, check_finite, check_int64
from hroof.traces import get_kernel

#: The address-space limit of the subprocess cases: room for Python, NumPy and Numba, far
#: from what any of the hostile requests below would allocate.
MEMORY_LIMIT = 2 << 30

_CHILD = """
import os, resource, sys
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from hroof.cli.app import main
code = main(sys.argv[2:])
rss = os.environ.get("HROOF_FUZZ_RSS")
if rss:
    with open(rss, "w") as f:
        f.write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024))
sys.exit(code)
"""


def hroof_limited(args, cwd, *, timeout=60, limit=MEMORY_LIMIT, env=None):
    """Run ``hroof ARGS`` in a subprocess under an address-space limit and a timeout."""
    full_env = {**os.environ, **(env or {})}
    full_env.pop(MEMORY_ENV, None)
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(limit), *map(str, args)],
        cwd=cwd, capture_output=True, text=True, timeout=timeout, env=full_env,
    )  # fmt: skip
    return proc.returncode, proc.stdout, proc.stderr


def assert_clean(code, out, err, *, allow_ok=True, words=()):
    """Success, or exit 2 with one ``hroof: error:`` line (naming ``words``); never more."""
    assert "Traceback" not in err and "MemoryError" not in err, err
    if code == 0 and allow_ok:
        return
    assert code == 2, (code, out[-500:], err[-2000:])
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hroof: error: "), err
    for w in words:
        assert w.lower() in err.lower(), (w, err)


@pytest.fixture
def small_memory(monkeypatch):
    """hroof believes it has 256 MiB: the in-process cases refuse instead of allocating."""
    monkeypatch.setenv(MEMORY_ENV, str(256 << 20))


def _write_mtx(path: Path, header: str, entries: str = "") -> Path:
    path.write_text("%%MatrixMarket matrix coordinate pattern general\n" + header + entries)
    return path


def _npz(path: Path, addr, size, kind) -> Path:
    np.savez(path, addr=np.asarray(addr, np.uint64), size=np.asarray(size, np.uint32),
             kind=np.asarray(kind, np.uint8))  # fmt: skip
    return path


# ----------------------------------------------------------------------- family 1: sizes
#: (argv, words of the one error line, or None when success is right).
SIZE_CASES = [
    (["simulate", "triad", "n=99999999999999999999999"], ["at most"]),
    (["simulate", "stencil7", "n=10000000"], ["64-bit"]),
    (["simulate", "stencil7", "n=1e300"], ["out of range"]),
    (["simulate", "gemm", "m=1e6", "n=1e6", "k=1e7"], ["64-bit"]),
    (["sweep", "triad", "n=1..1000000000:+1"], ["at most 10,000"]),
    (["sweep", "gemm", "m=1..1000", "n=1..1000", "k=1..1000"], ["1,000,000,000 points"]),
    (["simulate", "spmv", "matrix=random", "rows=1000000000"], ["needs", "available"]),
    (["simulate", "spmv", "matrix=poisson3d", "n=100000"], ["needs", "available"]),
    (["simulate", "spmv", "matrix=poisson2d", "n=10", "dof=1000000"], ["dof", "needs"]),
    (["simulate", "triad", "n=1e9", "--chunk-size", "1e12", "--no-classify"], ["--chunk-size"]),
    (["simulate", "triad", "n=1e13"], ["memory", "--no-classify"]),
    (["simulate", "triad", "n=1e15", "--no-classify"], ["hours", "per second"]),
    (["trace", "triad", "n=1e15", "--out", "x.din"], ["hours"]),
    (["run", "triad", "n=1e10"], ["natively", "needs"]),
    (["energy", "triad", "n=1e15", "--machine", "haswell"], None),
    (["mrc", "triad", "n=1e13"], ["memory", "--no-simulate"]),
    (["mrc", "triad", "n=1e13", "--no-simulate"], ["miss-ratio curve", "distinct lines"]),
    (["mrc", "stencil7", "n=10000000"], ["64-bit"]),
]


@pytest.mark.parametrize(
    "argv,words", SIZE_CASES, ids=lambda v: " ".join(map(str, v or ["ok"]))[:60]
)
def test_sizes_are_checked_before_allocation(capsys, tmp_path, monkeypatch, argv, words):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(MEMORY_ENV, str(1 << 30))
    if words is None:  # whatever the command answers, it is one line or success, at once
        t0 = time.perf_counter()
        code, out, err = run_cli(capsys, *argv)
        assert_clean(code, out, err)
        assert time.perf_counter() - t0 < 30
        return
    assert_cli_bad(capsys, argv, *words)
    assert not list(tmp_path.iterdir())  # nothing written, not even a temporary


def test_huge_chunk_size_of_a_small_kernel_allocates_only_the_trace(capsys):
    code, _out, err = run_cli(capsys, "simulate", "triad", "n=1000", "--chunk-size", "1e12", "-q")
    assert code == 0, err


def test_mtx_size_line_is_checked_before_reading(capsys, tmp_path, small_memory):
    big = _write_mtx(tmp_path / "big.mtx", "100000000000 100000000000 0\n")
    assert_cli_bad(capsys, ["simulate", "spmv", f"matrix={big}"], "big.mtx", "needs", "line 2")
    sym = tmp_path / "sym.mtx"
    sym.write_text("%%MatrixMarket matrix coordinate real symmetric\n5 5 100000000\n")
    assert_cli_bad(capsys, ["simulate", "spmv", f"matrix={sym}"], "sym.mtx", "needs")


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv",
    [
        ["simulate", "spmv", "matrix=random", "rows=1000000000"],
        ["simulate", "triad", "n=1e9", "--chunk-size", "1e12"],
        ["simulate", "spmv", "matrix=big.mtx"],
        ["simulate", "--trace", "huge.npz", "--no-classify"],
        ["simulate", "--trace", "huge.din"],
        ["mrc", "--trace", "huge.din"],
    ],
    ids=lambda v: " ".join(v)[:50],
)
def test_sizes_under_a_real_memory_limit(tmp_path, argv):
    """The same refusals with no hint from the environment: the address-space limit of
    the subprocess is what hroof must see."""
    _write_mtx(tmp_path / "big.mtx", "100000000000 100000000000 0\n")
    _npz(tmp_path / "huge.npz", [0, 1 << 33], [1 << 31, 8], [0, 0])
    (tmp_path / "huge.din").write_text("0 0 4294967295\n1 40 8\n")
    code, out, err = hroof_limited(argv, tmp_path)
    assert_clean(code, out, err, allow_ok=False, words=["needs", "available"])


def test_huge_accesses_are_cut_into_bounded_chunks(capsys, tmp_path, small_memory):
    """A 64 MiB access is simulated (a million lines, in bounded pieces), and gives the
    same counts as the same lines as separate accesses."""
    one = _npz(tmp_path / "one.npz", [0], [64 << 20], [0])
    lines = 1 << 20
    many = _npz(tmp_path / "many.npz", np.arange(lines) * 64, [64] * lines, [0] * lines)
    a = run_cli(capsys, "simulate", "--trace", one, "--json", "--no-classify", "-q")
    b = run_cli(capsys, "simulate", "--trace", many, "--json", "--no-classify", "-q")
    assert a[0] == b[0] == 0, (a[2], b[2])
    ra, rb = json.loads(a[1]), json.loads(b[1])
    assert ra["levels"] == rb["levels"] and ra["memory"] == rb["memory"]
    assert ra["accesses"] == 1 and rb["accesses"] == lines


def test_guard_chunks_keeps_every_access_in_order():
    from hroof.traces.limits import guard_chunks

    rng = np.random.default_rng(5)
    addr = rng.integers(0, 1 << 20, 500)
    size = rng.integers(1, 4000, 500)
    kind = rng.integers(0, 2, 500).astype(np.uint8)
    parts = list(guard_chunks([(addr, size, kind)], 6, classify=False, max_pieces=50))
    assert len(parts) > 10
    for a, s, _ in parts:  # each part within the bound, unless one access alone exceeds it
        spans = ((a + s - 1) >> 6) - (a >> 6) + 1
        assert spans.sum() <= 50 or len(a) == 1
    np.testing.assert_array_equal(np.concatenate([p[0] for p in parts]), addr)
    np.testing.assert_array_equal(np.concatenate([p[1] for p in parts]), size)
    np.testing.assert_array_equal(np.concatenate([p[2] for p in parts]), kind)


def test_page_size_of_the_guard_is_the_simulators():
    from hroof.cachesim import _kernels
    from hroof.traces.limits import PAGE_LINES

    assert PAGE_LINES == _kernels.PAGE


@pytest.mark.slow
def test_npz_trace_output_streams(tmp_path):
    """hroof trace --out x.npz holds one chunk, not the trace: 6 million accesses (78 MB of
    arrays, about 160 MB at the peak of the old concatenation) within 60 MB of a run that
    writes nothing."""
    rss = tmp_path / "rss"
    env = {"HROOF_FUZZ_RSS": str(rss)}
    code, _, err = hroof_limited(["kernels"], tmp_path, env=env)
    assert code == 0, err
    base = int(rss.read_text())
    code, _out, err = hroof_limited(["trace", "triad", "n=2e6", "--out", "x.npz"], tmp_path,
                                   env=env)  # fmt: skip
    assert code == 0, err
    grown = int(rss.read_text()) - base
    assert grown < 60 << 20, grown
    d = np.load(tmp_path / "x.npz")
    assert d["addr"].shape == (6_000_000,) and d["size"].dtype == np.uint32
    assert d["kind"][:3].tolist() == [0, 0, 1]  # b[i], c[i] loaded, a[i] stored


def test_npz_streaming_matches_numpy_savez(tmp_path):
    from hroof.traces import plan_kernel, write_npz
    from hroof.traces.npz_out import write_npz_streaming

    plan = plan_kernel("stencil7", n=12)
    write_npz(tmp_path / "a.npz", plan.chunks(1000, reuse=False))
    write_npz_streaming(tmp_path / "b.npz", lambda: plan.chunks(1000), plan.accesses)
    a, b = np.load(tmp_path / "a.npz"), np.load(tmp_path / "b.npz")
    for name in ("addr", "size", "kind"):
        assert a[name].dtype == b[name].dtype
        np.testing.assert_array_equal(a[name], b[name])


# --------------------------------------------------------------- family 2: classification
def test_classification_memory_is_refused_up_front_on_random_traces(capsys, tmp_path,
                                                                    small_memory):  # fmt: skip
    rng = np.random.default_rng(0)
    n = 200_000  # scattered lines: a 2 KiB flag page each, 1.2 GiB with the table's growth
    trace = _npz(tmp_path / "random.npz", rng.integers(0, 1 << 45, n) & ~63, [8] * n, [0] * n)
    assert_cli_bad(capsys, ["simulate", "--trace", trace, "-q"], "classifying", "--no-classify")
    code, _out, err = run_cli(capsys, "simulate", "--trace", trace, "--no-classify", "-q")
    assert code == 0, err


def test_classification_of_dense_traces_is_not_refused(capsys, tmp_path, small_memory):
    n = 300_000  # dense: 4 bytes a line, well within 256 MiB
    trace = _npz(tmp_path / "dense.npz", np.arange(n) * 8, [8] * n, [0] * n)
    code, _out, err = run_cli(capsys, "simulate", "--trace", trace, "-q")
    assert code == 0, err


# ------------------------------------------------------------------------- family 3: hangs
def test_mwp_plot_of_many_warps_is_summarised(capsys, tmp_path):
    png = tmp_path / "w.png"
    t0 = time.perf_counter()
    code, _out, err = run_cli(
        capsys, "mwp", "--mem-latency", "400", "--departure-delay", "4", "--comp-cycles",
        "100", "--mem-cycles", "200", "--warps", "20000", "--plot", png,
    )  # fmt: skip
    assert code == 0, err
    assert png.is_file() and time.perf_counter() - t0 < 30


def test_mwp_replay_matches_the_quadratic_twin():
    from hroof.accel.mwp import timeline

    rng = random.Random(3)
    for _ in range(examples(60)):
        w, mi, slots = rng.randint(1, 12), rng.randint(1, 4), rng.randint(1, 6)
        comp, mem = rng.choice([1.0, 2.5, 7.0]), rng.choice([3.0, 10.0, 40.0])
        assert timeline(w, comp, mem, slots, mi) == _naive_timeline(w, comp, mem, slots, mi)


def _naive_timeline(warps, comp_period, mem_period, mwp, mem_insts):
    """The replay as first written: scan every warp for the one that starts first."""
    import heapq

    from hroof.accel.mwp import Timeline

    comp = [[] for _ in range(warps)]
    mem = [[] for _ in range(warps)]
    ready, left, pipe, slots = [0.0] * warps, [mem_insts] * warps, 0.0, []
    while any(left):
        w = min((i for i in range(warps) if left[i]), key=lambda i: (max(ready[i], pipe), i))
        start = max(ready[w], pipe)
        end = start + comp_period
        comp[w].append((start, end))
        pipe = end
        while slots and slots[0] <= end:
            heapq.heappop(slots)
        m0 = end if len(slots) < mwp else heapq.heappop(slots)
        mem[w].append((m0, m0 + mem_period))
        heapq.heappush(slots, m0 + mem_period)
        ready[w] = m0 + mem_period
        left[w] -= 1
    total = max(p[1] for per in mem for p in per)
    return Timeline(total, tuple(map(tuple, comp)), tuple(map(tuple, mem)))


def _spawn(args, cwd):
    """``hroof ARGS`` in its own process group (as a shell runs a job)."""
    return subprocess.Popen(
        [sys.executable, "-m", "hroof", *map(str, args)], cwd=cwd, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _leftovers(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if ".partial" in p.name or p.name.endswith(".lock")]


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_interrupted_sweep_ends_promptly_and_cleanly(tmp_path, sig):
    """A signal at a random moment of a two-worker sweep writing over a previous result:
    every process of the group gone within 15 s, one line, no temporary, and the
    previous output intact (or replaced whole if the sweep finished first)."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.json").write_text('{"previous": true}\n')
    args = ["sweep", "stencil7", "n=64..160:+16", "--machine", "teaching", "--workers", "2",
            "--no-cache", "--out", out, "-q"]  # fmt: skip
    proc = _spawn(args, tmp_path)
    time.sleep(random.Random(sig).uniform(1.2, 2.5))
    os.killpg(proc.pid, sig)  # the whole group, as a terminal's Ctrl-C does
    try:
        _, err = proc.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("the sweep did not end within 15 s of the signal")
    deadline = time.monotonic() + 10
    while _group_alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _group_alive(proc.pid), "workers left behind"
    assert "Traceback" not in err, err
    assert not _leftovers(tmp_path), _leftovers(tmp_path)
    doc = json.loads((out / "results.json").read_text())
    if proc.returncode == 0:  # it finished before the signal: the new result, whole
        assert doc["schema"] == "hroof.sweep/1" and len(doc["points"]) == 7
    else:
        assert proc.returncode == 128 + sig, (proc.returncode, err)
        assert err.strip().splitlines() == [err.strip()] and "interrupted" in err
        assert doc == {"previous": True}


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_interrupted_trace_write_leaves_no_partial_file(tmp_path, sig):
    (tmp_path / "x.din").write_text("0 40 8\n")  # the previous output
    proc = _spawn(["trace", "triad", "n=3e7", "--out", "x.din"], tmp_path)
    time.sleep(random.Random(int(sig) + 7).uniform(0.8, 2.0))
    os.killpg(proc.pid, sig)
    _, err = proc.communicate(timeout=20)
    assert "Traceback" not in err
    assert proc.returncode in (0, 128 + sig), (proc.returncode, err)
    assert not _leftovers(tmp_path)
    if proc.returncode:
        assert (tmp_path / "x.din").read_text() == "0 40 8\n"


_LOST_INTERRUPT = """
import signal, sys, time
from hroof._base.outdir import Terminated, signals_raise

class Boom:  # raises in __del__: Python can only report it ("Exception ignored")
    def __init__(self, exc): self.exc = exc
    def __del__(self): raise self.exc

# Python leaves SIGINT ignored when it starts ignored (a test run in the background)
signal.signal(signal.SIGINT, signal.default_int_handler)
exc = KeyboardInterrupt() if sys.argv[1] == "INT" else Terminated(signal.SIGTERM)
with signals_raise():
    t0 = time.monotonic()
    try:
        Boom(exc)
        time.sleep(5)
        print("not interrupted")
    except KeyboardInterrupt as e:  # promptly: the wait ends with the signal
        print("interrupted", getattr(e, "signum", 2), time.monotonic() - t0 < 2.5)
"""


@pytest.mark.parametrize("which", ["INT", "TERM"])
def test_an_interrupt_python_cannot_raise_is_sent_again(which):
    """A signal that lands in a callback (an import lock's cleanup, a ``__del__``) would be
    printed as "Exception ignored" with a traceback and lost: within ``signals_raise`` it
    is raised again in the main program, where the cleanup and the one line follow."""
    out = subprocess.run([sys.executable, "-c", _LOST_INTERRUPT, which], capture_output=True,
                         text=True, timeout=60)  # fmt: skip
    assert out.stdout.split() == ["interrupted", "2" if which == "INT" else "15", "True"], out
    assert "Traceback" not in out.stderr and "ignored" not in out.stderr, out.stderr


_HALF_BUILT = """
import sys
from hroof.cli import app

class HalfBuilt:  # as llvmlite's ObjectRef when an interrupt lands in its constructor
    def __del__(self):
        raise AttributeError("_as_parameter_")

left = []

def interrupted(argv):
    left.append(HalfBuilt())  # freed as the interpreter exits
    return 130

app._main = interrupted
sys.exit(app.main([]))
"""


def test_after_an_interrupt_nothing_more_is_printed_at_exit():
    """An interrupt can leave an object half-built, whose ``__del__`` fails as the process
    exits (seen in CI: Ctrl-C while Numba loaded a kernel); the one line stays the only one."""
    out = subprocess.run([sys.executable, "-c", _HALF_BUILT], capture_output=True, text=True,
                         timeout=60)  # fmt: skip
    assert out.returncode == 130
    assert out.stderr == "", out.stderr


# ------------------------------------------------------------------------- family 4: files
@pytest.mark.slow
def test_two_sweeps_writing_one_out_leave_one_whole_result(tmp_path):
    out = tmp_path / "out"
    a = _spawn(["sweep", "triad", "n=1000,2000", "--out", out, "-q", "--workers", "1"],
               tmp_path)  # fmt: skip
    b = _spawn(["sweep", "add", "n=1000,3000", "--out", out, "-q", "--workers", "1"], tmp_path)
    for p in (a, b):
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    doc = json.loads((out / "results.json").read_text())
    kernel = doc["points"][0]["result"]["source"]["kernel"]
    csv = (out / "results.csv").read_text().splitlines()
    assert len(csv) == 3
    expect = {"triad": ["1000", "2000"], "add": ["1000", "3000"]}[kernel]
    assert [row.split(",")[0] for row in csv[1:]] == expect  # the csv of the same sweep
    assert kernel in (out / "report.html").read_text()
    assert not _leftovers(tmp_path)


def test_error_names_the_users_path_not_the_temporary(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    err = assert_cli_bad(capsys, ["sweep", "triad", "n=100,200", "--out", blocker], "--out")
    assert ".partial" not in err
    err = assert_cli_bad(capsys, ["trace", "triad", "n=10", "--out", blocker / "x.din"])
    assert ".partial" not in err and str(blocker / "x.din") in err


def test_stale_staging_directory_of_a_dead_process_is_removed(tmp_path):
    from hroof._base.outdir import output_dir

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()  # fmt: skip
    stale = tmp_path / f".out.{dead}.partial"
    stale.mkdir()
    (stale / "results.json").write_text("half")
    with output_dir(tmp_path / "out") as stage:
        (stage / "a.txt").write_text("a")
    assert not stale.exists() and (tmp_path / "out" / "a.txt").read_text() == "a"
    with pytest.raises(RuntimeError), output_dir(tmp_path / "out") as stage:
        (stage / "a.txt").write_text("b")
        raise RuntimeError("failed half-way")
    assert (tmp_path / "out" / "a.txt").read_text() == "a"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_full_disk_is_said_before_writing(capsys, tmp_path, monkeypatch):
    import shutil

    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(shutil, "disk_usage", lambda p: usage._replace(free=1000))
    assert_cli_bad(capsys, ["trace", "triad", "n=1000", "--out", tmp_path / "x.din"], "disk")
    assert not list(tmp_path.iterdir())


# -------------------------------------------------------------- family 5: silent answers
def _sweep_dir(tmp_path, capsys) -> Path:
    out = tmp_path / "sw"
    code, _, err = run_cli(capsys, "sweep", "triad", "n=64,128", "--machine", "zen4",
                           "--out", out, "-q", "--workers", "1")  # fmt: skip
    assert code == 0, err
    return out


def test_report_refuses_nan_and_negative_numbers(capsys, tmp_path):
    out = _sweep_dir(tmp_path, capsys)
    good = json.loads((out / "results.json").read_text())
    for path, value, word in [
        (("points", 0, "footprint"), float("nan"), "footprint"),
        (("points", 1, "footprint"), -4096, "footprint"),
        (("points", 0, "result", "levels", 0, "bytes"), -1, "bytes"),
        (("points", 0, "result", "flops"), float("inf"), "flops"),
        (("points", 1, "result", "memory", "bytes"), float("nan"), "bytes"),
    ]:
        doc = json.loads(json.dumps(good))
        node = doc
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps(doc))
        assert_cli_bad(capsys, ["report", bad], word, "point")


def test_report_takes_the_machine_from_results(capsys, tmp_path):
    out = _sweep_dir(tmp_path, capsys)
    (out / "report.html").unlink()
    code, text, err = run_cli(capsys, "report", out)
    assert code == 0, err
    assert "Zen 4" in (out / "report.html").read_text() or "zen" in text.lower()
    doc = json.loads((out / "results.json").read_text())
    doc["machine"] = "a machine nobody bundled"
    (out / "results.json").write_text(json.dumps(doc))
    assert_cli_bad(capsys, ["report", out], "not a bundled one", "--machine")


MACHINE_FILE = """\
[machine]
name = "fuzz"
[compute]
peak = 100.0
[[level]]
name = "L1"
size = "32 KiB"
ways = 8
line = 64
bandwidth = {bw}
[memory]
bandwidth = 20.0
"""


@pytest.mark.parametrize("bw", ["inf", "-inf", "nan", "0", "-1", '"fast"', "1e400", "true"])
def test_machine_file_numbers_are_finite(capsys, tmp_path, bw):
    f = tmp_path / "m.toml"
    f.write_text(MACHINE_FILE.format(bw=bw))
    assert_cli_bad(capsys, ["machine", "show", f], "bandwidth")
    assert_cli_bad(capsys, ["simulate", "triad", "n=100", "--machine", f], "bandwidth")


#: One hostile case or more for every subcommand, each a one-line refusal.
EVERY_COMMAND = [
    (["kernels", "extra"], ["unrecognized"]),
    (["trace", "triad", "n=-5", "--out", "x.npz"], ["at least"]),
    (["trace", "triad", "n=10", "--out", "x.txt"], [".npz"]),
    (["simulate", "triad", "n=1.5"], ["whole number"]),
    (["simulate", "triad", "n=nan"], ["whole number"]),
    (["simulate", "--trace", "missing.din"], ["missing.din"]),
    (["simulate", "triad", "--chunk-size", "0"], ["positive"]),
    (["simulate", "--trace", "x.din", "--access-size", "1e30"], ["access-size"]),
    (["sweep", "triad", "n=10..1"], ["backwards"]),
    (["sweep", "triad", "n=1..10:x1"], ["factor"]),
    (["sweep", "triad", "n=1e400"], ["out of range"]),
    (["report", "nowhere"], ["no sweep results"]),
    (["run", "triad", "n=99999999999999999999"], ["at most"]),
    (["demo", "--machine", "nonexistent-machine"], ["nonexistent-machine"]),
    (["machine", "show", "nonexistent-machine"], ["nonexistent-machine"]),
    (["machine", "detect", "--cpuinfo", "/nonexistent"], ["--cpuinfo", "no such file"]),
    (["machine", "detect", "--sysfs", "/nonexistent"], ["not a directory"]),
    (["energy", "triad", "n=1e400", "--machine", "i7-950"], ["out of range"]),
    (["spmv-blocking", "--r", "0"], []),
    (["table", "--n", "inf"], []),
    (["mrc", "triad", "n=10", "--sample", "1e400"], ["--sample"]),
    (["mrc", "--trace", "x.din", "--chunk-size", "1e12"], ["--chunk-size"]),
    (["gemm", "128", "128", "128", "--tile", "1000000x1000000"], ["larger than C"]),
    (["gemm", "128", "128", "128", "--tile", "0x8"], ["tile"]),
    (["gemm", "1e400", "8", "8"], []),
    (["network", "nonexistent-net"], []),
    (["coalesce", "--stride", "-1"], []),
    (
        [
            "mwp",
            "--mem-latency",
            "nan",
            "--departure-delay",
            "4",
            "--comp-cycles",
            "1",
            "--mem-cycles",
            "1",
            "--warps",
            "8",
        ],
        [],
    ),
    (
        [
            "mwp",
            "--mem-latency",
            "400",
            "--departure-delay",
            "4",
            "--comp-cycles",
            "1",
            "--mem-cycles",
            "1",
            "--warps",
            "0",
        ],
        [],
    ),
]


@pytest.mark.parametrize("argv,words", EVERY_COMMAND, ids=lambda v: " ".join(v or ["-"])[:50])
def test_every_command_refuses_in_one_line(capsys, tmp_path, monkeypatch, argv, words):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.din").write_text("0 40 8\n")
    t0 = time.perf_counter()
    assert_cli_bad(capsys, argv, *words)
    assert time.perf_counter() - t0 < 20


# -------------------------------------------------------------------- property-based cases
_WORDS = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.sampled_from(["nan", "inf", "-inf", "1e400", "1e-400", "1.5", "0x10", "1,000", "",
                     "1e18", "9223372036854775808", "48 KiB", "-0", "1_0", "ß", "1e6"]),
    st.text(max_size=6),
)  # fmt: skip


@settings(max_examples=examples(150), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(kernel=st.sampled_from(["triad", "stencil7", "gemm", "dgemv", "spmv", "copy"]),
       key=st.sampled_from(["n", "m", "k", "rows", "nnz_per_row", "dof", "align", "gap",
                            "ti", "band"]),
       value=_WORDS)  # fmt: skip
def test_any_parameter_binds_or_refuses(kernel, key, value):
    """Binding never raises anything but a HroofError, never allocates past the limit."""
    os.environ[MEMORY_ENV] = str(256 << 20)
    try:
        get_kernel(kernel).bind(**{key: value})
    except HroofError as exc:
        assert "\n" not in str(exc)
    finally:
        os.environ.pop(MEMORY_ENV, None)


@settings(max_examples=examples(100), deadline=None)
@given(values=st.lists(st.sampled_from(["1..1e9", "1..10", "1..1e4:x1.01", "5", "1e3..1e9:+1",
                                        "2..2e18:x2", "a", "1..1e300"]),
                       min_size=1, max_size=3))  # fmt: skip
def test_any_grid_is_counted_before_it_is_built(values):
    from hroof.studies.sweep import expand_grid

    keys = ["n", "align", "gap"][: len(values)]
    t0 = time.perf_counter()
    try:
        points = expand_grid("triad", dict(zip(keys, values, strict=True)))
        assert len(points) <= 10_000
    except HroofError as exc:
        assert "\n" not in str(exc)
    assert time.perf_counter() - t0 < 5


@settings(max_examples=examples(100), deadline=None)
@given(
    header=st.tuples(*[st.integers(-5, 10**13)] * 3),
    entries=st.lists(st.tuples(st.integers(-2, 12), st.integers(-2, 12)), max_size=5),
)
def test_any_mtx_reads_or_refuses(tmp_path_factory, header, entries):
    from hroof.traces.mtx import read_mtx

    path = tmp_path_factory.mktemp("mtx") / "m.mtx"
    body = "".join(f"{i} {j}\n" for i, j in entries)
    _write_mtx(path, " ".join(map(str, header)) + "\n", body)
    os.environ[MEMORY_ENV] = str(256 << 20)
    try:
        nrows, _ncols, rowptr, col = read_mtx(path)
        assert len(rowptr) == nrows + 1 and len(col) == rowptr[-1] <= header[2]
    except HroofError as exc:
        assert "\n" not in str(exc)
    finally:
        os.environ.pop(MEMORY_ENV, None)


@settings(max_examples=examples(200), deadline=None)
@given(
    value=st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(-(2**80), 2**80),
        st.booleans(),
        st.text(max_size=3),
    )
)
def test_guards_accept_only_what_they_promise(value):
    try:
        x = check_finite(value, "x")
        assert np.isfinite(x)
    except ResourceError:
        pass
    try:
        n = check_int64(value, "n", minimum=None)
        assert -(2**63) <= n < 2**63 and isinstance(n, int)
    except ResourceError:
        pass


# -------------------------------------------------------------------- bad kernel files (issue 32)
_GOOD_DECLS = "double a[N][N], b[N][N];\ndouble s;\n"
#: (file text, KEY=VALUE words, words the one line names). Each is refused before anything
#: is simulated: exit 2, one line with the file, line and column where there is one.
BAD_KERNEL_FILES = [
    # unsupported statements and constructs
    (
        _GOOD_DECLS + "for (int i = 1; i < N; i++)\n  if (s) b[i][0] = a[i][0];\n",
        ["N=8"],
        ["bad.c:4:3", "If", "outside the kernel-file subset"],
    ),
    (
        _GOOD_DECLS + "for (int i = 0; i < N; i++)\n  b[i][0] = sqrt(a[i][0]);\n",
        ["N=8"],
        ["bad.c:4:13", "function call"],
    ),
    (
        _GOOD_DECLS + "int i = 0;\nwhile (i < N) i++;\n",
        ["N=8"],
        ["bad.c:4:1", "before the loop nest"],
    ),
    (
        _GOOD_DECLS + "for (int i = 0; i < N; i++)\n  b[i][0] /= a[i][0];\n",
        ["N=8"],
        ["bad.c:4:3", "'/='"],
    ),
    (
        _GOOD_DECLS + "for (int i = N; i > 0; i--)\n  b[i][0] = a[i][0];\n",
        ["N=8"],
        ["bad.c:3", "loop condition"],
    ),
    (
        "#define N 100\n" + _GOOD_DECLS + "for (int i = 0; i < N; i++) s += a[i][i];\n",
        [],
        ["bad.c:1:1", "#define", "NAME=VALUE"],
    ),
    (
        "double *p;\nfor (int i = 0; i < N; i++) p[i] = 0.0;\n",
        ["N=8"],
        ["bad.c:1", "declaration of p"],
    ),
    (
        _GOOD_DECLS + "for (int i = 0; i < N; i++)\n  b[i][0] = a[i][0]\n",
        ["N=8"],
        ["bad.c: at the end of the file", "not valid C"],
    ),
    (
        _GOOD_DECLS + "for (int i = 0; i < N; i++)\n  b[i][0] = ;\n",
        ["N=8"],
        ["bad.c:4:13", "not valid C"],
    ),
    # non-affine indices and bounds
    (
        _GOOD_DECLS + "for (int i = 0; i < N; i++)\n  for (int j = 0; j < N; j++)\n"
        "    b[i][j] = a[i*j][0];\n",
        ["N=8"],
        ["bad.c:5:17", "non-affine index", "i * j"],
    ),
    (
        _GOOD_DECLS + "for (int i = 0; i < N; i++)\n  b[i][0] = a[i/2][0];\n",
        ["N=8"],
        ["bad.c:4:15", "non-affine", "'/'"],
    ),
    (
        _GOOD_DECLS + "for (int i = 0; i < N; i++)\n  b[i][0] = a[b[i][0]][0];\n",
        ["N=8"],
        ["non-affine", "array element"],
    ),
    # constants: unknown, missing
    (
        _GOOD_DECLS + "for (int i = 0; i < N; i++) b[i][0] = a[i][0];\n",
        ["N=8", "M=4"],
        ["bad.c uses no constant 'M'", "its constants: N"],
    ),
    (
        _GOOD_DECLS + "for (int i = 0; i < N; i++) b[i][0] = a[i][0];\n",
        [],
        ["constant N not given", "N=VALUE"],
    ),
    (_GOOD_DECLS + "for (int i = 0; i < N; i++) b[i][0] = a[i][0];\n", ["N=ten"], ["N"]),
    # out of the declared bounds at the given sizes
    (
        _GOOD_DECLS + "for (int i = 0; i < N; i++)\n  b[i][0] = a[i+1][0];\n",
        ["N=8"],
        ["bad.c:4:13", "a[i + 1][0] is out of bounds", "reaches 8", "0..7"],
    ),
    (
        _GOOD_DECLS + "for (int i = 0; i <= N; i++)\n  b[i][0] = a[0][i];\n",
        ["N=8"],
        ["bad.c:4:13", "a[0][i] is out of bounds", "reaches 8"],
    ),
    (
        _GOOD_DECLS + "for (int i = 0; i < N; i++)\n  b[i][0] = a[i-1][0];\n",
        ["N=8"],
        ["a[i - 1][0] is out of bounds", "reaches -1"],
    ),
    (
        _GOOD_DECLS + "for (int i = 0; i < N; i++) b[i][0] = a[i][0];\n",
        ["N=0"],
        ["bad.c:1", "dimension 1 has size 0"],
    ),
]


@pytest.mark.parametrize("command", ["simulate", "trace", "sweep"])
@pytest.mark.parametrize("text,words,expect", BAD_KERNEL_FILES,
                         ids=[f"bad{i}" for i in range(len(BAD_KERNEL_FILES))])  # fmt: skip
def test_bad_kernel_files_refuse_in_one_line(capsys, tmp_path, monkeypatch, command, text,
                                             words, expect):  # fmt: skip
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.c").write_text(text)
    argv = {"simulate": ["simulate", "bad.c", *words],
            "trace": ["trace", "bad.c", *words, "--out", "out.npz"],
            "sweep": ["sweep", "bad.c", *words, "--out", "sw"]}[command]  # fmt: skip
    if command == "sweep" and not words:
        argv.append("flops=1,2")
    assert_cli_bad(capsys, argv, *expect)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.c"]  # nothing written


def test_missing_kernel_file_is_one_line(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert_cli_bad(capsys, ["simulate", "nope.c", "N=4"], "kernel file nope.c: no such file")


@pytest.mark.parametrize(("file", "words", "expect"), [
    ("3d-7pt.c", ["N=1e6"], ["walking the rows of", "would take about"]),
    ("triad.c", ["N=1e15"], ["simulating", "would take about"]),
    ("matvec.c", ["M=1e12", "N=1e12"], ["beyond the 64-bit range"]),
])  # fmt: skip
def test_absurd_kernel_file_sizes_refused_before_the_walk(capsys, file, words, expect):
    path = Path(__file__).resolve().parent.parent / "examples" / "kernels" / file
    t0 = time.perf_counter()
    assert_cli_bad(capsys, ["simulate", str(path), *words], *expect)
    assert time.perf_counter() - t0 < 5
