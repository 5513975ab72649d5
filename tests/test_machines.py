"""Bundled machine presets, host detection and the ``hroof machine`` subcommands.

Host detection runs on fake sysfs/cpuinfo trees written to ``tmp_path``; one test
reads this machine's real /sys and checks only the structure of what it finds.
"""

from __future__ import annotations

import re
import sys
import warnings
from pathlib import Path

import pytest
from helpers import run_cli as run

from hroof._base.errors import ConfigError
from hroof.machine.catalog import bundled_machines
from hroof.machine.host import detect_host, host_toml, parse_sysfs_size, read_host
from hroof.roofline import load_machine

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PRESETS = ["skylake-sp", "zen4", "teaching"]
REAL_SYSFS = Path("/sys/devices/system/cpu/cpu0/cache")


# --------------------------------------------------------------------------- presets
@pytest.mark.parametrize("name", [*PRESETS, "generic"])
def test_every_bundled_machine_loads(name):
    assert name in bundled_machines()
    m = load_machine(name)
    assert m.source.endswith(f"{name}.toml")
    assert [lv.name for lv in m.hierarchy.levels] == ["L1", "L2", "L3"]
    assert all(lv.line == 64 for lv in m.hierarchy.levels)


@pytest.mark.parametrize("name", PRESETS)
def test_ceilings_below_peak_and_ridges(name):
    m = load_machine(name)
    assert m.peak is not None
    assert m.ceilings, "every preset names some ceilings"
    values = [c.value for c in m.ceilings]
    assert values == sorted(values, reverse=True)
    assert all(0 < v < m.peak for v in values)
    for level, bw in m.all_bandwidths():
        ridge = m.ridge_point(level)
        assert ridge == (None if bw is None else pytest.approx(m.peak / bw))


def test_bandwidths_fall_down_the_hierarchy():
    for name in PRESETS:
        known = [bw for _, bw in load_machine(name).all_bandwidths() if bw is not None]
        assert known == sorted(known, reverse=True), name


def test_skylake_sp_as_cited():
    m = load_machine("skylake-sp")
    l1, l2, l3 = m.hierarchy.levels
    assert (l1.size, l1.ways, l1.sets) == (32 * 1024, 8, 64)
    assert (l2.size, l2.ways, l2.sets) == (1024**2, 16, 1024)
    # the whole chip's L3: 20 slices of 1.375 MiB, 11-way
    assert (l3.size, l3.ways, l3.sets) == (20 * 1441792, 11, 40960)
    assert m.peak == pytest.approx(2 * 8 * 2 * 2.4)  # 2 AVX-512 FMA x 8 doubles x 2 flops x GHz
    ceilings = {c.name: c.value for c in m.ceilings}
    assert ceilings == pytest.approx({"no FMA": 38.4, "no AVX-512": 38.4, "scalar": 9.6})
    # likwid-bench load, one core (kerncraft SkylakeSP_Gold-6148.yml)
    assert m.bandwidths == pytest.approx((255.89, 110.92, 24.42))
    assert m.memory_bandwidth == pytest.approx(14.32)
    assert m.ridge_point("DRAM") == pytest.approx(76.8 / 14.32)
    assert m.missing() == []


def test_zen4_as_cited():
    m = load_machine("zen4")
    l1, l2, l3 = m.hierarchy.levels
    assert (l1.size, l1.ways) == (32 * 1024, 8)
    assert (l2.size, l2.ways, l2.sets) == (1024**2, 8, 2048)
    assert (l3.size, l3.ways, l3.sets) == (32 * 1024**2, 16, 32768)
    assert m.peak == pytest.approx(2 * 4 * 2 * 2.4)  # 2 FMA x 4 doubles x 2 flops x 2.4 GHz
    assert {c.name: c.value for c in m.ceilings} == pytest.approx({"no FMA": 19.2, "scalar": 9.6})
    assert m.bandwidth("L1") == pytest.approx(153.6)
    assert m.ridge_point("L1") == pytest.approx(0.25)
    # no cited single-core figures: left unknown, never guessed
    assert m.missing() == ["L2 bandwidth", "L3 bandwidth", "DRAM bandwidth"]
    assert m.ridge_point("L3") is None


def test_teaching_capacities_and_labels():
    m = load_machine("teaching")
    geometry = [(lv.size, lv.ways, lv.sets) for lv in m.hierarchy.levels]
    assert geometry == [(4096, 4, 16), (32768, 8, 64), (262144, 16, 256)]
    assert "made-up" in m.name
    assert "MADE UP" in Path(m.source).read_text()
    assert [c.name for c in m.ceilings] == ["no FMA", "scalar", "no ILP"]
    assert [c.name for c in m.ceilings_of("DRAM")] == ["no prefetch", "no NUMA-aware placement"]
    assert [m.ridge_point(n) for n, _ in m.all_bandwidths()] == pytest.approx([0.2, 0.4, 0.8, 2])


def test_presets_cite_their_figures():
    for name in ("skylake-sp", "zen4"):
        text = bundled_machines()[name].read_text()
        for word in ("GHz", "kerncraft" if name == "skylake-sp" else "57647"):
            assert word in text, (name, word)


# --------------------------------------------------------------------------- bad files
BASE = '[machine]\nname = "bad"\n\n[[level]]\nsize = "1 KiB"\nways = 2\n'


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (
            '\n[compute]\npeak = 10.0\nceilings = { "no FMA" = 20.0 }\n',
            ["ceiling 'no FMA'", "not below its roof"],
        ),
        ("bandwidth = -5.0\n", ["bandwidth must be positive", "-5.0"]),
        ("\n[memory]\nbandwidth = -1\n", ["[memory] bandwidth", "positive"]),
        ("\n[compute]\npeak = 0\n", ["peak", "positive"]),
        ("wayz = 3\n", ["unknown key 'wayz'", "did you mean 'ways'"]),
        ("\n[compute]\npaek = 3.0\n", ["unknown key 'paek'", "[compute]"]),
    ],
)
def test_bad_machine_files(tmp_path, capsys, extra, words):
    path = tmp_path / "bad.toml"
    path.write_text(BASE + extra)
    with pytest.raises(ConfigError) as exc:
        load_machine(path)
    for word in words:
        assert word in str(exc.value)
    code, out, err = run(capsys, "machine", "show", path)
    assert code == 2 and out == ""
    assert err.startswith("hroof: error:") and words[0] in err and len(err.splitlines()) == 1


# --------------------------------------------------------------------------- fake hosts
def write_index(root: Path, i: int, level, kind, size, ways, line=64, sets=None, **extra):
    d = root / f"index{i}"
    d.mkdir(parents=True)
    values = {
        "level": level,
        "type": kind,
        "size": size,
        "ways_of_associativity": ways,
        "coherency_line_size": line,
        "number_of_sets": sets,
        **extra,
    }
    for key, value in values.items():
        if value is not None:
            (d / key).write_text(f"{value}\n")
    return d


INTEL_CPUINFO = """\
processor\t: 0
vendor_id\t: GenuineIntel
model\t\t: 85
model name\t: Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz
flags\t\t: fpu sse2 avx fma avx2 avx512f avx512dq

processor\t: 1
model name\t: Something else
flags\t\t: fpu
"""

AMD_CPUINFO = """\
processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 9654 96-Core Processor
flags\t\t: fpu sse2 avx fma avx2
"""


@pytest.fixture
def intel_tree(tmp_path):
    root = tmp_path / "intel" / "cache"
    write_index(root, 0, 1, "Data", "32K", 8, sets=64)
    write_index(root, 1, 1, "Instruction", "32K", 8, sets=64)
    write_index(root, 2, 2, "Unified", "1024K", 16, sets=1024)
    write_index(root, 3, 3, "Unified", "28160K", 11, sets=40960)
    cpuinfo = tmp_path / "intel" / "cpuinfo"
    cpuinfo.write_text(INTEL_CPUINFO)
    return root, cpuinfo


@pytest.fixture
def amd_tree(tmp_path):
    root = tmp_path / "amd" / "cache"
    # listed out of order, with index10 after index9 numerically
    write_index(root, 3, 3, "Unified", "32768K", 16, sets=32768)
    write_index(root, 0, 1, "Data", "32K", 8, sets=64)
    write_index(root, 1, 1, "Instruction", "32K", 8, sets=64)
    write_index(root, 2, 2, "Unified", "1024K", 8, sets=2048)
    cpuinfo = tmp_path / "amd" / "cpuinfo"
    cpuinfo.write_text(AMD_CPUINFO)
    return root, cpuinfo


def test_detect_intel_like(intel_tree):
    root, cpuinfo = intel_tree
    m = detect_host(root, cpuinfo)
    geometry = [(lv.name, lv.size, lv.ways, lv.line, lv.sets) for lv in m.hierarchy.levels]
    assert geometry == [
        ("L1", 32768, 8, 64, 64),
        ("L2", 1024**2, 16, 64, 1024),
        ("L3", 28160 * 1024, 11, 64, 40960),
    ]
    assert m.name == "host: Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz [avx2, avx512f, fma]"
    assert m.bandwidths == (None, None, None)
    assert m.memory_bandwidth is None and m.peak is None and m.ceilings == ()
    assert m.source == str(root)


def test_detect_amd_like(amd_tree):
    root, cpuinfo = amd_tree
    report = read_host(root, cpuinfo)
    m = report.machine
    assert [(lv.size, lv.ways, lv.sets) for lv in m.hierarchy.levels] == [
        (32768, 8, 64),
        (1024**2, 8, 2048),
        (32 * 1024**2, 16, 32768),
    ]
    assert report.model == "AMD EPYC 9654 96-Core Processor"
    assert report.flags == ("avx2", "fma")
    assert report.notes == ()
    assert "avx512f" not in m.name


def test_detect_tree_missing_an_index(tmp_path):
    root = tmp_path / "cache"
    write_index(root, 0, 1, "Data", "48K", 12, sets=64)
    write_index(root, 2, 2, "Unified", "2048K", 16, sets=2048)  # no index1
    report = read_host(root, tmp_path / "no-cpuinfo")
    assert [lv.name for lv in report.machine.hierarchy.levels] == ["L1", "L2"]
    assert report.model is None and report.flags == ()
    assert any("unreadable" in n for n in report.notes)
    assert report.machine.name.startswith("host: unknown CPU")


def test_detect_non_dividing_level_is_skipped(tmp_path, intel_tree):
    root, cpuinfo = intel_tree
    (root / "index3" / "size").write_text("30000K\n")  # 30,720,000 B / (11 x 64) is not whole
    with pytest.warns(UserWarning, match="does not divide into whole sets"):
        m = detect_host(root, cpuinfo)
    assert [lv.name for lv in m.hierarchy.levels] == ["L1", "L2"]
    report = read_host(root, cpuinfo)
    (note,) = report.notes
    assert "index3" in note and "11 ways x 64 B" in note
    text = host_toml(report.machine, report.flags, report.notes)
    assert f"# note: {note}" in text


def test_detect_odd_values_are_skipped_with_notes(tmp_path):
    root = tmp_path / "cache"
    write_index(root, 0, 1, "Data", "32K", 8, sets=64)
    write_index(root, 1, 2, "Unified", "1024K", 0, sets=1024)  # ways 0
    write_index(root, 2, 2, "Unified", "1024K", 16, line=128)  # other line size
    write_index(root, 3, 3, "Unified", "lots", 16)  # size garbage
    write_index(root, 4, 3, "Unified", "8M", 16, sets=999)  # sets disagree: kept, noted
    report = read_host(root, tmp_path / "none")
    assert [(lv.name, lv.size) for lv in report.machine.hierarchy.levels] == [
        ("L1", 32768),
        ("L2", 8 * 1024**2),
    ]
    notes = "\n".join(report.notes)
    assert "index1: ways_of_associativity is 0" in notes
    assert "128 B lines" in notes
    assert "'lots'" in notes
    assert "number_of_sets is 999" in notes and "kernel's level 3" in notes


@pytest.mark.parametrize("case", ["missing", "empty", "only-instruction"])
def test_detect_errors(tmp_path, case):
    root = tmp_path / "cache"
    if case == "empty":
        root.mkdir()
    elif case == "only-instruction":
        write_index(root, 0, 1, "Instruction", "32K", 8)
    with pytest.raises(ConfigError, match=str(root)):
        read_host(root, tmp_path / "cpuinfo")


def test_parse_sysfs_size():
    assert parse_sysfs_size("48K") == 49152
    assert parse_sysfs_size("32768K") == 32 * 1024**2
    assert parse_sysfs_size("2M") == 2 * 1024**2
    with pytest.raises(ValueError, match="'12X'"):
        parse_sysfs_size("12X")


def test_host_toml_loads_back(tmp_path, intel_tree):
    root, cpuinfo = intel_tree
    report = read_host(root, cpuinfo)
    text = host_toml(report.machine, report.flags, report.notes)
    assert "unknown" in text and "hroof machine measure" in text
    assert "bandwidth = " not in text.replace("# bandwidth = ", "")  # none invented
    assert "avx2 avx512f fma" in text
    path = tmp_path / "host.toml"
    path.write_text(text)
    back = load_machine(path)
    assert back.hierarchy.levels == report.machine.hierarchy.levels
    assert back.name == report.machine.name
    assert back.missing()[-1] == "compute peak"


def test_host_toml_writes_known_figures_and_escapes(tmp_path):
    m = load_machine("teaching")
    text = host_toml(m, ("fma",))
    back = load_machine(_write(tmp_path / "t.toml", text))
    assert back.bandwidths == m.bandwidths and back.peak == m.peak
    assert back.ceilings == m.ceilings
    odd = tomllib.loads(host_toml(m.__class__(**{**m.__dict__, "name": 'a "quoted" \\ name'})))
    assert odd["machine"]["name"] == 'a "quoted" \\ name'


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.skipif(not REAL_SYSFS.is_dir(), reason="no Linux sysfs cache description here")
def test_detect_real_host_structure():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # whatever this host's quirks are
        m = detect_host()
    levels = m.hierarchy.levels
    assert 1 <= len(levels) <= 16
    assert [lv.name for lv in levels] == [f"L{i + 1}" for i in range(len(levels))]
    assert len({lv.line for lv in levels}) == 1
    assert all(lv.size == lv.sets * lv.ways * lv.line for lv in levels)
    assert all(bw is None for bw in m.bandwidths) and m.peak is None
    assert m.name.startswith("host: ")


# --------------------------------------------------------------------------- CLI
def table_rows(out: str) -> dict[str, list[str]]:
    """The words of the level and memory rows of ``hroof machine show``, by level name."""
    return {
        ln.split()[0]: ln.split() for ln in out.splitlines() if ln[:2] in ("L1", "L2", "L3", "DR")
    }


def test_cli_show_preset(capsys):
    code, out, err = run(capsys, "machine", "show", "skylake-sp")
    assert code == 0, err
    assert "Skylake-SP" in out and "skylake-sp.toml" in out
    assert "76.8 GFLOP/s" in out
    ceiling = next(ln for ln in out.splitlines() if ln.startswith("peak   no FMA"))
    assert ceiling.split()[3:5] == ["38.4", "GFLOP/s"]
    assert ceiling.endswith("use fused multiply-add instructions (FMA)")
    rows = table_rows(out)
    assert rows["L1"][-2:] == ["GB/s", "0.300"] and "255.89" in rows["L1"]
    assert rows["DRAM"][-3:] == ["14.32", "GB/s", "5.36"]
    assert "ridge" in out and "FLOP/B" in out


def test_cli_show_unknown_figures(capsys):
    code, out, _ = run(capsys, "machine", "show", "zen4")
    assert code == 0
    assert "L2 bandwidth, L3 bandwidth, DRAM bandwidth" in out
    rows = table_rows(out)
    assert rows["L2"][-2:] == ["unknown", "-"]
    assert rows["L1"][-1] == "0.250"
    code, out, _ = run(capsys, "machine", "show", "generic")
    assert re.search(r"^peak +unknown$", out, re.M) and "compute peak" in out


def test_cli_show_unknown_name(capsys):
    code, out, err = run(capsys, "machine", "show", "skylake")
    assert code == 2 and out == ""
    assert "unknown machine 'skylake'" in err
    for name in ["generic", *PRESETS]:
        assert name in err


def test_cli_list(capsys):
    code, out, _ = run(capsys, "machine", "list")
    assert code == 0
    names = [line.split()[0] for line in out.splitlines()]
    # the bundled machines, then the measured host (here: not measured)
    assert names == [*sorted(bundled_machines()), "host"] and set(PRESETS) <= set(names)
    assert "Zen 4 core" in out and "teaching (made-up" in out


def test_cli_detect_prints(capsys, amd_tree):
    root, cpuinfo = amd_tree
    code, out, err = run(capsys, "machine", "detect", "--sysfs", root, "--cpuinfo", cpuinfo)
    assert code == 0, err
    doc = tomllib.loads(out)
    assert doc["machine"]["name"].startswith("host: AMD EPYC 9654")
    assert [lv["size"] for lv in doc["level"]] == ["32 KiB", "1 MiB", "32 MiB"]
    assert "compute" not in doc


def test_cli_detect_out_loads_back(capsys, tmp_path, intel_tree):
    root, cpuinfo = intel_tree
    out_file = tmp_path / "sub" / "host.toml"
    code, out, err = run(
        capsys, "machine", "detect", "--out", out_file, "--sysfs", root, "--cpuinfo", cpuinfo
    )
    assert code == 0, err
    assert f"wrote {out_file}" in out
    m = load_machine(out_file)
    assert [lv.sets for lv in m.hierarchy.levels] == [64, 1024, 40960]
    assert [p.name for p in out_file.parent.iterdir()] == ["host.toml"]  # no temporary left
    code, out, _ = run(capsys, "machine", "show", out_file)
    assert code == 0 and "unknown" in out


def test_cli_detect_missing_sysfs(capsys, tmp_path):
    out_file = tmp_path / "host.toml"
    code, out, err = run(
        capsys, "machine", "detect", "--sysfs", tmp_path / "nope", "--out", out_file
    )
    assert code == 2 and out == ""
    assert "nope" in err and "not a directory" in err
    assert not out_file.exists()


@pytest.mark.skipif(not REAL_SYSFS.is_dir(), reason="no Linux sysfs cache description here")
def test_cli_detect_real_host(capsys, tmp_path):
    out_file = tmp_path / "me.toml"
    code, _, err = run(capsys, "machine", "detect", "--out", out_file)
    assert code == 0, err
    assert load_machine(out_file).peak is None


def test_cli_machine_help(capsys):
    code, out, _ = run(capsys, "machine", "--help")
    assert code == 0 and "detect" in out
    code, out, _ = run(capsys, "machine", "detect", "--help")
    assert code == 0 and "--out FILE" in out and "never guessed" in out
