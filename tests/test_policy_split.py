"""The split policy path (``hroof/cachesim/_split_kernels.py``): the top levels that nothing
below can change run as plain level passes, the rest access by access. It must give exactly
the access-by-access kernel's results (``Simulator._split = 0`` forces that path), which
tests/test_inclusion.py and tests/test_prefetch.py pin to the naive twin."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from conftest import random_trace
from helpers import lvl

from hroof.cachesim import Simulator, hierarchy
from hroof.cachesim._split_kernels import split_level

POLICIES = ("nine", "exclusive", "victim", "inclusive")
PREFETCHERS = ("none", "next-line", "adjacent", "stride")


def levels_of(pols, pfs, geoms):
    """Level dicts: L1 NINE, then ``pols``; ``pfs`` per level; ``geoms`` (sets, ways, wa)."""
    out = []
    for i, ((sets, ways, wa), pol, pf) in enumerate(zip(geoms, ("nine", *pols), pfs, strict=True)):
        d = lvl(f"L{i + 1}", sets, ways, 64, wa) | {"inclusion": pol, "prefetch": pf}
        if pf == "stride":
            d |= {"prefetch_streams": 2, "prefetch_distance": 1 + i % 2}
        out.append(d)
    return out


def run(levels, addr, size, kind, *, split, classify, flush, chunk, threads=1):
    """The result (less its timing and options) and the split level used; ``chunk``
    accesses a feed; ``threads=2``: L1 beside the levels below where the hierarchy
    pipelines (said in the result)."""
    h = hierarchy(*levels)
    sim = Simulator(h, classify=classify, threads=threads)
    if not split:
        sim._split = 0
    for lo in range(0, len(addr), chunk):
        sim.feed(addr[lo : lo + chunk], size[lo : lo + chunk], kind[lo : lo + chunk])
    sim.check_invariants()
    d = sim.finish(flush=flush).to_dict()
    del d["timing"]
    assert d.pop("options")["threads"] == (2 if threads == 2 and h.pipelines else 1)
    return d, sim._split


def test_split_level_rules():
    """How many top levels run as plain passes (docs/cache-model.md, "Speed")."""

    def t(pols, pfs=None):
        pfs = pfs or ("none",) * (len(pols) + 1)
        return split_level(hierarchy(*levels_of(pols, pfs, [(1, 2, True)] * len(pfs))).levels)

    assert t(("nine", "exclusive")) == 1  # L2 stays below: the exclusive L3 hands it dirt
    assert t(("nine", "victim")) == 1
    assert t(("exclusive", "nine")) == 0  # L1 takes its dirty bits from the exclusive L2
    assert t(("victim", "nine")) == 0  # a plain L1 pass sends no clean victims
    assert t(("nine", "inclusive")) == 0  # back-invalidations reach L1
    assert t(("inclusive", "exclusive")) == 0
    assert t(("nine", "nine", "exclusive")) == 2
    assert t(("nine", "nine", "victim")) == 2
    assert t(("nine", "nine", "inclusive")) == 0
    assert t(("nine", "nine"), ("none", "next-line", "none")) == 1
    assert t(("nine", "nine"), ("none", "none", "stride")) == 1  # prefetchers: at most L1
    assert t(("nine", "nine", "exclusive"), ("none", "none", "adjacent", "none")) == 1
    assert t(("nine", "nine"), ("next-line", "none", "none")) == 0  # L1 prefetches itself
    assert t(("nine", "exclusive"), ("none", "next-line", "none")) == 1
    assert t(("exclusive", "nine"), ("none", "none", "stride")) == 0


GEOMS3 = [
    ((2, 2, True), (2, 3, True), (4, 4, True)),
    ((1, 2, False), (3, 1, True), (2, 3, True)),
    ((2, 1, True), (1, 3, False), (4, 2, True)),
]


@pytest.mark.parametrize("geom", range(len(GEOMS3)))
@pytest.mark.parametrize("pols", list(itertools.product(POLICIES, POLICIES)))
@pytest.mark.parametrize("where", ["none", "L2", "L3"])
def test_split_equals_access_by_access(geom, pols, where):
    """Every policy pair at L2 and L3, with no prefetcher or each one at L2 or L3: the split
    path equals the access-by-access one counter for counter, classification on and off,
    flush on and off, fed in one chunk or in chunks of 1, 7 and 100 accesses; and so does
    the split path with L1 on a thread of its own (``threads=2``)."""
    seed = 1000 * geom + 10 * POLICIES.index(pols[0]) + POLICIES.index(pols[1])
    rng = np.random.default_rng(seed + 100 * ["none", "L2", "L3"].index(where))
    addr, size, kind = random_trace(rng, 500, lines=50, p=(0.55, 0.4, 0.05))
    prefetchers = ["none"] if where == "none" else PREFETCHERS[1:]
    for pf in prefetchers:
        pfs = ["none"] * 3
        if where != "none":
            pfs[int(where[1]) - 1] = pf
        levels = levels_of(pols, pfs, GEOMS3[geom])
        for classify, flush, chunk in (
            (True, True, 500),
            (False, False, 500),
            (True, False, 7),
            (False, True, 100),
            (True, True, 1),
        ):
            args = dict(classify=classify, flush=flush, chunk=chunk)
            split, t = run(levels, addr, size, kind, split=True, **args)
            pure, _ = run(levels, addr, size, kind, split=False, **args)
            assert t == split_level(hierarchy(*levels).levels)
            assert split == pure, (pols, pfs, classify, flush, chunk, t)
            two, _ = run(levels, addr, size, kind, split=True, threads=2, **args)
            assert two == pure, (pols, pfs, classify, flush, chunk, t, "threads=2")


@pytest.mark.parametrize("seed", range(4))
def test_split_two_plain_levels_on_top(seed):
    """Four levels, L4 exclusive or victim: L1 and L2 run as plain passes (split at 2);
    equal to the access-by-access path, and the result does not depend on the chunking."""
    rng = np.random.default_rng(seed)
    pol = ("exclusive", "victim")[seed % 2]
    geoms = [(2, 2, True), (2, 2, seed != 1), (2, 3, True), (4, 2, True)]
    levels = levels_of(("nine", "nine", pol), ["none"] * 4, geoms)
    assert split_level(hierarchy(*levels).levels) == 2
    addr, size, kind = random_trace(rng, 1500, lines=70, p=(0.5, 0.45, 0.05))
    results = []
    for classify in (True, False):
        pure, _ = run(
            levels, addr, size, kind, split=False, classify=classify, flush=True, chunk=1500
        )
        for chunk in (1500, 333, 2):
            args = dict(classify=classify, flush=True, chunk=chunk)
            split, _ = run(levels, addr, size, kind, split=True, **args)
            assert split == pure
            assert run(levels, addr, size, kind, split=True, threads=2, **args)[0] == pure
        results.append(pure)
    assert results[0]["levels"][3]["victims_in"] > 0


def test_split_flag_pages_grow_mid_chunk():
    """Lines spread over many 512-line pages: the classification tables grow while the split
    kernel runs; the result still equals the access-by-access path's."""
    rng = np.random.default_rng(11)
    levels = levels_of(("nine", "exclusive"), ("none", "next-line", "none"),
                       [(2, 2, True), (2, 2, True), (1, 8, True)])  # fmt: skip
    n = 4000
    lines = rng.integers(0, 400, size=n) * 1000 + rng.integers(0, 3, size=n)
    addr, size = lines * 64, np.full(n, 8)
    kind = rng.choice(np.array([0, 1], dtype=np.uint8), size=n)
    split, t = run(levels, addr, size, kind, split=True, classify=True, flush=True, chunk=n)
    pure, _ = run(levels, addr, size, kind, split=False, classify=True, flush=True, chunk=n)
    assert t == 1 and split == pure
    for chunk in (n, 333):  # L1's flag words and the levels below's grow on two threads
        two, _ = run(levels, addr, size, kind, split=True, classify=True, flush=True,
                     chunk=chunk, threads=2)  # fmt: skip
        assert two == pure
