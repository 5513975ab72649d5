"""Generation feeds L1 directly: hroof's own kernels generate a block at a time into the
L1 pass (``Simulator.feed_generated``, ``Plan.generated``) and give, counter for counter,
the results of their chunks checked as a user's arrays; a user's kernel is still checked.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_fastpath import SMALL, counts

from hroof._base.errors import HroofError
from hroof.cachesim import HierarchyConfig, LevelConfig, Simulator, simulate
from hroof.cachesim import _generated as G
from hroof.cachesim import simulator as S
from hroof.machine.model import resolve_machine
from hroof.studies.runs import simulate_kernel
from hroof.traces import Kernel, Param, Plan, kernels, layout, plan_kernel, register_kernel
from hroof.traces.kernels import Generated, unregister_kernel


def _h(*levels) -> HierarchyConfig:
    return HierarchyConfig(tuple(LevelConfig(*lv[:4], **(lv[4] if len(lv) > 4 else {}))
                                 for lv in levels))  # fmt: skip


#: Each path of the simulator: the plain levels, the split policy path (plain L1, an
#: exclusive L3 access by access), every level access by access (an inclusive L2), one
#: level alone, a prefetching L2 (split at L1).
HIER = {
    "nine": _h(("L1", 1024, 2, 64), ("L2", 4096, 4, 64), ("L3", 16384, 4, 64)),
    "exclusive": _h(("L1", 1024, 2, 64), ("L2", 4096, 4, 64),
                    ("L3", 16384, 4, 64, {"inclusion": "exclusive"})),
    "inclusive": _h(("L1", 1024, 2, 64), ("L2", 8192, 4, 64, {"inclusion": "inclusive"})),
    "one": _h(("L1", 2048, 4, 64)),
    "prefetch": _h(("L1", 1024, 2, 64), ("L2", 4096, 4, 64, {"prefetch": "stride"})),
}  # fmt: skip


def checked(plan, h, chunk, **kw) -> dict:
    """``plan`` simulated as a user's arrays: fresh chunks, every one checked."""
    steady = plan.steady
    return counts(simulate(
        h, [c for c in plan.chunks(chunk, reuse=False, start=plan.warmup)],
        warmup=list(plan.chunks(chunk, reuse=False, stop=plan.warmup)) if steady else None,
        flush=kw.pop("flush", True) and not steady, flops=plan.flops, source=plan.source(),
        **kw,
    ))  # fmt: skip


@pytest.mark.parametrize("hname", sorted(HIER))
@pytest.mark.parametrize("name", sorted(SMALL))
@pytest.mark.parametrize("classify", [True, False])
def test_generated_into_l1_equals_checked(name, hname, classify, monkeypatch):
    """Every built-in kernel, on every simulator path: blocks smaller than a chunk (so
    L1's output piles up over several blocks) and a chunk size that cuts the kernel's
    rows anywhere give the checked path's every counter."""
    monkeypatch.setattr(G, "BLOCK", 96)
    plan = plan_kernel(name, **SMALL[name])
    h = HIER[hname]
    fast = simulate_kernel(plan, h, classify=classify, chunk_size=333)
    assert counts(fast) == checked(plan, h, 333, classify=classify)
    assert fast.timing["generate_s"] > 0 and fast.timing["check_s"] > 0


@pytest.mark.parametrize("block", [1, 5, 64, 1 << 20])
@pytest.mark.parametrize("chunk", [1, 7, 100, 1 << 20])
def test_block_and_chunk_sizes(block, chunk, monkeypatch):
    """Blocks of one iteration up to the whole trace, chunks down to one access."""
    monkeypatch.setattr(G, "BLOCK", block)
    plan = plan_kernel("stencil7", n=6, sweeps=2)
    h = HIER["nine"]
    ref = checked(plan, h, 1000, classify=True)
    assert counts(simulate_kernel(plan, h, classify=True, chunk_size=chunk)) == ref


def test_the_output_buffer_fills_within_a_chunk(monkeypatch):
    """L1's output fills its buffer before a chunk ends (a miss and a writeback for every
    access): the levels below run then, and the counts stay the checked path's."""
    monkeypatch.setattr(G, "BLOCK", 64)
    plan = plan_kernel("triad", n=4000)
    h = _h(("L1", 128, 1, 64), ("L2", 4096, 4, 64))
    sim = Simulator(h, classify=False)
    sim._out[0] = sim._out[0]._replace(ev=sim._out[0].ev[:200], size=sim._out[0].size[:200])
    sizes = []
    sim.feed_generated(plan.gen, plan.args, 0, plan.iterations, plan.per_iteration, 10_000,
                       sizes.append, block=64)  # fmt: skip
    assert sum(sizes) == plan.accesses and sizes[0] > 10_000 - 64  # blocks of 63
    assert sim._st.ctr[0, 1] > 1000  # misses: far more events than the 200 slots
    assert counts(sim.finish(flops=plan.flops, source=plan.source())) == checked(
        plan, h, 1000, classify=False
    )


@pytest.mark.parametrize("hname", sorted(HIER))
@pytest.mark.parametrize("classify", [True, False])
def test_generated_two_threads(hname, classify, monkeypatch):
    """threads=2 on every simulator path: L1 beside the levels below where L1 is a plain
    pass (the plain levels, the split policy path), one thread elsewhere (said in the
    result); the counts of one thread, fed the checked chunks."""
    monkeypatch.setattr(G, "BLOCK", 96)
    h = HIER[hname]
    plan = plan_kernel("stencil7", n=10)
    two = counts(simulate_kernel(plan, h, classify=classify, threads=2, chunk_size=333))
    assert two.pop("options")["threads"] == (2 if hname in ("nine", "exclusive", "prefetch") else 1)
    one = checked(plan, h, 333, classify=classify)
    one.pop("options")
    assert one == two


@pytest.mark.parametrize("machine", ["skylake-sp", "generic", "zen4"])
@pytest.mark.parametrize("classify", [True, False])
def test_machine_presets(machine, classify, monkeypatch):
    monkeypatch.setattr(G, "BLOCK", 200)
    h = resolve_machine(machine)
    plan = plan_kernel("stencil7", n=10)
    assert counts(simulate_kernel(plan, h, classify=classify, chunk_size=1000)) == checked(
        plan, h, 1000, classify=classify
    )


@pytest.mark.parametrize("name", ["triad", "stencil7", "spmv"])
def test_two_threads_no_flush_steady_and_cores(name, monkeypatch):
    """The pipelined levels (threads=2), no flush, steady state (warm-up sweeps), and
    several cores (cores=2, which generates through the chunks as before)."""
    monkeypatch.setattr(G, "BLOCK", 50)
    h = HIER["nine"]
    plan = plan_kernel(name, **SMALL[name])
    for classify in (False, True):
        two = simulate_kernel(plan, h, classify=classify, threads=2, chunk_size=300)
        assert two.threads == 2
        assert counts(two) == checked(plan, h, 300, classify=classify, threads=2)
        one = checked(plan, h, 300, classify=classify)
        assert one.pop("options")["threads"] == 1
        assert one == {k: v for k, v in counts(two).items() if k != "options"}
    no_flush = simulate_kernel(plan, h, classify=True, flush=False, chunk_size=300)
    assert counts(no_flush) == checked(plan, h, 300, classify=True, flush=False)
    if name != "spmv":  # spmv has no warm-up sweeps
        steady = plan_kernel(name, n=SMALL[name]["n"], sweeps=2, warmup=1)
        assert steady.steady
        assert counts(simulate_kernel(steady, h, classify=True, chunk_size=300)) == checked(
            steady, h, 300, classify=True
        )
        two = counts(simulate_kernel(steady, h, classify=True, threads=2, chunk_size=300))
        assert two.pop("options")["threads"] == 2
        one = checked(steady, h, 300, classify=True)
        one.pop("options")
        assert one == two
    if name == "spmv":
        return  # no outer loop to split across cores
    a = simulate_kernel(plan, h, classify=True, cores=2, chunk_size=300)
    monkeypatch.setattr(G, "BLOCK", 1 << 15)
    b = simulate_kernel(plan, h, classify=True, cores=2, chunk_size=1 << 20)
    assert counts(a) == counts(b)


@pytest.mark.parametrize("k", [2, 4])
def test_sample_sets(k, monkeypatch):
    """--sample-sets: a kernel with a set-sampled generator, and one without (its full
    trace filtered: the generated parts iterate as chunks)."""
    monkeypatch.setattr(G, "BLOCK", 64)
    h = HIER["nine"]
    for plan in (plan_kernel("stencil7", n=10), plan_kernel("gemm", n=8)):
        fast = simulate_kernel(plan, h, classify=False, sample_sets=k, chunk_size=400)
        assert fast.sampling is not None
        assert counts(fast) == checked(plan, h, 400, classify=False, sample_sets=k)


def test_generated_iterates_as_chunks():
    plan = plan_kernel("stencil5", n=9, sweeps=2)
    g = plan.generated(50, start=3, stop=plan.iterations - 2)
    assert isinstance(g, Generated)
    a = [np.concatenate(x) for x in zip(*[(a.copy(), s.copy(), k.copy()) for a, s, k in g],
                                       strict=True)]  # fmt: skip
    parts = plan.chunks(50, reuse=False, start=3, stop=plan.iterations - 2)
    b = [np.concatenate(x) for x in zip(*parts, strict=True)]
    assert all((x == y).all() for x, y in zip(a, b, strict=True))


def test_progress_per_chunk_sums_to_the_trace():
    plan = plan_kernel("triad", n=5000)
    seen: list[int] = []
    simulate_kernel(plan, HIER["nine"], classify=False, chunk_size=4096, progress=seen.append)
    assert sum(seen) == plan.accesses
    assert seen == [len(c[0]) for c in plan.chunks(4096)]  # the chunks of Plan.chunks


def test_every_builtin_generator_is_fed_directly(monkeypatch):
    """simulate_kernel hands hroof's own kernels to feed_generated, never chunk by chunk."""
    calls = []
    orig = S.Simulator.feed_generated

    def spy(self, *a, **kw):
        calls.append(1)
        return orig(self, *a, **kw)

    monkeypatch.setattr(S.Simulator, "feed_generated", spy)
    monkeypatch.setattr(S.Simulator, "feed", lambda *a, **kw: pytest.fail("fed a chunk"))
    for k in kernels():
        calls.clear()
        simulate_kernel(k.name, HIER["nine"], classify=False, **SMALL[k.name])
        assert calls, k.name


def _bad_kernel(kind_value: int, size_value: int) -> Kernel:
    from numba import njit

    @njit
    def bad_gen(pos, stop, addr, size, kind, args):
        base, kv, sv = args
        n = 0
        while pos < stop and n < addr.shape[0]:
            addr[n] = base + pos * 8
            size[n] = sv
            kind[n] = kv
            n += 1
            pos += 1
        return n, pos

    def bad_plan(p):
        (x,) = layout([("x", 8, p["n"])])
        return Plan(arrays=(x,), flops=p["n"], iterations=p["n"], per_iteration=1,
                    accesses=p["n"], footprint=x.nbytes, gen=bad_gen,
                    args=(x.base, kind_value, size_value))  # fmt: skip

    return Kernel("test-bad", "bad", (Param("n", 16, "elements"),), bad_plan)


@pytest.mark.parametrize(("kv", "sv", "match"), [(7, 8, "kinds are not 0"),
                                                 (0, 0, "sizes are not positive"),
                                                 (1, 8, None)])  # fmt: skip
def test_a_users_kernel_is_still_checked(kv, sv, match, monkeypatch):
    """A registered kernel outside hroof.traces goes chunk by chunk through the checks:
    bad kinds and sizes still give the clear error, a good one simulates."""
    monkeypatch.setattr(S.Simulator, "feed_generated",
                        lambda *a, **kw: pytest.fail("a user's kernel was trusted"))  # fmt: skip
    register_kernel(_bad_kernel(kv, sv))
    try:
        if match is None:
            r = simulate_kernel("test-bad", HIER["nine"], classify=False, n=64)
            assert r.core.stores == 64
        else:
            with pytest.raises(HroofError, match=match):
                simulate_kernel("test-bad", HIER["nine"], classify=False, n=64)
    finally:
        unregister_kernel("test-bad")
