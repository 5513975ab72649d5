"""Miss-ratio curves (``hroof.cachesim.mrc``): the Numba passes against their naive twins,
and the curves against the simulator at each level's capacity and geometry."""

from __future__ import annotations

import itertools
import threading

import numpy as np
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from naive_mrc import naive_fa, naive_fa_misses, naive_prefilter, naive_sa_misses
from numpy.testing import assert_array_equal

from hroof._base.errors import HroofError
from hroof.cachesim import _mrc_kernels as MK
from hroof.cachesim import _mrc_scan as MSC
from hroof.cachesim import _mrc_state as MS
from hroof.cachesim import hierarchy, resolve_machine, simulate
from hroof.cachesim import mrc as M
from hroof.traces import plan_kernel


def _random_events(rng, n, nlines, p=(0.6, 0.15, 0.15, 0.1)):
    lines = rng.integers(0, nlines, n)
    ops = rng.choice(4, n, p=list(p)).astype(np.uint8)
    return lines, ops


def _curve(lines, ops, *, sets=None, max_ways=8, batch=None):
    sd = M.StackDistances(64, sets=sets, max_ways=max_ways)
    batch = batch or max(1, len(lines))
    for lo in range(0, len(lines), batch):
        sd.feed(lines[lo : lo + batch], ops[lo : lo + batch])
    return sd.finish()


def _fresh(plan, chunk=1 << 14):
    """The kernel's chunks, copied (a generator may reuse its buffers)."""
    return [tuple(a.copy() for a in ch) for ch in plan.chunks(chunk)]


# ----------------------------------------------------------------- hand cases
def test_worked_example_of_the_module_notes():
    # C, B, A (stack A B C), then D (a miss everywhere), invalidate A, then C at distance 3.
    a, b, c_, d = 0, 1, 2, 3
    lines = np.array([c_, b, a, d, a, c_])
    ops = np.array([0, 0, 0, 0, MK.OP_INVAL, 0], dtype=np.uint8)
    c = _curve(lines, ops)
    # C misses in caches of up to 3 lines (the 2-line one holds D and a free slot).
    assert [c.misses(k) for k in range(6)] == [5, 5, 5, 5, 4, 4]
    assert (c.compulsory, c.reloads, c.distinct_lines) == (4, 0, 4)


def test_reload_after_invalidation_is_not_compulsory():
    lines = np.array([5, 5, 5, 5])
    ops = np.array([0, MK.OP_INVAL, 0, 0], dtype=np.uint8)
    c = _curve(lines, ops)
    assert (c.lookups, c.compulsory, c.reloads) == (3, 1, 1)
    assert [c.misses(k) for k in range(3)] == [3, 2, 2]


def test_writes_allocate_but_do_not_count():
    lines = np.array([1, 1, 2, 1])
    ops = np.array([MK.OP_WRITE, 0, 0, 0], dtype=np.uint8)
    c = _curve(lines, ops)
    assert (c.lookups, c.writes, c.compulsory) == (3, 1, 1)
    assert [c.misses(k) for k in range(3)] == [3, 2, 1]


# ----------------------------------------------------------------- naive twins
@pytest.mark.parametrize("seed", range(40))
def test_fully_associative_equals_naive_twins(seed):
    rng = np.random.default_rng(seed)
    lines, ops = _random_events(rng, int(rng.integers(1, 400)), int(rng.integers(1, 40)))
    c = _curve(lines, ops, batch=int(rng.integers(1, 50)))
    hist, cold, reload, writes, distinct = naive_fa(lines, ops)
    caps = np.arange(0, 45)
    ref = naive_fa_misses(lines, ops, caps.tolist())
    assert_array_equal(c.misses(caps), ref)
    # The twin's distance histogram gives the same tail.
    tail = [cold + reload + sum(v for d, v in hist.items() if d >= k) for k in caps]
    assert_array_equal(c.misses(caps), tail)
    assert (c.compulsory, c.reloads, c.writes, c.distinct_lines) == (
        cold,
        reload,
        writes,
        distinct,
    )


@pytest.mark.parametrize("seed", range(30))
def test_set_associative_equals_naive_twin(seed):
    rng = np.random.default_rng(100 + seed)
    lines, ops = _random_events(rng, int(rng.integers(1, 300)), int(rng.integers(1, 40)))
    sets = int(rng.integers(1, 5))
    c = _curve(lines, ops, sets=sets, max_ways=6, batch=int(rng.integers(1, 50)))
    assert_array_equal(c.sa_misses, naive_sa_misses(lines, ops, sets, 6))
    # One set of w ways is the fully-associative cache of w lines.
    if sets == 1:
        assert_array_equal(c.sa_misses, c.misses(np.arange(1, 7)))


@pytest.mark.parametrize("seed", range(6))
def test_compaction_keeps_the_curve(seed, monkeypatch):
    """Tiny trees and blocks force renumbering of the times many times."""
    rng = np.random.default_rng(200 + seed)
    lines, ops = _random_events(rng, 3000, 60)
    whole = _curve(lines, ops)
    monkeypatch.setattr(MS.FAState, "MIN_TREE", 128)
    monkeypatch.setattr(MS.FAState, "BLOCK", 7)
    cut = _curve(lines, ops, batch=13)
    caps = np.arange(0, 70)
    assert_array_equal(cut.misses(caps), whole.misses(caps))
    assert_array_equal(cut.misses(caps), naive_fa_misses(lines, ops, caps.tolist()))


@pytest.mark.parametrize("slack", [2, 3, 8])
@pytest.mark.parametrize("kw", [{"rate": 0.5}, {"sample_size": 20}])
def test_compaction_keeps_the_sampled_curve(kw, slack, monkeypatch):
    """Samplers renumber their times too (the fixed-size one also drops the keys of the
    lines sampled out): tiny trees give the default trees' curve."""
    rng = np.random.default_rng(slack)
    lines, ops = _random_events(rng, 4000, 90)

    def curve():
        sd = M.StackDistances(64, **kw)
        for lo in range(0, len(lines), 37):
            sd.feed(lines[lo : lo + 37], ops[lo : lo + 37])
        return sd.finish()

    whole = curve()
    monkeypatch.setattr(MS.FAState, "MIN_TREE", 128)
    monkeypatch.setattr(MS.FAState, "TREE_SLACK", slack)
    monkeypatch.setattr(M, "PENDING", 16)
    cut = curve()
    assert_array_equal(cut.tail, whole.tail)
    assert cut.sample == whole.sample


@pytest.mark.parametrize("seed", range(4))
def test_table_growth_keeps_the_curve(seed, monkeypatch):
    """A table of 8 slots (its least: one group) at the start grows many times: each
    time the pass stops at half full, the driver grows it, the pass goes on."""
    rng = np.random.default_rng(300 + seed)
    lines, ops = _random_events(rng, 3000, 400)
    monkeypatch.setattr(MS.FAState, "HBITS0", MK.GROUP_BITS)
    c = _curve(lines, ops, batch=int(rng.integers(50, 3000)))
    caps = np.arange(0, 420, 7)
    assert_array_equal(c.misses(caps), naive_fa_misses(lines, ops, caps.tolist()))
    assert c.distinct_lines == len(np.unique(lines[ops != MK.OP_INVAL]))


@pytest.mark.parametrize("kw", [{"rate": 0.3, "seed": 2}, {"sample_size": 64}])
def test_sampling_does_not_depend_on_chunks_or_batches(kw, monkeypatch):
    """The sampled events wait in a buffer and reach the samplers in batches: the curve,
    its error estimate and its counts are the same for any chunking and batch size."""
    rng = np.random.default_rng(21)
    n = 6000
    addr = rng.integers(0, 3000, n) * 64
    size = np.full(n, 8, np.uint32)
    kind = rng.choice(np.array([0, 1, 2], np.uint8), n, p=[0.7, 0.2, 0.1])
    ref = M.miss_ratio_curve([(addr, size, kind)], **kw)
    monkeypatch.setattr(MS.FAState, "HBITS0", MK.GROUP_BITS)
    growing = [0, 1, 11, 111, 1111, n]  # each chunk larger: the buffers grow while holding
    cuts = [[*range(0, n, step), n] for step in (1, 97, 2500)]
    for pending, bounds in [*((5, c) for c in [*cuts, growing]), (10**9, growing)]:
        monkeypatch.setattr(M, "PENDING", pending)
        chunks = [(addr[i:j], size[i:j], kind[i:j]) for i, j in itertools.pairwise(bounds)]
        got = M.miss_ratio_curve(chunks, **kw)
        assert_array_equal(got.tail, ref.tail)
        assert got.sample == ref.sample and got.lookups == ref.lookups


@pytest.mark.parametrize("kw", [{"rate": 0.3, "seed": 5}, {"sample_size": 64}])
def test_two_threads_give_the_same_sampled_curve(kw, monkeypatch):
    """threads=2 hashes a chunk's two halves at once and feeds the sample beside its
    sub-samples: the same curve, counts and error estimate as one thread, for chunks cut
    anywhere (odd lengths, a straddling access or a bad one in either half)."""
    rng = np.random.default_rng(8)
    n = 5001
    addr = rng.integers(0, 2500, n) * 64
    size = np.full(n, 8, np.uint32)
    kind = rng.choice(np.array([0, 1, 2], np.uint8), n, p=[0.7, 0.2, 0.1])
    straddle = addr + 60  # 8 bytes from 4 before a line's end: the simulator's way
    straddle[: n // 2] = addr[: n // 2]  # ... in the second half only
    chunks = [(addr[i:j], size[i:j], kind[i:j]) for i, j in [(0, 1), (1, 1000), (1000, n)]]
    chunks.append((straddle, size, kind))
    monkeypatch.setattr(M, "PENDING", 700)
    ref = M.miss_ratio_curve(chunks, **kw)
    monkeypatch.setattr(M, "SPLIT_FROM", 2)
    monkeypatch.setattr(M, "SPLIT_BATCH_FROM", 2)
    got = M.miss_ratio_curve(chunks, **kw, threads=2)
    assert_array_equal(got.tail, ref.tail)
    assert got.sample == ref.sample and got.lookups == ref.lookups
    sd = M.StackDistances(64, threads=2, **kw)
    assert sd.feed_trace(addr, size, kind, 6)
    assert not sd.feed_trace(straddle, size, kind, 6)
    assert not sd.feed_trace(straddle[::-1].copy(), size, kind, 6)  # ... in the first half
    assert sd.lookups == np.count_nonzero(kind < 2)  # the rejected chunks counted nothing
    bad = addr.copy()
    bad[-1] = -64  # a negative address in the second half
    with pytest.raises(HroofError, match="addresses are negative"):
        M.miss_ratio_curve([(bad, size, kind)], **kw, threads=2)


def _stripes_fall(how, rng, real):
    """A stand-in for ``_mrc_scan.scan_claim`` that makes the two threads' stripes fall
    as ``how`` says, each way one that real timing can give: the front thread takes all
    ("front only": the other thread never starts its part); the back thread all, the
    front seeing that at once ("back only") or late and taking the first ``x`` stripes
    again ("overlap"); the two meeting at a random stripe ("meet"). ``real`` is the
    kernel."""
    back_done = threading.Event()

    def claim(*a):
        claims, back, ns = a[13], a[14], -(-a[0].shape[0] // a[12])
        x = int(rng.integers(0, ns + 1))
        if back:
            try:
                if how == "front only":
                    return 0, ns, 0
                if how == "meet":
                    claims[0] = x  # the front thread took stripes 0 .. x - 1 first
                return real(*a)
            finally:
                back_done.set()
        if how != "front only":
            assert back_done.wait(60)
            back_done.clear()
            claims[1] = {"back only": 0, "overlap": x, "meet": claims[0]}[how]
        return real(*a)

    return claim


@pytest.mark.parametrize("kw", [{"rate": 0.3, "seed": 5}, {"sample_size": 64}])
@pytest.mark.parametrize("how", ["front only", "back only", "overlap", "meet", "as it falls"])
def test_two_threads_feed_the_samplers_beside_the_hashing_however_the_stripes_fall(
    kw, how, monkeypatch
):
    """threads=2 feeds the events pending from earlier chunks on the other thread while
    this one hashes the next chunk's stripes from the front, the other taking stripes from
    the back once it has fed them: the curve is the one thread's however the stripes fall
    (a stripe taken by both included), with a rejected chunk (a straddling access) between
    two that are fed, and in fixed-size mode, where the feeding lowers the threshold the
    next chunk was hashed with."""
    rng = np.random.default_rng(11)
    n = 6000
    addr = rng.integers(0, 3000, n) * 64
    size = np.full(n, 8, np.uint32)
    kind = rng.choice(np.array([0, 1, 2], np.uint8), n, p=[0.7, 0.2, 0.1])
    straddle = addr[:1500] + 60
    cuts = [(0, 1200), (1200, 1500), (1500, 3700), (3700, n)]
    chunks = [(addr[i:j], size[i:j], kind[i:j]) for i, j in cuts]
    chunks.insert(2, (straddle, size[:1500], kind[:1500]))
    monkeypatch.setattr(M, "PENDING", 100)
    ref = M.miss_ratio_curve(chunks, **kw)
    fed, claims = [], []
    submit = M.StackDistances._submit_feed
    monkeypatch.setattr(
        M.StackDistances, "_submit_feed",
        lambda self, *a: fed.append(self._pending) or submit(self, *a),
    )  # fmt: skip
    claim = MSC.scan_claim if how == "as it falls" else _stripes_fall(how, rng, MSC.scan_claim)
    monkeypatch.setattr(MSC, "scan_claim", lambda *a: claims.append(a[14]) or claim(*a))
    monkeypatch.setattr(M, "SPLIT_FROM", 2)
    monkeypatch.setattr(MSC, "STRIPE", 64)
    got = M.miss_ratio_curve(chunks, **kw, threads=2)
    assert_array_equal(got.tail, ref.tail)
    assert got.sample == ref.sample and got.lookups == ref.lookups
    assert sorted(claims) == [False] * len(chunks) + [True] * len(chunks)
    assert len(fed) >= 3 and min(fed) > 0


@pytest.mark.parametrize("n", [1, 63, 64, 65, 1000])
@pytest.mark.parametrize("stripe", [1, 64, 100])
def test_claimed_stripes_merge_to_the_one_thread_filter(n, stripe):
    """``scan_claim`` on the two ends of a chunk, in each order two threads can run it
    (one taking everything; a stale view, both taking the first stripes; meeting at any
    stripe), and ``merge_stripes``: the events, their order and the lookups of
    ``scan_prefilter``, and its rejection (an NT store kind 3 in any stripe)."""
    from hroof.cachesim import _stream_kernels as SK

    rng = np.random.default_rng(n + stripe)
    addr = rng.integers(0, 2**20, n) * 8
    size = np.full(n, 8, np.uint32)
    kind = rng.choice(np.array([0, 1, 2], np.uint8), n)
    limit = 1 << SK.addr_limit_bits(6)
    args = (6, limit, M.sampling_key(3), 1 << 22)
    ns = -(-n // stripe)

    def outs():
        return [np.empty(n, t) for t in (np.int64, np.uint8, np.int64, np.int64)]

    flags = np.zeros(MK.PREFILTER_BLOCK, np.uint8)
    want = outs()
    k, lk, rej = MSC.scan_prefilter(addr, size, kind, *args, flags, *want)
    assert rej == 0
    for first, seen, front_stop in itertools.product(
        range(ns + 1), ["back", "front"], {0, ns, ns // 2, 1}
    ):
        # the back thread starts once the front one has announced ``first`` stripes; the
        # front one then sees the back's lowest (``seen == "back"``) or a stale ``front_stop``
        front, back = outs(), outs()
        ends, lookups = np.zeros(ns + 1, np.int64), np.full(ns, -1, np.int64)
        claims = np.array([first, ns], np.int64)
        _, low, rej_b = MSC.scan_claim(addr, size, kind, *args, flags, *back, stripe, claims,
                                       True, ends, lookups)  # fmt: skip
        assert low == first and rej_b == 0
        claims[1] = low if seen == "back" else max(low, front_stop)
        kf, edge, rej_f = MSC.scan_claim(addr, size, kind, *args, flags, *front, stripe, claims,
                                         False, ends, lookups)  # fmt: skip
        assert edge == claims[1] and rej_f == 0
        got = MSC.merge_stripes(edge, ns, ends, *back, *front, kf)
        assert got == k and lookups.sum() == lk
        for g, w in zip(front, want, strict=True):
            assert_array_equal(g[:k], w[:k])
    bad = kind.copy()
    bad[rng.integers(0, n)] = 3
    for back in (True, False):
        claims = np.array([0, ns], np.int64)
        _, _, rej = MSC.scan_claim(addr, size, bad, *args, flags, *outs(), stripe, claims, back,
                                   np.zeros(ns + 1, np.int64), np.zeros(ns, np.int64))  # fmt: skip
        assert rej == 1


@pytest.mark.parametrize("sets", [1, 7, 16])
@pytest.mark.parametrize("kw", [{}, {"rate": 0.4, "seed": 2}, {"sample_size": 48}])
def test_set_associative_curve_on_two_threads_equals_the_naive_twin(sets, kw, monkeypatch):
    """threads=2 with a set-associative curve: the other thread runs the whole pass beside
    an exact curve, and the odd sets beside a sampled one (this thread the even ones):
    every associativity's misses equal the naive twin's, in batches of any size, with
    invalidations, and the fully associative curve equals one thread's."""
    rng = np.random.default_rng(sets)
    lines, ops = _random_events(rng, 3000, 400)
    monkeypatch.setattr(M, "SPLIT_FROM", 2)
    monkeypatch.setattr(M, "PENDING", 50)
    got = []
    for threads in (1, 2):
        sd = M.StackDistances(64, sets=sets, max_ways=6, threads=threads, **kw)
        assert sd.threads == threads
        for lo, hi in [(0, 1), (1, 700), (700, 1900), (1900, 3000)]:
            sd.feed(lines[lo:hi], ops[lo:hi])
        got.append(sd.finish())
    assert_array_equal(got[1].sa_misses, naive_sa_misses(lines, ops, sets, 6))
    assert_array_equal(got[1].tail, got[0].tail)
    assert got[1].sample == got[0].sample and got[1].lookups == got[0].lookups
    assert got[1].state_bytes == got[0].state_bytes
    # through a level's stream (the simulator's way), as `hroof mrc` runs it
    h = hierarchy({"name": "L1", "size": 2048, "ways": 4})
    one, two = (M.miss_ratio_curve(_random_trace(5), h, **kw, threads=t) for t in (1, 2))
    assert_array_equal(two.sa_misses, one.sa_misses)
    assert_array_equal(two.tail, one.tail)
    assert M.StackDistances(64, threads=2).threads == 1  # exact without sets: one thread


def test_a_feed_the_other_thread_has_not_started_is_taken_back():
    """The events handed to the other thread are fed there, the sample's then the
    sub-samples'; when the curve is wanted before the other thread reaches the
    sub-samples' feed (it is held up here by a job before them), that feed runs on the
    caller's thread beside the sample's: the curve is the one thread's."""
    import threading

    rng = np.random.default_rng(3)
    n = 4000
    addr = rng.integers(0, 1500, n) * 64
    size, kind = np.full(n, 8, np.uint32), np.zeros(n, np.uint8)
    ref = M.StackDistances(64, rate=0.3)
    assert ref.feed_trace(addr, size, kind, 6)
    sd = M.StackDistances(64, rate=0.3, threads=2)
    assert sd.feed_trace(addr, size, kind, 6) and sd._pending > 0  # a small chunk: pending
    release, ran = threading.Event(), {}
    subs = sd._feed_subs

    def feed_subs(*a):  # the worker is held until the sub-samples' feed has started
        ran.setdefault("subs", threading.current_thread())
        release.set()
        return subs(*a)

    sd._feed_subs = feed_subs
    blocker = M._worker().submit(release.wait, 10)
    sd._submit_feed()
    got = sd.finish()
    assert blocker.result() and ran["subs"] is threading.main_thread()
    want = ref.finish()
    assert_array_equal(got.tail, want.tail)
    assert got.sample == want.sample and got.lookups == want.lookups


@pytest.mark.parametrize("stride", [1, 7, 8, 64, 4096])
def test_strided_streams_equal_the_naive_twin(stride):
    """Lines a stride apart: the hash table keeps groups of 8 consecutive lines in
    consecutive slots, so strides of 8 lines and more share one home slot in 8 (long
    probe runs); the stack distances reach across many 64-time blocks of the tree."""
    rng = np.random.default_rng(stride)
    base = rng.integers(0, 150, 1500)
    lines = (base * stride + (1 << 40)).astype(np.int64)
    ops = rng.choice(4, lines.shape[0], p=[0.85, 0.1, 0.03, 0.02]).astype(np.uint8)
    c = _curve(lines, ops, batch=997)
    caps = np.arange(0, 160, 3)
    assert_array_equal(c.misses(caps), naive_fa_misses(lines, ops, caps.tolist()))
    assert c.distinct_lines == len(np.unique(lines[ops != MK.OP_INVAL]))


@settings(max_examples=examples(60), deadline=None)
@given(
    events=st.lists(
        st.tuples(st.integers(0, 12), st.sampled_from([0, 0, 0, 1, 2, 3])), max_size=120
    )
)
def test_curve_properties(events):
    lines = np.array([e[0] for e in events], dtype=np.int64)
    ops = np.array([e[1] for e in events], dtype=np.uint8)
    c = _curve(lines, ops, sets=2, max_ways=4)
    caps = np.arange(0, 20)
    m = np.asarray(c.misses(caps))
    assert (np.diff(m) <= 0).all(), "misses never increase with capacity"
    assert c.misses(0) == c.lookups
    assert c.misses(10**9) == c.compulsory + c.reloads
    if not (ops >= MK.OP_INVAL).any() and not (ops == MK.OP_WRITE).any():
        assert c.misses(10**9) == len(set(lines.tolist()))
    assert (np.diff(c.sa_misses) <= 0).all()
    assert_array_equal(c.misses(caps), naive_fa_misses(lines, ops, caps.tolist()))


# ----------------------------------------------------------------- against the simulator
def _random_trace(seed, n=6000, span=12000):
    rng = np.random.default_rng(seed)
    addr = rng.integers(0, span, n) * 4
    size = rng.choice([4, 8, 16], n)
    kind = rng.choice(3, n, p=[0.6, 0.3, 0.1])
    return [(addr, size, kind)]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("lines", [1, 5, 16, 48])
def test_curve_of_a_level_equals_a_fully_associative_level(seed, lines):
    """Every capacity: a fully-associative level of that many lines misses exactly the curve."""
    trace = _random_trace(seed)
    h = hierarchy(
        {"name": "L1", "size": 512, "ways": 2},
        {"name": "L2", "size": 64 * lines, "ways": lines},
        {"name": "L3", "size": 64 * 96, "ways": 96},
    )
    r = simulate(h, trace)
    for i, name in ((1, "L2"), (2, "L3")):
        c = M.miss_ratio_curve(trace, h, level=name)
        lv = h.levels[i]
        assert c.misses(lv.lines) == r.levels[i].misses
        assert c.lookups == r.levels[i].lookups
        assert c.compulsory == r.levels[i].misses_by_class["compulsory"]
        # Arriving writebacks, less the dirty copies NT stores carry down (not writes here).
        assert 0 < c.writes <= r.levels[i].writebacks_in


@pytest.mark.parametrize("seed", range(4))
def test_set_associative_curve_equals_each_level(seed):
    trace = _random_trace(seed)
    h = hierarchy(
        {"name": "L1", "size": 512, "ways": 2},
        {"name": "L2", "size": 2048, "ways": 4},
        {"name": "L3", "size": 64 * 3 * 12, "ways": 3},  # 12 sets: not a power of two
    )
    r = simulate(h, trace)
    for i, lv in enumerate(h.levels):
        c = M.miss_ratio_curve(trace, h, level=lv.name)
        assert c.sa_misses[lv.ways - 1] == r.levels[i].misses
        cls = r.levels[i].misses_by_class
        # The shadow misses are the compulsory and capacity misses, plus the shadow
        # misses where the set-associative level hit (possible, rare).
        assert c.misses(lv.lines) >= cls["compulsory"] + cls["capacity"]


@pytest.mark.parametrize(
    ("kernel", "params"),
    [("stencil7", {"n": 14}), ("spmv", {"matrix": "poisson2d", "n": 24}), ("triad", {"n": 3000})],
)
def test_kernel_streams_against_the_simulator(kernel, params):
    plan = plan_kernel(kernel, **params)
    levels = [
        {"name": "L1", "size": 2048, "ways": 4},
        {"name": "L2", "size": 8192, "ways": 8},
        {"name": "L3", "size": 3 * 8192, "ways": 6},
    ]
    h = hierarchy(*levels)
    r = simulate(h, _fresh(plan))
    for i, lv in enumerate(h.levels):
        c = M.miss_ratio_curve(_fresh(plan), h, level=i)
        assert c.sa_misses[lv.ways - 1] == r.levels[i].misses
        # The curve is the simulator's fully-associative shadow: its misses are the
        # compulsory and capacity ones plus those where the real level hit.
        cls = r.levels[i].misses_by_class
        extra = c.misses(lv.lines) - cls["compulsory"] - cls["capacity"]
        assert 0 <= extra <= r.levels[i].hits
        # The same level made fully associative (same stream from above) misses exactly it.
        fa = [dict(x) for x in levels]
        fa[i]["ways"] = lv.lines
        rf = simulate(hierarchy(*fa), _fresh(plan))
        assert c.misses(lv.lines) == rf.levels[i].misses
        cls = rf.levels[i].misses_by_class
        assert c.misses(lv.lines) == cls["compulsory"] + cls["capacity"]


def test_nt_stores_at_lower_levels():
    """NT stores invalidate below too: holes at every level's stack."""
    plan = plan_kernel("triad", n=2000, nt="true")
    h = hierarchy(
        {"name": "L1", "size": 1024, "ways": 2},
        {"name": "L2", "size": 4096, "ways": 64},
    )
    r = simulate(h, _fresh(plan))
    c = M.miss_ratio_curve(_fresh(plan), h, level="L2")
    assert c.misses(64) == r.levels[1].misses


def test_warmup_is_run_but_not_counted():
    """With a warm-up the stacks start warm: at a fully-associative level's capacity the
    curve of the counted part equals the simulator's misses with the same warm-up, and the
    set-associative curve its set-associative level's."""
    plan = plan_kernel("stencil7", n=10, warmup=1)
    fa = hierarchy({"name": "FA", "size": 32768, "ways": 512})  # holds the 16 KB grids
    sa = hierarchy({"name": "SA", "size": 4096, "ways": 4})

    def run(h):
        return simulate(h, plan.chunks(start=plan.warmup), warmup=plan.chunks(stop=plan.warmup))

    c = M.miss_ratio_curve(plan.chunks(start=plan.warmup), sa, warmup=plan.chunks(stop=plan.warmup))
    cold = M.miss_ratio_curve(plan.chunks(start=plan.warmup), sa)
    r_fa, r_sa = run(fa), run(sa)
    assert c.lookups == r_fa.levels[0].lookups == cold.lookups
    assert c.misses(512) == r_fa.levels[0].misses < cold.misses(512)
    assert c.sa_misses[3] == r_sa.levels[0].misses
    est = M.miss_ratio_curve(
        plan.chunks(start=plan.warmup), rate=1.0, warmup=plan.chunks(stop=plan.warmup)
    )
    assert est.lookups == c.lookups and est.misses(512) == pytest.approx(c.misses(512))


# ----------------------------------------------------------------- sampling
def test_rate_one_is_exact():
    trace = _random_trace(7)
    exact = M.miss_ratio_curve(trace)
    full = M.miss_ratio_curve(trace, rate=1.0)
    caps = np.arange(0, 200)
    np.testing.assert_allclose(full.misses(caps), exact.misses(caps))
    assert full.sample["rate"] == 1.0


@pytest.mark.slow  # 0.2 s compiled, 20 s with NUMBA_DISABLE_JIT=1 (the coverage lane)
def test_sampling_estimates_a_random_curve():
    rng = np.random.default_rng(3)
    addr = (rng.zipf(1.3, 200_000) % 50_000) * 64
    z = np.zeros_like(addr)
    trace = [(addr, z + 8, z)]
    exact = M.miss_ratio_curve(trace)
    caps = np.unique(np.geomspace(100, 100_000, 40).astype(np.int64))
    for kw in ({"rate": 0.1}, {"sample_size": 4000}):
        est = M.miss_ratio_curve(trace, **kw)
        err = np.mean(np.abs(est.miss_ratio(caps) - exact.miss_ratio(caps)))
        assert err < 0.02, (kw, err)
        assert 0 < est.sample["error_estimate"] < 0.05
        assert est.sample["rate"] <= kw.get("rate", 1.0) * 1.001
    fixed = M.miss_ratio_curve(trace, sample_size=1000)
    assert fixed.sample["dropped_lines"] > 0 and fixed.sample["rate"] < 0.2


@pytest.mark.parametrize("n", [0, 1, 7, 8, 511, 512, 513, 4097, 9000])
@pytest.mark.parametrize("seed", [0, 1, 12345])
def test_prefilter_matches_its_naive_twin(n, seed):
    """The two-loop hashing filter keeps exactly what a plain loop keeps, in order, at
    block boundaries too (blocks of ``PREFILTER_BLOCK`` events, flags in groups of 8)."""
    rng = np.random.default_rng(n + seed)
    src = rng.integers(0, 2**40, n)
    kinds = rng.choice(np.array([0, 1, 2, 6, 7, 8], np.uint8), n)
    key = M.sampling_key(seed)
    for thresh in (1, 1 << 18, 1 << 23, MK.SAMPLE_P):
        flags = np.zeros(MK.PREFILTER_BLOCK, np.uint8)
        out = [np.empty(n, t) for t in (np.int64, np.uint8, np.int64, np.int64)]
        mask = M._lookup_mask(MK.OPS)
        k, lk = MK.prefilter(src, 6, kinds, MK.OPS, mask, key, thresh, flags, *out)
        *want, want_lk = naive_prefilter(src, 6, kinds, MK.OPS, key, thresh)
        assert lk == want_lk and k == len(want[0])
        for got, exp in zip(out, want, strict=True):
            assert_array_equal(got[:k], np.array(exp, dtype=got.dtype))
        if thresh == MK.SAMPLE_P:
            assert k == n
    h, sub = np.empty(n, np.int64), np.empty(n, np.int64)
    MK.sample_hash(src, key, h, sub)
    *want, _ = naive_prefilter(src, 0, np.zeros(n, np.uint8), MK.OPS, key, MK.SAMPLE_P)
    assert_array_equal(h, np.array(want[2], np.int64))
    assert_array_equal(sub, np.array(want[3], np.int64))


@pytest.mark.parametrize("n", [0, 5, 512, 9000])
def test_scan_prefilter_matches_the_check_and_the_filter(n):
    """The fused L1 kernel keeps what ``prefilter`` keeps and rejects exactly what the
    simulator's ``scan_chunk`` would reject or split."""
    from hroof.cachesim import _stream_kernels as SK

    rng = np.random.default_rng(n)
    addr = rng.integers(0, 2**30, n) * 8
    size = rng.choice(np.array([4, 8], np.uint32), n)
    kind = rng.choice(np.array([0, 1, 2], np.uint8), n)
    flags = np.zeros(MK.PREFILTER_BLOCK, np.uint8)
    limit = 1 << SK.addr_limit_bits(6)
    key = M.sampling_key(5)
    for thresh in (1 << 20, MK.SAMPLE_P):
        out = [np.empty(n, t) for t in (np.int64, np.uint8, np.int64, np.int64)]
        k, lk, rej = MSC.scan_prefilter(addr, size, kind, 6, limit, key, thresh, flags, *out)
        *want, want_lk = naive_prefilter(addr, 6, kind, MK.OPS, key, thresh)
        assert rej == 0 and lk == want_lk and k == len(want[0])
        for got, exp in zip(out, want, strict=True):
            assert_array_equal(got[:k], np.array(exp, dtype=got.dtype))
    if n < 3:
        return
    bad = [(-64, 8, 0), (60, 8, 0), (0, 0, 1), (0, 8, 3), (limit, 8, 0), (0, 65, 0),
           (0, 2**32 - 1, 0), (64, 2**31, 0)]  # fmt: skip
    for i, (a, sz, kd) in enumerate(bad):
        bad_a, bad_s, bad_k = addr.copy(), size.copy(), kind.copy()
        j = (7 * i) % n
        bad_a[j], bad_s[j], bad_k[j] = a, sz, kd
        out = [np.empty(n, t) for t in (np.int64, np.uint8, np.int64, np.int64)]
        _, _, rej = MSC.scan_prefilter(bad_a, bad_s, bad_k, 6, limit, key, 1 << 20, flags, *out)
        scan = SK.scan_chunk(bad_a, bad_s, bad_k, 6, limit)
        assert rej == 1 and sum(scan[:4]) >= 1, (a, sz, kd)  # rejected or split there too


_EDGE_ADDR = st.sampled_from([0, 1, 56, 63, 64, 2**62 - 64, 2**62 - 1, 2**62, 2**63 - 1,
                              -1, -(2**63)]) | st.integers(-(2**63), 2**63 - 1)  # fmt: skip
_EDGE_SIZE = st.sampled_from([1, 8, 63, 64, 65, 0, 2**31, 2**32 - 65, 2**32 - 1]) | st.integers(
    0, 2**32 - 1
)  # a chunk's sizes are uint32


@settings(max_examples=examples(300), deadline=None)
@given(a=_EDGE_ADDR, sz=_EDGE_SIZE, kd=st.integers(0, 255), at=st.integers(0, 1099),
       line_bits=st.sampled_from([5, 6, 7]))  # fmt: skip
def test_scan_prefilter_rejects_exactly_what_the_simulator_rejects_or_splits(
    a, sz, kd, at, line_bits
):
    """The fused kernel's check ORs the values together where ``scan_chunk`` compares
    each: one access at the edges (addresses and sizes near the limits, overflowing
    sums, every kind) among valid ones is rejected exactly when ``scan_chunk`` counts
    it bad or straddling."""
    from hroof.cachesim import _stream_kernels as SK

    n = 1100
    line = 1 << line_bits
    addr = np.arange(n, dtype=np.int64) * line
    size = np.full(n, line, np.uint32)
    kind = np.zeros(n, np.uint8)
    addr[at], size[at], kind[at] = a, sz, kd
    limit = 1 << SK.addr_limit_bits(line_bits)
    flags = np.zeros(MK.PREFILTER_BLOCK, np.uint8)
    out = [np.empty(n, t) for t in (np.int64, np.uint8, np.int64, np.int64)]
    _, _, rej = MSC.scan_prefilter(addr, size, kind, line_bits, limit, M.sampling_key(1), 1 << 20,
                                  flags, *out)  # fmt: skip
    with np.errstate(over="ignore"):
        scan = SK.scan_chunk(addr, size, kind, line_bits, limit)
    assert bool(rej) == (sum(scan[:4]) > 0), (a, sz, kd, scan[:4])


@pytest.mark.parametrize("n", [0, 1, 1000])
def test_split_sample_equals_one_filter_per_sub_sample(n):
    rng = np.random.default_rng(n)
    lines = rng.integers(0, 2**40, n)
    ops = rng.integers(0, 4, n).astype(np.uint8)
    hashes = rng.integers(0, MK.SAMPLE_P, n)
    subs = rng.integers(0, MK.SUBSAMPLES, n)
    threshs = np.array([MK.SAMPLE_P, 1 << 23, 1 << 20, 0][: MK.SUBSAMPLES], np.int64)
    out = [np.empty(n, t) for t in (np.int64, np.uint8, np.int64)]
    starts = np.zeros(MK.SUBSAMPLES + 1, np.int64)
    MK.split_sample(lines, ops, hashes, subs, threshs, *out, starts)
    for j in range(MK.SUBSAMPLES):
        want = [np.empty(n, t) for t in (np.int64, np.uint8, np.int64)]
        m = MK.filter_sample(lines, ops, hashes, subs, threshs[j], j, *want)
        assert starts[j + 1] - starts[j] == m
        for got, exp in zip(out, want, strict=True):
            assert_array_equal(got[starts[j] : starts[j + 1]], exp[:m])


def test_direct_sampling_equals_the_simulator_path():
    """Chunks of the plain kind are sampled in one fused pass; other dtypes, straddling
    accesses and bad input go the simulator's way: same curve, same errors."""
    rng = np.random.default_rng(13)
    n = 20_000
    addr = rng.integers(0, 50_000, n) * 8
    size = np.full(n, 8, np.uint32)
    kind = rng.choice(np.array([0, 1, 2], np.uint8), n, p=[0.6, 0.3, 0.1])
    straddle = addr.copy()
    straddle[::50] = straddle[::50] // 64 * 64 + 60  # 8 bytes from 4 before a line's end
    plain = [(addr, size, kind), (straddle, size, kind)]
    other = [tuple(a.astype(np.int32) for a in ch) for ch in plain]
    from_file = [(a.astype(np.uint64), s, k) for a, s, k in plain]  # a trace file's dtypes
    for kw in ({"rate": 0.2, "seed": 3}, {"sample_size": 300}):
        a = M.miss_ratio_curve(plain, **kw)
        b = M.miss_ratio_curve(other, **kw)
        c = M.miss_ratio_curve(from_file, **kw)
        assert_array_equal(a.tail, b.tail)
        assert_array_equal(a.tail, c.tail)
        assert a.sample == b.sample and a.lookups == b.lookups
        assert a.lookups == 2 * np.count_nonzero(kind < 2) + np.count_nonzero(kind[::50] < 2)
    sd = M.StackDistances(64, rate=0.2)
    assert sd.feed_trace(addr, size, kind, 6) and not sd.feed_trace(straddle, size, kind, 6)
    assert not sd.feed_trace(*other[0], 6)
    assert sd.feed_trace(*from_file[0], 6)
    bad = [(addr - 10**6, size, kind)]
    with pytest.raises(HroofError, match="addresses are negative"):
        M.miss_ratio_curve(bad, rate=0.2)
    past = addr.astype(np.uint64)
    past[7] = 2**63 + 64  # a file's address past int64: rejected as the simulator does
    assert not sd.feed_trace(past, size, kind, 6)
    with pytest.raises(HroofError, match="addresses are negative"):
        M.miss_ratio_curve([(past, size, kind)], rate=0.2)


def test_seeds_sample_different_lines_and_are_reported():
    trace = _random_trace(11)
    a = M.miss_ratio_curve(trace, rate=0.3, seed=0)
    b = M.miss_ratio_curve(trace, rate=0.3, seed=1)
    again = M.miss_ratio_curve(trace, rate=0.3, seed=1)
    assert a.sample["seed"] == 0 and b.sample["seed"] == 1
    assert a.sample["sampled_lookups"] != b.sample["sampled_lookups"]
    assert_array_equal(b.tail, again.tail)
    assert 0 < b.sample["sampled_lines"] < b.distinct_lines * 2
    assert b.sample["warning"].startswith(f"only {b.sample['sampled_lines']:,} distinct lines")
    assert M.miss_ratio_curve(trace).sample is None
    with pytest.raises(HroofError, match="seed"):
        M.StackDistances(64, rate=0.1, seed=-1)


def test_no_warning_when_enough_lines_are_sampled():
    lines = np.arange(4 * M.MIN_SAMPLED_LINES, dtype=np.int64)
    sd = M.StackDistances(64, rate=0.5)
    sd.feed(np.concatenate([lines, lines]), np.zeros(2 * lines.shape[0], np.uint8))
    c = sd.finish()
    assert c.sample["sampled_lines"] > M.MIN_SAMPLED_LINES and c.sample["warning"] is None


def test_fixed_size_keeps_its_bound():
    rng = np.random.default_rng(4)
    lines = rng.integers(0, 10**6, 50_000)
    sd = M.StackDistances(64, sample_size=500)
    sd.feed(lines, np.zeros(lines.shape[0], np.uint8))
    assert sd.fa.meta[MK.M_SAMPLED] <= 500
    assert sd.fa.meta[MK.M_LIVE] <= 500


# ----------------------------------------------------------------- input checks
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"rate": 0.0}, "sampling rate"),
        ({"rate": 2}, "sampling rate"),
        ({"sample_size": 3}, "sample size"),
        ({"max_ways": 0}, "max_ways"),
        ({"sets": 0}, "sets"),
        ({"rate": 0.1, "threads": 3}, "threads"),
    ],
)
def test_bad_parameters(kwargs, match):
    with pytest.raises(HroofError, match=match):
        M.StackDistances(64, **kwargs)


def test_unknown_level_and_level_without_machine():
    h = resolve_machine("skylake-sp")
    with pytest.raises(HroofError, match="no level 'L9'"):
        M.miss_ratio_curve([], h, level="L9")
    with pytest.raises(HroofError, match="needs a machine"):
        M.miss_ratio_curve([], level="L2")


def test_to_dict_schema():
    c = M.miss_ratio_curve(_random_trace(1), hierarchy({"name": "L1", "size": 1024, "ways": 2}))
    d = c.to_dict()
    assert d["schema"] == "hroof.mrc/1"
    assert d["curve"][0] == {"lines": 0, "bytes": 0, "misses": c.lookups, "miss_ratio": 1.0}
    assert d["set_associative"]["sets"] == 8
    assert d["source"]["level"] == "L1"


# ----------------------------------------------------------------- knees, layer conditions, AI
def test_stencil_knees_sit_on_the_layer_conditions():
    from hroof.roofline.mrc import layer_capacities, report

    plan = plan_kernel("stencil7", n=20)
    h = hierarchy({"name": "L1", "size": 4096, "ways": 8}, {"name": "L2", "size": 65536, "ways": 8})
    sim = simulate(h, _fresh(plan), flops=plan.flops)
    c = M.miss_ratio_curve(_fresh(plan), h, source=plan.source())
    lc = layer_capacities("stencil7", plan.params, h)
    rep = report(c, h, level=0, flops=plan.flops, simulated=sim, layer_conditions=lc)
    knees = [k.bytes for k in rep.knees]
    # The exact LRU rule: each layer condition is a knee (its 90 % point comes a little
    # earlier on a small grid, where the halo planes shorten some reuses).
    for need in lc.values():
        assert min(abs(k - need) for k in knees) <= 0.1 * need, (knees, lc)
    assert rep.levels[0].simulated_misses == sim.levels[0].misses
    row = next(r for r in rep.ai_rows if r["capacity"] == 4096)
    wb = sim.levels[0].writebacks
    assert row["bytes_below"] == (c.misses(64) + wb) * 64
    assert row["ai"] == plan.flops / row["bytes_below"]
    d = rep.to_dict()
    assert d["schema"] == "hroof.mrc/1" and d["below"] == "L2" and len(d["knees"]) == len(knees)


def test_knee_of_a_cyclic_loop_and_no_knee_without_lookups():
    from hroof.roofline.mrc import find_knees

    lines = np.tile(np.arange(300), 5)
    c = _curve(lines, np.zeros(lines.shape[0], np.uint8))
    (k,) = find_knees(c)
    assert (k.lines, k.before, k.after) == (300, 1.0, 0.2)
    assert find_knees(_curve(np.zeros(0, np.int64), np.zeros(0, np.uint8))) == []


def test_figure(tmp_path):
    from hroof._base.files import save_figure
    from hroof.plots.mrc import plot_mrc
    from hroof.roofline.mrc import report

    h = hierarchy({"name": "L1", "size": 1024, "ways": 2}, {"name": "L2", "size": 4096, "ways": 4})
    for kw in ({}, {"rate": 0.5}):
        c = M.miss_ratio_curve(_random_trace(2), h, **kw)
        fig = plot_mrc(report(c, h, layer_conditions={"2D": 2048}))
        assert save_figure(fig, tmp_path / "mrc.png").stat().st_size > 0


# ----------------------------------------------------------------- command line
def test_cli_prints_knees_next_to_layer_conditions(capsys, tmp_path):
    from helpers import run_cli

    fig, table = tmp_path / "mrc.png", tmp_path / "mrc.csv"
    argv = ["mrc", "stencil7", "n=24", "--machine", "skylake-sp", "--out", fig, "--csv", table]
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    assert "Knees" in out and "2D:" in out and "3D:" in out
    assert "L1" in out and "simulated" in out and "AI of L2" in out
    assert fig.stat().st_size > 0
    rows = table.read_text().splitlines()
    assert rows[0] == "capacity_lines,capacity_bytes,misses,miss_ratio" and len(rows) > 10


def test_cli_json_level_and_sample(capsys):
    import json

    from helpers import run_cli

    code, out, _ = run_cli(capsys, "mrc", "stencil7", "n=16", "--level", "l2", "--json")
    d = json.loads(out)
    assert code == 0 and d["schema"] == "hroof.mrc/1" and d["level"] == "L2"
    lv = next(m for m in d["levels"] if m["name"] == "L2")
    assert lv["simulated_misses"] is not None
    above = next(m for m in d["levels"] if m["name"] == "L1")
    assert above["simulated_misses"] is None  # above the curve's level: not comparable
    code, out, _ = run_cli(capsys, "mrc", "triad", "n=5000", "--sample", "0.5", "--json")
    d = json.loads(out)
    assert d["sample"]["mode"] == "rate" and 0.49 < d["sample"]["rate"] <= 0.5001
    assert d["sample"]["seed"] == 0 and d["sample"]["sampled_lines"] > 0
    assert d["sample"]["warning"].startswith("only ")  # 5000 x 3 x 8 B: under 1,000 lines
    code, out, _ = run_cli(capsys, "mrc", "triad", "n=5000", "--sample", "0.5",
                           "--sample-seed", "3", "--json")  # fmt: skip
    assert json.loads(out)["sample"]["seed"] == 3


def test_cli_threads(capsys, monkeypatch):
    """--threads 2 gives the same curves, sampled or exact, and says so; auto takes two
    for a large stream when a CPU is idle, one otherwise."""
    import json
    from types import SimpleNamespace

    from helpers import run_cli

    from hroof.cli import mrc as cli_mrc
    from hroof.studies import runs

    argv = ["mrc", "triad", "n=40000", "--sample", "0.2", "--no-simulate", "-q"]
    monkeypatch.setattr(M, "SPLIT_FROM", 1000)
    outs = [run_cli(capsys, *argv, "--threads", t, "--json")[1] for t in ("1", "2")]
    assert json.loads(outs[0]) == json.loads(outs[1])
    code, out, _ = run_cli(capsys, *argv, "--threads", "2")
    assert code == 0 and "hash seed 0, 2 threads" in out
    exact = [*argv[:3], "--no-simulate", "-q"]
    outs = [run_cli(capsys, *exact, "--threads", t, "--json")[1] for t in ("1", "2")]
    assert json.loads(outs[0]) == json.loads(outs[1])
    code, out, _ = run_cli(capsys, *exact, "--threads", "2")
    assert code == 0 and "2 threads: the set-associative curve beside the exact one" in out
    code, out, _ = run_cli(capsys, *exact, "--threads", "1")
    assert code == 0 and "threads" not in out
    monkeypatch.setattr(runs, "second_cpu_free", lambda: True)
    args = SimpleNamespace(threads="auto", sample=0.01, sample_size=None)
    assert cli_mrc._threads(args, 10**7) == 2 and cli_mrc._threads(args, None) == 2
    assert cli_mrc._threads(args, 1000) == 1
    assert cli_mrc._threads(SimpleNamespace(threads="auto", sample=None, sample_size=None),
                            10**7) == 2  # fmt: skip
    monkeypatch.setattr(runs, "second_cpu_free", lambda: False)
    assert cli_mrc._threads(args, 10**7) == 1


def test_cli_text_says_what_more_capacity_would_give(capsys):
    from helpers import run_cli

    code, out, _ = run_cli(capsys, "mrc", "stencil7", "n=24", "--machine", "skylake-sp", "-q")
    assert code == 0
    text = " ".join(out.split())
    assert "With 2 MiB more L1 (2080 KiB instead of 32 KiB), the AI of L2" in text
    assert "FLOP/byte instead of" in text
    code, out, _ = run_cli(capsys, "mrc", "stencil7", "n=24", "--sample", "0.5", "-q")
    assert "Warning: only" in out and "distinct lines sampled" in out


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["mrc"], ["KERNEL"]),
        (["mrc", "stencil7", "--level", "L9"], ["L9"]),
        (["mrc", "stencil7", "--sample", "0"], ["sampling rate"]),
        (["mrc", "stencil7", "--sample", "0.1", "--sample-size", "100"], ["not both"]),
        (["mrc", "stencil7", "--out", "x.txt"], [".png"]),
        (["mrc", "stencil7", "--flops", "10"], ["--trace"]),
        (["mrc", "stencil7", "--sample-size", "3"], ["sample size"]),
        (["mrc", "stencil7", "--threads", "3"], ["--threads"]),
    ],
)
def test_cli_bad_input(capsys, argv, words):
    from helpers import assert_cli_bad

    assert_cli_bad(capsys, argv, *words)
