"""Soak check (issue 13): a thousand mixed valid and hostile invocations in a row.

Runs ``hroof.cli.main`` in this process (as a long-lived library user or a test runner
would), cycling through valid commands and the hostile inputs of tests/test_fuzz.py in a
seeded random order, and records: the count per exit status (anything other than 0 and 2
is a defect), any traceback text, the peak resident memory, and the resident memory after
the first and the last hundred invocations (growth there would be a leak).

    .venv/bin/python bench/soak.py            # 1000 invocations
    .venv/bin/python bench/soak.py --count 200 --memory 0   # the machine's own memory
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import random
import resource
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

from hroof.cli import main

VALID = [
    ["kernels"],
    ["simulate", "triad", "n=2000", "-q"],
    ["simulate", "stencil7", "n=24", "--machine", "teaching", "-q", "--json"],
    ["simulate", "spmv", "matrix=random", "rows=3000", "-q"],
    ["simulate", "--trace", "{dir}/t.din", "-q"],
    ["simulate", "--trace", "{dir}/t.npz", "-q", "--no-classify"],
    ["trace", "triad", "n=5000", "--out", "{dir}/out.npz"],
    ["trace", "add", "n=5000", "--out", "{dir}/out.din"],
    ["sweep", "triad", "n=1000,2000", "--workers", "1", "-q"],
    ["machine", "show", "skylake-sp"],
    ["machine", "list"],
    ["gemm", "1024", "1024", "1024"],
    [
        "mwp",
        "--mem-latency",
        "400",
        "--departure-delay",
        "4",
        "--comp-cycles",
        "100",
        "--mem-cycles",
        "200",
        "--warps",
        "200",
    ],
    ["table"],
    ["mrc", "stencil7", "n=16", "-q", "--no-simulate"],
]

HOSTILE = [
    ["simulate", "triad", "n=99999999999999999999999"],
    ["simulate", "stencil7", "n=10000000"],
    ["sweep", "triad", "n=1..1000000000:+1"],
    ["sweep", "gemm", "m=1..1000", "n=1..1000", "k=1..1000"],
    ["simulate", "spmv", "matrix=random", "rows=1000000000"],
    ["simulate", "spmv", "matrix={dir}/big.mtx"],
    ["simulate", "triad", "n=1e9", "--chunk-size", "1e12", "--no-classify"],
    ["simulate", "triad", "n=1e13"],
    ["simulate", "--trace", "{dir}/huge.npz", "--no-classify"],
    ["simulate", "--trace", "{dir}/random.npz", "-q"],
    ["simulate", "--trace", "{dir}/bad.din"],
    ["machine", "detect", "--cpuinfo", "/nonexistent"],
    ["machine", "show", "{dir}/inf.toml"],
    ["gemm", "128", "128", "128", "--tile", "1000000x1000000"],
    ["report", "{dir}/nan.json"],
    ["trace", "triad", "n=10", "--out", "{dir}/file/x.din"],
    ["simulate", "triad", "n=1.5"],
    ["sweep", "triad", "n=1e400"],
    ["run", "triad", "n=1e10"],
    ["mrc", "triad", "n=1e13"],
    ["simulate", "triad", "n=4611686018427387904"],
    [
        "mwp",
        "--mem-latency",
        "nan",
        "--departure-delay",
        "4",
        "--comp-cycles",
        "1",
        "--mem-cycles",
        "1",
        "--warps",
        "8",
    ],
]


def _fixtures(d: Path) -> None:
    rng = np.random.default_rng(0)
    (d / "t.din").write_text("".join(f"{i % 2} {64 * i:x} 8\n" for i in range(2000)))
    n = 2000
    np.savez(d / "t.npz", addr=np.arange(n, dtype=np.uint64) * 8,
             size=np.full(n, 8, np.uint32), kind=np.zeros(n, np.uint8))  # fmt: skip
    np.savez(d / "huge.npz", addr=np.array([0], np.uint64), size=np.array([2**31], np.uint32),
             kind=np.zeros(1, np.uint8))  # fmt: skip
    m = 200_000
    np.savez(d / "random.npz", addr=(rng.integers(0, 1 << 45, m) & ~63).astype(np.uint64),
             size=np.full(m, 8, np.uint32), kind=np.zeros(m, np.uint8))  # fmt: skip
    (d / "bad.din").write_text("0 40 8\n7 zz 8\n")
    (d / "big.mtx").write_text(
        "%%MatrixMarket matrix coordinate pattern general\n100000000000 100000000000 0\n"
    )
    text = (Path(__file__).parent.parent / "hroof/data/skylake-sp.toml").read_text()
    (d / "inf.toml").write_text(text.replace("bandwidth = ", "bandwidth = inf #", 1))
    (d / "nan.json").write_text('{"schema": "hroof.sweep/1", "machine": "x", "points": '
                                '[{"params": {"n": 1}, "footprint": NaN, "result": {}}]}')  # fmt: skip
    (d / "file").write_text("a file, not a directory")


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def main_soak(count: int, seed: int) -> dict:
    rng = random.Random(seed)
    exits: Counter = Counter()
    tracebacks = []
    rss_marks = {}
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        _fixtures(d)
        os.environ["HROOF_CACHE_DIR"] = str(d / "cache")
        cases = [(True, c) for c in VALID] + [(False, c) for c in HOSTILE]
        t0 = time.perf_counter()
        for i in range(count):
            _valid, case = rng.choice(cases)
            argv = [a.format(dir=d) for a in case]
            out, err = io.StringIO(), io.StringIO()
            try:
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                    code = main(argv)
            except BaseException as exc:  # a defect: main must return
                code = f"raised {type(exc).__name__}"
            exits[code] += 1
            text = err.getvalue()
            if "Traceback" in text or (code == 2 and len(text.strip().splitlines()) != 1):
                tracebacks.append((argv, text[-300:]))
            if code not in (0, 2):
                tracebacks.append((argv, f"exit {code}: {text[-300:]}"))
            if i + 1 in (100, count):
                rss_marks[i + 1] = _rss()
        seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"count": count, "exits": dict(exits), "bad": tracebacks, "peak": peak,
            "rss": rss_marks, "seconds": seconds}  # fmt: skip


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument(
        "--memory",
        default=str(1 << 30),
        help="bytes hroof may believe it has (HROOF_MEMORY_LIMIT; default 1 GiB, a small "
        "container); 0: what the machine reports",
    )
    a = ap.parse_args()
    if a.memory != "0":
        os.environ["HROOF_MEMORY_LIMIT"] = a.memory
    r = main_soak(a.count, a.seed)
    other = sum(v for k, v in r["exits"].items() if k not in (0, 2))
    print(f"{r['count']} invocations in {r['seconds']:.0f} s; exits {r['exits']}")
    print(f"exits other than 0/2: {other}; tracebacks or multi-line errors: {len(r['bad'])}")
    print(f"peak RSS {r['peak'] / 2**20:.0f} MiB; RSS after 100: "
          f"{r['rss'].get(100, 0) / 2**20:.0f} MiB, after {r['count']}: "
          f"{r['rss'].get(r['count'], 0) / 2**20:.0f} MiB")  # fmt: skip
    for argv, text in r["bad"][:10]:
        print("  ", " ".join(argv), "->", text.strip().replace("\n", " | ")[:200])
    sys.exit(1 if other or r["bad"] else 0)
