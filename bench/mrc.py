"""Miss-ratio curves: one pass against one simulation per capacity, SHARDS against exact.

1. Speed, on the stencil7 n=128 stream (16.8 M accesses), same run: the exact
   fully-associative curve (every capacity, ``hroof.cachesim.mrc``) against one
   classified simulation of skylake-sp's three levels, and against simulating 16
   capacities (4 KiB .. 128 MiB, one 16-way level each, classified) one by one;
   the curve is checked against each of those runs (at a capacity, the curve is
   at least the level's compulsory + capacity misses: it is the simulator's
   fully-associative shadow). Then SHARDS at R = 0.01 against the exact pass,
   and where SHARDS's time goes: the simulator's input check of the chunks
   (``scan_chunk``), hashing and filtering every access (``prefilter``), and
   the rest (the sampled stack passes and the curve). Every timing covers the
   pass over chunks already in memory; generating the trace is timed apart.
   CPU time (this process's, all threads) is the best of ``--repeats``; then
   wall time, interleaved, of the exact pass and of SHARDS on one thread and on
   two (``threads=2``), best of ``--repeats`` (a quiet machine's figure: on a
   loaded one the second thread waits for a CPU).
2. Accuracy of SHARDS (R = 0.1, 0.01, 0.001, and a fixed size of 8192 lines)
   on stencil, SpMV and random streams, over ``--seeds`` hash seeds: mean
   absolute miss-ratio error against the exact curve on 100 evenly spaced
   capacities from 0 to twice the distinct lines (the SHARDS paper's kind of
   average) and on 64 log-spaced capacities from the sample's resolution (1/R
   lines) up; the mean, smallest and largest over the seeds, the distinct
   lines sampled, whether the result warned, and the error the run itself
   estimates.
3. A billion accesses (stencil7 n=128 sweeps=64) streamed chunk by chunk
   through the exact pass: time and peak memory (bounded by the distinct
   lines, not the accesses).
4. With ``--cli N``: ``hroof mrc stencil7 n=N --no-simulate`` end to end (a fresh
   process each time: start-up, generating the trace, the fully associative curve and
   the set-associative one at L1's sets), exact and ``--sample 0.01``, ``--threads 1``
   against ``--threads 2``, interleaved, best wall time of ``--repeats`` (a quiet
   machine's figure).

Every pass runs once on a tiny stream first (JIT compile or cache load, not
timed); timings are the best of ``--repeats`` runs.

Usage::

    python bench/mrc.py [--repeats 3] [--seeds 5] [--no-billion] [--cli 256]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time

import numpy as np

from hroof.cachesim import hierarchy, resolve_machine, simulate
from hroof.cachesim.mrc import miss_ratio_curve
from hroof.traces import plan_kernel

CHUNK = 1 << 20


def best(fn, repeats: int):
    """Best CPU time of ``repeats`` runs (this process's; the machine is shared, and wall
    time counts the other jobs' share of the cores) and the last result."""
    out, times = None, []
    for _ in range(repeats):
        t0 = time.process_time()
        out = fn()
        times.append(time.process_time() - t0)
    return min(times), out


def chunks_of(plan):
    return [tuple(a.copy() for a in ch) for ch in plan.chunks(CHUNK)]


def random_stream(n=16 * 2**20, lines=2**20, power=1, seed=0):
    """Random lines ``floor(lines * u**power)`` for uniform ``u``: uniform for power 1,
    skewed towards the low lines for power 3 (line 0 gets 1 % of the references)."""
    rng = np.random.default_rng(seed)
    addr = (np.floor(lines * rng.random(n) ** power).astype(np.int64)) * 64
    size, kind = np.full(n, 8, np.uint32), np.zeros(n, np.uint8)  # a chunk's dtypes
    return [
        (addr[i : i + CHUNK], size[i : i + CHUNK], kind[i : i + CHUNK]) for i in range(0, n, CHUNK)
    ]


def _nine():
    """skylake-sp as the plain (NINE) model: the stream a curve follows, and the plain
    simulator's speed (the preset's exclusive L3 runs the slower access-by-access path,
    which would flatter the curve)."""
    return resolve_machine("skylake-sp").with_inclusion("nine").without_prefetch()


def warm() -> None:
    tiny = plan_kernel("stencil7", n=8)
    h = _nine()
    simulate(h, tiny.chunks())
    for kw in ({}, {"rate": 0.5}, {"sample_size": 64}):
        miss_ratio_curve(tiny.chunks(), **kw)
    miss_ratio_curve(tiny.chunks(), h)
    # two threads: chunks of 2**16 accesses or more are hashed in stripes on both
    miss_ratio_curve(plan_kernel("stencil7", n=24).chunks(), rate=0.01, threads=2)


def breakdown(chunks, repeats: int) -> tuple[float, float, float]:
    """CPU seconds of the passes over every access that SHARDS makes at L1: the fused
    input check and hash filter it runs (``scan_prefilter``), and, for comparison, the
    two unfused passes it replaced (the simulator's ``scan_chunk``, then ``prefilter``)."""
    from hroof.cachesim import _mrc_kernels as MK
    from hroof.cachesim import _mrc_scan as MSC
    from hroof.cachesim import _stream_kernels as SK
    from hroof.cachesim.mrc import sampling_key

    limit = 1 << SK.addr_limit_bits(6)
    n = max(len(c[0]) for c in chunks)
    out = (np.empty(n, np.int64), np.empty(n, np.uint8), np.empty(n, np.int64),
           np.empty(n, np.int64))  # fmt: skip
    flags = np.zeros(MK.PREFILTER_BLOCK, np.uint8)
    thresh = round(0.01 * MK.SAMPLE_P)
    mask, key = np.uint64(3), sampling_key(0)

    def fused():
        for a, s, k in chunks:
            MSC.scan_prefilter(a, s, k, 6, limit, key, thresh, flags, *out)

    def hashing():
        for a, _, k in chunks:
            MK.prefilter(a, 6, k, MK.OPS, mask, key, thresh, flags, *out)

    t_fused, _ = best(fused, repeats)
    t_scan, _ = best(lambda: [SK.scan_chunk(a, s, k, 6, limit) for a, s, k in chunks], repeats)
    t_hash, _ = best(hashing, repeats)
    return t_fused, t_scan, t_hash


def speed(repeats: int) -> None:
    plan = plan_kernel("stencil7", n=128)
    t_gen, chunks = best(lambda: chunks_of(plan), 1)
    m = _nine()
    t_sim, _ = best(lambda: simulate(m, chunks), repeats)
    t_exact, exact = best(lambda: miss_ratio_curve(chunks), repeats)
    t_sa, _ = best(lambda: miss_ratio_curve(chunks, m), repeats)
    caps = [2**k for k in range(12, 28)]
    t0 = time.process_time()
    worst = 0.0
    for cap in caps:
        r = simulate(hierarchy({"name": "C", "size": cap, "ways": 16}), chunks)
        cls = r.levels[0].misses_by_class
        fa = exact.misses_at_bytes(cap)
        assert fa >= cls["compulsory"] + cls["capacity"], (cap, fa, cls)
        worst = max(worst, (fa - cls["compulsory"] - cls["capacity"]) / max(fa, 1))
    t_16 = time.process_time() - t0
    t_shards, _ = best(lambda: miss_ratio_curve(chunks, rate=0.01), repeats)
    t_fused, t_scan, t_hash = breakdown(chunks, repeats)
    # Wall time, interleaved: the exact pass (one thread: one chain of dependent updates)
    # against SHARDS on one thread and on two (``threads=2``: each chunk hashed in stripes
    # from both ends, the other thread feeding the samplers first).
    walls = {"exact": [], "shards1": [], "shards2": []}
    runs = {"exact": lambda: miss_ratio_curve(chunks),
            "shards1": lambda: miss_ratio_curve(chunks, rate=0.01),
            "shards2": lambda: miss_ratio_curve(chunks, rate=0.01, threads=2)}  # fmt: skip
    for _ in range(repeats):
        for name, fn in runs.items():
            w0 = time.perf_counter()
            fn()
            walls[name].append(time.perf_counter() - w0)
    w = {name: min(v) for name, v in walls.items()}
    print(f"stencil7 n=128: {plan.accesses:,} accesses, {exact.distinct_lines:,} distinct lines")
    print("| pass (over the chunks in memory) | CPU s | vs one classified 3-level simulation |")
    print("|---|---:|---:|")
    rows = [
        ("generating the trace (not in any other row)", t_gen),
        ("one classified simulation, skylake-sp --model nine (3 levels)", t_sim),
        ("exact fully-associative curve, every capacity", t_exact),
        ("exact curve + set-associative curve (L1: 64 sets, 1..32 ways)", t_sa),
        ("16 capacities simulated one by one (one 16-way level each, classified)", t_16),
        ("SHARDS R = 0.01 (with 4 sub-samples for the error estimate)", t_shards),
        ("  of which: input check + hash filter, fused (`scan_prefilter`)", t_fused),
        (
            "  of which: the rest (sampled stack passes, curve, Python per chunk)",
            t_shards - t_fused,
        ),
        ("  unfused, for comparison: the simulator's input check (`scan_chunk`)", t_scan),
        ("  unfused, for comparison: hash filter (`prefilter`, used below L1)", t_hash),
    ]
    for label, t in rows:
        print(f"| {label} | {t:.3f} | {t / t_sim:.2f}x |")
    print(
        f"exact / 16 simulations: {t_16 / t_exact:.1f}x faster; SHARDS R=0.01: "
        f"{t_exact / t_shards:.1f}x faster than exact in CPU time; curve - (compulsory + "
        f"capacity) at the 16 capacities: at most {worst:.2%} of the curve"
    )
    print(
        f"wall time, best of {repeats} interleaved (load average {os.getloadavg()[0]:.2f}): "
        f"exact {w['exact']:.4f} s; SHARDS R=0.01 one thread {w['shards1']:.4f} s "
        f"({w['exact'] / w['shards1']:.1f}x faster), two threads {w['shards2']:.4f} s "
        f"({w['exact'] / w['shards2']:.1f}x faster)"
    )


def mae(exact, est, caps) -> float:
    return float(np.mean(np.abs(np.asarray(est.miss_ratio(caps)) - exact.miss_ratio(caps))))


STREAMS = {
    "stencil7 n=128": lambda: chunks_of(plan_kernel("stencil7", n=128)),
    "spmv poisson3d n=64": lambda: chunks_of(plan_kernel("spmv", matrix="poisson3d", n=64)),
    "spmv random rows=262144": lambda: chunks_of(
        plan_kernel("spmv", matrix="random", rows=262144, nnz_per_row=8)
    ),
    "random (uniform, 1 Mi lines)": random_stream,
    "random (uniform, 4 Mi lines)": lambda: random_stream(n=32 * 2**20, lines=4 * 2**20),
    "random (skewed u^3, 1 Mi lines)": lambda: random_stream(power=3),
}


def accuracy(seeds: int, only: str | None = None) -> None:
    print(
        "| stream | accesses | sampling | sampled lines | CPU s | exact / sampled | "
        "MAE even grid: mean [min, max] | MAE log grid: mean [min, max] | estimated (mean) | "
        "warned |"
    )
    print("|---|---:|---|---:|---:|---:|---|---|---:|---|")
    for name, make in STREAMS.items():
        if only and only not in name:
            continue
        chunks = make()
        n = sum(len(c[0]) for c in chunks)
        t_exact, exact = best(lambda chunks=chunks: miss_ratio_curve(chunks), 1)
        top = 2 * exact.distinct_lines
        even = np.linspace(0, top, 100).astype(np.int64)
        cases = [("R = 0.1", {"rate": 0.1}), ("R = 0.01", {"rate": 0.01}),
                 ("R = 0.001", {"rate": 0.001}), ("8192 lines", {"sample_size": 8192})]  # fmt: skip
        for label, kw in cases:
            ev, lg, ts, est_err, lines, warned, rates = [], [], [], [], [], 0, []
            for seed in range(seeds):
                t, est = best(
                    lambda chunks=chunks, kw=kw, seed=seed: miss_ratio_curve(
                        chunks, **kw, seed=seed
                    ),
                    1,
                )
                res = est.sample["resolution_lines"]
                logg = np.unique(np.geomspace(res, max(top, res + 1), 64).astype(np.int64))
                ev.append(mae(exact, est, even))
                lg.append(mae(exact, est, logg))
                ts.append(t)
                est_err.append(est.sample["error_estimate"])
                lines.append(est.sample["sampled_lines"])
                warned += est.sample["warning"] is not None
                rates.append(est.sample["rate"])
            if "rate" not in kw:
                label += f" (R = {np.mean(rates):.2g})"
            t = float(np.median(ts))
            print(
                f"| {name} | {n:,} | {label} | {np.mean(lines):,.0f} | {t:.3f} | "
                f"{t_exact / t:.1f}x | {np.mean(ev):.4f} [{min(ev):.4f}, {max(ev):.4f}] | "
                f"{np.mean(lg):.4f} [{min(lg):.4f}, {max(lg):.4f}] | {np.mean(est_err):.4f} | "
                f"{warned}/{seeds} |",
                flush=True,
            )
        del chunks


def peak_rss_mib() -> float:
    """This process's peak resident memory: VmHWM (Linux; ``ru_maxrss`` would include the
    parent's peak across fork and exec), else ``ru_maxrss``."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def billion() -> None:
    """The exact pass and SHARDS (R = 0.01) over a billion accesses, each with the trace
    generated chunk by chunk (so both timings include generating it), and the generation
    alone; peak memory after each (VmHWM: the process's peak so far)."""
    miss_ratio_curve(plan_kernel("stencil7", n=8).chunks())  # compile or load, not timed
    miss_ratio_curve(plan_kernel("stencil7", n=8).chunks(), rate=0.5)
    plan = plan_kernel("stencil7", n=128, sweeps=64)
    before = peak_rss_mib()
    c0 = time.process_time()
    for _ in plan.chunks(CHUNK):
        pass
    gen = time.process_time() - c0
    rss_gen = peak_rss_mib()
    runs = []
    for label, kw in (("exact", {}), ("SHARDS R = 0.01", {"rate": 0.01})):
        t0 = time.perf_counter()
        c0 = time.process_time()
        c = miss_ratio_curve(plan.chunks(CHUNK), **kw)
        runs.append((label, time.perf_counter() - t0, time.process_time() - c0, c,
                     peak_rss_mib()))  # fmt: skip
        assert c.lookups == plan.accesses
    print(
        f"stencil7 n=128 sweeps=64: {plan.accesses:,} accesses, {runs[0][3].distinct_lines:,} "
        f"distinct lines; peak RSS {before:.0f} MiB before; generating the trace alone "
        f"{gen:.1f} s CPU (peak RSS {rss_gen:.0f} MiB)"
    )
    for label, wall, cpu, c, rss in runs:
        print(
            f"  {label}: {wall:.1f} s wall, {cpu:.1f} s CPU with the generation, "
            f"{cpu - gen:.1f} s without ({plan.accesses / cpu / 1e6:.0f} M accesses per CPU "
            f"second); pass state {c.state_bytes / 2**20:.1f} MiB; peak RSS {rss:.0f} MiB"
        )
    exact, shards = runs[0][2] - gen, runs[1][2] - gen
    print(f"  SHARDS / exact, the generation left out: {exact / max(shards, 1e-9):.1f}x faster")


def cli(n: int, repeats: int) -> None:
    """``hroof mrc stencil7 n=N --no-simulate`` on one thread and on two, end to end."""
    cases = [(sample, threads) for sample in ([], ["--sample", "0.01"]) for threads in "12"]
    walls: dict[tuple, list[float]] = {}
    for _ in range(repeats):
        for sample, threads in cases:
            argv = [sys.executable, "-m", "hroof", "mrc", "stencil7", f"n={n}", "--no-simulate",
                    "-q", "--json", "--threads", threads, *sample]  # fmt: skip
            t0 = time.perf_counter()
            subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
            walls.setdefault((bool(sample), threads), []).append(time.perf_counter() - t0)
    print(f"hroof mrc stencil7 n={n} --no-simulate, best wall of {repeats} (load average "
          f"{os.getloadavg()[0]:.2f}):")  # fmt: skip
    print("| curve | --threads 1 s | --threads 2 s | speed-up |")
    print("|---|---:|---:|---:|")
    for sampled in (False, True):
        one, two = (min(walls[(sampled, t)]) for t in "12")
        label = "SHARDS R = 0.01" if sampled else "exact"
        print(f"| {label} | {one:.2f} | {two:.2f} | {one / two:.2f}x |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seeds", type=int, default=5, help="hash seeds per sampled case")
    ap.add_argument("--only", help="accuracy: only the streams whose name holds this")
    ap.add_argument("--no-speed", action="store_true")
    ap.add_argument("--no-accuracy", action="store_true")
    ap.add_argument("--no-billion", action="store_true")
    ap.add_argument("--billion-only", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--cli", type=int, metavar="N",
                    help="only: hroof mrc stencil7 n=N end to end, one thread against two")  # fmt: skip
    args = ap.parse_args()
    if args.billion_only:
        billion()
        return
    if args.cli:
        cli(args.cli, args.repeats)
        return
    warm()
    if not args.no_speed:
        speed(args.repeats)
        print()
    if not args.no_accuracy:
        accuracy(args.seeds, args.only)
    if not args.no_billion:
        print(flush=True)
        # A fresh process, so that its peak memory is the pass's alone.
        subprocess.run([sys.executable, __file__, "--billion-only"], check=True)


if __name__ == "__main__":
    main()
