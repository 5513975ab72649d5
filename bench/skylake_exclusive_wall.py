"""Skylake-SP's L3 wall with the preset's exclusive L3 against the plain (NINE) model.

The 3D layer condition of ``stencil7`` at L3 depends on the plane size only
(``kS = (n + 2)**2`` elements), not on the number of planes, so the grid here
is ``n x n x nz`` with a small ``nz`` (default 16): the wall lies where it lies
for a cube, at a hundredth of the accesses. Each point runs one warm-up sweep
(simulated, not counted) and one counted sweep, unsampled, misses not
classified. Per ``n`` it prints the L3 misses per interior point under
``--model nine`` and under the preset's own policies, and the walls the layer
conditions predict for each (:func:`hroof.roofline.layers.stencil_walls`: L3
alone for NINE, L2 + L3 for the exclusive L3). The same points from the
command line::

    hroof sweep stencil7 n=930,...,1020 nz=16 warmup=1 --no-flush --no-classify \\
        [--model nine]

Usage::

    python bench/skylake_exclusive_wall.py [--ns 930,950,...] [--nz 16]
"""

from __future__ import annotations

import argparse
import sys
import time

from hroof.machine.model import resolve_machine
from hroof.roofline.layers import stencil_walls
from hroof.studies.runs import simulate_kernel

NS = "930,950,960,970,975,980,985,990,995,1000,1010,1020"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ns", default=NS)
    ap.add_argument("--nz", type=int, default=16)
    args = ap.parse_args(argv)
    ns = [int(x) for x in args.ns.split(",")]
    preset = resolve_machine("skylake-sp")
    models = {"nine": preset.with_inclusion("nine"), preset.levels[-1].inclusion: preset}
    for name, h in models.items():
        w = next(w for w in stencil_walls({}, h) if w.level == "L3" and w.condition == "3D")
        print(f"{name:>9}: L3 3D condition predicted to hold up to n={w.n}: {w.explanation}")
    print(f"{'n':>5} " + " ".join(f"{m + ' L3 misses/pt':>24} {'s':>5}" for m in models))
    for n in ns:
        row = f"{n:>5} "
        for h in models.values():
            t0 = time.perf_counter()
            r = simulate_kernel("stencil7", h, classify=False, n=n, nz=args.nz, warmup=1, sweeps=1)
            row += (
                f"{r.levels[-1].misses / (n * n * args.nz):24.4f} {time.perf_counter() - t0:5.1f} "
            )
        print(row, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
