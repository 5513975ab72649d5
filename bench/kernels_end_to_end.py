"""Kernel generation fused with simulation, end to end, against pycachesim.

1. ``stencil7 n=256`` (134 M accesses) generated chunk by chunk straight into
   the simulator (classification off) on the reference hierarchy: accesses per
   second end to end (generation + simulation).
2. pycachesim on the same stream (``--n-peer``, default 256: 16.8 M
   ``(loads, stores)`` pairs of Python lists, about 7 GB and two minutes to
   build): its simulation-only throughput (``loadstore`` on ready Python
   lists) and its end-to-end throughput for a user (hroof's NumPy trace,
   converted to lists, then ``loadstore``), with the misses checked equal to
   hroof's at every level. Compare at the same n: a larger grid misses more,
   which slows both simulators.
3. ``stencil7 n=512`` (1.07e9 accesses) end to end in a fresh process: time and
   peak memory above the interpreter's baseline.

Usage::

    python bench/kernels_end_to_end.py [--n 256] [--n-peer 128] [--n-big 512]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compare_pycachesim import build_pycachesim, reference_hierarchy, to_loadstore

from hroof.studies.runs import simulate_kernel
from hroof.traces import plan_kernel


def hroof_end_to_end(n: int, repeat: int, threads: int = 1):
    h = reference_hierarchy()
    simulate_kernel("stencil7", h, n=8, classify=False)  # warm-up (JIT or cache load)
    best = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        r = simulate_kernel("stencil7", h, n=n, classify=False, threads=threads)
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    return best, r


def peer(n: int, repeat: int):
    h = reference_hierarchy()
    plan = plan_kernel("stencil7", n=n)
    t0 = time.perf_counter()
    parts = list(plan.chunks(reuse=False))
    addr = np.concatenate([p[0] for p in parts])
    kind = np.concatenate([p[2] for p in parts])
    gen_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    pairs = to_loadstore(addr, kind)
    conv_s = time.perf_counter() - t0
    sim_best = None
    for _ in range(repeat):
        cs, caches = build_pycachesim(h)
        t0 = time.perf_counter()
        cs.loadstore(pairs, length=8)
        cs.force_write_back()
        dt = time.perf_counter() - t0
        sim_best = dt if sim_best is None else min(sim_best, dt)
    ours = simulate_kernel("stencil7", h, n=n, classify=False)
    same = [c.stats()["MISS_count"] for c in caches] == [lv.misses for lv in ours.levels]
    return len(addr), sim_best, gen_s + conv_s + sim_best, same


def big_child(n: int) -> dict:
    h = reference_hierarchy()
    simulate_kernel("stencil7", h, n=8, classify=False)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    t0 = time.perf_counter()
    r = simulate_kernel("stencil7", h, n=n, classify=False)
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"accesses": r.accesses, "wall_s": wall, "above_mib": (peak - base) / 2**20,
            "misses": [lv.misses for lv in r.levels]}  # fmt: skip


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--n-peer", type=int, default=256)
    ap.add_argument("--n-big", type=int, default=512)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--big-child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.big_child:
        print(json.dumps(big_child(args.big_child)))
        return 0

    acc_peer, sim_s, e2e_s, same = peer(args.n_peer, args.repeat)
    pyc_sim = acc_peer / sim_s / 1e6
    pyc_e2e = acc_peer / e2e_s / 1e6
    print(
        f"pycachesim, stencil7 n={args.n_peer} ({acc_peer / 1e6:.1f} M accesses): "
        f"simulation only {pyc_sim:.1f} M/s, end to end {pyc_e2e:.2f} M/s; "
        f"misses equal to hroof's at every level: {same}"
    )
    for threads in (1, 2):
        t, r = hroof_end_to_end(args.n, args.repeat, threads)
        rate = r.accesses / t / 1e6
        print(
            f"hroof, stencil7 n={args.n} ({r.accesses / 1e6:.0f} M accesses), generation fused "
            f"with simulation, classification off, {threads} thread(s): {t:.2f} s, "
            f"{rate:.1f} M/s = {rate / pyc_sim:.2f}x pycachesim's simulation-only, "
            f"{rate / pyc_e2e:.0f}x its end to end"
        )
    out = subprocess.run(
        [sys.executable, __file__, "--big-child", str(args.n_big)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    big = json.loads(out.strip().splitlines()[-1])
    print(
        f"hroof, stencil7 n={args.n_big} ({big['accesses'] / 1e9:.2f} G accesses) end to end: "
        f"{big['wall_s']:.1f} s, {big['accesses'] / big['wall_s'] / 1e6:.1f} M/s, "
        f"{big['above_mib']:.0f} MiB above baseline; misses {big['misses']}"
    )
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
