"""A steady-state stencil7 sweep across the Skylake-SP L3 wall with set sampling 1/16.

Runs ``stencil7 warmup=1 sweeps=1`` (steady state: one sweep simulated and not
counted, then one counted, no flush) on the Skylake-SP preset for n up to 1100
with ``sample_sets=16``, and the same sweep unsampled for n up to 512, both
through :func:`hroof.studies.sweep.run_sweep` (points in parallel, one process
per core, no result cache), and prints per point the sampled L3 misses, their
relative difference from the unsampled run where there is one, the generation
and simulation seconds of the sampled point, and the wall time of each sweep.
The stencil's set-sampled generator writes only the sampled lines
(:mod:`hroof.traces.sampled`). The preset's L3 is ``exclusive`` (the
access-by-access policy path); ``--model nine`` runs the plain level-by-level
model. Equivalent command line::

    hroof sweep stencil7 n=256,...,1100 warmup=1 --machine skylake-sp \\
        --no-cache --sample-sets 1/16

Usage::

    python bench/skylake_wall.py [--ns 256,512,...] [--exact-up-to 512] [--classify]
        [--model nine]
"""

from __future__ import annotations

import argparse
import sys
import time

from hroof.machine.model import resolve_machine
from hroof.studies.sweep import run_sweep

NS = "256,512,768,896,960,1024,1100"


def sweep(h, ns, k, classify):
    t0 = time.perf_counter()
    pts = run_sweep(
        "stencil7", [{"n": n, "warmup": 1} for n in ns], h, classify=classify, flush=False,
        use_cache=False, sample_sets=k,
    )  # fmt: skip
    return time.perf_counter() - t0, pts


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ns", default=NS)
    ap.add_argument("--exact-up-to", type=int, default=512)
    ap.add_argument("--k", type=int, default=16)
    ap.add_argument("--classify", action="store_true")
    ap.add_argument("--model", choices=("preset", "nine"), default="preset")
    args = ap.parse_args(argv)
    h = resolve_machine("skylake-sp")
    if args.model == "nine":
        h = h.with_inclusion("nine").without_prefetch()
    ns = [int(x) for x in args.ns.split(",")]
    exact_ns = [n for n in ns if n <= args.exact_up_to]
    t_e, exact = sweep(h, exact_ns, 1, args.classify)
    print(f"unsampled sweep done: {t_e:.0f} s", flush=True)
    t_s, sampled = sweep(h, ns, args.k, args.classify)
    path = "level by level (plain)" if h.plain else "access by access (policies)"
    print(f"{h.describe()}; {path}; classification {'on' if args.classify else 'off'}")
    print(f"sampled sweep (1/{args.k}, n = {ns[0]}..{ns[-1]}): {t_s:.0f} s wall")
    print(f"unsampled sweep (n = {exact_ns[0]}..{exact_ns[-1]}): {t_e:.0f} s wall")
    by_n = {p.params["n"]: p.result for p in exact}
    worst = 0.0
    print(f"{'n':>5} {'simulated':>9} {'L3 misses/point':>15} {'3 stderr %':>10} "
          f"{'gen s':>6} {'sim s':>6} {'vs unsampled: L1 %':>18} {'L2 %':>7} {'L3 %':>7}")  # fmt: skip
    for p in sampled:
        r = p.result
        n = p.params["n"]
        l3 = r.levels[-1]
        points = n**3
        se = r.sampling["stderr"]["levels"][-1]["misses"] if r.sampling["stderr"] else 0.0
        row = f"{n:>5} {2 * r.accesses / 1e9:8.2f}G {l3.misses / points:15.3f} "
        row += f"{100 * 3 * se / max(l3.misses, 1):10.3f}"
        row += f" {r.timing['generate_s']:6.1f} {r.timing['simulate_s']:6.1f}"
        if n in by_n:
            diffs = [
                100 * (a.misses - b.misses) / max(b.misses, 1)
                for a, b in zip(r.levels, by_n[n].levels, strict=True)
            ]
            worst = max(worst, *(abs(d) for d in diffs))
            row += " " + " ".join(f"{d:+7.3f}" for d in diffs)
        if r.sampling["warning"]:
            row += "  WARNING: " + r.sampling["warning"]
        print(row)
    print(f"largest difference from the unsampled counts: {worst:.3f} %")
    return 0 if worst <= 2.0 else 1


if __name__ == "__main__":
    sys.exit(main())
