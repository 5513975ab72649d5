"""docs/tutorial.md runs top to bottom: its ``python`` blocks, in order, in one namespace,
in a scratch directory; every ``assert`` in it is a claim the text makes."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

TUTORIAL = Path(__file__).resolve().parent.parent / "docs" / "tutorial.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def blocks() -> list[str]:
    return BLOCK.findall(TUTORIAL.read_text())


@pytest.mark.slow
def test_tutorial_runs_top_to_bottom(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HROOF_PROGRESS", "0")
    code = blocks()
    assert len(code) >= 10
    namespace: dict = {"__name__": "tutorial"}
    t0 = time.perf_counter()
    for i, block in enumerate(code, 1):
        try:
            exec(compile(block, f"{TUTORIAL.name} block {i}", "exec"), namespace)
        except Exception as exc:
            raise AssertionError(f"block {i} of {TUTORIAL.name} failed:\n{block}") from exc
    took = time.perf_counter() - t0
    out = capsys.readouterr().out
    assert "DRAM binds" in out and (tmp_path / "tutorial-interactive.html").is_file()
    with capsys.disabled():
        print(f"\ntutorial: {len(code)} blocks in {took:.1f} s")


def test_readme_links_the_tutorial():
    readme = (TUTORIAL.parent.parent / "README.md").read_text()
    assert "docs/tutorial.md" in readme
