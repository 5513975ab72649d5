"""``hroof warm`` (every kernel compiled ahead, a group per process) and the one-line
notice a command prints while kernels compile for the first time."""

from __future__ import annotations

import io
import subprocess
import sys
import time

import pytest

from hroof._base import jit
from hroof.cli import main
from hroof.studies import warm as W


def test_warm_runs_every_group_and_says_so(capsys):
    assert main(["warm", "--jobs", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("compiling (or loading from the cache) every kernel")
    shown = {line.split("  ")[1].strip() for line in out[1:-1]}
    assert shown == {what for what, _ in W.GROUPS.values()}
    assert out[-1].startswith(f"done: {len(W.GROUPS)} groups in ")


def test_warm_quiet_prints_nothing(capsys):
    assert main(["warm", "--quiet", "--jobs", "1"]) == 0
    assert capsys.readouterr().out == ""


def test_phases_hold_every_group_once():
    names = [n for phase in W.PHASES for n in phase]
    assert len(names) == len(set(names)) == len(W.GROUPS)


def test_warm_reports_each_group_once():
    seen = []
    took = W.warm(groups=["generators", "mrc"], jobs=1, done=lambda n, s: seen.append(n))
    assert seen == ["mrc", "generators"]  # in the order of their phase
    assert set(took) == {"generators", "mrc"} and all(s >= 0 for s in took.values())


@pytest.fixture
def notice(monkeypatch):
    """A fresh notice state writing to a buffer after 50 ms."""
    state = {"stream": None, "after": 1.0, "shown": False, "depth": 0, "timer": None}
    monkeypatch.setattr(jit, "_NOTICE", state)
    buf = io.StringIO()
    jit.notify_compiles(buf, after=0.05)
    return buf


def _wait(cond, limit=5.0):
    end = time.monotonic() + limit
    while not cond() and time.monotonic() < end:
        time.sleep(0.01)


def test_a_long_compile_prints_the_notice_once(notice):
    jit._on_compile(True)
    _wait(lambda: notice.getvalue())
    jit._on_compile(True)  # a nested compile, then another long one: still one line
    jit._on_compile(False)
    jit._on_compile(False)
    jit._on_compile(True)
    time.sleep(0.2)
    jit._on_compile(False)
    assert notice.getvalue() == jit.COMPILE_NOTICE + "\n"


def test_a_quick_load_prints_nothing(notice):
    jit._on_compile(True)
    jit._on_compile(False)  # done before the notice was due (a kernel from the cache)
    time.sleep(0.2)
    assert notice.getvalue() == ""


def test_switched_off_prints_nothing(notice):
    jit.notify_compiles(None)
    jit._on_compile(True)
    time.sleep(0.2)
    jit._on_compile(False)
    assert notice.getvalue() == ""


@pytest.mark.slow
def test_the_command_line_shows_it_on_a_cold_cache_only(tmp_path):
    """A fresh process with an empty cache compiles (one line on stderr with
    HROOF_PROGRESS=1), the next one loads (nothing); --quiet never shows it."""
    env = {
        "PATH": "/usr/bin:/bin",
        "NUMBA_CACHE_DIR": str(tmp_path / "numba"),
        "HROOF_PROGRESS": "1",
        "HOME": str(tmp_path),
    }
    args = [sys.executable, "-m", "hroof", "simulate", "triad", "n=1000", "--engine", "numba"]

    def run(*extra):
        return subprocess.run([*args, *extra], env=env, capture_output=True, text=True, check=True)

    quiet = run("--quiet")  # compiles, silently
    assert jit.COMPILE_NOTICE not in quiet.stderr
    (tmp_path / "numba").rename(tmp_path / "old")  # an empty cache again
    cold = run()
    assert cold.stderr.count(jit.COMPILE_NOTICE) == 1
    warm = run()
    assert jit.COMPILE_NOTICE not in warm.stderr
