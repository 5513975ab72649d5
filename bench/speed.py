"""hroof against pycachesim and a C reference, same run, on three streams.

Streams (all on the reference hierarchy: L1 48 KiB/12-way, L2 2 MiB/16-way,
L3 32 MiB/16-way, 64-byte lines; the bundled machine ``generic``):

* ``stencil7``: the 7-point stencil at n = 128 (16.8 M accesses, 7 loads and
  1 store a point);
* ``triad``: STREAM triad over 2**22 doubles (12.6 M accesses, 2 loads and 1
  store an element, 96 MiB);
* ``random``: 16.8 M accesses at uniformly random 8-byte-aligned addresses in
  256 MiB, 3 loads then 1 store (seeded).

Per stream, interleaved rounds (best kept; the machine is a noisy shared
2-core VM): hroof through the API with classification off and on (1 and 2
threads each); hroof fed the arrays the npz reader hands out (uint64 addresses,
uint32 sizes); pycachesim's ``loadstore`` on ready lists; the C reference
``bench/lru_ref.c`` (compiled here with the system compiler, ``-O3
-march=native``; its own clock, simulation only). Then once per stream:
``hroof simulate --trace FILE.npz`` through the command line (its JSON
``timing`` and the wall time of the process, best of the rounds), and pycachesim end to end with
the NumPy-to-list conversion done with the garbage collector disabled (the
fair peer).

With classification on, it also prints the bytes of classification state:
flag pages per distinct line of the stream, shadows per line of capacity.

hroof's counts must equal the C reference's at every level (lookups, misses,
writebacks), or the script fails.

Usage::

    python bench/speed.py [--repeat 5] [--streams stencil7,triad,random]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from compare_pycachesim import build_pycachesim, reference_hierarchy  # noqa: E402

from hroof.cachesim import Simulator  # noqa: E402
from hroof.traces import plan_kernel  # noqa: E402
from hroof.traces.io import iter_trace, write_npz  # noqa: E402

STREAMS = ("stencil7", "triad", "random")


def make_stream(name: str):
    """``(addr int64, size uint32, kind uint8, per_point)`` of a benchmark stream (a
    chunk's dtypes: the simulator converts none of them)."""
    if name == "stencil7":
        plan, per = plan_kernel("stencil7", n=128), 8
    elif name == "triad":
        plan, per = plan_kernel("triad", n=1 << 22), 3
    elif name == "random":
        n = 1 << 24
        rng = np.random.default_rng(14)
        addr = rng.integers(0, (256 << 20) // 8, n, dtype=np.int64) * 8
        kind = np.tile(np.array([0, 0, 0, 1], np.uint8), n // 4)
        return addr, np.full(n, 8, np.uint32), kind, 4
    else:
        raise ValueError(name)
    parts = [tuple(x.copy() for x in c) for c in plan.chunks(1 << 20)]
    addr, size, kind = (np.concatenate([p[i] for p in parts]).astype(t) for i, t in
                        enumerate((np.int64, np.uint32, np.uint8)))  # fmt: skip
    return addr, size, kind, per


def to_loadstore(addr, kind, per_point):
    """pycachesim's ``loadstore`` input, one (loads, stores) pair per point."""
    a = addr.reshape(-1, per_point)
    k = kind.reshape(-1, per_point)
    if not (k == k[0]).all():
        raise ValueError("every point must have the same load/store pattern")
    is_load = k[0] == 0
    return list(zip(a[:, is_load].tolist(), a[:, ~is_load].tolist(), strict=True))


def chunked(arrays, n=1 << 20):
    total = arrays[0].shape[0]
    return [tuple(a[i : i + n] for a in arrays) for i in range(0, total, n)]


def run_hroof(h, chunks, **kw):
    sim = Simulator(h, **kw)
    t0 = time.perf_counter()
    for c in chunks:
        sim.feed(*c)
    r = sim.finish()
    t = time.perf_counter() - t0
    if kw.get("classify") and kw.get("threads", 1) == 1:
        CLASSIFY_BYTES.update(
            flags=sum(a.nbytes for a in sim._fl),
            shadows=sum(a.nbytes for a in sim._sh),
            capacity_lines=sum(lv.lines for lv in h.levels),
        )
    elif kw.get("classify"):  # the levels below L1 keep their own flag words
        CLASSIFY_BYTES["flags_2t"] = sum(a.nbytes for a in (*sim._fl, *sim._fl_lo))
    return t, r


#: Bytes held by the last classified run: flag pages (per distinct line) and shadows
#: (per line of capacity).
CLASSIFY_BYTES: dict[str, int] = {}


def run_pycachesim(h, pairs, per_point):
    cs, caches = build_pycachesim(h)
    t0 = time.perf_counter()
    cs.loadstore(pairs, length=8)
    cs.force_write_back()
    return time.perf_counter() - t0, [c.stats() for c in caches]


def compile_c(tmp: Path) -> Path:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise SystemExit("no C compiler found (set CC)")
    exe = tmp / "lru_ref"
    subprocess.run([cc, "-O3", "-march=native", "-o", str(exe), str(HERE / "lru_ref.c")],
                   check=True)  # fmt: skip
    return exe


def run_c(exe, path, h):
    args = [str(exe), str(path), str(h.line)] + [f"{lv.size}:{lv.ways}" for lv in h.levels]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout.split("\n")
    levels = [tuple(int(x) for x in row.split()[1:]) for row in out if row.startswith("L")]
    secs = float(next(row.split()[1] for row in out if row.startswith("seconds")))
    return secs, levels


def counts(r):
    return [(lv.lookups, lv.misses, lv.writebacks_in, lv.writebacks) for lv in r.levels]


def run_cli(npz: Path):
    cmd = [sys.executable, "-m", "hroof", "simulate", "--trace", str(npz), "--machine",
           "generic", "--no-classify", "--json", "--quiet"]  # fmt: skip
    t0 = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - t0
    return wall, json.loads(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--streams", default=",".join(STREAMS))
    ap.add_argument("--skip-pycachesim", action="store_true")
    args = ap.parse_args(argv)
    h = reference_hierarchy()
    tmp = Path(tempfile.mkdtemp(prefix="hroof-speed-"))
    try:
        exe = compile_c(tmp)
        print(f"{h.describe()}; C reference compiled in {tmp}")
        for cl in (False, True):  # JIT compile or cache load outside the timings
            run_hroof(h, chunked(make_stream("triad")[:3], 1 << 16)[:4], classify=cl)
        failed = False
        for name in args.streams.split(","):
            failed |= bench_stream(name, h, exe, tmp, args)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


def bench_stream(name, h, exe, tmp, args) -> bool:
    addr, size, kind, per = make_stream(name)
    n = addr.shape[0]
    print(f"\n== {name}: {n / 1e6:.1f} M accesses")
    cfile = tmp / f"{name}.bin"
    with open(cfile, "wb") as f:
        f.write(np.int64(n).tobytes())
        f.write(addr.tobytes())
        f.write(kind.tobytes())
    npz = tmp / f"{name}.npz"
    write_npz(npz, [(addr, size, kind)])
    api = chunked((addr, size, kind))
    from_npz = [tuple(c) for c in iter_trace(npz)]
    pairs = None
    if not args.skip_pycachesim:
        pairs = to_loadstore(addr, kind, per)
    modes = {
        "hroof API, classify off": (api, {"classify": False}),
        "hroof API, classify off, 2 threads": (api, {"classify": False, "threads": 2}),
        "hroof API, classify on": (api, {"classify": True}),
        "hroof API, classify on, 2 threads": (api, {"classify": True, "threads": 2}),
        "hroof API fed npz arrays (u64/u32), classify off": (from_npz, {"classify": False}),
    }
    best: dict[str, float] = {}
    res = {}
    for _ in range(args.repeat):
        for label, (chunks, kw) in modes.items():
            gc.collect()
            t, r = run_hroof(h, chunks, **kw)
            best[label] = min(t, best.get(label, t))
            res[label] = r
        t, c_levels = run_c(exe, cfile, h)
        best["C reference"] = min(t, best.get("C reference", t))
        if pairs is not None:
            gc.collect()
            t, stats = run_pycachesim(h, pairs, per)
            best["pycachesim loadstore"] = min(t, best.get("pycachesim loadstore", t))
    ok = True
    for label, r in res.items():
        if counts(r) != c_levels:
            print(f"ERROR: {label} counts {counts(r)} differ from C {c_levels}", file=sys.stderr)
            ok = False
    if pairs is not None:
        del pairs
        gc.collect()
        gc.disable()
        t0 = time.perf_counter()
        pairs = to_loadstore(addr, kind, per)
        conv = time.perf_counter() - t0
        gc.enable()
        best["pycachesim end to end (lists built with gc off)"] = (
            best["pycachesim loadstore"] + conv
        )
        del pairs
    wall = js = None
    for _ in range(args.repeat):  # best of the rounds, as for the API
        w, j = run_cli(npz)
        if js is None or j["timing"]["simulate_s"] < js["timing"]["simulate_s"]:
            js = j
        wall = w if wall is None else min(wall, w)
    if [
        (lv["lookups"], lv["misses"], lv["writebacks_in"], lv["writebacks"]) for lv in js["levels"]
    ] != c_levels:
        print("ERROR: CLI counts differ from C", file=sys.stderr)
        ok = False
    tm = js["timing"]
    best["hroof simulate --trace npz: simulate_s"] = tm["simulate_s"]
    best["hroof simulate --trace npz: process wall"] = wall
    extra = {k: v for k, v in tm.items() if k != "simulate_s"}
    pyc = best.get("pycachesim loadstore")
    cref = best["C reference"]
    print(f"{'mode':<52} {'time s':>8} {'M acc/s':>8} {'vs pycs':>8} {'of C':>6}")
    for label, t in best.items():
        r1 = f"{pyc / t:7.2f}x" if pyc else "-"
        r2 = f"{cref / t:5.2f}"
        print(f"{label:<52} {t:8.3f} {n / t / 1e6:8.1f} {r1:>8} {r2:>6}")
    print(f"CLI timing fields besides simulate_s: {extra}")
    distinct = np.unique(addr >> h.line_bits).size
    cb = CLASSIFY_BYTES
    print(
        f"classification state: flag pages {cb['flags'] / 2**20:.1f} MiB = "
        f"{cb['flags'] / distinct:.2f} B per distinct line ({distinct} lines); shadows "
        f"{cb['shadows'] / 2**20:.1f} MiB = {cb['shadows'] / cb['capacity_lines']:.1f} B per "
        f"line of capacity; two threads: flag pages {cb['flags_2t'] / 2**20:.1f} MiB = "
        f"{cb['flags_2t'] / distinct:.2f} B per distinct line"
    )
    print(f"counts per level (lookups, misses, wb in, wb out), equal to C: {ok}: {c_levels}")
    if pyc:
        print(f"pycachesim misses: {[s['MISS_count'] for s in stats]}")
    return not ok


if __name__ == "__main__":
    sys.exit(main())
