"""Where classification's time goes: ns per event at each level, classification off and on.

Runs bench/speed.py's streams (reference hierarchy: L1 48 KiB/12-way, L2 2 MiB/16-way,
L3 32 MiB/16-way) through the simulator with the level passes timed one by one
(process CPU time, so that the other processes of a shared machine weigh less),
best of ``--repeat`` interleaved rounds, and prints events and ns per event per level.

Usage::

    python bench/classify_levels.py [--repeat 3] [--streams stencil7,triad,random]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from compare_pycachesim import reference_hierarchy  # noqa: E402
from speed import STREAMS, chunked, make_stream  # noqa: E402

from hroof.cachesim import Simulator  # noqa: E402
from hroof.cachesim import simulator as SM  # noqa: E402

_SPENT: dict[int, float] = {}
_EVENTS: dict[int, int] = {}
_PASS = SM.Simulator._pass


def _timed_pass(self, lvl, src, *args):
    t0 = time.process_time()
    nout = _PASS(self, lvl, src, *args)
    _SPENT[lvl] = _SPENT.get(lvl, 0.0) + time.process_time() - t0
    _EVENTS[lvl] = _EVENTS.get(lvl, 0) + src.shape[0]
    return nout


def run(h, chunks, classify):
    _SPENT.clear()
    _EVENTS.clear()
    gc.collect()
    sim = Simulator(h, classify=classify)
    t0 = time.process_time()
    for c in chunks:
        sim.feed(*c)
    sim.finish()
    return time.process_time() - t0, dict(_SPENT), dict(_EVENTS)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--streams", default=",".join(STREAMS))
    args = ap.parse_args(argv)
    SM.Simulator._pass = _timed_pass
    h = reference_hierarchy()
    warm = chunked(make_stream("triad")[:3], 1 << 16)[:4]
    for cl in (False, True):  # JIT compile or cache load outside the timings
        run(h, warm, cl)
    for name in args.streams.split(","):
        addr, size, kind, _ = make_stream(name)
        chunks = chunked((addr, size, kind))
        best: dict[bool, tuple] = {}
        for _ in range(args.repeat):
            for cl in (False, True):
                r = run(h, chunks, cl)
                if cl not in best or r[0] < best[cl][0]:
                    best[cl] = r
        for cl, (t, spent, events) in best.items():
            levels = "; ".join(
                f"L{lvl + 1} {events[lvl] / 1e6:.1f} M ev {spent[lvl] / events[lvl] * 1e9:.0f} ns"
                for lvl in sorted(events)
            )
            print(f"{name:<9} classify {'on ' if cl else 'off'} {t:6.2f} s CPU "
                  f"{addr.size / t / 1e6:6.1f} M acc/s | {levels}", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
