"""The classification shadow (timestamps and a lazy-deletion queue) against its naive twin.

:class:`naive.FullyAssociativeLRU` is an ``OrderedDict``; the fast shadow must
answer every touch the same and hold the same lines in the same recency order,
checked after every operation on tiny capacities that force the rare paths
(eviction past tombstones, compaction of the queue, drops of the MRU line, lines
spilling past full buckets of the table).
"""

from __future__ import annotations

import numpy as np
import pytest
from naive import FullyAssociativeLRU
from numba import njit

from hroof._base.jit import JIT
from hroof.cachesim import _shadow_kernels as S


@njit(**JIT)
def _apply(sh, lvl, ops, lines, out):
    """Run ops (0 touch allocating, 1 touch not allocating, 2 drop) through one shadow."""
    for i in range(ops.shape[0]):
        if ops[i] == 2:
            S._sh_drop(sh, lvl, lines[i])
            out[i] = -1
        else:
            out[i] = 1 if S._sh_touch(sh, lvl, lines[i], ops[i] == 0) else 0


def _run_both(caps, lvl, ops, lines):
    sh = S.new_shadow(caps)
    naive = FullyAssociativeLRU(caps[lvl])
    out = np.zeros(1, dtype=np.int64)
    for op, line in zip(ops.tolist(), lines.tolist(), strict=True):
        _apply(sh, lvl, np.array([op]), np.array([line]), out)
        if op == 2:
            naive.drop(line)
        else:
            assert bool(out[0]) == naive.touch(line, allocate=op == 0)
        assert S.check_shadow(sh, lvl) == list(naive.lines)
    return sh


def test_worked_example_of_the_docstring():
    # Capacity 2, queue of 8 (4 x 2): A B A C C A D as in the module docstring (whose
    # queue of 6 compacts earlier), then B A C.
    sh = S.new_shadow([2])
    a, b, c, d = 10, 11, 12, 13
    seq = np.array([a, b, a, c, c, a, d], dtype=np.int64)
    out = np.zeros(seq.size, dtype=np.int64)
    _apply(sh, 0, np.zeros(seq.size, dtype=np.int64), seq, out)
    assert out.tolist() == [0, 0, 1, 0, 1, 1, 0]
    assert S.check_shadow(sh, 0) == [a, d]
    assert (sh.meta[0, S.S_HEAD], sh.meta[0, S.S_TAIL], sh.meta[0, S.S_LIVE]) == (4, 6, 2)
    _apply(sh, 0, np.zeros(2, dtype=np.int64), np.array([b, a]), out)
    assert out[:2].tolist() == [0, 0]  # B evicts A, then A evicts D
    assert S.check_shadow(sh, 0) == [b, a]
    assert (sh.meta[0, S.S_HEAD], sh.meta[0, S.S_TAIL]) == (6, 8)
    # The queue is full: C compacts it to [B A], is appended, and evicts B.
    _apply(sh, 0, np.zeros(1, dtype=np.int64), np.array([c]), out)
    assert S.check_shadow(sh, 0) == [a, c]
    assert (sh.meta[0, S.S_HEAD], sh.meta[0, S.S_TAIL]) == (1, 3)


@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("cap", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("seed", range(6))
def test_random_ops_match_the_ordered_dict(cap, seed, sparse, monkeypatch):
    # sparse: the table of a small shadow (4 pairs a line); else that of a large one (2).
    if not sparse:
        monkeypatch.setattr(S, "SPARSE_CAP", 0)
    rng = np.random.default_rng(seed)
    n = 400
    ops = rng.choice(3, size=n, p=[0.7, 0.15, 0.15])
    lines = rng.integers(0, 3 * cap + 2, size=n)
    # Level 1 of three, so the offsets into the shared arrays are exercised too.
    sh = _run_both([4, cap, 3], 1, ops, lines)
    assert S.check_shadow(sh, 0) == [] and S.check_shadow(sh, 2) == []


def test_compiled_matches_step_by_step():
    rng = np.random.default_rng(7)
    n = 5000
    ops = rng.choice(3, size=n, p=[0.8, 0.1, 0.1])
    lines = rng.integers(0, 40, size=n)
    sh_steps = _run_both([16], 0, ops, lines)
    sh = S.new_shadow([16])
    out = np.zeros(n, dtype=np.int64)
    _apply(sh, 0, ops, lines, out)
    assert S.check_shadow(sh, 0) == S.check_shadow(sh_steps, 0)
    naive = FullyAssociativeLRU(16)
    expect = []
    for op, x in zip(ops.tolist(), lines.tolist(), strict=True):
        if op == 2:
            naive.drop(x)
            expect.append(-1)
        else:
            expect.append(int(naive.touch(x, op == 0)))
    assert out.tolist() == expect


@njit(**JIT)
def _apply_r(sh, lvl, ops, lines, out):
    """As :func:`_apply`, through the register form the level pass uses
    (:func:`S._sh_touch_r`), storing the meta columns back around drops and at the end."""
    m = sh.meta
    head, tail, live, mru = m[lvl, S.S_HEAD], m[lvl, S.S_TAIL], m[lvl, S.S_LIVE], m[lvl, S.S_MRU]
    tb, bits, qo = sh.toff[lvl], sh.tbits[lvl], sh.qoff[lvl]
    for i in range(ops.shape[0]):
        if ops[i] == 2:
            S._sh_store_meta(sh, lvl, head, tail, live, mru)
            S._sh_drop(sh, lvl, lines[i])
            live, mru = m[lvl, S.S_LIVE], m[lvl, S.S_MRU]
            out[i] = -1
        else:
            hit, head, tail, live, mru = S._sh_touch_r(
                sh, lvl, sh.tab, sh.queue, tb, bits, qo, sh.qcap[lvl], sh.ncap[lvl],
                head, tail, live, mru, lines[i], ops[i] == 0,
            )  # fmt: skip
            out[i] = 1 if hit else 0
    S._sh_store_meta(sh, lvl, head, tail, live, mru)


@pytest.mark.parametrize("cap", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("seed", range(4))
def test_register_form_matches_the_ordered_dict_after_every_op(cap, seed):
    rng = np.random.default_rng(50 + seed)
    n = 400
    ops = rng.choice(3, size=n, p=[0.7, 0.15, 0.15])
    lines = rng.integers(0, 3 * cap + 2, size=n)
    sh = S.new_shadow([4, cap, 3])
    fast = S.new_shadow([4, cap, 3])
    naive = FullyAssociativeLRU(cap)
    out = np.zeros(1, dtype=np.int64)
    out_ref = np.zeros(1, dtype=np.int64)
    for op, line in zip(ops.tolist(), lines.tolist(), strict=True):
        _apply_r(sh, 1, np.array([op]), np.array([line]), out)
        _apply(fast, 1, np.array([op]), np.array([line]), out_ref)
        if op == 2:
            naive.drop(line)
        else:
            assert bool(out[0]) == naive.touch(line, allocate=op == 0)
        assert out[0] == out_ref[0]
        assert S.check_shadow(sh, 1) == list(naive.lines)
        # The same state, slot for slot, as the plain form's.
        assert (sh.meta == fast.meta).all() and (sh.queue == fast.queue).all()
        assert (sh.tab == fast.tab).all()


def test_queue_floor_of_a_larger_shadow_compacts_exactly():
    # 64 lines get a 16 384-slot queue (not 256): 60 000 references compact it a few
    # times, past tombstones and drops, and the answers stay the twin's.
    cap = S.QUEUE_MIN_CAP
    sh = S.new_shadow([cap, cap - 1])
    assert sh.qcap.tolist() == [S.QUEUE_MIN, S.QUEUE_FACTOR * (cap - 1)]
    rng = np.random.default_rng(3)
    n = 60000
    ops = rng.choice(3, size=n, p=[0.85, 0.1, 0.05])
    lines = rng.integers(0, 3 * cap, size=n)
    out = np.zeros(n, dtype=np.int64)
    naive = FullyAssociativeLRU(cap)
    for lo in range(0, n, 6000):
        _apply_r(sh, 0, ops[lo : lo + 6000], lines[lo : lo + 6000], out[lo : lo + 6000])
        for op, x in zip(ops[lo : lo + 6000].tolist(), lines[lo : lo + 6000].tolist(),
                         strict=True):  # fmt: skip
            if op == 2:
                naive.drop(x)
            else:
                naive.touch(x, op == 0)
        assert S.check_shadow(sh, 0) == list(naive.lines)
    expect = []
    naive = FullyAssociativeLRU(cap)
    for op, x in zip(ops.tolist(), lines.tolist(), strict=True):
        if op == 2:
            naive.drop(x)
            expect.append(-1)
        else:
            expect.append(int(naive.touch(x, op == 0)))
    assert out.tolist() == expect


def test_table_sizes_by_capacity():
    # Up to SMALL_CAP lines, at least 8 pairs a line; up to SPARSE_CAP, 4; above, 2
    # (powers of two), and two buckets of 4 pairs at least.
    c = S.SPARSE_CAP
    sh = S.new_shadow([1, 768, S.SMALL_CAP + 1, c, c + 1])
    pairs = (1 << sh.tbits).tolist()
    # 1 line: 8 pairs (the least); 768: 6144 -> 8192; SMALL_CAP + 1: 4 x that -> 8 x
    # SMALL_CAP; c: 4c; c + 1: 2c + 2 -> 4c.
    assert pairs == [8, 8192, 8 * S.SMALL_CAP, 4 * c, 4 * c]
    assert (1 << int(S.new_shadow([2 * c]).tbits[0])) == 4 * c  # 2 pairs a line
    # Each bucket is one 64-byte line of the host's cache, whatever numpy gave.
    assert sh.tab.ctypes.data % 64 == 0
    assert sh.queue.dtype == np.uint32


def _same_home(bits, home, n):
    """``n`` lines whose home bucket is ``home`` in a table of ``2**bits`` pairs."""
    out, x = [], 0
    while len(out) < n:
        x += 1
        if int(S._hash(np.int64(x), bits - 2)) == home:
            out.append(x)
    return out


@pytest.mark.parametrize("seed", range(4))
def test_overflow_chains_past_full_buckets(seed):
    # 14 lines of the last bucket and 4 of the first, in a shadow of 12 lines (128 pairs,
    # 32 buckets): insertions spill up to three buckets on, wrapping around to bucket 0;
    # evictions and drops empty pairs in the middle of a chain, and every lookup must
    # still find or miss its line as the twin does (check_shadow recounts the overflow
    # counts after every op).
    cap = 12
    bits = int(S.new_shadow([cap]).tbits[0])
    assert bits == 7
    last = (1 << (bits - 2)) - 1
    pool = _same_home(bits, last, 14) + _same_home(bits, 0, 4)
    rng = np.random.default_rng(80 + seed)
    n = 600
    ops = rng.choice(3, size=n, p=[0.75, 0.1, 0.15])
    lines = np.array(pool)[rng.integers(0, len(pool), size=n)]
    seen = 0
    sh = S.new_shadow([cap])
    naive = FullyAssociativeLRU(cap)
    out = np.zeros(1, dtype=np.int64)
    for op, line in zip(ops.tolist(), lines.tolist(), strict=True):
        _apply(sh, 0, np.array([op]), np.array([line]), out)
        if op == 2:
            naive.drop(line)
        else:
            assert bool(out[0]) == naive.touch(line, allocate=op == 0)
        assert S.check_shadow(sh, 0) == list(naive.lines)
        seen = max(seen, int((sh.tab[7::8] >> S.V_SHIFT).max()))
    assert seen >= 2  # chains did pass two full buckets
