"""Set-sampled generators (hroof.traces.sampled): the kept pieces of the full trace, exactly.

The fast path writes only the accesses (pieces, for an access that straddles a line)
whose line set sampling keeps. It must equal the full trace filtered by the sampler
(``_split_lines`` then ``sample_filter``) and by a plain-Python twin, element for
element, with the same per-class counts and core counters; and the sampled results
must be the generic path's, bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest

from hroof.cachesim import HierarchyConfig, LevelConfig, simulate
from hroof.cachesim import _stream_kernels as SK
from hroof.cachesim._chunks import _split_lines, _trusted_chunk
from hroof.cachesim.sampling import simulate_plan_sampled, simulate_sampled
from hroof.machine.model import resolve_machine
from hroof.studies.runs import simulate_kernel
from hroof.traces import plan_kernel
from hroof.traces.sampled import SetFilter, _count_run, class_counts, sampled_chunks

FAST = ("stencil5", "stencil7", "stencil27", "copy", "scale", "add", "triad", "daxpy", "dot")


def twin(plan, filt, start=0, stop=None):
    """Plain Python: every access of the full trace cut at line boundaries, each piece
    counted by class and kept when its line is in the sampled residue."""
    lb, m, k, r = filt
    kept, per_class, core = [], [0] * m, [0] * 6
    for addr, size, kind in plan.chunks(997, start=start, stop=stop):
        for a, s, kd in zip(addr.tolist(), size.tolist(), kind.tolist(), strict=True):
            core[kd] += 1
            core[3 + kd] += s
            lo = a
            while lo < a + s:
                line = lo >> lb
                hi = min(a + s, (line + 1) << lb)
                per_class[line % m] += 1
                if line % k == r:
                    kept.append((lo, hi - lo, kd, (line % m) // k))
                lo = hi
    return kept, per_class, core


def sampler(plan, filt, start=0, stop=None):
    """Today's sampler on the full trace: the trusted chunk scan, the split, the filter."""
    lb, m, k, r = filt
    out = [np.empty(0, np.int64)] * 4
    per_class, core = np.zeros(m, np.int64), np.zeros(6, np.int64)
    for addr, size, kind in plan.chunks(1 << 12, start=start, stop=stop):
        addr, size, kind, straddles, c = _trusted_chunk(addr, size, kind, lb)
        core += c
        if straddles:
            addr, size, kind = _split_lines(addr, size, kind, lb)
        n = addr.shape[0]
        buf = (np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.uint8),
               np.empty(n, np.uint8))  # fmt: skip
        counts = np.zeros(4 * m, np.int64)
        j = SK.sample_filter(addr, size, kind, lb, m, k, r, counts, *buf)
        per_class += counts.reshape(4, m).sum(axis=0)
        out = [np.concatenate([o, b[:j].astype(np.int64)]) for o, b in zip(out, buf, strict=True)]
    return out, per_class, core


def fast(plan, filt, chunk, start=0, stop=None):
    chunks = sampled_chunks(plan, filt, chunk, start=start, stop=stop)
    assert chunks is not None
    out = [[np.empty(0, np.int64)] for _ in range(4)]
    per_class, core, accesses = np.zeros(filt.m, np.int64), np.zeros(6, np.int64), 0
    for a, s, kd, g, pc, c, n in chunks:
        assert a.shape[0] <= max(chunk, 2 * (plan.per_iteration + 1))
        for o, x in zip(out, (a, s, kd, g), strict=True):
            o.append(x.astype(np.int64))
        per_class += pc
        core += c
        accesses += n
    return [np.concatenate(o) for o in out], per_class, core, accesses


def random_case(rng, name=None):
    name = name or FAST[rng.integers(len(FAST))]
    p = {"align": int(rng.choice([1, 2, 4, 8, 64])), "gap": int(rng.integers(0, 70)),
         "dtype": str(rng.choice(["float64", "float32"]))}  # fmt: skip
    if name.startswith("stencil"):
        p.update(
            nx=int(rng.integers(1, 14)), ny=int(rng.integers(1, 7)), pad_row=int(rng.integers(0, 3))
        )
        if name != "stencil5":
            p.update(nz=int(rng.integers(1, 6)), pad_plane=int(rng.integers(0, 5)))
        if name == "stencil7" and rng.random() < 0.5:
            p.update(bj=int(rng.integers(0, p["ny"] + 1)), bk=int(rng.integers(0, p["nz"] + 1)))
    else:
        p.update(n=int(rng.integers(1, 400)), nt=bool(rng.random() < 0.3))
        if name == "dot":  # no stores, no nt
            del p["nt"]
    p.update(sweeps=int(rng.integers(1, 4)), warmup=int(rng.integers(0, 2)))
    plan = plan_kernel(name, **p)
    lb = int(rng.choice([4, 5, 6, 7]))
    k = int(rng.choice([2, 3, 4, 5, 8, 16]))
    m = k * int(rng.choice([1, 2, 3, 4]))
    return plan, SetFilter(lb, m, k, int(rng.integers(k))), int(rng.choice([8, 64, 1000, 1 << 20]))


@pytest.mark.parametrize("seed", range(12))
def test_kept_stream_equals_the_filtered_full_trace(seed):
    """Over random kernels, layouts (misaligned: accesses that straddle lines), line sizes,
    K, moduli (powers of two or not), residues, parts and chunk sizes: the sampled
    generator's pieces, groups, class counts and core counters are the sampler's and the
    twin's."""
    rng = np.random.default_rng(seed)
    for _ in range(6):
        plan, filt, chunk = random_case(rng)
        cut = int(rng.integers(0, plan.iterations + 1))
        for start, stop in ((0, None), (0, cut), (cut, None)):
            got, pc, core, accesses = fast(plan, filt, chunk, start, stop)
            want, wpc, wcore = sampler(plan, filt, start, stop)
            for g, w in zip(got, want, strict=True):
                np.testing.assert_array_equal(g, w)
            np.testing.assert_array_equal(pc, wpc)
            np.testing.assert_array_equal(core, wcore)
            assert accesses == core[:3].sum()
            tkept, tpc, tcore = twin(plan, filt, start, stop)
            assert list(zip(*(x.tolist() for x in got), strict=True)) == tkept
            assert pc.tolist() == tpc and core.tolist() == tcore


@pytest.mark.parametrize("seed", range(4))
def test_dot_kept_stream_equals_the_filtered_full_trace(seed):
    """dot (two load streams, no store) through the same checks, every case a dot."""
    rng = np.random.default_rng(200 + seed)
    for _ in range(4):
        plan, filt, chunk = random_case(rng, "dot")
        got, pc, core, accesses = fast(plan, filt, chunk)
        want, wpc, wcore = sampler(plan, filt)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(pc, wpc)
        np.testing.assert_array_equal(core, wcore)
        assert accesses == core[0] == plan.accesses and core[1] == core[2] == 0
        tkept, tpc, tcore = twin(plan, filt)
        assert list(zip(*(x.tolist() for x in got), strict=True)) == tkept
        assert pc.tolist() == tpc and core.tolist() == tcore


def test_hand_checked_row():
    """A triad of 16 elements (3 x 128 bytes), 64-byte lines, K = 2 residue 1, m = 4:
    x, y, z start at lines 0, 2, 4 (all even), so the kept pieces are the second line
    of each array: elements 8..15, each x, y then z."""
    plan = plan_kernel("triad", n=16)
    (a, s, kd, g), pc, core, n = fast(plan, SetFilter(6, 4, 2, 1), 1 << 10)
    x, y, z = (arr.base for arr in plan.arrays)
    want = [v + 8 * i for i in range(8, 16) for v in (x, y, z)]
    assert a.tolist() == want and set(s.tolist()) == {8} and kd.tolist() == [0, 0, 1] * 8
    # lines 1, 3, 5 of the base (a multiple of 4 lines): classes 1, 3, 1 -> groups 0, 1, 0
    assert g.tolist() == [0, 1, 0] * 8
    assert pc.tolist() == [16, 16, 8, 8] and n == 48
    assert core.tolist() == [32, 16, 0, 256, 128, 0]


def test_count_run_by_hand():
    """Pieces per class of contiguous runs: aligned, misaligned (straddling), wrapping."""
    m = 3
    pc = np.zeros(2 * m + 2, np.int64)
    _count_run(4, 8, 20, 6, m, pc)  # bytes 4..163: 20 accesses, 2 straddle: 8, 9, 5 pieces
    assert class_counts(pc, m).tolist() == [8, 9, 5]
    pc[:] = 0
    _count_run(64 * 2, 8, 8 * 5, 6, m, pc)  # lines 2..6 (classes 2 0 1 2 0), 8 pieces each
    assert class_counts(pc, m).tolist() == [16, 8, 16]
    pc[:] = 0
    _count_run(64 * 2, 8, 8 * 11, 6, m, pc)  # lines 2..12: classes 0 and 2 four times, 1 three
    assert class_counts(pc, m).tolist() == [32, 24, 32]
    pc[:] = 0
    _count_run(8, 8, 3, 6, m, pc)  # one line
    assert class_counts(pc, m).tolist() == [3, 0, 0]


def levels(spec, line=64):
    return HierarchyConfig(tuple(
        LevelConfig(f"L{i + 1}", sets * ways * line, ways, line, write_allocate=wa)
        for i, (sets, ways, wa) in enumerate(spec)))  # fmt: skip


def strip(r):
    d = r.to_dict()
    d.pop("timing")
    return d


@pytest.mark.parametrize("classify", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_results_are_the_generic_paths_bit_for_bit(classify, seed):
    """Counts, error bars, class shares and warnings: identical to the sampler fed the full
    trace, cold and steady, at every residue."""
    rng = np.random.default_rng(100 + seed)
    h = levels([(8, 2, True), (24, 2, False), (16, 4, True)])  # gcd 8
    for _ in range(3):
        plan, _, chunk = random_case(rng)
        k = int(rng.choice([2, 4, 8]))
        residue = int(rng.integers(k))
        a = simulate_plan_sampled(h, plan, k=k, residue=residue, classify=classify,
                                  chunk_size=chunk)  # fmt: skip
        cs = 1 << 12
        b = simulate_sampled(
            h, plan.chunks(cs, start=plan.warmup), k=k, residue=residue, classify=classify,
            flush=not plan.steady, flops=plan.flops, source=plan.source(),
            warmup=plan.chunks(cs, stop=plan.warmup) if plan.steady else None, generated=True,
        )  # fmt: skip
        assert strip(a) == strip(b)
        assert a.flops == plan.flops and a.accesses == plan.accesses - (
            plan.warmup * plan.accesses // plan.iterations
        )


def test_simulate_kernel_takes_the_fast_path_and_falls_back():
    """simulate_kernel samples a stencil through its sampled generator (no chunk check),
    and a kernel without one (SpMV) through the generic filter, with the same API."""
    h = resolve_machine("skylake-sp")
    plan = plan_kernel("stencil7", n=24, sweeps=2)
    r = simulate_kernel(plan, h, sample_sets=16, classify=False)
    g = simulate(h, plan.chunks(), classify=False, sample_sets=16, flops=plan.flops,
                 source=plan.source(), generated=True, trusted=True)  # fmt: skip
    assert strip(r) == strip(g)
    assert r.timing["check_s"] == 0.0 and g.timing["check_s"] > 0.0
    s = simulate_kernel("spmv", "skylake-sp", matrix="poisson3d", n=8, sample_sets=4,
                        classify=False)  # fmt: skip
    assert s.sampling["k"] == 4 and s.timing["check_s"] > 0.0
    assert plan_kernel("spmv", matrix="poisson3d", n=8).sampled is None


def test_progress_covers_every_access_and_two_threads_agree():
    """The fast path reports every access of the full trace to ``progress`` (warm-up
    included), and the pipelined levels (threads=2) give the one-thread result."""
    h = levels([(8, 2, True), (16, 2, True), (32, 4, True)])
    plan = plan_kernel("stencil7", n=12, warmup=1)
    seen = []
    one = simulate_kernel(plan, h, sample_sets=4, classify=False, progress=seen.append)
    assert sum(seen) == plan.accesses
    two = simulate_kernel(plan, h, sample_sets=4, classify=False, threads=2)
    d1, d2 = strip(one), strip(two)
    d1["options"].pop("threads")
    assert d2["options"].pop("threads") == 2
    assert d1 == d2
    # and with classification (the shadows shrunk to the sampled sets)
    one = strip(simulate_kernel(plan, h, sample_sets=4, classify=True))
    two = strip(simulate_kernel(plan, h, sample_sets=4, classify=True, threads=2))
    one["options"].pop("threads")
    assert two["options"].pop("threads") == 2
    assert one == two
