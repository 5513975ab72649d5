"""Trace readers: MB/s of text parsed (din, lackey) and M accesses/s (npz), and whether
the reader's chunks cost the simulator more than the generator's.

Writes the stencil7 n=96 stream (7.1 M accesses) as npz, din and lackey in a
temporary directory, then times :func:`hroof.traces.iter_trace` over each file
(best of ``--repeat``), and hroof's simulation (classification off, reference
hierarchy) of the chunks each reader yields against the same stream fed as
int64 arrays.

Usage::

    python bench/readers.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compare_pycachesim import reference_hierarchy

from hroof.cachesim import Simulator
from hroof.traces import plan_kernel
from hroof.traces.io import iter_trace, write_din, write_npz


def write_lackey(path: Path, addr, size, kind) -> None:
    letters = np.where(kind == 0, " L ", " S ")
    with open(path, "w") as f:
        for i in range(0, addr.size, 1 << 16):
            sl = slice(i, i + (1 << 16))
            f.write(
                "".join(
                    f"{c}{a:08x},{s}\n"
                    for c, a, s in zip(
                        letters[sl], addr[sl].tolist(), size[sl].tolist(), strict=True
                    )
                )
            )


def best(f, repeat):
    out = None
    t_best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = f()
        t_best = min(t_best, time.perf_counter() - t0)
    return t_best, out


def simulate(chunks):
    sim = Simulator(reference_hierarchy(), classify=False)
    t0 = time.perf_counter()
    for c in chunks:
        sim.feed(*c)
    sim.finish()
    return time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    parts = [tuple(x.copy() for x in c) for c in plan_kernel("stencil7", n=96).chunks(1 << 20)]
    addr, size, kind = (np.concatenate([p[i] for p in parts]) for i in range(3))
    n = addr.size
    tmp = Path(tempfile.mkdtemp(prefix="hroof-readers-"))
    try:
        files = {"npz": tmp / "t.npz", "din": tmp / "t.din", "lackey": tmp / "t.lackey"}
        write_npz(files["npz"], [(addr, size, kind)])
        write_din(files["din"], [(addr, size, kind)])
        write_lackey(files["lackey"], addr, size, kind)
        simulate(parts[:2])  # warm-up
        int64 = [tuple(x.astype(np.int64) for x in p) for p in parts]
        ref_t = min(simulate(int64) for _ in range(args.repeat))
        print(f"stencil7 n=96: {n / 1e6:.1f} M accesses; simulation of int64 chunks "
              f"{ref_t:.3f} s")  # fmt: skip
        print(f"{'format':<7} {'file MB':>8} {'read s':>7} {'MB/s':>7} {'M acc/s':>8} "
              f"{'simulate s':>10} {'vs int64':>8}")  # fmt: skip
        for fmt, path in files.items():
            mb = path.stat().st_size / 1e6
            t, chunks = best(lambda p=path, f=fmt: list(iter_trace(p, f)), args.repeat)
            got = sum(c.addr.size for c in chunks)
            assert got == n, (fmt, got, n)
            ts = min(simulate(chunks) for _ in range(args.repeat))
            print(f"{fmt:<7} {mb:8.1f} {t:7.3f} {mb / t:7.1f} {n / t / 1e6:8.1f} {ts:10.3f} "
                  f"{ts / ref_t:7.2f}x")  # fmt: skip
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
