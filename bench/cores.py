"""Several cores: what ``cores = P`` costs against one core on the same stream; same run.

The 7-point stencil (default n = 128: 16.8 M accesses) through the bundled
``generic`` hierarchy (L1 48 KiB/12 and L2 2 MiB/16 private, L3 32 MiB/16 shared),
simulated whole by one core (the plain simulator) and split across P cores
(:mod:`hroof.cachesim.multicore`) at several grains. The P cores issue the same
accesses between them as the one core does, so "P cores cost at most P times one
core's events plus the shared level" is met when the ratio stays below P. Each case
reports ``timing.simulate_s`` (the simulation, not the trace generation) and the
events that reach the shared level. Rounds are interleaved and the best of each
kept (the machine is a noisy, shared 2-core VM); the JIT is loaded first.
``--machine skylake-sp`` times the preset's exclusive shared L3 instead (both
sides then run access by access in the access engine, one core's map against
several cores', :mod:`hroof.cachesim._split_kernels`). Usage::

    python bench/cores.py [--n 128] [--repeat 3] [--classify] [--machine NAME]
"""

from __future__ import annotations

import argparse

from hroof.cachesim.multicore import simulate_cores
from hroof.machine.model import resolve_machine
from hroof.studies.runs import simulate_kernel
from hroof.traces import plan_kernel


def run(h, n: int, cores: int, grain: int | None, classify: bool):
    """The stencil on ``cores`` cores (the multi-core simulator, P = 1 included), or
    with ``grain`` None on the plain single-core simulator."""
    if grain is None:
        return simulate_kernel("stencil7", h, n=n, classify=classify)
    plan = plan_kernel("stencil7", n=n)
    steps = [[plan.chunks(start=a, stop=b) for a, b in plan.thread_ranges(cores, 0)]]
    return simulate_cores(h, steps, cores=cores, grain=grain, classify=classify,
                          flops=plan.flops)  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--classify", action="store_true", help="classify misses (3C) too")
    ap.add_argument("--machine", default="generic", help="a preset (default generic)")
    args = ap.parse_args()
    h = resolve_machine(args.machine)
    cases = [("1 core (plain)", 1, None)]
    cases += [(f"{p} cores, grain {g}", p, g) for p in (1, 2, 4) for g in (256, 1024, 8192)]
    for _, p, g in cases:  # compile / load every kernel first
        run(h, 8, p, g, args.classify)
    best: dict[str, float] = {}
    shared: dict[str, int] = {}
    for _ in range(args.repeat):
        for name, p, g in cases:
            r = run(h, args.n, p, g, args.classify)
            t = r.timing["simulate_s"]
            best[name] = min(best.get(name, t), t)
            shared[name] = r.levels[-1].lookups + r.levels[-1].writebacks_in
    acc = simulate_kernel("stencil7", h, n=8).accesses * (args.n // 8) ** 3
    base = best["1 core (plain)"]
    cls = "on" if args.classify else "off"
    print(f"stencil7 n={args.n} on {args.machine}, {acc:,} accesses, classify={cls}, "
          f"best of {args.repeat}")  # fmt: skip
    for name, *_ in cases:
        t = best[name]
        print(f"  {name:22s} {t:7.3f} s  {acc / t / 1e6:6.1f} M acc/s  x{t / base:5.2f} of plain"
              f"   L3 events {shared[name]:>11,}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
