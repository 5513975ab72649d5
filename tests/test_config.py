"""Cache hierarchy configuration: sizes, level geometry, machine TOML files.

Every error test checks the exception type (``hroof._base.errors.ConfigError``, a
``ValueError``) and that the message names the bad value, so a user can fix it
from the one line the command line prints.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from hroof._base.errors import ConfigError, HroofError
from hroof.cachesim import (
    HierarchyConfig,
    LevelConfig,
    format_size,
    hierarchy,
    hierarchy_from_dict,
    load_hierarchy,
    parse_size,
)
from hroof.cachesim.config import MAX_LEVELS
from hroof.machine.catalog import DEFAULT_MACHINE, bundled_machines
from hroof.machine.model import load_machine, machine_from_dict, resolve_machine

KiB, MiB, GiB = 1024, 1024**2, 1024**3


def raises(*fragments):
    """``pytest.raises(ConfigError)`` whose message contains every fragment (literally)."""
    return pytest.raises(
        ConfigError, match="(?s)" + "".join(f"(?=.*{re.escape(f)})" for f in fragments)
    )


# ----------------------------------------------------------------------------- parse_size


@pytest.mark.parametrize(
    ("text", "nbytes"),
    [
        (4096, 4096),
        (1, 1),
        (4096.0, 4096),
        ("4096", 4096),
        ("64 B", 64),
        ("48 KiB", 48 * KiB),
        ("48KiB", 48 * KiB),
        ("  48  kib ", 48 * KiB),
        ("48 KB", 48 * KiB),  # KB means KiB, as on cache datasheets
        ("32k", 32 * KiB),
        ("32K", 32 * KiB),
        ("2 MiB", 2 * MiB),
        ("2M", 2 * MiB),
        ("1.5 KiB", 1536),
        ("1.5 MiB", 1536 * KiB),
        ("0.5 KiB", 512),
        ("1 GiB", GiB),
        ("260 MiB", 260 * MiB),
        ("1e3", 1000),  # the one number parser: 1e3 is 1000 everywhere
        ("4_096", 4096),
        ("2e0 KiB", 2 * KiB),
    ],
)
def test_parse_size(text, nbytes):
    assert parse_size(text) == nbytes
    assert type(parse_size(text)) is int


@pytest.mark.parametrize(
    "text", ["lots", "", "KiB", "48 parsecs", "48 KiBs", "4,096", "0x1000", "nan", "inf"]
)
def test_parse_size_rejects_bad_strings(text):
    with raises(repr(text), "is not a size", "KiB"):
        parse_size(text)


def test_parse_size_rejects_fractional_bytes():
    with raises("'1.3 KiB'", "not a whole number of bytes"):
        parse_size("1.3 KiB")
    with raises("'0.5'", "not a whole number of bytes"):
        parse_size("0.5")


@pytest.mark.parametrize("value", [0, -1, -4096, "0", "0 KiB", 0.0, -64.0, "-4 KiB"])
def test_parse_size_rejects_zero_and_negative(value):
    with raises(repr(value), "must be positive"):
        parse_size(value)


@pytest.mark.parametrize("value", [True, False, 1.5, 0.25, None, [64], b"64"])
def test_parse_size_rejects_non_sizes(value):
    with raises(repr(value), "must be a byte count"):
        parse_size(value)


def test_parse_size_names_what_it_parses():
    with raises("L2 size", "'huge'"):
        parse_size("huge", "L2 size")
    assert issubclass(ConfigError, HroofError) and issubclass(ConfigError, ValueError)


# ----------------------------------------------------------------------------- format_size


@pytest.mark.parametrize(
    ("nbytes", "text"),
    [
        (1, "1 B"),
        (1000, "1000 B"),
        (1023, "1023 B"),
        (1024, "1 KiB"),
        (1536, "1.5 KiB"),
        (48 * KiB, "48 KiB"),
        (1025 * KiB, "1025 KiB"),
        (2 * MiB, "2 MiB"),
        (260 * MiB, "260 MiB"),
        (GiB, "1 GiB"),
        (3 * GiB, "3 GiB"),
        (1024 * GiB, "1024 GiB"),
    ],
)
def test_format_size(nbytes, text):
    assert format_size(nbytes) == text


@settings(max_examples=examples(200), deadline=None)
@given(st.integers(1, 2**50))
def test_format_size_round_trips_through_parse_size(nbytes):
    assert parse_size(format_size(nbytes)) == nbytes


# ----------------------------------------------------------------------------- LevelConfig


def test_level_config_geometry():
    lv = LevelConfig("L1", "48 KiB", 12)
    assert (lv.size, lv.ways, lv.line, lv.sets, lv.lines) == (48 * KiB, 12, 64, 64, 768)
    assert lv.write_allocate is True and lv.bandwidth is None
    assert lv.describe() == "L1 48 KiB 12-way 64 B lines"
    assert LevelConfig("L1", 4096, 4, 16, write_allocate=False, bandwidth=300.0).sets == 64


@pytest.mark.parametrize(
    ("size", "ways", "line", "sets"),
    [
        (20 * 212992 * 64, 20, 64, 212992),  # a 260 MiB L3 of 212992 sets
        (3 * 64, 1, 64, 3),
        (5 * 4 * 32, 4, 32, 5),
        (12 * 8 * 64, 8, 64, 12),
        (64, 1, 64, 1),
    ],
)
def test_level_config_allows_non_power_of_two_sets(size, ways, line, sets):
    lv = LevelConfig("L3", size, ways, line)
    assert lv.sets == sets
    assert lv.lines == sets * ways


def test_level_config_260_mib_l3():
    lv = LevelConfig("L3", "260 MiB", 20)
    assert lv.size == 260 * MiB == 20 * 212992 * 64
    assert lv.sets == 212992
    assert lv.describe() == "L3 260 MiB 20-way 64 B lines"


@pytest.mark.parametrize("line", [48, 3, 96, 100])
def test_level_config_line_not_power_of_two(line):
    with raises("L1 line size", str(line), "not a power of two"):
        LevelConfig("L1", line * 4, 1, line)


@pytest.mark.parametrize("line", [0, -64, 64.0, True, "64"])
def test_level_config_bad_line(line):
    with raises("L1 line", "positive integer", repr(line)):
        LevelConfig("L1", 4096, 4, line)


def test_level_config_capacity_not_whole_sets():
    with raises("L2", "capacity 1000 B", "4 ways x 64 B lines", "3.90625 sets"):
        LevelConfig("L2", 1000, 4, 64)
    with raises("L1 capacity 36864 B", "10 ways x 64 B lines", "57.6 sets"):
        LevelConfig("L1", "36 KiB", 10)
    with raises("L3 capacity 100 B", "1 ways x 64 B lines"):
        LevelConfig("L3", 100, 1)


@pytest.mark.parametrize("ways", [0, -1, -12, 2.0, True, "8", None])
def test_level_config_bad_ways(ways):
    with raises("L1 ways", "positive integer", repr(ways)):
        LevelConfig("L1", 4096, ways)


@pytest.mark.parametrize("size", [0, -4096, "big", 1.5, None])
def test_level_config_bad_size(size):
    with raises("L1 size", repr(size)):
        LevelConfig("L1", size, 4)


@pytest.mark.parametrize("name", ["", None, 1])
def test_level_config_bad_name(name):
    with raises("level name", repr(name)):
        LevelConfig(name, 4096, 4)


@pytest.mark.parametrize("write_allocate", ["yes", 7, None])
def test_level_config_bad_write_allocate_names_the_value(write_allocate):
    with raises("L1 write_allocate", repr(write_allocate)):
        LevelConfig("L1", 4096, 4, write_allocate=write_allocate)


@pytest.mark.parametrize("write_allocate", ["yes", 7, None])
def test_level_config_bad_write_allocate(write_allocate):
    with raises("L1 write_allocate", "true or false"):
        LevelConfig("L1", 4096, 4, write_allocate=write_allocate)


@pytest.mark.parametrize("bandwidth", [0, -1.0, "fast", True])
def test_level_config_bad_bandwidth_names_the_value(bandwidth):
    with raises("L1 bandwidth", repr(bandwidth)):
        LevelConfig("L1", 4096, 4, bandwidth=bandwidth)


@pytest.mark.parametrize("bandwidth", [0, -1.0, "fast", True])
def test_level_config_bad_bandwidth(bandwidth):
    with raises("L1 bandwidth"):
        LevelConfig("L1", 4096, 4, bandwidth=bandwidth)


def test_level_config_is_frozen():
    lv = LevelConfig("L1", 4096, 4)
    with pytest.raises(AttributeError):
        lv.ways = 8


# ----------------------------------------------------------------------------- HierarchyConfig


def test_hierarchy_config():
    h = HierarchyConfig((LevelConfig("L1", "48 KiB", 12), LevelConfig("L2", "2 MiB", 16)))
    assert [lv.name for lv in h.levels] == ["L1", "L2"]
    assert (h.line, h.line_bits, h.name, h.memory_name) == (64, 6, "custom", "DRAM")
    assert h.describe() == "L1 48 KiB 12-way 64 B lines, L2 2 MiB 16-way 64 B lines"
    # A list is accepted and stored as a tuple.
    assert HierarchyConfig([LevelConfig("L1", 1024, 2)]).levels == (LevelConfig("L1", 1024, 2),)


def test_hierarchy_config_no_levels():
    with raises("at least one cache level"):
        HierarchyConfig(())


def test_hierarchy_config_differing_lines():
    with raises("one line size", "L1 64 B", "L2 32 B"):
        HierarchyConfig((LevelConfig("L1", 4096, 4, 64), LevelConfig("L2", 8192, 4, 32)))


def test_hierarchy_config_duplicate_names():
    with raises("unique", "['L1', 'L2', 'L1']"):
        HierarchyConfig(
            (LevelConfig("L1", 1024, 2), LevelConfig("L2", 2048, 2), LevelConfig("L1", 4096, 2))
        )


def test_hierarchy_config_level_count():
    levels = tuple(LevelConfig(f"L{i + 1}", 1024, 2) for i in range(MAX_LEVELS + 1))
    assert len(HierarchyConfig(levels[:MAX_LEVELS]).levels) == MAX_LEVELS == 16
    with raises(f"at most {MAX_LEVELS} levels", f"got {MAX_LEVELS + 1}"):
        HierarchyConfig(levels)


def test_hierarchy_config_rejects_non_levels():
    with raises("LevelConfig", "{'name': 'L1'}"):
        HierarchyConfig(({"name": "L1"},))


def test_hierarchy_helper_takes_dicts_and_levels():
    h = hierarchy({"size": "32 KiB", "ways": 8}, LevelConfig("L2", "1 MiB", 16), name="m")
    assert [lv.name for lv in h.levels] == ["L1", "L2"]
    assert (h.levels[0].sets, h.name) == (64, "m")
    with raises("unknown key 'wayz'", "did you mean 'ways'"):
        hierarchy({"size": "32 KiB", "wayz": 8})
    with raises("level 1", "missing 'ways'"):
        hierarchy({"size": "32 KiB"})


# ----------------------------------------------------------------------------- load_hierarchy

VALID = """
[machine]
name = "Tiny test box"

[compute]
peak = 150.0
ceilings = { "no FMA" = 75.0 }

[[level]]
name = "L1"
size = "48 KiB"
ways = 12
line = 64
bandwidth = 300.0

[[level]]
name = "L2"
size = 2097152
ways = 16
write_allocate = false

[[level]]
size = "1.5 MiB"
ways = 12

[memory]
name = "HBM"
bandwidth = 15.0
"""


@pytest.fixture
def machine_file(tmp_path):
    """Write a machine file and return its path."""

    def write(text, name="machine.toml"):
        path = tmp_path / name
        path.write_text(text)
        return path

    return write


def test_load_hierarchy_valid(machine_file):
    path = machine_file(VALID)
    h = load_hierarchy(path)
    assert [lv.name for lv in h.levels] == ["L1", "L2", "L3"]  # L3 named by position
    assert [lv.size for lv in h.levels] == [48 * KiB, 2 * MiB, 1536 * KiB]
    assert [lv.ways for lv in h.levels] == [12, 16, 12]
    assert [lv.sets for lv in h.levels] == [64, 2048, 2048]
    assert [lv.write_allocate for lv in h.levels] == [True, False, True]
    assert [lv.bandwidth for lv in h.levels] == [300.0, None, None]
    assert (h.name, h.memory_name, h.source, h.line) == ("Tiny test box", "HBM", str(path), 64)
    assert load_hierarchy(str(path)) == h


def test_load_hierarchy_levels_only(machine_file):
    path = machine_file('[[level]]\nsize = "32 KiB"\nways = 8\n', name="bare.toml")
    h = load_hierarchy(path)
    assert (h.name, h.memory_name, len(h.levels), h.levels[0].name) == ("bare", "DRAM", 1, "L1")


def test_load_hierarchy_missing_file(tmp_path):
    path = tmp_path / "nowhere.toml"
    with raises("not found", str(path)):
        load_hierarchy(path)
    with raises("not found", str(tmp_path)):
        load_hierarchy(tmp_path)  # a directory is not a machine file


@pytest.mark.parametrize(
    "text", ["[[level]\nsize = 1", "[[level]]\nsize = \n", "[[level]]\nways = 8\nways = 8\n"]
)
def test_load_hierarchy_invalid_toml(machine_file, text):
    path = machine_file(text)
    with raises(str(path), "not valid TOML"):
        load_hierarchy(path)


def test_load_hierarchy_not_utf8(machine_file, tmp_path):
    path = tmp_path / "latin1.toml"
    path.write_bytes('[machine]\nname = "Caf\xe9"\n'.encode("latin-1"))
    with raises(str(path), "not valid TOML"):
        load_hierarchy(path)


LEVEL = '[[level]]\nsize = "32 KiB"\nways = 8\n'


@pytest.mark.parametrize(
    ("text", "key", "suggestion"),
    [
        ("[levels]\nsize = 1\n" + LEVEL, "levels", "level"),
        (LEVEL + "[memroy]\nname = 'x'\n", "memroy", "memory"),
        ('[[level]]\nsize = "32 KiB"\nwayz = 8\n', "wayz", "ways"),
        ('[[level]]\nsize = "32 KiB"\nways = 8\nlin = 64\n', "lin", "line"),
        ("[machine]\nnmae = 'x'\n" + LEVEL, "nmae", "name"),
        (LEVEL + "[memory]\nbandwith = 15.0\n", "bandwith", "bandwidth"),
        ("[compute]\npeek = 1.0\n" + LEVEL, "peek", "peak"),
    ],
)
def test_load_machine_unknown_key_suggests(machine_file, text, key, suggestion):
    # The machine schema (hroof.machine) validates the whole file; the simulator's own
    # reader (load_hierarchy) reads only what it needs.
    path = machine_file(text)
    with raises(f"unknown key '{key}'", f"did you mean '{suggestion}'", str(path), "allowed:"):
        load_machine(path)


def test_load_machine_unknown_key_without_suggestion(machine_file):
    path = machine_file(LEVEL + "[memory]\nzzzzzz = 1\n")
    allowed = "allowed: bandwidth, bandwidth_socket, ceilings, latency, name"
    with raises("unknown key 'zzzzzz'", allowed):
        load_machine(path)


@pytest.mark.parametrize(
    "text",
    [
        '[level]\nsize = "32 KiB"\nways = 8\n',  # one table, not an array of tables
        "level = 5\n",
        'level = "L1"\n',
    ],
)
def test_load_hierarchy_level_not_array_of_tables(machine_file, text):
    path = machine_file(text)
    with raises("'level'", "array of tables", "[[level]]", str(path)):
        load_hierarchy(path)


def test_load_hierarchy_level_entries_not_tables(machine_file):
    path = machine_file('level = ["L1"]\n')
    with raises("[[level]] #1", str(path), "must be a table"):
        load_hierarchy(path)


@pytest.mark.parametrize("text", ["", "[machine]\nname = 'x'\n", "level = []\n"])
def test_load_hierarchy_no_levels(machine_file, text):
    path = machine_file(text)
    with raises(str(path), "no [[level]] tables"):
        load_hierarchy(path)


@pytest.mark.parametrize("missing", ["size", "ways"])
def test_load_hierarchy_level_missing_key(machine_file, missing):
    second = {"size": 'size = "2 MiB"', "ways": "ways = 16"}
    del second[missing]
    path = machine_file(LEVEL + "[[level]]\n" + "\n".join(second.values()) + "\n")
    with raises(f"[[level]] #2 of {path}", f"missing '{missing}'"):
        load_hierarchy(path)


@pytest.mark.parametrize("table", ["machine", "memory", "compute"])
def test_load_machine_tables_must_be_tables(machine_file, table):
    path = machine_file(f"{table} = 3\n" + LEVEL)
    with raises(f"[{table}]", str(path), "must be a table"):
        load_machine(path)


def test_load_hierarchy_bad_geometry(machine_file):
    path = machine_file(LEVEL + '[[level]]\nname = "L2"\nsize = "2 MiB"\nways = 16\nline = 32\n')
    with raises(str(path), "one line size", "L1 64 B", "L2 32 B"):
        load_hierarchy(path)
    path = machine_file('[[level]]\nsize = "48 KiB"\nways = 10\n')
    with raises("L1 capacity 49152 B", "10 ways x 64 B lines"):
        load_hierarchy(path)
    path = machine_file('[[level]]\nsize = "48 KB B"\nways = 12\n')
    with raises("L1 size", "'48 KB B'", "is not a size"):
        load_hierarchy(path)


def test_hierarchy_from_dict():
    h = hierarchy_from_dict({"level": [{"size": 1024, "ways": 2}]}, source="inline")
    assert (h.levels[0].sets, h.source, h.name) == (8, "inline", "inline")
    with raises("no [[level]] tables", "inline"):
        hierarchy_from_dict({"cache": {}}, source="inline")
    with raises("unknown key 'cache'", "inline"):  # the schema lives in hroof.machine
        machine_from_dict({"cache": {}, "level": [{"size": 1024, "ways": 2}]}, source="inline")
    with raises("unknown key 'wayz'", "did you mean 'ways'"):
        hierarchy_from_dict({"level": [{"size": 1024, "ways": 2, "wayz": 2}]},
                            level_keys={"size", "ways"})  # fmt: skip


# ----------------------------------------------------------------------------- resolve_machine


def test_resolve_default_machine():
    assert DEFAULT_MACHINE == "skylake-sp"
    assert "generic" in bundled_machines()
    h = resolve_machine("generic")
    got = [(lv.name, lv.size, lv.ways, lv.line) for lv in h.levels]
    assert got == [
        ("L1", 48 * KiB, 12, 64),
        ("L2", 2 * MiB, 16, 64),
        ("L3", 32 * MiB, 16, 64),
    ]
    assert [lv.sets for lv in h.levels] == [64, 2048, 32768]
    assert h.memory_name == "DRAM"
    assert resolve_machine(None) == resolve_machine("skylake-sp")
    assert resolve_machine(None).levels[0].size == 32 * KiB


def test_resolve_unknown_machine_lists_known():
    known = list(bundled_machines())
    with raises("unknown machine 'generc'", "did you mean 'generic'", "known: " + ", ".join(known)):
        resolve_machine("generc")
    with raises("unknown machine 'skylake'", "generic", "path to a machine TOML file"):
        resolve_machine("skylake")


def test_resolve_machine_by_path(machine_file, monkeypatch):
    path = machine_file(VALID)
    assert resolve_machine(path) == resolve_machine(str(path)) == load_hierarchy(path)
    assert [lv.name for lv in resolve_machine(path).levels] == ["L1", "L2", "L3"]
    # A relative path that exists works too, with or without a .toml suffix.
    monkeypatch.chdir(path.parent)
    assert resolve_machine("machine.toml").levels == load_hierarchy(path).levels
    plain = machine_file(LEVEL, name="box")
    assert resolve_machine("box").levels == (LevelConfig("L1", 32 * KiB, 8),)
    assert resolve_machine(str(plain)).levels == (LevelConfig("L1", 32 * KiB, 8),)


def test_resolve_machine_missing_path(tmp_path):
    path = tmp_path / "gone.toml"
    with raises("not found", str(path)):
        resolve_machine(str(path))
    with raises("not found", "gone.toml"):
        resolve_machine("gone.toml")  # looks like a file name, so it is taken as one


def test_numpy_integers_accepted():
    """Public functions take NumPy values as well as plain Python ones."""
    assert parse_size(np.int64(4096)) == 4096
    lv = LevelConfig("L1", np.int64(4096), np.int32(4), np.int64(64))
    assert (lv.size, lv.ways, lv.line, lv.sets) == (4096, 4, 64, 16)
    assert type(lv.ways) is int and type(lv.line) is int


def test_parse_size_exact_beyond_float_precision():
    assert parse_size("9007199254740993") == 9007199254740993
    assert parse_size("1.5 KiB") == 1536
