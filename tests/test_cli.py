"""The ``hroof`` command line: tables, JSON, the error contract, the progress bar.

Most tests call :func:`hroof.cli.main` in-process (the session fixture in
conftest.py has compiled the kernels already); one runs the console script in
a subprocess to prove the entry point works and prints no traceback.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import assert_cli_bad as assert_bad
from helpers import run_cli as run

import hroof
from hroof._base.progress import ENV_VAR, Progress, format_duration
from hroof.cli import format_bytes, format_result
from hroof.traces import write_din, write_npz

LINE = 64

# A 1-level, 2-set, direct-mapped cache: lines 0 and 2 share set 0.
TINY = """\
[machine]
name = "tiny"

[[level]]
name = "L1"
size = 128
ways = 1
line = 64
"""

TWO_LEVELS = """\
[machine]
name = "two levels"

[[level]]
name = "L1"
size = "1 KiB"
ways = 2
line = 64
bandwidth = 300.0

[[level]]
name = "L2"
size = "4 KiB"
ways = 4
line = 64

[memory]
name = "HBM"
"""


# --------------------------------------------------------------------------- helpers

#: The trace shipped with hroof: a 2D 5-point Jacobi stencil on a 48x48 grid, 5 loads and
#: 1 store per interior point (46 x 46 points), 4 adds and 1 multiply each.
EXAMPLE_TRACE = Path(hroof.__file__).parent / "data" / "example.din"
EXAMPLE_FLOPS = 46 * 46 * 5


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def trace(addrs, kinds=None, size=8):
    addr = np.asarray(addrs, dtype=np.uint64)
    kind = np.zeros(len(addr), np.uint8) if kinds is None else np.asarray(kinds, np.uint8)
    return addr, np.full(len(addr), size, np.uint32), kind


def write_lackey(path: Path, addrs, kinds) -> Path:
    letters = {0: "L", 1: "S"}
    lines = ["==123== Lackey, an example Valgrind tool"]
    for a, k in zip(addrs, kinds, strict=True):
        lines.append(f"I  {0x400000 + a:08x},4")
        lines.append(f" {letters[k]} {a:08x},8")
    path.write_text("\n".join(lines) + "\n")
    return path


def table_rows(out: str) -> dict[str, list[str]]:
    """The rows of the first (per-level) table, by their first cell."""
    rows = {}
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("level "))
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        cells = line.split()
        if cells[0] == "bytes:":
            break
        rows[cells[0]] = cells[1:]
    return rows


def sim_json(capsys, *argv) -> dict:
    code, out, err = run(capsys, "simulate", *argv, "--json")
    assert code == 0, err
    return json.loads(out)


@pytest.fixture
def tiny(tmp_path):
    return write(tmp_path / "tiny.toml", TINY)


@pytest.fixture
def two_levels(tmp_path):
    return write(tmp_path / "two.toml", TWO_LEVELS)


@pytest.fixture(autouse=True)
def no_forced_progress(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)


# A mixed trace: 40 loads and 20 stores over 30 lines, repeated twice.
MIXED_ADDRS = [(i * 7 % 30) * LINE + 8 * (i % 8) for i in range(60)] * 2
MIXED_KINDS = [1 if i % 3 == 2 else 0 for i in range(60)] * 2


@pytest.fixture
def mixed(tmp_path):
    """The same trace in all three formats."""
    t = trace(MIXED_ADDRS, MIXED_KINDS)
    write_npz(tmp_path / "mixed.npz", t)
    write_din(tmp_path / "mixed.din", t)
    write_lackey(tmp_path / "mixed.lackey", MIXED_ADDRS, MIXED_KINDS)
    return {fmt: tmp_path / f"mixed.{fmt}" for fmt in ("npz", "din", "lackey")}


# --------------------------------------------------------------------------- simulate
@pytest.mark.parametrize("fmt", ["npz", "din", "lackey"])
def test_simulate_table(capsys, mixed, two_levels, fmt):
    code, out, err = run(capsys, "simulate", "--trace", mixed[fmt], "--machine", two_levels)
    assert code == 0, err
    assert err == ""
    # (the table wraps a long path: pytest-xdist's temporary folders are longer)
    assert f"{mixed[fmt]} ({fmt})" in " ".join(out.split())
    assert "120 (80 loads, 40 stores" in out
    assert "two levels" in out and "L1 1 KiB 2-way 64 B lines, L2 4 KiB 4-way 64 B lines" in out
    rows = table_rows(out)
    assert list(rows) == ["L1", "L2", "HBM"]
    r = sim_json(capsys, "--trace", mixed[fmt], "--machine", two_levels)
    for lv in r["levels"]:
        assert rows[lv["name"]][0] == f"{lv['lookups']:,}"
        assert rows[lv["name"]][-2:] == format_bytes(lv["bytes"]).split()
    assert rows["HBM"] == format_bytes(r["memory"]["bytes"]).split()
    assert "Traffic to the next level down" in out
    assert "L1 -> L2" in out and "L2 -> HBM" in out
    assert all(len(line) <= 100 for line in out.splitlines())


def test_simulate_same_result_in_every_format(capsys, mixed, two_levels):
    results = [sim_json(capsys, "--trace", mixed[f], "--machine", two_levels) for f in mixed]
    strip = [{k: v for k, v in r.items() if k not in ("source", "timing")} for r in results]
    assert strip[0] == strip[1] == strip[2]
    assert [r["source"]["format"] for r in results] == ["npz", "din", "lackey"]


def test_simulate_json(capsys, mixed, two_levels):
    path = mixed["din"]
    r = sim_json(capsys, "--trace", path, "--machine", two_levels, "--flops", "1e3")
    assert r["schema"] == "hroof.result/1"
    assert r["source"] == {"trace": str(path), "format": "din"}
    assert r["flops"] == 1000
    assert r["accesses"] == 120
    assert [lv["name"] for lv in r["levels"]] == ["L1", "L2"]
    for lv in r["levels"]:
        assert lv["ai"] == pytest.approx(1000 / lv["bytes"])
        assert lv["hits"] + lv["misses"] == lv["lookups"]
        assert sum(lv["misses_by_class"].values()) == lv["misses"]
    assert r["levels"][0]["bytes"] == 120 * 8
    assert r["memory"]["name"] == "HBM"
    assert r["memory"]["ai"] == pytest.approx(1000 / r["memory"]["bytes"])


def test_simulate_json_without_flops(capsys, mixed):
    r = sim_json(capsys, "--trace", mixed["npz"])
    assert r["flops"] is None
    assert r["memory"]["ai"] is None
    assert all(lv["ai"] is None for lv in r["levels"])
    assert [lv["name"] for lv in r["levels"]] == ["L1", "L2", "L3"]  # the default machine


def test_table_with_and_without_flops(capsys, mixed, tiny):
    _, out, _ = run(capsys, "simulate", "--trace", mixed["din"], "--machine", tiny)
    assert "FLOP/B" not in out and "unknown (pass --flops N" in out
    _, out, _ = run(capsys, "simulate", "--trace", mixed["din"], "--machine", tiny, "--flops", 960)
    assert "FLOP/B" in out
    assert table_rows(out)["L1"][-1] == "1.00"  # 960 flops / (120 x 8 bytes)


def test_no_classify(capsys, mixed, two_levels):
    r = sim_json(capsys, "--trace", mixed["npz"], "--machine", two_levels, "--no-classify")
    assert r["options"]["classify"] is False
    assert all(lv["misses_by_class"] is None for lv in r["levels"])
    assert all(lv["traffic_below"] is None for lv in r["levels"])
    _, out, _ = run(capsys, "simulate", "--trace", mixed["npz"], "--no-classify")
    assert "misses not classified" in out
    assert "compulsory" not in out and "Traffic" not in out


def test_two_threads_same_counts(capsys, mixed, two_levels):
    one = sim_json(capsys, "--trace", mixed["npz"], "--machine", two_levels, "--no-classify")
    two = sim_json(
        capsys, "--trace", mixed["npz"], "--machine", two_levels, "--no-classify", "--threads", 2
    )
    assert one["levels"] == two["levels"] and one["memory"] == two["memory"]
    one = sim_json(capsys, "--trace", mixed["npz"], "--machine", two_levels)
    two = sim_json(capsys, "--trace", mixed["npz"], "--machine", two_levels, "--threads", 2)
    assert two["options"]["threads"] == 2 and one["options"]["threads"] == 1
    assert one["levels"] == two["levels"] and one["memory"] == two["memory"]
    assert two["levels"][1]["misses_by_class"] is not None
    assert_bad(capsys, ["simulate", "--trace", mixed["npz"], "--threads", 3], "--threads")


def test_no_flush_fewer_writebacks(capsys, tmp_path, tiny):
    path = tmp_path / "stores.din"
    write_din(path, trace([0, 64, 0, 64], kinds=[1, 1, 1, 1]))
    flushed = sim_json(capsys, "--trace", path, "--machine", tiny)
    steady = sim_json(capsys, "--trace", path, "--machine", tiny, "--no-flush")
    assert flushed["levels"][0]["writebacks"] == 2
    assert steady["levels"][0]["writebacks"] == 0
    assert steady["memory"]["bytes_written"] == 0
    assert flushed["memory"]["bytes_written"] == 2 * LINE


def test_exact_counts_compulsory(capsys, tmp_path):
    """Loads to 3 distinct lines (hex addresses), 7 loads, on a 4-line cache: 3 misses."""
    machine = write(tmp_path / "four.toml", "[[level]]\nsize = 256\nways = 2\n")
    path = write(tmp_path / "three.din", "0 0\n0 40\n0 80\n0 8\n0 48\n0 88\n0 10 8\n")
    r = sim_json(capsys, "--trace", path, "--machine", machine)
    (l1,) = r["levels"]
    assert r["accesses"] == l1["lookups"] == 7
    assert (l1["hits"], l1["misses"]) == (4, 3)
    assert l1["misses_by_class"] == {"compulsory": 3, "capacity": 0, "conflict": 0}
    assert l1["write_allocate_fills"] == l1["writebacks"] == 0
    assert r["memory"] == {"name": "DRAM", "bytes_read": 3 * LINE, "bytes_written": 0,
                           "bytes": 3 * LINE, "ai": None, "prefetch_bytes_read": 0}  # fmt: skip


def test_exact_counts_by_class(capsys, tmp_path, tiny):
    """Hand-checked 3C split on a 2-set direct-mapped cache (lines 0 and 2 share set 0)."""
    # 0 (comp), 2 (comp, evicts 0), 0 (conflict: a 2-line LRU cache holds 0 and 2),
    # 1 (comp), 4 (comp, set 0, evicts 0), 2 (capacity: LRU of 2 lines holds 1 and 4).
    lines = [0, 2, 0, 1, 4, 2]
    path = tmp_path / "classes.npz"
    write_npz(path, trace([n * LINE for n in lines]))
    r = sim_json(capsys, "--trace", path, "--machine", tiny)
    (l1,) = r["levels"]
    assert (l1["lookups"], l1["hits"], l1["misses"]) == (6, 0, 6)
    assert l1["misses_by_class"] == {"compulsory": 4, "capacity": 1, "conflict": 1}
    assert l1["traffic_below"]["compulsory"] == 4 * LINE
    assert r["memory"]["bytes_read"] == 6 * LINE
    # and the table says the same
    _, out, _ = run(capsys, "simulate", "--trace", path, "--machine", tiny)
    assert table_rows(out)["L1"][:4] == ["6", "0", "0.0", "6"]


def test_machine_file_and_name(capsys, mixed, two_levels):
    by_path = sim_json(capsys, "--trace", mixed["npz"], "--machine", two_levels)
    assert by_path["machine"] == "two levels"
    default = sim_json(capsys, "--trace", mixed["npz"], "--machine", "generic")
    assert default["machine"].startswith("generic")
    assert len(default["levels"]) == 3


def test_access_size_and_chunk_size(capsys, tmp_path, tiny):
    path = write(tmp_path / "nosize.din", "0 0\n0 28\n1 50 4\n")
    r = sim_json(capsys, "--trace", path, "--machine", tiny, "--access-size", 32)
    # 0..31 (line 0), 0x28..+31 = 40..71 (lines 0 and 1), 0x50 = 80..83 (line 1): 4 lookups
    assert r["core"]["bytes_loaded"] == 64
    assert r["core"]["bytes_stored"] == 4
    assert r["levels"][0]["lookups"] == 4
    chunked = sim_json(capsys, "--trace", path, "--machine", tiny, "--access-size", 32,
                       "--chunk-size", 1)  # fmt: skip
    assert chunked["levels"] == r["levels"]


def test_format_option_overrides_extension(capsys, tmp_path, tiny):
    path = write(tmp_path / "trace.txt", "0 0\n0 40\n")
    r = sim_json(capsys, "--trace", path, "--format", "DIN", "--machine", tiny)
    assert r["source"]["format"] == "din" and r["accesses"] == 2


@pytest.mark.parametrize("fmt", ["npz", "din"])
def test_empty_trace_is_not_an_error(capsys, tmp_path, fmt):
    path = tmp_path / f"empty.{fmt}"
    if fmt == "npz":
        write_npz(path, trace([]))
    else:
        path.write_text("")
    r = sim_json(capsys, "--trace", path, "--flops", 0)
    assert r["accesses"] == 0
    assert all(lv["lookups"] == lv["misses"] == lv["bytes"] == 0 for lv in r["levels"])
    assert r["memory"]["bytes"] == 0
    code, out, err = run(capsys, "simulate", "--trace", path)
    assert code == 0 and err == ""
    assert table_rows(out)["L1"][:4] == ["0", "0", "-", "0"]


# --------------------------------------------------------------------------- demo
@pytest.mark.slow
def test_demo_summary_and_report(capsys, tmp_path, monkeypatch):
    """The demo: stencil7 in steady state on the default machine, swept across the walls;
    the bound falls from wall to wall, every wall is beside its layer-condition prediction
    (the L3 ones with L2 + L3: the preset's L3 is exclusive), and the report embeds its
    figures. At n = 192 the exclusive L3 takes 24 bytes a point of clean victims, which
    ride along (its roof times the rest), so DRAM binds and the demo says so."""
    monkeypatch.setenv("HROOF_CACHE_DIR", str(tmp_path / "cache"))
    out_dir = tmp_path / "demo"
    code, out, err = run(capsys, "demo", "--out", out_dir, "--quiet")
    assert code == 0, err
    assert "stencil7 in steady state" in out and "Skylake-SP" in out
    rows = {ln.split()[0]: ln.split() for ln in out.splitlines() if ln[:1].isdigit()}
    assert rows["16"][-1] == "L2" and rows["48"][-1] == "L3" and rows["192"][-1] == "DRAM"
    assert float(rows["16"][4]) == 0.0  # steady state: DRAM bytes per point at n=16
    assert float(rows["192"][-2]) < float(rows["16"][-2])
    assert "the binding level goes L2 -> L3 -> DRAM (down the hierarchy)." in out
    assert float(rows["192"][3]) == pytest.approx(40.5, abs=0.1)  # L3 B/point, timed
    flat = " ".join(out.split())
    assert "clean lines L2 evicts into the exclusive L3 move too (up to 24.3 more" in flat
    for level, lo, hi, n in (("L1", 16, 32, 30), ("L2", 32, 48, 38), ("L3", 96, 128, 121),
                             ("L2", 128, 192, 179)):  # fmt: skip
        assert f"{level} ({'32.0 KiB' if level == 'L1' else ''}" in flat or level != "L1"
        assert f"between n={lo} and n={hi}" in flat
        assert f"predicts it after n={n} (inside the measured interval)" in flat
    assert "Left out (beyond n=192)" in flat and "n=964" in flat
    assert "capacity L2 + L3 = 28.5 MiB (L3 is exclusive" in flat
    assert "Cache-aware reading" in flat and "cannot say which level binds" in flat
    assert "n=192: Bound" in out and "What to optimise next:" in out
    page = (out_dir / "report.html").read_text()
    assert page.count("data:image/png;base64,") == 4
    for caption in ("The same runs in the hierarchical and the cache-aware roofline",
                    "Locality walls", "What to optimise next", "predicted: breaks after",
                    "steady state", "The miss ratio of the stream into L1 at n=64"):  # fmt: skip
        assert caption in page
    for name in ("roofline", "ai_vs_size", "mrc", "traffic"):
        assert (out_dir / f"{name}.png").stat().st_size > 10_000
        assert (out_dir / f"{name}.svg").is_file()
    assert not list(out_dir.glob(".*partial*"))
    # The walls from the cache-size axis: the miss-ratio curve's knees and the conditions.
    assert "Every L1 size at once" in out and "3D 135.1 KiB" in out
    assert (out_dir / "mrc.png").stat().st_size > 10_000


@pytest.mark.slow
def test_report_of_a_saved_sweep(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HROOF_CACHE_DIR", str(tmp_path / "cache"))
    saved = tmp_path / "sweep"
    argv = ["sweep", "stencil7", "n=8..32:x2", "--machine", "teaching", "--out", saved]
    assert run(capsys, *argv)[0] == 0
    (saved / "report.html").unlink(missing_ok=True)
    code, out, err = run(capsys, "report", saved, "--machine", "teaching")
    assert code == 0, err
    assert "report.html" in out and (saved / "report.html").is_file()
    # Without --machine the report takes the machine results.json names (issue 13).
    (saved / "report.html").unlink()
    code, out, err = run(capsys, "report", saved)
    assert code == 0, err
    assert (saved / "report.html").is_file()
    assert_bad(capsys, ["report", saved, "--machine", "skylake-sp"], "levels", "not those of")
    assert_bad(capsys, ["report", tmp_path / "nothing"], "no sweep results")
    bad = write(tmp_path / "bad.json", "{}")
    assert_bad(capsys, ["report", bad], "not a sweep")


def test_demo_needs_a_machine_with_figures(capsys, tmp_path):
    assert_bad(
        capsys,
        ["demo", "--machine", "generic", "--out", tmp_path / "d"],
        "has no L1 bandwidth",
        "compute peak",
        "hroof demo needs them",
    )


def test_demo_out_unwritable(capsys, tmp_path):
    blocker = write(tmp_path / "file", "not a directory")
    assert_bad(capsys, ["demo", "--out", blocker / "x"], "cannot write the report")


def test_wide_terminal_keeps_classes_in_the_main_table():
    from hroof.cachesim import simulate
    from hroof.machine.model import resolve_machine
    from hroof.traces import iter_trace

    machine = resolve_machine("generic")
    result = simulate(machine, iter_trace(EXAMPLE_TRACE), flops=EXAMPLE_FLOPS)
    narrow = format_result(result, machine, width=100)
    wide = format_result(result, machine, width=200)
    assert "Misses by class" in narrow and "Misses by class" not in wide
    head = [line for line in wide.splitlines() if line.startswith("level ")]
    assert "misses  compulsory  capacity  conflict" in head[0]
    assert max(len(line) for line in narrow.splitlines()) <= 100
    assert table_rows(wide)["L1"][4:7] == [
        f"{n:,}" for n in result.levels[0].misses_by_class.values()
    ]


# --------------------------------------------------------------------------- machine
def test_machine_show_generic(capsys):
    code, out, err = run(capsys, "machine", "show", "generic")
    assert code == 0, err
    assert "generic 3-level x86 core" in out
    assert "generic.toml" in out
    lines = {line.split()[0]: line.split() for line in out.splitlines() if line[:2] in ("L1", "L2")}
    assert lines["L1"][:7] == ["L1", "48", "KiB", "49,152", "12", "64", "B"]
    assert lines["L2"][6:9] == ["B", "2,048", "yes"]


def test_machine_show_file(capsys, two_levels):
    code, out, _ = run(capsys, "machine", "show", two_levels)
    assert code == 0
    assert "two levels" in out and str(two_levels) in out and "HBM" in out
    assert "300 GB/s" in out


def test_machine_list(capsys):
    code, out, _ = run(capsys, "machine", "list")
    assert code == 0
    names = [line.split()[0] for line in out.splitlines()]
    # the bundled machines in order, then the measured host's line
    assert names[-1] == "host" and names[:-1] == sorted(names[:-1])
    assert {"generic", "v100", "gtx1080ti"} <= set(names)
    assert "L1 48 KiB" in out


# --------------------------------------------------------------------------- help
def test_version_and_help(capsys):
    import hroof

    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.strip() == f"hroof {hroof.__version__}"
    code, out, _ = run(capsys, "--help")
    assert code == 0
    assert "examples:" in out and "hroof demo" in out
    for cmd in ("simulate", "machine", "demo"):
        assert cmd in out


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["simulate", "--help"], ["--access-size BYTES", "FLOP/byte", "--chunk-size N", "JSON"]),
        (["machine", "show", "--help"], ["bytes", "GB/s"]),
        (["demo", "--help"], ["report", "hroof-demo", "n=16..192", "steady state"]),
    ],
)
def test_subcommand_help(capsys, argv, words):
    code, out, _ = run(capsys, *argv)
    assert code == 0
    for word in words:
        assert word in out


def _subcommands(parser):
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield name, sub
                for inner, subsub in _subcommands(sub):
                    yield f"{name} {inner}", subsub


def test_every_help_is_wrapped(monkeypatch):
    """No command's --help has a line a terminal would fold (the table help once had one
    paragraph on a single 900-character line): descriptions are wrapped at 88 columns."""
    from hroof.cli.app import build_parser

    monkeypatch.setenv("COLUMNS", "80")
    names = []
    for name, sub in _subcommands(build_parser()):
        names.append(name)
        long = [line for line in sub.format_help().splitlines() if len(line) > 100]
        assert not long, f"hroof {name} --help: {long[0][:60]}... is {len(long[0])} columns"
    assert {"table", "simulate", "machine show", "mrc"} <= set(names)


# --------------------------------------------------------------------------- errors
def test_error_missing_trace(capsys, tmp_path):
    assert_bad(capsys, ["simulate", "--trace", tmp_path / "nope.din"], "not found", "nope.din")


def test_error_trace_is_directory(capsys, tmp_path):
    assert_bad(capsys, ["simulate", "--trace", tmp_path, "--format", "din"], "directory")


def test_error_unknown_extension(capsys, tmp_path):
    path = write(tmp_path / "trace.xyz", "0 0\n")
    assert_bad(capsys, ["simulate", "--trace", path], "trace.xyz", "format")


def test_error_missing_machine_file(capsys, mixed, tmp_path):
    missing = tmp_path / "nope.toml"
    assert_bad(capsys, ["simulate", "--trace", mixed["din"], "--machine", missing],
               "not found", "nope.toml")  # fmt: skip
    assert_bad(capsys, ["machine", "show", missing], "not found", "nope.toml")


def test_error_unknown_machine_lists_known(capsys, mixed):
    assert_bad(capsys, ["simulate", "--trace", mixed["din"], "--machine", "generc"],
               "unknown machine 'generc'", "did you mean 'generic'",
               "known: a100, generic")  # fmt: skip


@pytest.mark.parametrize("fmt", ["dinn", "csv"])
def test_error_unknown_format(capsys, mixed, fmt):
    assert_bad(capsys, ["simulate", "--trace", mixed["din"], "--format", fmt],
               "unknown trace format", fmt, "npz, din or lackey")  # fmt: skip


def test_error_malformed_din_line(capsys, tmp_path):
    path = write(tmp_path / "bad.din", "0 0 8\n1 40 8\n0 zz9 8\n0 80 8\n")
    err = assert_bad(capsys, ["simulate", "--trace", path, "--json"], "bad address", "'0 zz9 8'")
    assert f"{path}:3:" in err


def test_error_malformed_line_after_many_chunks_prints_nothing(capsys, tmp_path):
    path = tmp_path / "late.din"
    path.write_text("0 40 8\n" * 1000 + "7 0 8\n")
    err = assert_bad(capsys, ["simulate", "--trace", path, "--chunk-size", 10], "late.din:1001:")
    assert "label 7" in err


def test_error_npz_missing_array(capsys, tmp_path):
    path = tmp_path / "partial.npz"
    np.savez(path, addr=np.zeros(3, np.uint64), size=np.full(3, 8, np.uint32))
    assert_bad(capsys, ["simulate", "--trace", path], "partial.npz", "missing", "kind")


def test_error_npz_mismatched_lengths(capsys, tmp_path):
    path = tmp_path / "uneven.npz"
    np.savez(path, addr=np.zeros(3, np.uint64), size=np.full(2, 8, np.uint32),
             kind=np.zeros(3, np.uint8))  # fmt: skip
    assert_bad(capsys, ["simulate", "--trace", path], "uneven.npz", "different lengths")


def _level(**changes) -> str:
    fields = {"name": '"L1"', "size": "1024", "ways": "2", "line": "64", **changes}
    return "[[level]]\n" + "".join(f"{k} = {v}\n" for k, v in fields.items() if v is not None)


@pytest.mark.parametrize(
    ("toml", "words"),
    [
        (_level(line="48"), ["line size 48", "power of two"]),
        (
            _level() + _level(name='"L2"', size="4096", line="128"),
            ["one line size", "L1 64 B", "L2 128 B"],
        ),
        (_level(size="1000"), ["capacity 1000", "whole sets"]),
        (_level(size="0"), ["L1 size", "positive"]),
        (_level(size="-1024"), ["L1 size", "positive"]),
        (_level(ways="0"), ["L1 ways", "positive"]),
        (_level(ways="-2"), ["L1 ways", "positive"]),
        (_level(ways=None, wayz="2"), ["unknown key 'wayz'", "did you mean 'ways'"]),
        ("[[level]\nname = 'L1'\n", ["not valid TOML"]),
        ("[machine]\nname = 'x'\n", ["no [[level]]"]),
    ],
    ids=[
        "line-not-pow2",
        "mixed-lines",
        "partial-sets",
        "zero-size",
        "negative-size",
        "zero-ways",
        "negative-ways",
        "unknown-key",
        "bad-toml",
        "no-levels",
    ],
)
def test_error_bad_machine_file(capsys, tmp_path, mixed, toml, words):
    path = write(tmp_path / "bad.toml", toml)
    err = assert_bad(capsys, ["machine", "show", path], *words)
    assert "bad.toml" in err
    err2 = assert_bad(capsys, ["simulate", "--trace", mixed["din"], "--machine", path], *words)
    assert err2 == err


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["simulate", "--trace", "t.din", "--flops", "-5"], ["--flops", "non-negative", "'-5'"]),
        (["simulate", "--trace", "t.din", "--flops", "1.5"], ["--flops", "'1.5'"]),
        (["simulate", "--trace", "t.din", "--flops=-1e3"], ["--flops", "non-negative"]),
        (["simulate", "--trace", "t.din", "--chunk-size", "0"], ["--chunk-size", "positive"]),
        (["simulate", "--trace", "t.din", "--access-size", "x"], ["--access-size", "'x'"]),
        (["simulate"], ["give a KERNEL", "--trace"]),
        (["simulate", "triad", "--trace", "t.din"], ["not both"]),
        (["simulate", "--trace", "t.din", "--bogus"], ["unrecognized", "--bogus"]),
        (["simulat"], ["invalid choice", "simulat"]),
        ([], ["missing command", "simulate"]),
        (["machine"], ["missing command", "show, list"]),
        (["machine", "show"], ["required"]),
    ],
)
def test_usage_errors(capsys, argv, words):
    assert_bad(capsys, argv, *words)


def test_keyboard_interrupt(capsys, monkeypatch):
    import hroof.cachesim

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(hroof.cachesim, "simulate", interrupted)
    code, out, err = run(capsys, "simulate", "--trace", EXAMPLE_TRACE)
    assert code == 130
    assert out == ""
    assert err == "hroof: interrupted\n"


def test_json_is_printed_only_when_complete(capsys, tmp_path):
    path = bad_kind_npz(tmp_path / "half.npz")
    assert_bad(capsys, ["simulate", "--trace", path, "--json", "--chunk-size", 5],
               "half.npz", "kind[50] is 5")  # fmt: skip


# --------------------------------------------------------------------------- progress
def test_progress_forced_goes_to_stderr_only(capsys, monkeypatch, mixed):
    monkeypatch.setenv(ENV_VAR, "1")
    code, out, err = run(capsys, "simulate", "--trace", mixed["npz"], "--json", "--chunk-size", 7)
    assert code == 0
    json.loads(out)  # stdout is exactly the JSON
    assert "\r" not in out
    assert "120/120 accesses" in err and "100%" in err and "accesses/s" in err
    assert err.endswith("\n")


def test_progress_text_format_shows_count_and_rate(capsys, monkeypatch, mixed):
    monkeypatch.setenv(ENV_VAR, "1")
    code, out, err = run(capsys, "simulate", "--trace", mixed["din"], "--chunk-size", 50)
    assert code == 0
    assert "simulate  120 accesses" in err and "%" not in err
    assert "\r" not in out and "simulate  " not in out


def test_progress_quiet(capsys, monkeypatch, mixed):
    monkeypatch.setenv(ENV_VAR, "1")
    code, out, err = run(capsys, "simulate", "--trace", mixed["npz"], "--quiet")
    assert code == 0 and err == "" and "L1" in out


def test_progress_off_when_not_a_terminal(capsys, mixed):
    code, _, err = run(capsys, "simulate", "--trace", mixed["npz"], "--chunk-size", 7)
    assert code == 0 and err == ""


def bad_kind_npz(path: Path, n=60, at=50) -> Path:
    addr, size, kind = trace(np.arange(n) * 8)
    kind[at] = 5
    np.savez(path, addr=addr, size=size, kind=kind)
    return path


def test_progress_cleared_on_error(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv(ENV_VAR, "1")
    path = bad_kind_npz(tmp_path / "bad.npz")
    code, out, err = run(capsys, "simulate", "--trace", path, "--chunk-size", 10)
    assert code == 2 and out == ""
    assert "simulate " in err and "%|" in err  # the bar was drawn before the bad chunk
    assert "\n" not in err[:-1].rpartition("\r")[0]  # the bar never ended a line
    visible = err.rpartition("\r")[2]  # what the terminal shows after the bar is wiped
    assert visible.startswith("hroof: error: ") and visible.count("\n") == 1


def test_progress_bar_unit():
    out = io.StringIO()
    with Progress(total=1000, stream=out, enabled=True, delay=0, interval=0) as bar:
        bar(200)
        first = out.getvalue()
        assert "200/1,000 accesses" in first and " 20%" in first
        bar(800)
    text = out.getvalue()
    assert text.endswith("\n") and "1,000/1,000 accesses" in text and "100%" in text
    assert "accesses/s" in text
    points = io.StringIO()
    with Progress(total=4, stream=points, enabled=True, delay=0, interval=0, unit="points",
                  label="sweep") as bar:  # fmt: skip
        bar(4)
    assert "sweep 100%" in points.getvalue() and "4/4 points" in points.getvalue()


def test_progress_quick_run_leaves_nothing():
    out = io.StringIO()
    with Progress(total=10, stream=out, enabled=True, delay=60) as bar:
        bar(10)
    assert out.getvalue() == ""


def test_progress_clears_on_exception():
    out = io.StringIO()
    with pytest.raises(RuntimeError), Progress(stream=out, enabled=True, delay=0) as bar:
        bar(5)
        raise RuntimeError
    text = out.getvalue()
    assert "\n" not in text and text.endswith("\r")
    assert text.rpartition("\r")[0].rpartition("\r")[2].strip() == ""


def test_progress_env(monkeypatch):
    class Tty(io.StringIO):
        def isatty(self):
            return True

    assert Progress(stream=Tty()).enabled
    assert not Progress(stream=io.StringIO()).enabled
    monkeypatch.setenv(ENV_VAR, "0")
    assert not Progress(stream=Tty()).enabled
    monkeypatch.setenv(ENV_VAR, "1")
    forced = Progress(stream=io.StringIO())
    assert forced.enabled and forced.delay == 0
    assert not Progress(stream=io.StringIO(), enabled=False).enabled


def test_formatters():
    assert format_duration(59.6) == "1:00"
    assert format_bytes(0) == "0 B"
    assert format_bytes(1023) == "1023 B"
    assert format_bytes(1024) == "1.0 KiB"
    assert format_bytes(1024 * 1024 - 1) == "1.0 MiB"
    assert format_bytes(int(1.25 * 2**20)) == "1.2 MiB"


# --------------------------------------------------------------------------- console script
@pytest.mark.slow
def test_console_entry_point(tmp_path):
    script = Path(sys.executable).with_name("hroof")
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "hroof"]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    env.pop(ENV_VAR, None)
    ok = subprocess.run([*cmd, "--help"], capture_output=True, text=True, env=env, timeout=120)
    assert ok.returncode == 0
    assert ok.stdout.startswith("usage: hroof") and "examples:" in ok.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "hroof", "simulate", "--trace", str(tmp_path / "missing.npz")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert bad.returncode == 2
    assert bad.stdout == ""
    assert bad.stderr == f"hroof: error: trace file not found: {tmp_path / 'missing.npz'}\n"


# ----------------------------------------------------------------------------- kernels
def test_kernels_lists_every_kernel_with_parameters(capsys):
    code, out, _ = run(capsys, "kernels")
    assert code == 0
    for name in ("copy", "scale", "add", "triad", "daxpy", "dot"):
        assert f"\n{name}: " in "\n" + out
    assert "    n=1048576  elements per array" in out and "nt=false" in out


def test_simulate_dot_json_and_bad_nt(capsys):
    """dot: two 8-byte loads an element and no store; on the teaching machine (256 KiB
    L3) 64 KiB of x and y are compulsory at every level: AI 2/16."""
    r = sim_json(capsys, "dot", "n=4096", "--machine", "teaching")
    assert r["flops"] == 2 * 4096 and r["accesses"] == 2 * 4096
    assert r["core"]["loads"] == 8192 and r["core"]["stores"] == 0
    assert r["levels"][0]["lookups"] == 8192 and r["levels"][0]["bytes"] == 16 * 4096
    for lv in r["levels"]:
        assert lv["traffic_below"]["compulsory"] == 16 * 4096
    assert r["memory"]["bytes_read"] == 16 * 4096 and r["memory"]["bytes_written"] == 0
    assert r["memory"]["ai"] == pytest.approx(0.125)
    s = sim_json(capsys, "dot", "n=4096", "--machine", "teaching", "--sample-sets", "1/4")
    assert s["sampling"]["k"] == 4 and s["flops"] == 2 * 4096
    code, out, err = run(capsys, "simulate", "dot", "n=64", "nt=true")
    assert code == 2 and out == ""
    assert err.startswith("hroof: error: kernel dot has no parameter 'nt'")


def test_simulate_kernel_json(capsys):
    r = sim_json(capsys, "triad", "n=4096", "nt=true")
    assert r["source"] == {
        "kernel": "triad",
        "params": {
            "n": 4096,
            "dtype": "float64",
            "nt": True,
            "align": 64,
            "gap": 0,
            "sweeps": 1,
            "warmup": 0,
        },
        "accounting": {"mode": "cold", "warmup_sweeps": 0, "counted_sweeps": 1},
    }
    a = r["analysis"]  # what the text shows, for a script: NT stores in the CARM AI
    assert a["roofline"]["carm"]["ai"] == pytest.approx(2 / 24)
    assert a["roofline"]["levels"][0]["ai"] == pytest.approx(2 / 16)
    assert a["roofline"]["carm"]["bound_gflop_s"] <= a["roofline"]["bound_gflop_s"] * (1 + 1e-9)
    assert a["accounting"]["mode"] == "cold" and a["roofline"]["binding"] == "DRAM"
    walls = a["roofline"]["walls"]
    assert sum(walls[-1]["parts"].values()) == r["memory"]["bytes"]
    assert walls[-1]["parts"]["non_temporal"] == 8 * 4096
    assert r["flops"] == 2 * 4096 and r["accesses"] == 3 * 4096
    assert r["core"]["nt_stores"] == 4096
    assert r["levels"][0]["bytes"] == 16 * 4096  # NT stores bypass L1
    _, out, _ = run(capsys, "simulate", "daxpy", "n=1000")
    assert out.startswith("kernel    daxpy n=1000 nt=false sweeps=1 warmup=0 dtype=float64")


def test_trace_writes_the_kernel_stream(capsys, tmp_path):
    from hroof.traces import iter_trace, plan_kernel

    for suffix in (".npz", ".din"):
        path = tmp_path / f"copy{suffix}"
        code, out, _ = run(capsys, "trace", "copy", "n=100", "--out", path)
        assert code == 0 and "wrote" in out and "200 accesses" in out
        got = np.concatenate([c.addr for c in iter_trace(path)])
        want = np.concatenate([c[0] for c in plan_kernel("copy", n=100).chunks()])
        assert got.tolist() == want.tolist()
    # The written trace simulates to the same counts as the kernel itself.
    a = sim_json(capsys, "--trace", tmp_path / "copy.npz", "--flops", 0)
    b = sim_json(capsys, "copy", "n=100")
    assert a["levels"] == b["levels"]


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["simulate", "triadd"], ["unknown kernel 'triadd'", "did you mean 'triad'"]),
        (["simulate", "triad", "n=0"], ["n must be at least 1"]),
        (["simulate", "triad", "size=3"], ["no parameter 'size'", "n, nt, sweeps, warmup, dtype"]),
        (["simulate", "triad", "n"], ["KEY=VALUE"]),
        (["simulate", "triad", "n=1", "n=2"], ["given twice"]),
        (["simulate", "triad", "dtype=float16"], ["float64, float32"]),
        (["simulate"], ["KERNEL", "--trace"]),
        (["simulate", "triad", "--flops", "5"], ["--flops is for --trace"]),
        (["trace", "triad", "nt=true", "--out", "x.din"], ["x.din", "non-temporal", "npz"]),
        (["trace", "triad", "--out", "x.txt"], [".npz, .din"]),
        (["simulate", "gemm", "m=4", "ti=5"], ["ti", "at most m = 4"]),
        (["simulate", "stencil7", "n=8", "bj=9"], ["bj"]),
        (["simulate", "spmv", "matrix=missing.mtx"], ["missing.mtx"]),
        (["simulate", "spmv", "matrix=poison2d"], ["did you mean 'poisson2d'"]),
    ],
)
def test_kernel_bad_input(capsys, tmp_path, monkeypatch, argv, words):
    monkeypatch.chdir(tmp_path)
    assert_bad(capsys, argv, *words)
    assert list(tmp_path.iterdir()) == []  # nothing half-written


def test_malformed_mtx_names_file_and_line(capsys, tmp_path):
    path = tmp_path / "bad.mtx"
    path.write_text("%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1.0\n4 1 2.0\n")
    assert_bad(capsys, ["simulate", "spmv", f"matrix={path}"], "bad.mtx", "line 4")


# ----------------------------------------------------------------------------- sweep
@pytest.fixture
def sweep_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HROOF_CACHE_DIR", str(tmp_path / "cache"))


@pytest.mark.slow
def test_sweep_table_walls_and_outputs(capsys, tmp_path, sweep_cache):
    out_dir = tmp_path / "out"
    code, out, err = run(
        capsys, "sweep", "stencil7", "n=8..32:x2", "--machine", "teaching", "--out", out_dir
    )
    assert code == 0, err
    rows = [ln.split() for ln in out.splitlines() if ln[:3].strip() in ("8", "16", "32")]
    assert [r[0] for r in rows] == ["8", "16", "32"]
    assert all(r[3] == "0.109" for r in rows)  # L1 AI = 7/64 at every size (r[1:3]: "11.0 KiB")
    assert all(r[-1] == "DRAM" for r in rows)
    assert "L1 (4.0 KiB): between n=8" in out
    for name in ("results.json", "results.csv", "roofline.png", "roofline.svg",
                 "ai_vs_size.png", "traffic.svg"):  # fmt: skip
        assert (out_dir / name).is_file(), name
    doc = json.loads((out_dir / "results.json").read_text())
    assert doc["schema"] == "hroof.sweep/1" and len(doc["points"]) == 3
    assert doc["points"][0]["result"]["schema"] == "hroof.result/1"
    assert [w["level"] for w in doc["walls"]][:1] == ["L1"]
    csv_rows = (out_dir / "results.csv").read_text().splitlines()
    assert csv_rows[0].startswith("n,") and len(csv_rows) == 4
    header = csv_rows[0].split(",")
    assert {"L1_bytes", "L1_ai", "DRAM_bytes", "DRAM_ai"} <= set(header), header


def test_sweep_mrc_at_unknown_point_fails_before_simulating(capsys, tmp_path):
    out_dir = tmp_path / "out"
    assert_bad(capsys, ["sweep", "triad", "n=1000,2000", "--mrc-at", "3000", "--out", out_dir],
               "--mrc-at 3000", "n=1000,2000")  # fmt: skip
    assert not out_dir.exists()


def test_sweep_json_and_unknown_figures(capsys, sweep_cache):
    code, out, _ = run(capsys, "sweep", "triad", "n=1000,2000", "--json")
    assert code == 0
    doc = json.loads(out)
    assert [p["params"]["n"] for p in doc["points"]] == [1000, 2000]
    _, out, _ = run(capsys, "sweep", "triad", "n=1000,2000", "--machine", "generic")  # no figures
    assert "no bounds: the machine has no" in out


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["sweep", "stencil7", "size=8,16"], ["no parameter 'size'"]),
        (["sweep", "stencil7", "n=64..8"], ["backwards"]),
        (["sweep", "stencil7", "n=0,8"], ["n must be at least 1"]),
        (["sweep", "stencil7", "n=8", "--machine", "nosuch"], ["unknown machine 'nosuch'"]),
        (["sweep", "nosuch", "n=8"], ["unknown kernel"]),
    ],
)
def test_sweep_bad_input(capsys, sweep_cache, argv, words):
    assert_bad(capsys, argv, *words)


@pytest.mark.slow
def test_sweep_of_a_kernel_without_flops_writes_its_report(capsys, tmp_path, monkeypatch):
    """copy has no flops: no roofline or AI figure can be drawn, but the sweep's report
    (tables, traffic figure) is written and the command succeeds."""
    monkeypatch.setenv("HROOF_CACHE_DIR", str(tmp_path / "cache"))
    out_dir = tmp_path / "copy"
    code, _out, err = run(capsys, "sweep", "copy", "n=1000,2000", "--machine", "teaching",
                         "--out", out_dir, "--quiet")  # fmt: skip
    assert code == 0, err
    assert (out_dir / "report.html").is_file() and (out_dir / "traffic.png").is_file()
    assert not (out_dir / "roofline.png").exists() and not (out_dir / "ai_vs_size.png").exists()
