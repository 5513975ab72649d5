"""Inclusion policies: the plain path before and after, and what a policy costs; same run.

On the 7-point stencil at n = 128 (16.8 M accesses) through the bundled
``generic`` hierarchy (L1 48 KiB/12, L2 2 MiB/16, L3 32 MiB/16), each run in
its own process (``hroof simulate ... --json``, its ``timing.simulate_s``: the
simulation alone, the JIT load kept apart by the simulator's warm-up):

* ``before``: the plain (all-NINE) model with the code of ``--base`` (a
  checkout of the commit before the policies, e.g. ``git archive`` of it);
* ``after``: the same with this tree (the plain path must not be slower);
* ``exclusive L3``, ``victim L3``, ``inclusive L3``: this tree, with the
  generic machine's L3 given that policy (exclusive, victim: L1 as a plain
  level pass, L2 and L3 in the split kernel; inclusive: every level access by
  access, as its back-invalidations reach L1);
* ``next-line L2``, ``adjacent L2``, ``stride L2``: this tree, with the
  generic machine's L2 given that prefetcher (``stride``: 16 streams,
  distance 1) and every level NINE (L1 as a plain pass, then the split
  kernel, with prefetches).

With ``--base-all``, every policy and prefetcher case runs on ``--base`` too
(``... (base)`` rows, and the ratio of this tree to the base on each): how a change
to the access engine moved each path.

Rounds are interleaved and the best of each kept (the machine is a noisy,
shared 2-core VM). Usage::

    git archive BASE | tar -x -C /tmp/base
    python bench/inclusion.py --base /tmp/base [--repeat 3] [--classify] [--base-all]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
GENERIC = HERE / "hroof" / "data" / "generic.toml"


def machine_with(level: str, key: str, value: str, outdir: Path) -> Path:
    text = GENERIC.read_text()
    head, tail = text.split(f'name = "{level}"')
    path = outdir / f"generic-{level}-{value}.toml"
    path.write_text(head + f'name = "{level}"\n{key} = "{value}"' + tail)
    return path


def run(tree: Path, machine: Path, classify: bool) -> tuple[float, dict]:
    argv = [sys.executable, "-m", "hroof", "simulate", "stencil7", "n=128", "--machine"]
    # One thread everywhere: --threads auto would run the plain NINE path on two threads
    # when a core is free (a quiet machine), the policy paths on one, and the ratio would
    # compare threads, not paths.
    argv += [str(machine), "--json", "-q", "--threads", "1"]
    argv += [] if classify else ["--no-classify"]
    env = dict(os.environ, PYTHONPATH=str(tree))
    # From the tree: ``python -m`` puts the working directory before PYTHONPATH, so run
    # from a checkout every case imported that checkout's hroof, --base's included.
    out = subprocess.run(argv, env=env, cwd=tree, check=True, capture_output=True, text=True)
    out = out.stdout
    d = json.loads(out)
    return d["timing"]["simulate_s"], d


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", type=Path, required=True, help="checkout of the code before")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--classify", action="store_true", help="classify misses (3C) too")
    ap.add_argument("--base-all", action="store_true", help="every case on --base as well")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cases = {"before": (args.base, GENERIC), "after": (HERE, GENERIC)}
        variants = {}
        for policy in ("exclusive", "victim", "inclusive"):
            variants[f"{policy} L3"] = machine_with("L3", "inclusion", policy, Path(tmp))
        for pf in ("next-line", "adjacent", "stride"):
            variants[f"{pf} L2"] = machine_with("L2", "prefetch", pf, Path(tmp))
        for name, machine in variants.items():
            cases[name] = (HERE, machine)
            if args.base_all:
                cases[f"{name} (base)"] = (args.base, machine)
        best = dict.fromkeys(cases, float("inf"))
        results = {}
        for _ in range(args.repeat):
            for name, (tree, machine) in cases.items():
                t, d = run(tree, machine, args.classify)
                best[name] = min(best[name], t)
                results[name] = d
    n = results["after"]["accesses"]
    same = all(
        {k: lv[k] for k in ("lookups", "misses", "writebacks")}
        == {k: bv[k] for k in ("lookups", "misses", "writebacks")}
        for lv, bv in zip(results["after"]["levels"], results["before"]["levels"], strict=True)
    )
    print(f"stencil7 n=128, {n:,} accesses, classify={'on' if args.classify else 'off'}, "
          f"best of {args.repeat}; plain counts before == after: {same}")  # fmt: skip
    for name, t in best.items():
        mem = results[name]["memory"]["bytes"]
        vs = ""
        if f"{name} (base)" in best:
            vs = f"  this tree / base x{t / best[f'{name} (base)']:.2f}"
            same = same and results[name]["levels"] == results[f"{name} (base)"]["levels"]
        print(f"  {name:<21} {t:7.3f} s  {n / t / 1e6:6.1f} M acc/s  x{t / best['after']:.2f} "
              f"of after   memory {mem / 2**20:8.1f} MiB{vs}")  # fmt: skip
    if args.base_all:
        print(f"every case's levels equal on both trees: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
