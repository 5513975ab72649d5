"""Machine-file keys beyond the hierarchy: ceilings with what they stand for, per-precision
peaks, GPU facts, the [energy] and [measured] tables, and the measured host's location."""

from __future__ import annotations

import pytest

from hroof._base.errors import ConfigError
from hroof.machine.model import BANDWIDTH_CEILINGS, COMPUTE_CEILINGS, host_machine_path
from hroof.roofline import load_machine, machine_from_dict


def doc(**extra):
    d = {
        "machine": {"name": "m"},
        "compute": {"peak": 100.0},
        "level": [
            {"name": "L1", "size": "32 KiB", "ways": 8, "bandwidth": 200.0},
            {"name": "L2", "size": "1 MiB", "ways": 16, "bandwidth": 80.0},
        ],
        "memory": {"name": "DRAM", "bandwidth": 20.0},
    }
    for key, value in extra.items():
        d.setdefault(key, {}).update(value) if isinstance(value, dict) else d.update({key: value})
    return d


def test_known_ceilings_carry_their_optimisation():
    m = machine_from_dict(
        doc(compute={"ceilings": {"no FMA": 50.0, "no SIMD": 12.5, "no ILP": 6.0}})
    )
    assert [c.name for c in m.ceilings] == ["no FMA", "no SIMD", "no ILP"]
    assert [c.means for c in m.ceilings] == [COMPUTE_CEILINGS[c.name] for c in m.ceilings]
    assert all(c.level is None and c.unit == "GFLOP/s" for c in m.ceilings)


def test_custom_ceiling_needs_means():
    m = machine_from_dict(
        doc(compute={"ceilings": {"no AMX": {"value": 40.0, "means": "use AMX tiles"}}})
    )
    assert m.ceilings[0].means == "use AMX tiles"
    with pytest.raises(ConfigError, match=r"unknown ceiling 'no AMX'.*means"):
        machine_from_dict(doc(compute={"ceilings": {"no AMX": 40.0}}))
    with pytest.raises(ConfigError, match="'means' must say"):
        machine_from_dict(doc(compute={"ceilings": {"no AMX": {"value": 40.0, "means": " "}}}))
    with pytest.raises(ConfigError, match="must be a number or a table"):
        machine_from_dict(doc(compute={"ceilings": {"no AMX": {"val": 40.0}}}))


def test_unknown_ceiling_name_suggests_the_close_one():
    with pytest.raises(ConfigError, match="did you mean 'no FMA'"):
        machine_from_dict(doc(compute={"ceilings": {"no FMa": 40.0}}))


@pytest.mark.parametrize(
    ("ceilings", "message"),
    [
        ({"no SIMD": 12.5, "no FMA": 50.0}, "unordered ceilings.*'no FMA'.*listed after 'no SIMD'"),
        ({"no FMA": 100.0}, "not below its roof"),
        ({"no FMA": 150.0}, "not below its roof"),
        ({"no FMA": -1.0}, "positive"),
    ],
)
def test_unordered_or_impossible_ceilings(ceilings, message):
    with pytest.raises(ConfigError, match=message):
        machine_from_dict(doc(compute={"ceilings": ceilings}))


def test_bandwidth_ceilings_per_level_and_memory():
    d = doc(memory={"ceilings": {"no prefetch": 15.0, "no NUMA-aware placement": 9.0}})
    d["level"][1]["ceilings"] = {"no prefetch": 60.0}
    m = machine_from_dict(d)
    assert [(c.level, c.name, c.value) for c in m.bandwidth_ceilings] == [
        ("L2", "no prefetch", 60.0),
        ("DRAM", "no prefetch", 15.0),
        ("DRAM", "no NUMA-aware placement", 9.0),
    ]
    assert m.ceilings_of("DRAM")[1].means == BANDWIDTH_CEILINGS["no NUMA-aware placement"]
    assert m.ceilings_of("L1") == ()
    assert m.ceilings_of("DRAM")[0].unit == "GB/s"
    with pytest.raises(ConfigError, match="no level"):
        m.ceilings_of("L9")
    bad = doc(memory={"ceilings": {"no prefetch": 25.0}})
    with pytest.raises(ConfigError, match=r"DRAM.*not below its roof"):
        machine_from_dict(bad)
    # a compute-only name is not a bandwidth ceiling
    with pytest.raises(ConfigError, match="unknown ceiling 'no FMA'"):
        machine_from_dict(doc(memory={"ceilings": {"no FMA": 5.0}}))


def test_per_precision_peaks_and_gpu_facts():
    m = machine_from_dict(
        doc(
            machine={"kind": "gpu", "sms": 80, "clock_ghz": 1.53},
            compute={"peak": 125000.0, "precision": "fp16", "peaks": {"fp32": 15700.0}},
        )
    )
    assert (m.kind, m.sms, m.cores, m.clock_ghz) == ("gpu", 80, 1, 1.53)
    assert m.peak_for("fp16") == 125000.0
    assert m.peak_for("fp32") == 15700.0
    assert m.peak_for("fp64") is None
    with pytest.raises(ConfigError, match="unknown precision 'fp17'"):
        m.peak_for("fp17")
    with pytest.raises(ConfigError, match="differs from peak"):
        machine_from_dict(doc(compute={"peak": 100.0, "peaks": {"fp64": 90.0}}))
    with pytest.raises(ConfigError, match="unknown precision 'fp12'"):
        machine_from_dict(doc(compute={"peaks": {"fp12": 1.0}}))
    with pytest.raises(ConfigError, match="kind"):
        machine_from_dict(doc(machine={"kind": "tpu"}))
    with pytest.raises(ConfigError, match=r"sms.*positive integer"):
        machine_from_dict(doc(machine={"sms": 0}))
    assert load_machine("skylake-sp").peaks == {"fp64": 76.8}


def test_energy_table():
    m = machine_from_dict(
        doc(
            energy={
                "flop_pj": 20.0,
                "constant_w": 0,
                "byte_pj": {"L1": 1.0, "DRAM": 50.0},
                "source": "made up",
            }
        )
    )
    assert m.energy.flop_pj == 20.0 and m.energy.constant_w == 0.0
    assert m.energy.byte_pj == {"L1": 1.0, "DRAM": 50.0}
    assert load_machine("generic").energy is None
    with pytest.raises(ConfigError, match="names level 'L3'"):
        machine_from_dict(doc(energy={"byte_pj": {"L3": 1.0}}))
    with pytest.raises(ConfigError, match=r"unknown key 'flops_pj'.*did you mean 'flop_pj'"):
        machine_from_dict(doc(energy={"flops_pj": 1.0}))
    with pytest.raises(ConfigError, match=r"constant_w.*>= 0"):
        machine_from_dict(doc(energy={"constant_w": -3}))


def test_measured_table_is_kept():
    m = machine_from_dict(doc(measured={"date": "2026-11-22", "method": "triad"}))
    assert m.measured == {"date": "2026-11-22", "method": "triad"}


def test_host_machine(tmp_path, monkeypatch):
    path = tmp_path / "host.toml"
    monkeypatch.setenv("HROOF_HOST_MACHINE", str(path))
    assert host_machine_path() == path
    with pytest.raises(ConfigError, match=r"no measured host.*hroof machine measure"):
        load_machine("host")
    path.write_text('[machine]\nname = "measured"\n[[level]]\nsize = "32 KiB"\nways = 8\n')
    assert load_machine("host").name == "measured"
    monkeypatch.delenv("HROOF_HOST_MACHINE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert host_machine_path() == tmp_path / "xdg" / "hroof" / "host.toml"
