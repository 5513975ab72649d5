"""One fast path: generated chunks trusted (counted, not checked) give the results of the
checked path; the timing fields; the two-thread default; set sampling on a steady plan."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from conftest import random_trace

from hroof._base.errors import HroofError
from hroof.cachesim import HierarchyConfig, LevelConfig, SimResult, Simulator, simulate
from hroof.cachesim import _stream_kernels as SK
from hroof.machine.model import resolve_machine
from hroof.studies.runs import TWO_THREADS_FROM, auto_threads, own_generator, simulate_kernel
from hroof.traces import kernels, plan_kernel

H = HierarchyConfig(
    (
        LevelConfig("L1", 1024, 2, 64),
        LevelConfig("L2", 4096, 4, 64),
        LevelConfig("L3", 16384, 4, 64),
    )
)
SMALL = {
    "add": {"n": 500}, "copy": {"n": 500}, "daxpy": {"n": 500}, "dot": {"n": 500},
    "scale": {"n": 500},
    "triad": {"n": 500, "nt": True}, "dgemv": {"n": 24}, "gemm": {"n": 10},
    "spmv": {"n": 12}, "stencil5": {"n": 20}, "stencil7": {"n": 8, "sweeps": 2, "warmup": 1},
    "stencil27": {"n": 7},
}  # fmt: skip


def counts(r: SimResult) -> dict:
    d = r.to_dict()
    d.pop("timing")
    return d


def test_every_builtin_kernel_is_covered_and_trusted():
    assert set(SMALL) >= {k.name for k in kernels()}
    assert all(own_generator(k.bind()) for k in kernels())


@pytest.mark.parametrize("name", sorted(SMALL))
@pytest.mark.parametrize("classify", [True, False])
def test_trusted_generated_chunks_equal_checked_chunks(name, classify):
    """The generated path (count only) and the checked path give identical results."""
    plan = plan_kernel(name, **SMALL[name])
    fast = simulate_kernel(plan, H, classify=classify, chunk_size=700)
    steady = plan.steady
    slow = simulate(
        H,
        [c for c in plan.chunks(700, reuse=False, start=plan.warmup)],
        warmup=plan.chunks(700, reuse=False, stop=plan.warmup) if steady else None,
        classify=classify, flush=not steady, flops=plan.flops, source=plan.source(),
    )  # fmt: skip
    assert counts(fast) == counts(slow)
    assert fast.timing["generate_s"] > 0 and fast.timing["read_s"] == 0
    assert slow.timing["read_s"] >= 0 and slow.timing["generate_s"] == 0


@pytest.mark.parametrize("k", [2, 4])
def test_trusted_sampled_equals_checked_sampled(k):
    plan = plan_kernel("stencil7", n=12, sweeps=2, warmup=1)
    fast = simulate_kernel(plan, H, classify=False, sample_sets=k, chunk_size=500)
    assert fast.sampling is not None and fast.sampling["k"] == k  # steady plans sample too
    slow = simulate(
        H, list(plan.chunks(500, reuse=False, start=plan.warmup)),
        warmup=list(plan.chunks(500, reuse=False, stop=plan.warmup)), classify=False,
        flush=False, flops=plan.flops, source=plan.source(), sample_sets=k,
    )  # fmt: skip
    assert counts(fast) == counts(slow)


def test_trusted_chunks_that_straddle_lines_are_split():
    """A kernel whose elements straddle lines (align 4, gap 4) gives the checked path's result."""
    plan = plan_kernel("triad", n=300, align=4, gap=4)
    chunks = list(plan.chunks(256, reuse=False))
    assert any(((a >> 6) != ((a + s - 1) >> 6)).any() for a, s, _ in chunks)
    results = []
    for trusted in (True, False):
        sim = Simulator(H, classify=True)
        for c in chunks:
            sim.feed(*c, trusted=trusted)
        results.append(counts(sim.finish()))
    assert results[0] == results[1]


def test_trusted_chunk_still_rejects_addresses_out_of_range():
    sim = Simulator(H, classify=False)
    addr = np.array([0, 1 << 62], np.int64)
    with pytest.raises(HroofError, match="not below 2"):
        sim.feed(addr, np.full(2, 8, np.int64), np.zeros(2, np.uint8), trusted=True)


def test_trusted_chunk_counts_as_the_checked_chunk():
    from hroof.cachesim._chunks import _as_chunk, _trusted_chunk

    rng = np.random.default_rng(5)
    addr, size, kind = random_trace(rng, 3000, lines=200, p=(0.5, 0.3, 0.2))
    addr, size, kind = addr.astype(np.int64), size.astype(np.int64), kind.astype(np.uint8)
    checked = _as_chunk(addr, size, kind, 6)
    trusted = _trusted_chunk(addr, size, kind, 6)
    assert checked[3] == trusted[3] and tuple(checked[4]) == tuple(trusted[4])
    core = tuple(trusted[4])
    # the core counters by hand
    assert core[:3] == tuple(int((kind == j).sum()) for j in range(3))
    assert core[3:] == tuple(int(size[kind == j].sum()) for j in range(3))


def test_timing_fields_and_old_results_load():
    r = simulate_kernel("triad", H, n=2000, classify=False)
    t = r.to_dict()["timing"]
    assert set(t) == {"trace_s", "read_s", "generate_s", "check_s", "simulate_s"}
    assert 0 <= t["check_s"] <= t["simulate_s"]
    assert t["trace_s"] == t["generate_s"] and t["read_s"] == 0.0
    assert r.to_dict()["options"]["threads"] == 1
    old = r.to_dict()
    old["timing"] = {"trace_s": 0.5, "simulate_s": 1.5}
    old["options"] = {"classify": False, "flush": True}
    back = SimResult.from_dict(old)
    assert back.threads == 1 and back.timing["simulate_s"] == 1.5
    assert counts(back)["levels"] == counts(r)["levels"]


def test_auto_threads(monkeypatch):
    import os

    big = TWO_THREADS_FROM
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(os, "getloadavg", lambda: (1.6, 1.0, 1.0))
    assert auto_threads(big, H) == 1  # the second CPU is busy
    monkeypatch.setattr(os, "getloadavg", lambda: (0.3, 1.0, 1.0))
    assert auto_threads(big, H) == 2
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    assert auto_threads(big, H) == 1
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    assert auto_threads(big - 1, H) == 1
    one_level = HierarchyConfig((LevelConfig("L1", 1024, 2, 64),))
    assert auto_threads(big, one_level) == 1
    assert auto_threads(big, H.with_inclusion("exclusive")) == 1  # L1 gets L2's dirt
    assert auto_threads(big, H.with_inclusion("inclusive")) == 1  # L3 evicts L1's copies
    l3_exclusive = HierarchyConfig((*H.levels[:2], replace(H.levels[2], inclusion="exclusive")))
    assert auto_threads(big, l3_exclusive) == 2  # L1 a plain pass on the policy path
    assert auto_threads(big, resolve_machine("skylake-sp")) == 2  # the default machine
    l2_stride = HierarchyConfig((H.levels[0], replace(H.levels[1], prefetch="stride"), H.levels[2]))
    assert auto_threads(big, l2_stride) == 2
    l1_stride = HierarchyConfig((replace(H.levels[0], prefetch="stride"), *H.levels[1:]))
    assert auto_threads(big, l1_stride) == 1


def test_two_threads_same_counts_and_said():
    plan = plan_kernel("stencil7", n=16)
    one = simulate_kernel(plan, H, classify=False, threads=1, chunk_size=1000)
    two = simulate_kernel(plan, H, classify=False, threads=2, chunk_size=1000)
    assert two.threads == 2 and one.threads == 1
    a, b = counts(one), counts(two)
    a.pop("options"), b.pop("options")
    assert a == b


def test_cli_help_names_the_threshold(capsys):
    from hroof.cli.app import main

    assert main(["simulate", "--help"]) == 0
    assert f"{TWO_THREADS_FROM:,}" in " ".join(capsys.readouterr().out.split())


def naive_filter(addr, size, kind, line_bits, m, k, residue):
    """Plain-Python twin of ``sample_filter``: kept accesses, their groups, lines per class."""
    per_class = [0] * m
    kept = []
    for a, s, kd in zip(addr.tolist(), size.tolist(), kind.tolist(), strict=True):
        key = (a >> line_bits) % m
        per_class[key] += 1
        if key % k == residue:
            kept.append((a, s, kd, key // k))
    return kept, per_class


@pytest.mark.parametrize(("m", "k", "residue"), [(8, 2, 1), (64, 16, 5), (12, 4, 3), (6, 3, 0)])
def test_sample_filter_matches_naive(m, k, residue):
    rng = np.random.default_rng(m * k + residue)
    addr, size, kind = random_trace(rng, 2001, lines=150, max_size=8)
    addr = addr.astype(np.int64)
    n = addr.size
    out = (
        np.empty(n, np.int64),
        np.empty(n, np.int64),
        np.empty(n, np.uint8),
        np.empty(n, np.uint8),
    )
    counts = np.zeros(4 * m, np.int64)
    kept = SK.sample_filter(addr, size, kind, 6, m, k, residue, counts, *out)
    want, per_class = naive_filter(addr, size, kind, 6, m, k, residue)
    got = list(zip(*(x[:kept].tolist() for x in out), strict=True))
    assert got == want
    assert counts.reshape(4, m).sum(axis=0).tolist() == per_class


DIN_EDGE = [b"0 0x10\r", b"1\t0XfF 4\x0b", b"\x0c2 10 8", b"0 0x", b"0 x10", b"0 " + b"f" * 17,
            b"0 10 0", b"0 10 4294967296", b"3 10", b"0", b"   ", b"", b"0 10 8 8"]  # fmt: skip
LACKEY_EDGE = [b" L 10,8\r", b" M 0x20,4", b"I  400,2", b" S\t10,8", b" L 10 ,8",
               b" L 10,,8", b" Lx 10,8", b" L 10,8 x", b"==1== text", b" X 10,8", b"I", b" L",
               b" L 10,"]  # fmt: skip


@pytest.mark.parametrize("fmt", ["din", "lackey"])
@pytest.mark.parametrize("index", range(13))
def test_text_block_parser_edge_lines(tmp_path, fmt, index):
    """Each edge line, between good lines: the Numba block parser agrees with the line
    parser (the same accesses, or an error naming the same line)."""
    from hroof.traces import iter_trace, textfmt

    edge = (DIN_EDGE if fmt == "din" else LACKEY_EDGE)[index]
    good = b"0 40 8" if fmt == "din" else b" S 40,8"
    lines = [good, edge, good]
    path = tmp_path / f"t.{fmt}"
    path.write_bytes(b"\n".join(lines) + b"\n")
    parse = textfmt._parse_din_line if fmt == "din" else textfmt._parse_lackey_line
    want = []
    bad = None
    for no, line in enumerate(lines, 1):
        try:
            got = parse(line)
        except textfmt._BadLine:
            bad = no
            break
        want += [] if got is None else [got] if isinstance(got, tuple) else got
    if bad is not None:
        with pytest.raises(HroofError, match=rf":{bad}: "):
            list(iter_trace(path, fmt))
        return
    chunks = list(iter_trace(path, fmt))
    got = [(int(k), int(a), int(s)) for c in chunks for a, s, k in zip(*c, strict=True)]
    assert got == want


def test_cli_text_trace_without_classification_runs(tmp_path, capsys):
    """A text trace's count is unknown before reading: --threads auto picks one thread."""
    from hroof.cli.app import main

    path = tmp_path / "t.din"
    path.write_text("".join(f"0 {64 * i:x} 8\n" for i in range(100)))
    assert main(["simulate", "--trace", str(path), "--no-classify", "-q"]) == 0
    assert "two threads" not in capsys.readouterr().out
    assert auto_threads(None, H) == 1
