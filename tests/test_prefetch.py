"""Hardware prefetchers (docs/cache-model.md, "Prefetchers"): hand cases on the fast simulator
and the naive twin, random-trace equality for every prefetcher x inclusion policy, the
counters' invariants, the schema, and what refuses them."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import assert_cli_bad, assert_same, lvl, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st
from naive import POLICIES, PREFETCHERS
from naive import simulate as naive_simulate

from hroof.cachesim import HierarchyConfig, LevelConfig, SimResult, Simulator, hierarchy
from hroof.cachesim.result import PREFETCH_KEYS

#: The prefetch fields both models report (``ai_demand`` needs flops: the fast one only).
PF_KEYS = tuple(k for k in PREFETCH_KEYS if k != "ai_demand")


def fast_and_naive(levels, addr, size, kind, *, classify=True, flush=True, chunks=1):
    sim = Simulator(hierarchy(*levels), classify=classify)
    for part in np.array_split(np.arange(len(addr)), chunks):
        sim.feed(addr[part], size[part], kind[part])
    sim.check_invariants()
    fast = sim.finish(flush=flush).to_dict()
    trace = list(zip(addr.tolist(), size.tolist(), kind.tolist(), strict=True))
    naive = naive_simulate(levels, trace, classify=classify, flush=flush, check=True)
    return fast, naive


def assert_same_prefetch(fast, naive):
    assert_same(fast, naive)
    for f, n in zip(fast["levels"], naive["levels"], strict=True):
        for key in (*PF_KEYS, "inclusion", "victims", "victims_in", "back_invalidations"):
            if key in n:
                assert f[key] == n[key], f"{f['name']} {key}: fast {f[key]} != naive {n[key]}"
    assert fast["memory"]["prefetch_bytes_read"] == naive["levels"][-1].get(
        "prefetch_bytes_below", 0
    )


def loads(lines, line=64):
    addr = np.array([x * line for x in lines], dtype=np.int64)
    return addr, np.full(len(lines), 8, dtype=np.int64), np.zeros(len(lines), dtype=np.uint8)


def both(levels, lines):
    fast, naive = fast_and_naive(levels, *loads(lines), flush=False)
    assert_same_prefetch(fast, naive)
    return fast


# ----------------------------------------------------------------------------- hand cases
def test_next_line_hand_case():
    """L1 1 set x 4 ways with next-line, L2 1 set x 8 ways; loads of lines 0 1 2 5 63 100.

    0: L1 and L2 miss; the miss triggers line 1 (issued 1, filled 1; a prefetch
       lookup misses at L2, which fills it): L1 = [1*, 0] (* = prefetched).
    1: hit on a prefetched line: useful 1, and it triggers line 2: L1 = [2*, 1, 0].
    2: the same: useful 2, line 3 fetched: L1 = [3*, 2, 1, 0].
    5: miss; 5 evicts 0, then its prefetch of 6 evicts 1: L1 = [6*, 5, 3*, 2].
    63: miss; 64 is in the next 4 KiB page (64 lines a page): nothing issued;
       63 evicts 2: L1 = [63, 6*, 5, 3*].
    100: miss; evicts 3*, never used (useless 1); 101 evicts 5: L1 = [101*, 100, 63, 6*].
    So L1: 6 lookups, 2 hits, 4 misses; 5 issued, 5 filled, 2 useful, 1 useless, 2 unused
    at the end. L2: 4 demand lookups and misses, 5 prefetch lookups and misses. Memory
    reads (4 + 5) lines, 5 of them for prefetches.
    """
    levels = [lvl("L1", 1, 4) | {"prefetch": "next-line"}, lvl("L2", 1, 8)]
    f = both(levels, [0, 1, 2, 5, 63, 100])
    l1, l2 = f["levels"]
    assert (l1["lookups"], l1["hits"], l1["misses"]) == (6, 2, 4)
    assert (l1["prefetches_issued"], l1["prefetches_filled"]) == (5, 5)
    assert (l1["prefetches_useful"], l1["prefetches_useless"]) == (2, 1)
    assert l1["prefetches_unused_at_end"] == 2
    assert (l2["lookups"], l2["misses"], l2["prefetch_lookups"], l2["prefetch_misses"]) == (
        4, 4, 5, 5,
    )  # fmt: skip
    assert l1["prefetch_bytes_below"] == 5 * 64 == l2["prefetch_bytes"]
    assert f["memory"]["bytes_read"] == 9 * 64 and f["memory"]["prefetch_bytes_read"] == 5 * 64
    assert l1["traffic_below"]["prefetch"] == 5 * 64
    assert sum(l1["traffic_below"].values()) == l2["bytes"] == 9 * 64


def test_adjacent_line_hand_case():
    """L1 1 set x 2 ways, L2 1 set x 4 ways with the adjacent-line prefetcher; loads 0 1 3 4 6.

    0: misses both; L2's miss requests the other line of the pair {0, 1}: L2 = [1*, 0].
    1: L1 miss, L2 hit on the prefetched line: useful 1 (a hit triggers nothing).
    3: misses both; the pair's 2 is fetched: L2 = [2*, 3, 1, 0].
    4: misses; 4 evicts 0 and its partner 5 evicts 1: L2 = [5*, 4, 2*, 3].
    6: misses; 6 evicts 3, 7 evicts 2* unused (useless 1): L2 = [7*, 6, 5*, 4].
    L2: 5 lookups, 1 hit, 4 misses; 4 issued and filled, 1 useful, 1 useless, 2 unused.
    """
    levels = [lvl("L1", 1, 2), lvl("L2", 1, 4) | {"prefetch": "adjacent"}]
    f = both(levels, [0, 1, 3, 4, 6])
    l1, l2 = f["levels"]
    assert (l1["misses"], l1["prefetches_issued"]) == (5, 0)
    assert (l2["lookups"], l2["hits"], l2["misses"]) == (5, 1, 4)
    assert (l2["prefetches_issued"], l2["prefetches_filled"]) == (4, 4)
    assert (l2["prefetches_useful"], l2["prefetches_useless"]) == (1, 1)
    assert l2["prefetches_unused_at_end"] == 2
    assert f["memory"]["bytes_read"] == 8 * 64 and l2["bytes"] == 5 * 64


def test_stride_hand_case():
    """One level, 1 set x 8 ways, stride prefetcher of 2 streams at distance 2.

    0 2 4 6 8 10 in page 0: 0 opens a stream, 2 sets stride 2, 4 confirms it and
    requests 4 + 2*2 = 8; 6 requests 10; 8 and 10 hit prefetched lines (useful 2)
    and request 12 and 14. 64 (page 1) and 128 (page 2) open streams; the second
    replaces page 0's (2 streams, LRU). 12 and 14 hit prefetched lines (useful 4);
    12 opens page 0 again (no request), 14 sets stride 2 (unconfirmed); 16 confirms
    it and requests 20. 11 lookups, 4 hits, 7 misses; 5 issued and filled, 4 useful,
    none useless, 1 (20) unused.
    """
    levels = [lvl("L1", 1, 8) | {"prefetch": "stride", "prefetch_streams": 2,
                                  "prefetch_distance": 2}]  # fmt: skip
    f = both(levels, [0, 2, 4, 6, 8, 10, 64, 128, 12, 14, 16])
    (l1,) = f["levels"]
    assert (l1["lookups"], l1["hits"], l1["misses"]) == (11, 4, 7)
    assert (l1["prefetches_issued"], l1["prefetches_filled"], l1["prefetches_useful"]) == (5, 5, 4)
    assert (l1["prefetches_useless"], l1["prefetches_unused_at_end"]) == (0, 1)
    assert f["memory"]["bytes_read"] == 12 * 64


def test_stride_never_crosses_a_page():
    """Lines 60 61 62 63: stride 1 confirmed at 62 (requests 63), at 63 the target 64 is in
    the next page: not issued."""
    levels = [lvl("L1", 1, 8) | {"prefetch": "stride"}]
    (l1,) = both(levels, [60, 61, 62, 63])["levels"]
    assert (l1["prefetches_issued"], l1["prefetches_useful"], l1["hits"]) == (1, 1, 1)


def test_prefetch_into_an_exclusive_level_and_from_below_one():
    """L2 exclusive with next-line: the prefetched line is inserted at L2 itself; a demand hit
    moves it up (useful). Line 0: L1, L2 miss; L2 requests 1 (filled at L2 only).
    Line 1: L1 misses, L2 hits the prefetched line: useful, moved up, and the prefetched
    hit requests 2."""
    levels = [
        lvl("L1", 1, 2),
        lvl("L2", 1, 4) | {"inclusion": "exclusive", "prefetch": "next-line"},
    ]
    l1, l2 = both(levels, [0, 1])["levels"]
    assert l1["misses"] == 2 and l1["prefetches_issued"] == 0
    assert (l2["hits"], l2["prefetches_issued"], l2["prefetches_useful"]) == (1, 2, 1)
    assert l2["prefetches_unused_at_end"] == 1


# ----------------------------------------------------------------------------- random equality
def strided_trace(rng, n, *, pages=3, line=64):
    """Loads, stores and a few NT stores: 60 % continue one of three strided streams (strides
    -1, 1, 2, 3 lines, wrapping within ``pages`` 4 KiB pages), the rest random lines."""
    nlines = pages * 4096 // line
    pos = rng.integers(0, nlines, size=3)
    stride = rng.choice([-1, 1, 2, 3], size=3)
    lines = np.empty(n, dtype=np.int64)
    for i in range(n):
        if rng.random() < 0.6:
            s = rng.integers(0, 3)
            pos[s] = (pos[s] + stride[s]) % nlines
            lines[i] = pos[s]
        else:
            lines[i] = rng.integers(0, nlines)
    addr = lines * line + rng.integers(0, line - 8, size=n)
    size = rng.choice([1, 4, 8, 16], size=n).astype(np.int64)
    kind = rng.choice(np.array([0, 1, 2], dtype=np.uint8), size=n, p=(0.6, 0.37, 0.03))
    return addr, size, kind


PREFETCHING = [p for p in PREFETCHERS if p != "none"]


@pytest.mark.parametrize("pf", PREFETCHING)
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("where", ["L1", "L2", "L3"])
def test_fast_equals_naive_every_combination(pf, policy, where):
    """Every prefetcher at L1, L2 or L3, with L2 and L3 of every policy (L2 = policy, L3 the
    next one round): every counter of every level equal, classification on and off."""
    i = PREFETCHERS.index(pf) * 12 + POLICIES.index(policy) * 3 + int(where[1])
    rng = np.random.default_rng(i)
    p3 = POLICIES[(POLICIES.index(policy) + 1) % len(POLICIES)]
    levels = [
        lvl("L1", 2, 2),
        lvl("L2", 2, 3, 64, i % 4 != 0) | {"inclusion": policy},
        lvl("L3", 4, 4) | {"inclusion": p3},
    ]
    k = int(where[1]) - 1
    levels[k] = levels[k] | {"prefetch": pf, "prefetch_streams": 3, "prefetch_distance": 1 + i % 3}
    if pf != "stride":
        levels[k] = {key: v for key, v in levels[k].items() if not key.startswith("prefetch_")}
    addr, size, kind = strided_trace(rng, 700)
    for classify, flush, chunks in ((True, True, 3), (False, False, 1)):
        fast, naive = fast_and_naive(
            levels, addr, size, kind, classify=classify, flush=flush, chunks=chunks
        )
        assert_same_prefetch(fast, naive)
        lv = fast["levels"][k]
        assert lv["prefetches_issued"] > 0
        assert lv["prefetches_filled"] == (
            lv["prefetches_useful"] + lv["prefetches_useless"] + lv["prefetches_unused_at_end"]
        )


@settings(max_examples=40, deadline=None)
@given(
    pfs=st.lists(st.sampled_from(PREFETCHERS), min_size=3, max_size=3),
    pols=st.lists(st.sampled_from(POLICIES), min_size=2, max_size=2),
    seed=st.integers(0, 2**16),
    classify=st.booleans(),
)
def test_fast_equals_naive_hypothesis(pfs, pols, seed, classify):
    """Prefetchers at any levels at once, any policies, random strided traces."""
    rng = np.random.default_rng(seed)
    levels = [lvl("L1", 1, 2), lvl("L2", 2, 2) | {"inclusion": pols[0]},
              lvl("L3", 2, 4) | {"inclusion": pols[1]}]  # fmt: skip
    for lv, pf in zip(levels, pfs, strict=True):
        lv["prefetch"] = pf
        if pf == "stride":
            lv["prefetch_streams"] = 2
    addr, size, kind = strided_trace(rng, 300, pages=2)
    fast, naive = fast_and_naive(levels, addr, size, kind, classify=classify, chunks=2)
    assert_same_prefetch(fast, naive)


# ----------------------------------------------------------------------------- schema, refusals
def test_no_prefetcher_reports_zeros_and_old_results_load():
    h = hierarchy(lvl("L1", 1, 2), lvl("L2", 1, 2))
    sim = Simulator(h)
    sim.feed(*loads([0, 1, 2, 0]))
    d = sim.finish(flops=10).to_dict()
    assert all(lv["prefetch"] == "none" for lv in d["levels"])
    assert all(lv[k] == 0 for lv in d["levels"] for k in PF_KEYS[1:])
    assert "prefetch" not in d["levels"][0]["traffic_below"]
    assert all(lv["ai_demand"] == lv["ai"] for lv in d["levels"])
    old = json.loads(json.dumps(d))
    for lv in old["levels"]:
        for k in PREFETCH_KEYS:
            del lv[k]
    del old["memory"]["prefetch_bytes_read"]
    r = SimResult.from_dict(old)
    assert r.levels[0].prefetch == "none" and r.memory.prefetch_bytes_read == 0


def test_ai_with_and_without_prefetch():
    h = hierarchy(lvl("L1", 1, 4) | {"prefetch": "next-line"}, lvl("L2", 1, 8))
    sim = Simulator(h)
    sim.feed(*loads([0, 1, 2, 5]))
    r = sim.finish(flops=1000)
    l2 = r.levels[1]
    assert l2.bytes == (2 + 4) * 64 and l2.prefetch_bytes == 4 * 64
    assert l2.ai == 1000 / l2.bytes and l2.ai_demand == 1000 / (2 * 64)
    assert SimResult.from_dict(r.to_dict()).to_dict() == r.to_dict()


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"prefetch": "nextline"}, ("prefetch must be one of", "next-line")),
        ({"prefetch": "adjacent", "line": 128, "size": 1024}, ("adjacent", "under 128")),
        ({"prefetch": "stride", "prefetch_streams": 0}, ("prefetch_streams",)),
        ({"prefetch": "stride", "prefetch_distance": -1}, ("prefetch_distance",)),
    ],
)
def test_bad_prefetch_config(kwargs, words):
    from hroof._base.errors import ConfigError

    with pytest.raises(ConfigError) as exc:
        LevelConfig(**({"name": "L2", "size": 512, "ways": 2} | kwargs))
    for w in words:
        assert w in str(exc.value)


def test_machine_file_prefetch_keys(tmp_path):
    from hroof._base.errors import ConfigError
    from hroof.cachesim import load_hierarchy

    base = '[[level]]\nname = "L1"\nsize = 512\nways = 2\n'
    path = tmp_path / "m.toml"
    path.write_text(base + 'prefetch = "stride"\nprefetch_streams = 4\nprefetch_distance = 3\n')
    lv = load_hierarchy(path).levels[0]
    assert (lv.prefetch, lv.prefetch_streams, lv.prefetch_distance) == ("stride", 4, 3)
    path.write_text(base + 'prefetch = "next-line"\nprefetch_distance = 3\n')
    with pytest.raises(ConfigError, match="stride"):
        load_hierarchy(path)


def test_model_nine_switches_prefetchers_off():
    h = HierarchyConfig(
        (LevelConfig("L1", 512, 2, prefetch="next-line"), LevelConfig("L2", 1024, 2))
    )
    assert not h.plain and h.prefetching
    off = h.with_inclusion("nine").without_prefetch()
    assert off.plain and not off.prefetching


def test_set_sampling_refused_with_a_prefetcher():
    from hroof._base.errors import HroofError
    from hroof.cachesim import simulate_arrays

    h = hierarchy(lvl("L1", 4, 2) | {"prefetch": "next-line"}, lvl("L2", 8, 2))
    with pytest.raises(HroofError, match="prefetch neighbouring lines"):
        simulate_arrays(h, *loads([0, 1]), sample_sets=2)


def test_cli_machine_show_and_model_nine(tmp_path, capsys):
    path = tmp_path / "pf.toml"
    path.write_text(
        '[machine]\nname = "pf"\n[[level]]\nname = "L1"\nsize = "4 KiB"\nways = 4\n'
        '[[level]]\nname = "L2"\nsize = "32 KiB"\nways = 8\nprefetch = "adjacent"\n'
    )
    code, out, _ = run_cli(capsys, "machine", "show", path)
    assert code == 0 and "adjacent" in out and "prefetch" in out
    argv = ["simulate", "triad", "n=2000", "--machine", path, "--json"]
    code, out, _ = run_cli(capsys, *argv)
    assert code == 0 and json.loads(out)["levels"][1]["prefetches_issued"] > 0
    code, out, _ = run_cli(capsys, *argv, "--model", "nine")
    assert code == 0 and json.loads(out)["levels"][1]["prefetches_issued"] == 0
    assert_cli_bad(capsys, [*argv, "--sample-sets", "1/2"], "prefetch")


def test_cores_and_curves_refuse_a_prefetcher_they_would_not_model():
    """A miss-ratio curve taps the NINE stream: a prefetcher above the tapped level is
    refused, by name. Several cores run prefetchers (since issue 17)."""
    from hroof._base.errors import HroofError
    from hroof.cachesim.mrc import miss_ratio_curve
    from hroof.cachesim.multicore import MultiSimulator

    h = HierarchyConfig(
        (LevelConfig("L1", 512, 2, prefetch="next-line"), LevelConfig("L2", 1024, 2))
    )
    assert MultiSimulator(h, 2).cores == 2  # several cores model prefetchers (test_multicore)
    addr = np.arange(0, 4096, 64, dtype=np.int64)
    chunk = (addr, np.full(addr.shape, 8, dtype=np.int64), np.zeros(addr.shape, np.uint8))
    with pytest.raises(HroofError, match="prefetcher"):
        miss_ratio_curve([chunk], hierarchy=h, level="L2")
    off = h.with_inclusion("nine").without_prefetch()
    assert miss_ratio_curve([chunk], hierarchy=off, level="L2").lookups > 0


def test_insert_is_touch_of_an_absent_line():
    """``insert`` (no compares, for a line the set lacks) leaves the set and returns the
    victim exactly as ``touch`` does, prefetched bits, dirty bits and empty slots kept."""
    from hroof.cachesim._prefetch_kernels import PF_BIT, insert, touch

    rng = np.random.default_rng(17)
    for ways in (1, 2, 3, 16):
        for _ in range(40):
            lines = rng.choice(1 << 40, size=ways + 1, replace=False).astype(np.int64)
            tags = (lines[:ways] << 1) | rng.integers(0, 2, ways)
            tags[rng.random(ways) < 0.3] |= PF_BIT
            tags[ways - rng.integers(0, ways + 1) :] = -1  # empty slots at the LRU end
            a = np.concatenate(([7, 7], tags, [9])).astype(np.int64)  # the set at base 2
            b = a.copy()
            dirty = int(rng.integers(0, 2))
            assert insert(a, 2, ways, lines[ways], dirty) == touch(b, 2, ways, lines[ways], dirty)
            assert a.tolist() == b.tolist()


@pytest.mark.parametrize("where", ["L1", "L2"])
def test_stride_pages_sharing_a_row_hint(where):
    """Three pages whose rows share one hint slot (``_prefetch_kernels.stride_row``), their
    strided streams interleaved: each lookup finds its row by the scan the hint stands in
    for (the slot holds another page's row), so every stream confirms and prefetches as in
    the naive twin. At L1 (access by access) and at L2 below a plain L1 (the split kernel,
    whose read-ahead guesses from the hinted row only)."""
    from hroof.cachesim._prefetch_kernels import HINT_BITS
    from hroof.cachesim._shadow_kernels import _hash

    slot: dict[int, list[int]] = {}
    page = 0
    while not any(len(v) == 3 for v in slot.values()):
        page += 1
        slot.setdefault(int(_hash(np.int64(page), HINT_BITS)), []).append(page)
    pages = slot[int(_hash(np.int64(page), HINT_BITS))]
    lines = [p * 64 + 2 * k for k in range(12) for p in pages]  # stride 2 lines, in each page
    stride = {"prefetch": "stride", "prefetch_streams": 4, "prefetch_distance": 2}
    if where == "L1":
        levels = [lvl("L1", 4, 8) | stride, lvl("L2", 8, 8)]
    else:
        levels = [lvl("L1", 1, 1), lvl("L2", 8, 8) | stride]
    f = both(levels, lines)
    pl = f["levels"][int(where[1]) - 1]
    # Per page: lookups 3 .. 12 request (10 each); every one lands in the page.
    assert pl["prefetches_issued"] == 30
