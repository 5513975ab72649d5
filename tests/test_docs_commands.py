"""Every command of the README and of docs/ runs as pasted, in order.

The ``sh`` blocks of README.md, then of docs/*.md (by name), are run line by
line in one scratch directory that holds the repository's files (a fresh
clone's view): each line in bash, with the virtual environment's ``hroof`` on
PATH, exit status 0 required. Files a command needs are created by an earlier
line. A line is run once even when several pages show it. Not run: ``make
demo`` and ``make test`` (this test is part of ``make test``; the demo has its
own test); ``valgrind`` and the line reading its output when valgrind is not
installed; docs/cluster.md and ``--scheduler tcp://...`` (a Dask cluster on
other machines), and ``--scheduler local`` when the ``cluster`` extra (Dask) is
not installed. The test asserts that nothing else was left out.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"^```sh\n(.*?)^```", re.S | re.M)


def commands() -> list[tuple[str, str]]:
    """(page, line) of every command in the sh blocks, README first, comments dropped."""
    out = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for block in BLOCK.findall(page.read_text()):
            for line in block.splitlines():
                text = re.sub(r"\s#\s.*$", "", line).strip()  # a trailing comment
                if text and not text.startswith("#"):
                    out.append((page.name, text))
    return out


@pytest.mark.slow
def test_docs_commands_run_as_pasted(tmp_path):
    work = tmp_path / "clone"
    work.mkdir()
    for entry in ROOT.iterdir():  # what a clone holds (and the venv, for '. .venv/bin/activate')
        if entry.name not in (".git", "hroof-demo") and not entry.name.endswith("-info"):
            (work / entry.name).symlink_to(entry)
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["HROOF_PROGRESS"] = "0"
    have_valgrind = shutil.which("valgrind") is not None
    have_dask = importlib.util.find_spec("distributed") is not None
    ran, skipped, seen = [], [], set()
    for page, line in commands():
        if line in seen:
            continue
        seen.add(line)
        if line.startswith("make "):
            skipped.append(line)
            continue
        if not have_valgrind and ("valgrind" in line or ".lackey" in line):
            skipped.append(line)
            continue
        if (
            page == "cluster.md"
            or "--scheduler tcp://" in line
            or ("--scheduler" in line and not have_dask)
        ):
            skipped.append(line)
            continue
        t0 = time.perf_counter()
        p = subprocess.run(["bash", "-c", line], cwd=work, env=env, capture_output=True,
                           text=True, timeout=600)  # fmt: skip
        assert p.returncode == 0, f"{page}: {line}\n{p.stderr[-2000:]}"
        ran.append(line)
        print(f"{time.perf_counter() - t0:6.1f} s  {line}")
    assert len(ran) >= 40
    allowed = {"make demo", "make test"}
    cluster = {line for page, line in commands() if page == "cluster.md"}
    assert all(s in allowed or s in cluster or "valgrind" in s or ".lackey" in s
               or "--scheduler" in s for s in skipped), skipped  # fmt: skip
    assert (work / "stencil192.json").is_file() and (work / "sweep" / "report.html").is_file()
