"""One parser for every number a user types: the same spellings everywhere or nowhere.

A table of spellings runs through every entry point that takes a whole number: the
parser itself, a kernel's ``KEY=VALUE``, both ends of a sweep range, a command-line
option, and a machine file's size. A value that is not exactly whole is an error
everywhere, never truncated.
"""

from __future__ import annotations

import argparse

import pytest
from helpers import assert_cli_bad, run_cli

from hroof._base.errors import HroofError
from hroof._base.units import (
    format_bytes,
    format_si,
    format_size,
    parse_float,
    parse_int,
    parse_range,
    parse_size,
)
from hroof.cli.options import positive_int
from hroof.machine.model import machine_from_dict
from hroof.studies.sweep import parse_values
from hroof.traces import plan_kernel

#: (spelling, value): accepted everywhere a whole number is.
GOOD = [
    ("4096", 4096),
    ("4_096", 4096),
    ("4.096e3", 4096),
    ("4096.0", 4096),
    ("4 KiB", 4096),
    ("4KiB", 4096),
    ("4k", 4096),
    ("0.5 MiB", 524288),
    ("1e6", 1_000_000),
    ("1_000_000", 1_000_000),
]
#: Spellings refused everywhere (with one line naming the value).
BAD = ["1.9e0", "4096.5", "1,000", "4,096", "abc", "", "1e400", "4 parsecs", "0x1000", "nan"]


def _entry_points(text: str):
    """The value each entry point makes of ``text`` (or the error it raises)."""
    yield "parse_int", lambda: parse_int(text, "n")
    yield "kernel parameter", lambda: plan_kernel("triad", n=text).params["n"]
    yield "range ends", lambda: parse_range(f"{text}..{text}")[0]
    yield "sweep value", lambda: plan_kernel("triad", n=parse_values(f"8,{text}")[1]).params["n"]

    def option():
        try:
            return positive_int("number")(text)
        except argparse.ArgumentTypeError as exc:
            raise HroofError(str(exc)) from None

    yield "option", option

    def machine_size():
        doc = {"level": [{"name": "L1", "size": text, "ways": 1, "line": 64}]}
        return machine_from_dict(doc).hierarchy.levels[0].size

    yield "machine file size", machine_size


@pytest.mark.parametrize("text, value", GOOD)
def test_good_spellings_mean_the_same_everywhere(text, value):
    for where, get in _entry_points(text):
        if where == "machine file size" and value % 64:
            continue  # a cache size must hold whole lines; the number itself was read
        assert get() == value, where


@pytest.mark.parametrize("text", BAD)
def test_bad_spellings_are_refused_everywhere(text):
    for where, get in _entry_points(text):
        if where == "sweep value" and ("," in text or not text):
            continue  # in a sweep list a comma separates values: 8,1,000 is three values
        with pytest.raises(HroofError):
            get()
        assert where


def test_never_truncated_on_the_command_line(capsys):
    assert_cli_bad(capsys, ["simulate", "triad", "n=1.9e0"], "n", "whole number", "1.9e0")
    assert_cli_bad(capsys, ["simulate", "triad", "--chunk-size", "15.5"], "chunk-size")
    assert_cli_bad(capsys, ["sweep", "triad", "n=1.5..4"], "range")
    assert_cli_bad(capsys, ["simulate", "triad", "n=1,000"], "commas")


def test_exponent_ranges_work(capsys):
    assert parse_range("1e3..1e5:x10") == [1000, 10_000, 100_000]
    assert parse_values("1e3..1e5:x10") == ["1000", "10000", "100000"]
    code, out, err = run_cli(capsys, "sweep", "triad", "n=1e3..4e3:x2", "--json", "--quiet")
    assert code == 0, err
    assert '"n": 4000' in out


def test_range_size_checked_before_building():
    with pytest.raises(HroofError, match="1,000,000,000 values"):
        parse_range("1..1e9", limit=10_000)
    with pytest.raises(HroofError, match="at most 5"):
        parse_range("1..1e18:x2", limit=5)


def test_bounds_and_sizes():
    assert parse_int("7", minimum=1, maximum=7) == 7
    with pytest.raises(HroofError, match="at most"):
        parse_int("99999999999999999999999")
    with pytest.raises(HroofError, match="at least 1"):
        parse_int("0", minimum=1)
    with pytest.raises(HroofError, match="whole number"):
        parse_int(True)
    assert parse_float("1e-3") == 0.001
    for bad in ("inf", "nan", "1,5"):
        with pytest.raises(HroofError):
            parse_float(bad)
    assert parse_size("1.5 KiB") == 1536
    with pytest.raises(HroofError, match="whole number of bytes"):
        parse_size("1.3 KiB")


def test_formatters():
    assert (format_bytes(0), format_bytes(1536), format_bytes(5 * 2**30)) == (
        "0 B", "1.5 KiB", "5.0 GiB")  # fmt: skip
    assert format_size(28835840) == "27.5 MiB"
    assert format_si(3.42e-5, "s") == "34.2 µs"
    assert format_si(1.72e10, "FLOP", digits=4) == "17.2 GFLOP"
    assert format_si(None, "W") == "-"
