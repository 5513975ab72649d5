"""Where SHARDS's two threads spend their time (``miss_ratio_curve(chunks, rate=0.01,
threads=2)``, the pass of ``bench/mrc.py``'s "two threads" figure), on the stencil7 n=128
stream held in memory as 16 chunks of 2**20 accesses.

1. A trace of one pass on two threads: the stripes each thread hashed and the time it
   spent hashing them (``_mrc_scan.scan_claim``), the other thread's time feeding the
   samplers, and the rest of the caller's thread's time (handing work over, Python,
   setting up and finishing the curve). The fastest of ``--repeats`` passes is shown.
2. Hashing alone (no samplers fed), best of ``--repeats``: one thread over every chunk,
   against two threads each taking half of every chunk (one hand-over in all), and two
   threads taking each chunk's stripes from both ends as the pass does (stripes of 8 to
   64 Ki accesses); then one thread against two halves on a piece that fits in the host's
   cache (one chunk's first 2**17 accesses, 128 times). Where two threads gain much less
   on the chunks in memory than on the cached piece, the hashing is bound by memory
   bandwidth.

Wall times (``time.perf_counter``); a quiet machine's figures.

Usage::

    python bench/mrc_threads.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import threading
import time

import numpy as np

from hroof.cachesim import _mrc_kernels as MK
from hroof.cachesim import _mrc_scan as MSC
from hroof.cachesim import _stream_kernels as SK
from hroof.cachesim import mrc as M
from hroof.cachesim._mrc_threads import _worker
from hroof.traces import plan_kernel

CHUNK = 1 << 20


def trace_pass(chunks, repeats: int) -> None:
    """Part 1: one pass's time, thread by thread (the fastest of ``repeats``)."""
    real_scan = MSC.scan_claim
    real_main, real_subs = M.StackDistances._feed_main, M.StackDistances._feed_subs
    main = threading.get_ident()
    log: list[tuple] = []

    def scan(*a):
        t0 = time.perf_counter()
        out = real_scan(*a)
        stripes = -(-a[0].shape[0] // a[12]) - out[1] if a[14] else out[1]
        log.append(("back" if a[14] else "front", time.perf_counter() - t0, stripes))
        return out

    def timed(fn):
        def run(self, *a):
            t0 = time.perf_counter()
            fn(self, *a)
            here = threading.get_ident() == main
            log.append((f"feed {'here' if here else 'there'}", time.perf_counter() - t0, 0))

        return run

    MSC.scan_claim = scan
    M.StackDistances._feed_main = timed(real_main)
    M.StackDistances._feed_subs = timed(real_subs)
    try:
        M.miss_ratio_curve(chunks[:1], rate=0.01, threads=2)  # compile or load
        runs = []
        for _ in range(repeats):
            log.clear()
            t0 = time.perf_counter()
            M.miss_ratio_curve(chunks, rate=0.01, threads=2)
            runs.append((time.perf_counter() - t0, list(log)))
    finally:
        MSC.scan_claim = real_scan
        M.StackDistances._feed_main, M.StackDistances._feed_subs = real_main, real_subs
    total, events = min(runs, key=lambda r: r[0])

    def spent(what):
        return sum(t for w, t, _ in events if w == what), sum(s for w, _, s in events if w == what)

    (front, fs), (back, bs) = spent("front"), spent("back")
    there, _ = spent("feed there")
    here, _ = spent("feed here")
    ns = -(-CHUNK // MSC.STRIPE) * len(chunks)
    print(f"one pass on two threads, fastest of {repeats}: {total * 1e3:.2f} ms; "
          f"{ns} stripes of {MSC.STRIPE:,} accesses")  # fmt: skip
    print("| thread | hashing ms (stripes) | feeding ms | the rest ms |")
    print("|---|---:|---:|---:|")
    print(f"| caller's | {front * 1e3:.2f} ({fs}) | {here * 1e3:.2f} | "
          f"{(total - front - here) * 1e3:.2f} |")  # fmt: skip
    print(f"| other | {back * 1e3:.2f} ({bs}) | {there * 1e3:.2f} | "
          f"{(total - back - there) * 1e3:.2f} |")  # fmt: skip
    print(f"stripes hashed by both threads: {fs + bs - ns}")


def hashing(chunks, label: str, repeats: int, stripes: bool) -> None:
    """Part 2: hashing alone (``scan_prefilter``): one thread over every chunk, against two
    threads each taking half of every chunk in one job (one hand-over in all); with
    ``stripes``, also two threads taking each chunk's stripes from both ends, as the pass
    does (a hand-over a chunk)."""
    n = max(c[0].shape[0] for c in chunks)
    limit = 1 << SK.addr_limit_bits(6)
    args = (6, limit, M.sampling_key(0), round(0.01 * MK.SAMPLE_P))

    def outs():
        return (np.empty(n, np.int64), np.empty(n, np.uint8), np.empty(n, np.int64),
                np.empty(n, np.int64), np.zeros(MK.PREFILTER_BLOCK, np.uint8))  # fmt: skip

    front, back = outs(), outs()

    def scan_all(parts, out):
        for a, s, k in parts:
            MSC.scan_prefilter(a, s, k, *args, out[4], *out[:4])

    def best(fn):
        fn()  # compile or load
        t = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            t = min(t, time.perf_counter() - t0)
        return t

    def halves():
        lo = [tuple(x[: x.shape[0] // 2] for x in c) for c in chunks]
        hi = [tuple(x[x.shape[0] // 2 :] for x in c) for c in chunks]
        other = _worker().submit(scan_all, hi, back)
        scan_all(lo, front)
        other.result()

    def from_both_ends(stripe):
        ns = -(-n // stripe)
        claims, ends, lk = np.zeros(2, np.int64), np.zeros(ns + 1, np.int64), np.zeros(ns, np.int64)
        for a, s, k in chunks:
            claims[0], claims[1] = 0, -(-a.shape[0] // stripe)
            other = _worker().submit(MSC.scan_claim, a, s, k, *args, back[4], *back[:4], stripe,
                                     claims, True, ends, lk)  # fmt: skip
            MSC.scan_claim(a, s, k, *args, front[4], *front[:4], stripe, claims, False, ends, lk)
            other.result()

    total = sum(c[0].shape[0] for c in chunks)
    mb = sum(sum(x.nbytes for x in c) for c in chunks) / 1e6
    one = best(lambda: scan_all(chunks, front))
    two = best(halves)
    print(f"hashing alone, {label} ({total:,} accesses, {mb:.0f} MB), best of {repeats}:")
    print(
        f"  one thread {one * 1e3:.2f} ms ({mb / one / 1e3:.1f} GB/s); two threads, half of "
        f"each chunk each: {two * 1e3:.2f} ms ({mb / two / 1e3:.1f} GB/s, {one / two:.2f}x)"
    )
    if stripes:
        for bits in (13, 14, 15, 16):
            t = best(lambda bits=bits: from_both_ends(1 << bits))
            print(f"  two threads, stripes of {1 << bits:>6,} from both ends: {t * 1e3:.2f} ms "
                  f"({mb / t / 1e3:.1f} GB/s, {one / t:.2f}x one)")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    plan = plan_kernel("stencil7", n=128)
    chunks = [tuple(a.copy() for a in ch) for ch in plan.chunks(CHUNK)]
    trace_pass(chunks, args.repeats)
    print()
    hashing(chunks, "the chunks in memory", args.repeats, stripes=True)
    small = [tuple(a[: 1 << 17] for a in chunks[3])] * 128
    hashing(small, "one piece of 2**17 accesses (2.2 MB, cached), 128 times", args.repeats,
            stripes=False)  # fmt: skip


if __name__ == "__main__":
    main()
