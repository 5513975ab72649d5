"""docs/fidelity.md audited by its own test: every row that names a command runs it, and
fails when the output lacks a value of the row's ``expects`` column.

A row of the page's tables is ``| # | the source says | command | hroof | expects | status |``:
``command`` holds one or more `` `hroof ...` `` commands (their outputs are read together;
a command followed by "(slow)" makes the row's test slow), ``expects`` the strings the
output must contain, each in backticks, compared with runs of white space collapsed to one
space (so a table row or a wrapped sentence matches as printed). A row without a command
must be ✗ (not modelled) and expect nothing.

The totals paragraph of the page is not typed: ``test_totals_are_counted_from_the_rows``
recomputes it from the rows (status, command, slow), and
``python tests/test_fidelity_table.py --write`` writes it.
"""

from __future__ import annotations

import re
import shlex
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "fidelity.md"
#: The statuses, in the order the totals name them.
STATUSES = ("✔", "≈", "Δ", "◐", "✗")
TOTALS = re.compile(r"^Totals \(counted by [^\n]*$", re.M)
_ROW = re.compile(r"^\| ([ALIG]\d+) \|(.*)\|\s*$", re.M)
_TICKED = re.compile(r"`([^`]+)`")


def rows(text: str | None = None) -> list[dict]:
    """The claims of the page: id, commands (argv lists), slow, expects, status."""
    text = PAGE.read_text(encoding="utf-8") if text is None else text
    out = []
    for rid, rest in _ROW.findall(text):
        cells = [c.strip() for c in rest.split(" | ")]
        if len(cells) != 5:
            raise ValueError(f"row {rid} of {PAGE.name} has {len(cells) + 1} cells, not 6")
        _says, command, _hroof, expects, status = cells
        commands = [shlex.split(c)[1:] for c in _TICKED.findall(command) if c.startswith("hroof ")]
        out.append(
            {
                "id": rid,
                "commands": commands,
                "slow": "(slow)" in command,
                "expects": _TICKED.findall(expects),
                "status": status[:1],
                "parts": [s for s in STATUSES if s in status[1:]],
            }
        )
    return out


def totals(found: list[dict]) -> str:
    """The totals paragraph, counted from the rows."""
    count = Counter(r["status"] for r in found)
    mixed = [r["id"] for r in found if r["parts"]]
    run = [r for r in found if r["commands"]]
    slow = [r["id"] for r in run if r["slow"]]
    parts = [f"{count[s]} {s}" for s in STATUSES]
    if mixed:
        parts[0] += f" ({', '.join(mixed)} with a second status for part of the claim)"
    return (
        "Totals (counted by `tests/test_fidelity_table.py` from the rows below, not typed): "
        f"{len(found)} claims, {', '.join(parts)}. {len(run)} rows name a command, which that "
        "test runs, checking every value of the row's `expects` column in its output"
        + (f" ({', '.join(slow)} only with the slow tests)" if slow else "")
        + f"; the {len(found) - len(run)} without one are the ✗ rows."
    )


ROWS = rows()
_OUTPUTS: dict[tuple[str, ...], str] = {}


def _output(capsys, tmp_path_factory, argv: list[str]) -> str:
    """stdout of ``hroof ARGV``, run once per session in a scratch directory."""
    key = tuple(argv)
    if key not in _OUTPUTS:
        import os

        from hroof.cli import main

        here = os.getcwd()
        os.chdir(tmp_path_factory.mktemp("fidelity"))
        try:
            code = main(list(argv))
        finally:
            os.chdir(here)
        out, err = capsys.readouterr()
        assert code == 0, f"hroof {shlex.join(argv)} exited {code}: {err}"
        _OUTPUTS[key] = " ".join(out.split())
    return _OUTPUTS[key]


def _param(row):
    marks = [pytest.mark.slow] if row["slow"] else []
    return pytest.param(row, id=row["id"], marks=marks)


@pytest.mark.parametrize("row", [_param(r) for r in ROWS if r["commands"]])
def test_row_prints_what_it_expects(row, capsys, tmp_path_factory):
    assert row["expects"], f"{row['id']} names a command but expects nothing"
    out = " ".join(_output(capsys, tmp_path_factory, argv) for argv in row["commands"])
    missing = [e for e in row["expects"] if " ".join(e.split()) not in out]
    assert not missing, f"{row['id']}: not in the output of its commands: {missing}"


def test_rows_without_a_command_are_not_modelled():
    for row in ROWS:
        if not row["commands"]:
            assert row["status"] == "✗" and not row["expects"], row["id"]


def test_every_row_has_a_status_and_a_unique_id():
    assert all(r["status"] in STATUSES for r in ROWS), [r["id"] for r in ROWS]
    ids = [r["id"] for r in ROWS]
    assert len(ids) == len(set(ids)) and len(ids) > 80


def test_totals_are_counted_from_the_rows():
    found = TOTALS.findall(PAGE.read_text(encoding="utf-8"))
    assert found == [totals(ROWS)], "run: python tests/test_fidelity_table.py --write"


if __name__ == "__main__":  # pragma: no cover
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/test_fidelity_table.py --write")
    text = PAGE.read_text(encoding="utf-8")
    PAGE.write_text(TOTALS.sub(lambda _m: totals(rows(text)), text, count=1), encoding="utf-8")
