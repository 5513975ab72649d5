"""``hroof run`` and ``hroof sweep --measure``: structure and errors, never measured values."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import assert_cli_bad as assert_bad
from helpers import run_cli as run

from hroof.studies.sweep import load_sweep
from hroof.traces import Kernel, Param, plan_kernel, register_kernel
from hroof.traces.kernels import unregister_kernel

FAST = ["--min-time", "0", "--repeats", "2", "-q"]


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HROOF_CACHE_DIR", str(tmp_path / "cache"))


def test_run_table(capsys):
    code, out, err = run(capsys, "run", "triad", "n=256", *FAST)
    assert code == 0, err
    assert "triad n=256" in out
    for word in ("GFLOP/s", "compulsory bandwidth", "core bandwidth", "median", "IQR",
                 "512 flops a run", "warm-up"):  # fmt: skip
        assert word in out, word


def test_run_json(capsys):
    code, out, _ = run(capsys, "run", "stencil7", "n=6", "bj=2", "--json", *FAST)
    assert code == 0
    doc = json.loads(out)
    plan = plan_kernel("stencil7", n=6, bj=2)
    assert doc["schema"] == "hroof.measurement/1"
    assert doc["source"] == {"kernel": "stencil7", "params": plan.params}
    assert doc["flops"] == plan.flops and doc["footprint_bytes"] == plan.footprint
    assert doc["core_bytes"] == plan.accesses * 8
    t = doc["timing"]
    assert t["repeats"] >= 2 and t["warmup"] == 1
    assert t["min_s"] <= t["q1_s"] <= t["median_s"] <= t["q3_s"] <= t["max_s"]
    assert doc["gflop_s_min"] <= doc["gflop_s_q1"] <= doc["gflop_s"] <= doc["gflop_s_q3"]
    assert doc["gflop_s_q3"] <= doc["gflop_s_max"]
    assert "machine" not in doc


def test_run_predict_against_a_machine(capsys):
    code, out, _ = run(capsys, "run", "stencil7", "n=8", "--machine", "skylake-sp", "--predict",
                       "--json", *FAST)  # fmt: skip
    assert code == 0
    doc = json.loads(out)["machine"]
    assert doc["name"].startswith("Skylake-SP")
    c = doc["compulsory_bound"]
    assert c["ai"] == pytest.approx(plan_kernel("stencil7", n=8).flops /
                                    plan_kernel("stencil7", n=8).footprint)  # fmt: skip
    assert c["bound_gflop_s"] == pytest.approx(
        min(c["peak_gflop_s"], c["ai"] * c["bandwidth_gb_s"])
    )
    p = doc["predicted"]
    assert p["measured_over_predicted"] == pytest.approx(
        p["measured_gflop_s"] / p["predicted_gflop_s"]
    )
    assert p["verdict"]
    code, out, _ = run(capsys, "run", "stencil7", "n=8", "--machine", "skylake-sp", "--predict",
                       *FAST)  # fmt: skip
    assert "measured / predicted" in out and "a model" in out


def test_run_against_the_measured_host_says_so(capsys, tmp_path, monkeypatch):
    from hroof.machine.catalog import bundled_machines

    host = tmp_path / "host.toml"
    host.write_text(Path(bundled_machines()["skylake-sp"]).read_text())
    monkeypatch.setenv("HROOF_HOST_MACHINE", str(host))
    code, out, _ = run(capsys, "run", "triad", "n=64", "--machine", "host", *FAST)
    assert code == 0 and "(this host:" in out and "a model" not in out
    code, out, _ = run(capsys, "run", "triad", "n=64", "--machine", str(host), *FAST)
    assert code == 0 and "(this host:" in out
    code, out, _ = run(capsys, "run", "triad", "n=64", "--machine", "skylake-sp", *FAST)
    assert code == 0 and "a model" in out and "this host:" not in out
    sweep = ["sweep", "triad", "n=64,128", "--workers", "1", "--measure", "--min-time", "0",
             "-q", "--machine"]  # fmt: skip
    code, out, _ = run(capsys, *sweep, "host")
    text = " ".join(out.split())
    assert code == 0 and "this host's measured figures" in text and "not this host" not in text
    code, out, _ = run(capsys, *sweep, "skylake-sp")
    text = " ".join(out.split())
    assert code == 0 and "which is not this host" in text


@pytest.mark.parametrize(
    "argv, words",
    [
        (["run", "triadd"], ["unknown kernel", "did you mean 'triad'"]),
        (["run", "triad", "m=4"], ["no parameter 'm'"]),
        (["run", "triad", "n=x"], ["must be a whole number"]),
        (["run", "stencil7", "n=4", "bk=9"], ["bk must be at most"]),
        (["run", "triad", "--min-time", "-1"], ["seconds"]),
        (["run", "triad", "--predict", "--machine", "generic"], ["bandwidth", "--predict"]),
        (["run", "triad", "--machine", "nosuch"], ["nosuch"]),
    ],
)
def test_run_errors(capsys, argv, words):
    assert_bad(capsys, argv, *words)


def test_run_kernel_without_native_twin(capsys):
    register_kernel(Kernel("traced_only", "test", (Param("n", 4, "elements"),),
                           lambda p: plan_kernel("triad", n=p["n"])))  # fmt: skip
    try:
        assert_bad(capsys, ["run", "traced_only"], "no native implementation")
        assert_bad(capsys, ["sweep", "traced_only", "n=4,8", "--measure", "-q"],
                   "no native implementation")  # fmt: skip
    finally:
        unregister_kernel("traced_only")


@pytest.mark.slow
def test_sweep_measure(capsys, tmp_path):
    out_dir = tmp_path / "sw"
    argv = ["sweep", "stencil7", "n=8,16", "--workers", "1", "--machine", "skylake-sp",
            "--measure", "--min-time", "0", "-q"]  # fmt: skip
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    doc = json.loads(out)
    for p in doc["points"]:
        m = p["measured"]
        assert m["flops"] == p["result"]["flops"]
        assert m["gflop_s_min"] <= m["gflop_s"] <= m["gflop_s_max"]
        assert m["timing"]["repeats"] >= 5
    code, out, err = run(capsys, *argv, "--out", out_dir)
    assert code == 0, err
    assert "measured" in out and "predicted" in out and "verdict" in out
    rows = [line for line in out.splitlines() if line.split()[:1] in (["8"], ["16"])]
    assert len(rows) == 2 and all("near the roof" in r or "POOR" in r or "above the bound" in r
                                  for r in rows)  # fmt: skip
    points, _ = load_sweep(out_dir)
    assert all(p.measured and p.measured["gflop_s"] > 0 for p in points)
    page = (out_dir / "report.html").read_text()
    assert "measured / predicted" in page and "POOR" in page  # POOR is explained
    assert (out_dir / "measured.png").is_file()
    assert "measured_gflop_s" in (out_dir / "results.csv").read_text().splitlines()[0]


def test_sweep_without_measure_is_unchanged(capsys):
    code, out, _ = run(capsys, "sweep", "stencil7", "n=8,16", "--workers", "1", "--json", "-q")
    assert code == 0
    assert all("measured" not in p for p in json.loads(out)["points"])
    assert_bad(capsys, ["sweep", "stencil7", "n=8,16", "--min-time", "1"], "--measure")


# ----------------------------------------------------------------- verdicts and the plot
TEACH = {
    "machine": {"name": "teach"},
    "compute": {"peak": 40.0},
    "level": [
        {"name": "L1", "size": "4 KiB", "ways": 4, "bandwidth": 200.0},
        {"name": "L2", "size": "32 KiB", "ways": 8, "bandwidth": 100.0},
    ],
    "memory": {"bandwidth": 15.0},
}


@pytest.fixture
def synthetic():
    """A tiny sweep whose 'measured' values are set from the bound (0.3x, 0.8x, 1.5x), not
    measured: the verdicts and the plot are checked against known ratios."""
    from dataclasses import replace

    from hroof.machine.model import machine_from_dict
    from hroof.roofline.analysis import roofline
    from hroof.studies.sweep import expand_grid, run_sweep

    machine = machine_from_dict(TEACH)
    pts = run_sweep("stencil7", expand_grid("stencil7", {"n": "4,8,16"}), machine.hierarchy,
                    workers=1)  # fmt: skip
    out = []
    for p, f in zip(pts, (0.3, 0.8, 1.5), strict=True):
        b = roofline(p.result, machine).bound
        g = b * f
        out.append(replace(p, measured={"gflop_s": g, "gflop_s_min": g * 0.8,
                                        "gflop_s_max": g * 1.1, "gflop_s_q1": g * 0.9,
                                        "gflop_s_q3": g * 1.05}))  # fmt: skip
    return machine, out


def test_compare_regions(synthetic):
    from hroof.roofline.measured import compare

    machine, pts = synthetic
    cs = [compare(p.result, p.measured["gflop_s"], machine) for p in pts]
    assert [c.ratio for c in cs] == pytest.approx([0.3, 0.8, 1.5])
    assert [c.poor for c in cs] == [True, False, False]
    assert cs[0].verdict.startswith("POOR") and cs[1].verdict.startswith("near the roof")
    assert cs[2].region == "unattainable" and cs[2].verdict == "above the bound"


def test_plot_measured(synthetic):
    from hroof.plots import roofline as plots

    machine, pts = synthetic
    fig = plots.plot_measured(pts, machine, "n")
    (ax,) = fig.axes
    assert ax.get_xlabel() == "n" and ax.get_ylabel() == "performance (GFLOP/s)"
    labels = ax.get_legend_handles_labels()[1]
    assert "predicted bound (teach)" in labels
    assert "half the bound (poor below)" in labels
    assert "measured on this host (median, IQR)" in labels
    assert "measured: POOR (under half the bound)" in labels
    t = [x.get_text() for x in ax.texts]
    assert "0.30 POOR" in t and "0.80" in t and "1.50" in t
    carm = plots.plot_carm(pts, machine, param="n")
    assert "measured on this host" in carm.axes[0].get_legend_handles_labels()[1]


def test_measured_field_round_trips(synthetic, tmp_path):
    from hroof.studies.sweep import load_sweep, sweep_doc

    machine, pts = synthetic
    (tmp_path / "results.json").write_text(json.dumps(sweep_doc(pts, machine.name, [])))
    back, _ = load_sweep(tmp_path)
    assert [p.measured for p in back] == [p.measured for p in pts]


@pytest.mark.slow
def test_report_interrupted_leaves_no_partial_file(synthetic, tmp_path, monkeypatch):
    """Ctrl-C (or a full disk) while the report's figures are written: the files already
    renamed stay whole, and no temporary file is left behind."""
    from matplotlib.figure import Figure

    from hroof._base.errors import HroofError
    from hroof._base.files import replace_with
    from hroof.plots.report import write_report

    machine, pts = synthetic
    real, calls = Figure.savefig, []

    def savefig(self, fname, *args, **kwargs):
        if not hasattr(fname, "write"):  # a file, not the report's in-memory PNG
            calls.append(fname)
            if len(calls) == 2:
                Path(fname).write_bytes(b"half a figure")
                raise KeyboardInterrupt
        return real(self, fname, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", savefig)
    out = tmp_path / "report"
    with pytest.raises(KeyboardInterrupt):
        write_report(pts, machine, out, title="t")
    first = Path(calls[0]).name  # .NAME.PID.partial.EXT
    assert first.startswith(".") and f".{os.getpid()}.partial." in first
    assert sorted(p.name for p in out.iterdir()) == [first[1:].replace(
        f".{os.getpid()}.partial", "")]  # fmt: skip

    def full_disk(tmp):
        tmp.write_text("half")
        raise OSError(28, "No space left on device")

    with pytest.raises(HroofError, match=r"cannot write .*x\.html: No space left on device"):
        replace_with(out / "x.html", full_disk)
    assert not (out / "x.html").exists() and not (out / ".x.partial.html").exists()


def test_plot_measured_labels_a_narrow_range():
    """Measured and predicted within one decade, the top between 10 and 20 GFLOP/s: the
    y axis labels ticks up to near the highest point (a log axis labelled nothing
    between its power of ten, 10, and the next minor tick, 20)."""
    from dataclasses import replace

    from hroof.machine.model import machine_from_dict
    from hroof.plots import roofline as plots
    from hroof.roofline.analysis import roofline
    from hroof.studies.sweep import expand_grid, run_sweep

    scaled = {
        **TEACH,
        "compute": {"peak": 120.0},
        "memory": {"bandwidth": 45.0},
        "level": [{**lv, "bandwidth": 3 * lv["bandwidth"]} for lv in TEACH["level"]],
    }
    machine = machine_from_dict(scaled)
    pts = run_sweep("stencil7", expand_grid("stencil7", {"n": "4,8,16"}), machine.hierarchy,
                    workers=1)  # fmt: skip
    pts = [replace(p, measured={"gflop_s": roofline(p.result, machine).bound * f})
           for p, f in zip(pts, (1.0, 1.3, 1.6), strict=True)]  # fmt: skip
    ax = plots.plot_measured(pts, machine, "n").axes[0]
    ax.figure.canvas.draw()
    lo, hi = ax.get_ylim()
    top = max(p.measured["gflop_s"] for p in pts)
    assert hi / lo < 10 and 10 < top < 20, (lo, hi, top)
    shown = [float(t.get_text()) for t in ax.yaxis.get_ticklabels(which="both")
             if t.get_text() and lo <= t.get_position()[1] <= hi]  # fmt: skip
    assert len(shown) >= 3 and max(shown) >= top / 1.3, (shown, lo, hi, top)
