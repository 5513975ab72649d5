"""The classification shadow alone: ns per reference of a fully-associative LRU shadow
(``hroof.cachesim._shadow_kernels``) fed 20.8 M random lines out of 4 Mi (or, with
``--stream stencil7``, the reference stream's lines), for the capacities of the reference hierarchy's levels (768, 32 Ki and 512 Ki lines), as the
level pass calls it (:func:`_sh_touch_r`, registers, the bucket 8 references ahead
prefetched). Process CPU time, best of ``--repeat``; prints the hits too, which any two
correct versions share.

Run it on two trees in turn (``PYTHONPATH=<tree> python bench/shadow.py``) to compare
versions of the shadow: the script uses nothing but ``new_shadow`` and ``_sh_touch_r``.

Usage::

    python bench/shadow.py [--repeat 3] [--caps 768,32768,524288] [--stream stencil7]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from numba import njit

from hroof._base.jit import JIT
from hroof.cachesim import _shadow_kernels as S


@njit(**{**JIT, "cache": False})
def _feed(sh, lines):
    tab, q = sh.tab, sh.queue
    tbase, bits, qo, qcap, cap = sh.toff[0], sh.tbits[0], sh.qoff[0], sh.qcap[0], sh.ncap[0]
    head, tail, live, mru = sh.meta[0, 0], sh.meta[0, 1], sh.meta[0, 2], sh.meta[0, 3]
    n = lines.shape[0]
    hits = 0
    for i in range(n):
        if i + S.PREFETCH_AHEAD < n:
            S._sh_prefetch(sh, 0, lines[i + S.PREFETCH_AHEAD])
        hit, head, tail, live, mru = S._sh_touch_r(
            sh, 0, tab, q, tbase, bits, qo, qcap, cap, head, tail, live, mru, lines[i], True
        )
        hits += hit
    S._sh_store_meta(sh, 0, head, tail, live, mru)
    return hits


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--caps", default="768,32768,524288")
    ap.add_argument("--stream", choices=("random", "stencil7"), default="random",
                    help="random lines, or the lines of stencil7 n=128 (16.8 M references, "
                    "the reference stream: mostly hits at 768 lines)")  # fmt: skip
    args = ap.parse_args()
    if args.stream == "random":
        lines = np.random.default_rng(1).integers(0, 1 << 22, 20_800_000, dtype=np.int64)
    else:
        from hroof.traces import plan_kernel

        chunks = plan_kernel("stencil7", n=128).chunks(1 << 20)
        lines = np.concatenate([c[0] >> 6 for c in chunks]).astype(np.int64)
    _feed(S.new_shadow([64]), lines[:1000])  # compile
    print(S.__file__)
    for cap in (int(c) for c in args.caps.split(",")):
        best = float("inf")
        for _ in range(args.repeat):
            sh = S.new_shadow([cap])
            t0 = time.process_time()
            hits = _feed(sh, lines)
            best = min(best, time.process_time() - t0)
        mib = sum(a.nbytes for a in sh) / 2**20
        print(f"capacity {cap:>7} lines ({mib:6.1f} MiB): {best / lines.size * 1e9:5.1f} ns "
              f"a reference, {hits} hits", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
