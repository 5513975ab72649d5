"""Executors: the same results in-process, in the local pool and on a Dask LocalCluster;
a killed worker, an unreachable scheduler, a failing point; studies and their resume.

Every cluster binds to 127.0.0.1 only; one two-worker LocalCluster (one thread each)
serves the module, and the points are tiny, so this stays quick on a loaded 2-core host.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import socket
import time
from pathlib import Path

import pytest
from helpers import assert_cli_bad, run_cli

from hroof._base.errors import HroofError
from hroof.cachesim import hierarchy
from hroof.studies.executor import (
    DaskExecutor,
    InProcess,
    LocalPool,
    PointsFailed,
    open_executor,
    simulate_point,
)
from hroof.studies.study import KernelSpec, StudySpec, load_study, run_study
from hroof.studies.sweep import expand_grid, run_sweep

pytest.importorskip("distributed")

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "walls.toml"
SMALL = hierarchy(
    {"name": "L1", "size": "2 KiB", "ways": 2},
    {"name": "L2", "size": "16 KiB", "ways": 4},
    name="small",
)

#: A Dask LocalCluster starts for these: the full suite (make test) runs them, the fast
#: lane does not.
pytestmark = pytest.mark.slow


def counters(result) -> dict:
    """A result's document without its wall-clock timings: every counter, every AI."""
    d = result.to_dict()
    d.pop("timing", None)
    return d


@pytest.fixture(scope="module")
def cluster():
    """A two-worker LocalCluster (processes, one thread each) on 127.0.0.1."""
    ex = DaskExecutor("local", workers=2, timeout=60)
    try:
        assert all(addr.startswith("tcp://127.0.0.1:") for addr in ex.client.nthreads())
        assert ex.address.startswith("tcp://127.0.0.1:")
        yield ex
    finally:
        ex.close()


def test_a_local_cluster_listens_on_loopback_only(cluster):
    psutil = pytest.importorskip("psutil")
    me = psutil.Process()
    procs = [me, *me.children(recursive=True)]
    listening = []
    for proc in procs:
        try:
            conns = proc.net_connections(kind="inet")
        except (psutil.Error, OSError):
            continue
        listening += [c.laddr.ip for c in conns if c.status == psutil.CONN_LISTEN]
    assert listening  # the scheduler at least
    assert set(listening) == {"127.0.0.1"}, listening


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_sweep_on_a_local_cluster_equals_local_runs_counter_for_counter(cluster):
    grid = expand_grid("stencil7", {"n": "4..32:x2", "pad_row": "0,1"})
    home = run_sweep("stencil7", grid, SMALL, executor=InProcess(), use_cache=False)
    pool = run_sweep("stencil7", grid, SMALL, executor=LocalPool(2), use_cache=False)
    dask = run_sweep("stencil7", grid, SMALL, executor=cluster, use_cache=False)
    assert len(home) == len(grid) == 8
    for a, b, c in zip(home, pool, dask, strict=True):
        assert a.params == b.params == c.params
        assert a.footprint == b.footprint == c.footprint
        assert counters(a.result) == counters(b.result) == counters(c.result)
    assert home[0].result.levels[0].misses > 0  # something was simulated


def test_cluster_results_are_cached_by_the_client(cluster, tmp_path, monkeypatch):
    monkeypatch.setenv("HROOF_CACHE_DIR", str(tmp_path))
    grid = expand_grid("triad", {"n": "64,128"})
    first = run_sweep("triad", grid, SMALL, executor=cluster)
    assert [p.cached for p in first] == [False, False]
    assert len(list(tmp_path.glob("*.json"))) == 2  # written here, by the client
    again = run_sweep("triad", grid, SMALL, executor=cluster)
    assert [p.cached for p in again] == [True, True]
    assert [counters(p.result) for p in again] == [counters(p.result) for p in first]


def test_a_point_that_fails_on_a_worker_is_named_and_the_others_finish(cluster):
    argsets = [("triad", {"n": 64}, SMALL, {}), ("triad", {"n": 0}, SMALL, {}),
               ("triad", {"n": 96}, SMALL, {})]  # fmt: skip
    outs = sorted(cluster.run(simulate_point, argsets), key=lambda o: o.index)
    assert [o.ok for o in outs] == [True, False, True]
    assert "n must be at least 1" in outs[1].error
    assert outs[0].value["source"]["params"]["n"] == 64
    assert outs[0].value["schema"] == "hroof.result/1"  # results travel as documents


def test_study_names_failed_points_exits_1_and_keeps_the_rest(
    cluster, tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("HROOF_SCHEDULER", cluster.address)  # the environment names it
    out = tmp_path / "s"
    code, stdout, err = run_cli(capsys, "study", "--kernel", "triad n=0,64,128",
                                "--machine", "teaching", "--out", out, "-q")  # fmt: skip
    assert code == 1, err
    assert "1 of 3 points failed" in err and "triad n=0" in err
    assert "Traceback" not in err
    doc = json.loads((out / "study.json").read_text())
    assert doc["schema"] == "hroof.study/1"
    assert [p["status"] for p in doc["points"]] == ["failed", "ok", "ok"]
    assert "Dask scheduler" in stdout and "triad n=0" in stdout
    rows = list(csv.DictReader((out / "study.csv").open()))
    assert {r["status"] for r in rows} == {"ok", "failed"}
    assert not (out / "study.partial.csv").exists()


def test_unreachable_scheduler_is_one_line_naming_it_before_any_work(capsys, tmp_path,
                                                                      monkeypatch):  # fmt: skip
    monkeypatch.setenv("HROOF_SCHEDULER_TIMEOUT", "2")
    monkeypatch.setenv("HROOF_CACHE_DIR", str(tmp_path / "cache"))
    address = f"tcp://127.0.0.1:{free_port()}"
    assert_cli_bad(capsys, ["sweep", "triad", "n=64,128", "--scheduler", address], address)
    monkeypatch.setenv("HROOF_SCHEDULER", address)
    assert_cli_bad(capsys, ["study", "--kernel", "triad n=64", "--out", tmp_path / "s"], address)
    assert not (tmp_path / "cache").exists() or not list((tmp_path / "cache").glob("*.json"))
    assert not (tmp_path / "s" / "study.json").exists()
    assert_cli_bad(capsys, ["sweep", "triad", "n=64", "--scheduler", "nohost"], "tcp://HOST:PORT")


def test_open_executor_defaults_to_the_local_pool(monkeypatch):
    assert isinstance(open_executor(None), LocalPool)
    assert open_executor(None, workers=3).slots == 3
    monkeypatch.setenv("HROOF_SCHEDULER", "")
    assert isinstance(open_executor(None), LocalPool)


class Counting(InProcess):
    """In-process, counting the points it was given."""

    def __init__(self):
        self.ran = []

    def run(self, fn, argsets):
        for out in super().run(fn, argsets):
            self.ran.append(argsets[out.index][1]["n"])
            yield out


def test_interrupted_study_resumes_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HROOF_CACHE_DIR", str(tmp_path))
    spec = StudySpec("t", (KernelSpec("stencil7", {"n": "4..32:x2"}),
                           KernelSpec("triad", {"n": "64,128"})), ("teaching",))  # fmt: skip
    seen = []

    def stop_after_three(n):
        seen.append(n)
        if len(seen) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_study(spec, InProcess(), progress=stop_after_three)
    assert len(list(tmp_path.glob("*.json"))) == 3
    again = Counting()
    streamed = []
    points, _ = run_study(spec, again, on_point=streamed.append)
    assert len(again.ran) == 3  # 6 points, 3 finished before the interrupt
    assert sum(p.cached for p in points) == 3 and all(p.ok for p in points)
    assert sorted(p.index for p in streamed) == list(range(6))
    fresh, _ = run_study(spec, InProcess(), use_cache=False)
    assert [counters(p.result) for p in points] == [counters(p.result) for p in fresh]


def test_killed_worker_mid_study_gives_identical_results(cluster):
    spec = StudySpec("kill", (KernelSpec("stencil7", {"n": "24..48:+4"}),), ("teaching",))
    reference, _ = run_study(spec, InProcess(), use_cache=False)
    client = cluster.client
    pids = client.run(os.getpid)
    killed = []

    def kill_one_busy_worker(_n):
        if killed:
            return
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            busy = [w for w, tasks in client.processing().items() if tasks and w in pids]
            if busy:
                os.kill(pids[busy[0]], signal.SIGKILL)
                killed.append(pids[busy[0]])
                return
            time.sleep(0.01)

    points, _ = run_study(spec, cluster, use_cache=False, progress=kill_one_busy_worker)
    assert killed, "no worker was busy: the study finished too fast to test"
    assert all(p.ok for p in points), [p.error for p in points if not p.ok]
    assert [counters(p.result) for p in points] == [counters(p.result) for p in reference]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(client.nthreads()) < 2:
        time.sleep(0.2)  # the nanny restarts the worker for the tests after this one
    assert killed[0] not in client.run(os.getpid).values()


def test_cli_sweep_and_example_study_on_scheduler_local(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HROOF_CACHE_DIR", str(tmp_path / "cache"))
    code, out, err = run_cli(capsys, "sweep", "stencil7", "n=8..32:x2", "--scheduler", "local",
                             "--workers", "2", "--machine", "teaching", "--json")  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    assert [p["params"]["n"] for p in doc["points"]] == [8, 16, 32]
    spec = load_study(EXAMPLE)
    assert spec.name == "walls" and len(spec.machines) == 2
    # the example's grid on one of its machines (half the points: a quicker test)
    code, out, err = run_cli(capsys, "study", EXAMPLE, "--scheduler", "local", "--workers", "2",
                             "--machine", "zen4", "--out", tmp_path / "walls", "-q")  # fmt: skip
    assert code == 0, err
    assert "LocalCluster tcp://127.0.0.1:" in out
    doc = json.loads((tmp_path / "walls" / "study.json").read_text())
    assert doc["total"] == 9 and doc["failed"] == 0
    walls = {(w["kernel"], w["machine"], w["level"]) for w in doc["walls"]}
    assert walls == {("stencil7", "zen4", "L1"), ("dgemv", "zen4", "L1")}
    assert (tmp_path / "walls" / "report.md").read_text().startswith("# hroof study: walls")


def test_points_failed_message_names_points():
    exc = PointsFailed([("triad n=0", "bad"), ("triad n=-1", "worse")], 5)
    assert str(exc) == "2 of 5 points failed: triad n=0: bad; triad n=-1: worse"


def no_timing(doc):
    """A JSON document without any wall-clock field (``timing``)."""
    if isinstance(doc, dict):
        return {k: no_timing(v) for k, v in doc.items() if k != "timing"}
    if isinstance(doc, list):
        return [no_timing(v) for v in doc]
    return doc


@pytest.mark.parametrize(
    "argv",
    [
        ["spmv-blocking", "poisson2d", "n=12", "--blocks", "2x2", "--machine", "teaching"],
        ["energy", "triad", "n=64,256", "--machine", "i7-950"],
        ["table", "--kernel", "daxpy", "stencil7", "--n", "4096", "--simulate"],
    ],
    ids=["spmv-blocking", "energy-sweep", "table-simulate"],
)
def test_other_multi_point_commands_equal_on_the_cluster(cluster, capsys, monkeypatch, argv):
    local = ["--workers", "1", "--no-cache"] if argv[0] != "table" else []
    code, home, err = run_cli(capsys, *argv, "--json", *local)
    assert code == 0, err
    monkeypatch.setenv("HROOF_SCHEDULER", cluster.address)
    from distributed import get_task_stream

    with get_task_stream(cluster.client) as stream:
        code, there, err = run_cli(capsys, *argv, "--json", *local[2:])
    assert code == 0, err
    assert stream.data, "nothing ran on the cluster"
    assert no_timing(json.loads(there)) == no_timing(json.loads(home))


def test_bad_study_files_are_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\nmachine = ["teaching"]\n')
    assert_cli_bad(capsys, ["study", bad], "machine", "machines")
    bad.write_text('[[kernel]]\nname = "stencil7"\nparams = { size = "8..16" }\n')
    assert_cli_bad(capsys, ["study", bad], "size")
    assert_cli_bad(capsys, ["study"], "no kernels")
    assert_cli_bad(capsys, ["study", "--kernel", "stencil7 n8"], "KEY=VALUES")


def test_workers_running_another_simulator_are_refused(cluster, monkeypatch):
    from hroof.studies import cache

    monkeypatch.setattr(cache, "code_fingerprint", lambda: "not-this-code")
    with pytest.raises(HroofError, match="another version of hroof's simulator"):
        DaskExecutor(cluster.address, timeout=30)


def test_a_scheduler_without_workers_is_named():
    import distributed

    with distributed.LocalCluster(n_workers=0, host="127.0.0.1", dashboard_address=None,
                                  scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}
                                  ) as empty:  # fmt: skip
        with pytest.raises(HroofError, match="has no workers") as info:
            DaskExecutor(empty.scheduler_address, timeout=1)
        assert empty.scheduler_address in str(info.value)


def test_default_paths_never_import_dask(tmp_path):
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from hroof.cli import main\n"
        f"assert main(['sweep', 'triad', 'n=64,128', '--workers', '1', '-q']) == 0\n"
        f"assert main(['study', '--kernel', 'triad n=64,128', '--workers', '1', '-q', "
        f"'--out', {str(tmp_path / 's')!r}]) == 0\n"
        "heavy = sorted(m for m in ('distributed', 'dask') if m in sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    env = {**os.environ, "HROOF_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("HROOF_SCHEDULER", None)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
