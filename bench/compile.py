"""What a user's first run costs: each user-facing path cold, in a fresh process.

Each path runs as its own ``hroof`` process with an empty ``NUMBA_CACHE_DIR`` (every
Numba kernel it needs is compiled, none loaded) and an empty result cache, and is
measured from outside: wall time, CPU time (user + system, the process and the
processes it waited for) and peak RSS (the largest of those processes), from
``os.wait4``. Then the whole set runs again, one path after another on one shared
empty cache (what compiling everything once costs), and, unless ``--no-warm``, each
path once more on that now warm cache.

A path still running after ``--timeout`` seconds is stopped and recorded as such
(``>`` before its figures). Results print as a Markdown table (the one of
``bench/RESULTS.md``) and, with ``--json FILE``, as JSON.

Usage::

    python bench/compile.py [--paths simulate-skylake-sp,demo] [--timeout 900]
                            [--json FILE] [--no-warm]

Run it on an otherwise idle machine: a compile is one thread, but two paths are never
run at once here, and other load lengthens the wall times.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
HROOF = [sys.executable, "-m", "hroof"]
S64 = ["simulate", "stencil7", "n=64", "--quiet"]


def _machines() -> list[str]:
    """The bundled machines that have cache levels to simulate (GPU presets included)."""
    return sorted(p.stem for p in (ROOT / "hroof" / "data").glob("*.toml"))


def _prefetch_machine(tmp: Path) -> Path:
    """Skylake-SP with its L2 adjacent-line prefetcher switched on (the preset's comment)."""
    text = (ROOT / "hroof" / "data" / "skylake-sp.toml").read_text()
    text = text.replace('# prefetch = "adjacent"', 'prefetch = "adjacent"', 1)
    out = tmp / "skylake-sp-prefetch.toml"
    out.write_text(text)
    return out


def paths(tmp: Path) -> dict[str, list[str]]:
    """Name -> hroof arguments, in the order they run."""
    p: dict[str, list[str]] = {}
    for m in _machines():
        p[f"simulate-{m}"] = [*S64, "--machine", m, "--engine", "numba"]
    p["no-classify"] = [*S64, "--no-classify"]
    p["threads-2"] = [*S64, "--threads", "2"]
    p["cores-4"] = ["simulate", "stencil7", "n=64", "cores=4", "--quiet"]
    p["prefetch"] = [*S64, "--machine", str(_prefetch_machine(tmp))]
    p["sample-sets"] = [*S64, "--sample-sets", "1/16"]
    p["mrc"] = ["mrc", "stencil7", "n=64", "--quiet"]
    p["demo"] = ["demo", "--out", str(tmp / "demo"), "--quiet"]
    p["measure-quick"] = ["machine", "measure", "--quick", "--no-save", "--quiet"]
    return p


def run(args: list[str], env: dict, timeout: float) -> dict:
    """Run ``hroof args`` to its end (or ``timeout``); wall s, CPU s, peak RSS MiB, rc."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [*HROOF, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip
    stopped = False
    while True:
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() - t0 > timeout:
            os.killpg(proc.pid, signal.SIGKILL)
            pid, status, ru = os.wait4(proc.pid, 0)
            stopped = True
            break
        time.sleep(0.05)
    wall = time.perf_counter() - t0
    err = proc.stderr.read().decode(errors="replace").strip().splitlines()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(ru.ru_utime + ru.ru_stime, 2),
        "peak_mib": round(ru.ru_maxrss / 1024, 1),
        "rc": proc.returncode,
        "stopped": stopped,
        "stderr_tail": err[-1] if err and proc.returncode else "",
    }


def _env(numba_cache: Path, results: Path) -> dict:
    env = dict(os.environ)
    env.update(NUMBA_CACHE_DIR=str(numba_cache), HROOF_CACHE_DIR=str(results))
    env.update(HROOF_HOST_MACHINE=str(results / "host.toml"), HROOF_PROGRESS="0")
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _fmt(r: dict | None, key: str) -> str:
    if r is None:
        return ""
    mark = ">" if r["stopped"] else ""
    return f"{mark}{r[key]:,.1f}" if key != "peak_mib" else f"{mark}{r[key]:,.0f}"


def table(rows: dict[str, dict]) -> str:
    head = (
        "| path | cold wall s | cold CPU s | cold peak MiB | warm wall s | warm peak MiB |\n"
        "|---|---:|---:|---:|---:|---:|"
    )
    out = [head]
    for name, r in rows.items():
        cold, warm = r.get("cold"), r.get("warm")
        note = ""
        if cold and cold["stopped"]:
            note = " (stopped)"
        elif cold and cold["rc"]:
            note = f" (exit {cold['rc']}: {cold['stderr_tail'][:60]})"
        out.append(
            f"| {name}{note} | {_fmt(cold, 'wall_s')} | {_fmt(cold, 'cpu_s')} | "
            f"{_fmt(cold, 'peak_mib')} | {_fmt(warm, 'wall_s')} | {_fmt(warm, 'peak_mib')} |"
        )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--paths", help="comma-separated path names (default: all)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds a path may take")
    ap.add_argument("--json", type=Path, help="also write the figures as JSON here")
    ap.add_argument("--no-warm", action="store_true", help="skip the warm runs")
    ap.add_argument("--no-set", action="store_true", help="skip the whole set together")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="hroof-compile-"))
    try:
        todo = paths(tmp)
        if a.paths:
            names = a.paths.split(",")
            unknown = [n for n in names if n not in todo]
            if unknown:
                sys.exit(f"compile.py: unknown paths {unknown}; known: {sorted(todo)}")
            todo = {n: todo[n] for n in names}
        rows: dict[str, dict] = {}
        for name, args in todo.items():
            nc, res = tmp / f"nc-{name}", tmp / f"res-{name}"
            nc.mkdir()
            res.mkdir()
            r = run(args, _env(nc, res), a.timeout)
            rows[name] = {"args": args, "cold": r}
            shutil.rmtree(nc, ignore_errors=True)
            print(f"{name:24s} cold {r['wall_s']:8.1f} s wall {r['cpu_s']:8.1f} s CPU "
                  f"{r['peak_mib']:7.0f} MiB rc {r['rc']}{' STOPPED' if r['stopped'] else ''}",
                  flush=True)  # fmt: skip
        total = None
        if not a.no_set:
            nc, res = tmp / "nc-all", tmp / "res-all"
            nc.mkdir()
            res.mkdir()
            total = {"wall_s": 0.0, "cpu_s": 0.0, "peak_mib": 0.0, "stopped": False, "rc": 0}
            for name, args in todo.items():
                r = run(args, _env(nc, res), a.timeout)
                total["wall_s"] += r["wall_s"]
                total["cpu_s"] += r["cpu_s"]
                total["peak_mib"] = max(total["peak_mib"], r["peak_mib"])
                total["stopped"] |= r["stopped"]
                total["rc"] = total["rc"] or r["rc"]
                rows[name]["in_set"] = r
            if not a.no_warm:
                for name, args in todo.items():
                    rows[name]["warm"] = run(args, _env(nc, res), a.timeout)
            print(f"{'whole set, one cache':24s} {total['wall_s']:8.1f} s wall "
                  f"{total['cpu_s']:8.1f} s CPU", flush=True)  # fmt: skip
        shown = dict(rows)
        if total is not None:
            shown["whole set, one after another on one cache"] = {"cold": total}
        print()
        print(table(shown))
        if a.json:
            a.json.write_text(json.dumps({"paths": rows, "set": total}, indent=1) + "\n")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
