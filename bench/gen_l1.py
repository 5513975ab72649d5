"""A kernel's generated trace into the simulator, end to end: two source trees, same run.

Runs ``simulate_kernel`` (what ``hroof simulate KERNEL`` does) for each stream, machine
and classification setting, once per round in every tree given with ``--tree``
(alternating, so that all see the same minutes of a busy machine), each run in a
fresh process of that tree (kernels loaded from Numba's cache by a small run first,
not timed). Prints, per case and tree, the best end-to-end wall and CPU seconds and
the result's ``timing`` split (generate, check, simulate) of the best run, and
whether every tree gave the same counts.

Usage::

    python bench/gen_l1.py --tree /tmp/base-genl1 --tree . [--repeat 3] [--block 8192 ...]
        [--case stencil7/skylake-sp/1 ...]

``--block B`` adds the last tree with ``hroof.cachesim._generated.BLOCK = B`` (the
accesses generated at a time straight into L1) as one more variant.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

STREAMS = [("stencil7", {"n": 128}), ("triad", {"n": 5_000_000})]
MACHINES = ["skylake-sp", "generic"]


def worker(spec: dict) -> None:
    from hroof.studies.runs import simulate_kernel

    if spec.get("block"):
        from hroof.cachesim import _generated

        _generated.BLOCK = spec["block"]

    simulate_kernel("triad", spec["machine"], classify=spec["classify"], n=1000)  # load
    w0, c0 = time.perf_counter(), time.process_time()
    r = simulate_kernel(spec["kernel"], spec["machine"], classify=spec["classify"],
                        **spec["params"])  # fmt: skip
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    d = r.to_dict()
    counts = json.dumps([d["core"], d["levels"], d["memory"]], sort_keys=True)
    print(json.dumps({"wall": wall, "cpu": cpu, "timing": d["timing"], "counts": counts}))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", action="append", required=True, help="a source tree (repeat)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--block", type=int, action="append", default=[])
    ap.add_argument(
        "--case", action="append", default=[], help="KERNEL/MACHINE/CLASSIFY(0|1) (default: all)"
    )
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(json.loads(args.worker))
        return 0
    cases = [{"kernel": k, "params": p, "machine": m, "classify": c}
             for k, p in STREAMS for m in MACHINES for c in (True, False)
             if not args.case or f"{k}/{m}/{int(c)}" in args.case]  # fmt: skip
    variants = [(t, 0) for t in args.tree] + [(args.tree[-1], b) for b in args.block]
    print(f"start {time.strftime('%H:%M:%S', time.gmtime())} UTC, load {os.getloadavg()}")
    best: dict = {}
    for _ in range(args.repeat):
        for i, case in enumerate(cases):
            for tree, block in variants:
                env = dict(os.environ, PYTHONPATH=os.path.abspath(tree))
                out = subprocess.run(
                    [args.python, os.path.abspath(__file__), "--tree", tree, "--worker",
                     json.dumps({**case, "block": block})],
                    capture_output=True, text=True, env=env, check=True,
                )  # fmt: skip
                r = json.loads(out.stdout.strip().splitlines()[-1])
                key = (i, tree, block)
                if key not in best or r["wall"] < best[key]["wall"]:
                    best[key] = r
    print(f"{'case':<38} {'tree':<18} {'wall s':>7} {'cpu s':>7} {'gen s':>6} "
          f"{'check s':>7} {'sim s':>6} same")  # fmt: skip
    for i, case in enumerate(cases):
        label = (f"{case['kernel']} {case['machine']} "
                 f"{'classify' if case['classify'] else 'no-classify'}")  # fmt: skip
        ref = best[i, args.tree[0], 0]["counts"]
        for tree, block in variants:
            r = best[i, tree, block]
            t = r["timing"]
            name = tree[-12:] + (f" B={block}" if block else "")
            print(f"{label:<38} {name:<18} {r['wall']:7.3f} {r['cpu']:7.3f} "
                  f"{t['generate_s']:6.3f} {t['check_s']:7.3f} {t['simulate_s']:6.3f} "
                  f"{r['counts'] == ref}")  # fmt: skip
    print(f"end {time.strftime('%H:%M:%S', time.gmtime())} UTC, load {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
