"""Stream about a billion accesses through the simulator in bounded memory.

The 7-point stencil stream at n = 500 (8 * 500**3 = 1.0e9 accesses, two arrays
of 502**3 doubles, 2 GB of footprint) is generated chunk by chunk and fed to
the reference three-level hierarchy. Each mode runs in a fresh subprocess so
that its peak resident memory (``ru_maxrss``) can be compared with the
interpreter's baseline after imports and JIT warm-up. The target is under
1 GiB above that baseline.

Usage::

    python bench/stream_billion.py [--n 500] [--modes off,on]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _maxrss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def child(n: int, classify: bool) -> dict:
    sys.path.insert(0, str(HERE))
    from compare_pycachesim import reference_hierarchy
    from workloads import stencil_chunks

    from hroof.cachesim import Simulator

    h = reference_hierarchy()
    warm = Simulator(h, classify=classify)
    for c in stencil_chunks(4):
        warm.feed(*c)
    warm.finish()
    del warm
    base = _maxrss_bytes()
    sim = Simulator(h, classify=classify)
    t0 = time.perf_counter()
    gen_s = 0.0
    it = stencil_chunks(n, points_per_chunk=1 << 17)
    while True:
        g0 = time.perf_counter()
        try:
            chunk = next(it)
        except StopIteration:
            break
        gen_s += time.perf_counter() - g0
        sim.feed(*chunk)
    r = sim.finish()
    wall = time.perf_counter() - t0
    return {
        "n": n,
        "classify": classify,
        "accesses": r.accesses,
        "wall_s": wall,
        "generate_s": gen_s,
        "simulate_s": r.timing["simulate_s"],
        "maccess_per_s": r.accesses / wall / 1e6,
        "baseline_rss_mib": base / 2**20,
        "peak_rss_mib": _maxrss_bytes() / 2**20,
        "above_baseline_mib": (_maxrss_bytes() - base) / 2**20,
        "state_mib": sim.state_bytes / 2**20,
        "misses": [lv.misses for lv in r.levels],
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=500, help="stencil size (default 500: 1.0e9 accesses)")
    ap.add_argument("--modes", default="off,on", help="classification modes to run: off,on")
    ap.add_argument("--child", choices=["off", "on"], help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.n, args.child == "on")))
        return 0
    ok = True
    for mode in args.modes.split(","):
        out = subprocess.run(
            [sys.executable, __file__, "--n", str(args.n), "--child", mode],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        r = json.loads(out.strip().splitlines()[-1])
        within = r["above_baseline_mib"] < 1024
        ok &= within
        print(
            f"classify={mode:<3} {r['accesses'] / 1e9:.3f} G accesses in {r['wall_s']:.1f} s "
            f"({r['maccess_per_s']:.1f} M/s; generation {r['generate_s']:.1f} s), "
            f"peak RSS {r['peak_rss_mib']:.0f} MiB = {r['above_baseline_mib']:.0f} MiB above "
            f"baseline ({'within' if within else 'OVER'} 1 GiB); simulator state "
            f"{r['state_mib']:.0f} MiB; misses {r['misses']}"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
