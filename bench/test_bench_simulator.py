"""pytest-benchmark suite: hroof against its naive twin and pycachesim on the same streams.

Run with ``make bench`` (or ``pytest bench --benchmark-enable --benchmark-only``).
Groups put the simulators of one stream side by side; the ``ops`` column is
runs per second, and ``extra_info`` holds accesses per second.
"""

from __future__ import annotations

import numpy as np
import pytest
from compare_pycachesim import build_pycachesim, reference_hierarchy, to_loadstore
from workloads import stencil_arrays, stencil_chunks

from hroof.cachesim import Simulator

BIG = 48  # 885 K accesses
SMALL = 24  # 110 K accesses: still quick for the naive twin


def _hroof(h, chunks, classify):
    sim = Simulator(h, classify=classify)
    for c in chunks:
        sim.feed(*c)
    return sim.finish()


def _chunks(n, load_only=False):
    return [tuple(x.copy() for x in c) for c in stencil_chunks(n, load_only=load_only)]


@pytest.mark.benchmark(group="stencil n=48, 3 levels")
@pytest.mark.parametrize("classify", [False, True], ids=["classify-off", "classify-on"])
def test_hroof_stencil(benchmark, classify):
    h = reference_hierarchy()
    chunks = _chunks(BIG)
    r = benchmark(_hroof, h, chunks, classify)
    benchmark.extra_info["accesses"] = r.accesses
    if benchmark.stats:  # None when run with --benchmark-disable
        benchmark.extra_info["maccess_per_s"] = r.accesses / benchmark.stats["min"] / 1e6


@pytest.mark.benchmark(group="stencil n=48, 3 levels")
def test_pycachesim_stencil(benchmark):
    pytest.importorskip("cachesim")
    h = reference_hierarchy()
    addr, _, kind = stencil_arrays(BIG)
    pairs = to_loadstore(addr, kind)

    def run():
        cs, caches = build_pycachesim(h)
        cs.loadstore(pairs, length=8)
        cs.force_write_back()
        return caches

    caches = benchmark(run)
    ours = _hroof(h, _chunks(BIG), False)
    # Same stream, same misses at L1 (the quirks do not act on this stream's L1).
    assert caches[0].stats()["MISS_count"] == ours.levels[0].misses
    if benchmark.stats:
        benchmark.extra_info["maccess_per_s"] = len(addr) / benchmark.stats["min"] / 1e6


@pytest.mark.benchmark(group="stencil n=24, 3 levels (naive twin)")
@pytest.mark.parametrize("impl", ["hroof", "naive"])
def test_against_naive_twin(benchmark, impl):
    from naive import simulate as naive_simulate

    h = reference_hierarchy()
    if impl == "hroof":
        chunks = _chunks(SMALL)
        r = benchmark(_hroof, h, chunks, True)
        misses = [lv.misses for lv in r.levels]
    else:
        addr, size, kind = stencil_arrays(SMALL)
        acc = list(zip(addr.tolist(), size.tolist(), kind.tolist(), strict=True))
        levels = [
            {"name": lv.name, "size": lv.size, "ways": lv.ways, "line": lv.line} for lv in h.levels
        ]
        r = benchmark.pedantic(naive_simulate, args=(levels, acc), rounds=3, iterations=1)
        misses = [lv["misses"] for lv in r["levels"]]
    assert misses == [lv.misses for lv in _hroof(h, _chunks(SMALL), True).levels]
    benchmark.extra_info["accesses"] = 8 * SMALL**3
    assert np.all(np.array(misses) > 0)
