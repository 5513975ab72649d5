"""The kernel framework and the STREAM kernels: traces against naive loops, exact counts,
the lecture's STREAM triad numbers through the simulator, and bad parameters."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import collect_plan as collect
from naive import naive_stream

from hroof._base.errors import HroofError
from hroof.cachesim import hierarchy
from hroof.studies.runs import simulate_kernel
from hroof.traces import (
    Kernel,
    Param,
    Plan,
    get_kernel,
    kernels,
    layout,
    plan_kernel,
    unregister_kernel,
)

STREAM = {
    # name: (loads, store array, flops per element)
    "copy": (("a",), "c", 0),
    "scale": (("c",), "b", 1),
    "add": (("a", "b"), "c", 1),
    "triad": (("x", "y"), "z", 2),
    "daxpy": (("x", "y"), "y", 2),
    "dot": (("x", "y"), None, 2),
}


@pytest.mark.parametrize("name", sorted(STREAM))
@pytest.mark.parametrize(
    "params",
    [{"n": 1}, {"n": 37}, {"n": 100, "nt": True}, {"n": 50, "dtype": "float32", "gap": 24},
     {"n": 33, "align": 4096}],
)  # fmt: skip
def test_stream_trace_equals_naive_loop(name, params):
    if name == "dot":  # no store, no nt
        params = {k: v for k, v in params.items() if k != "nt"}
    plan = plan_kernel(name, **params)
    expected = naive_stream(plan)
    for chunk_size in (1, 7, 1 << 20):
        assert collect(plan, chunk_size) == expected
    n = params["n"]
    loads, store, flops = STREAM[name]
    assert plan.flops == flops * n
    assert plan.accesses == len(expected) == (len(loads) + (store is not None)) * n
    assert plan.per_iteration == len(loads) + (store is not None)
    touched = {a + b for a, s, _ in expected for b in range(s)}
    assert plan.footprint == len(touched)
    bases = [a.base for a in plan.arrays]
    assert all(b % params.get("align", 64) == 0 for b in bases)
    pairs = zip(plan.arrays, plan.arrays[1:], strict=False)
    assert all(a.end + params.get("gap", 0) <= b.base for a, b in pairs)


def test_reuse_false_gives_fresh_arrays():
    plan = plan_kernel("copy", n=10)
    chunks = list(plan.chunks(4, reuse=False))
    assert [c[0][0] for c in chunks] == [plan.arrays[0].base + 8 * i for i in (0, 2, 4, 6, 8)]


def test_lecture_stream_triad_bytes_through_the_simulator():
    """roofline-lecture: STREAM triad moves 24 bytes per iteration at L1 for 2 flops
    (AI 2/24 = 0.083), 32 bytes to memory with write-allocate, 24 with NT stores."""
    n = 8192  # 64 KiB per array, far beyond this hierarchy
    h = hierarchy({"name": "L1", "size": 1024, "ways": 4}, {"name": "L2", "size": 8192, "ways": 8})
    wa = simulate_kernel("triad", h, n=n)
    assert wa.flops == 2 * n
    assert wa.levels[0].bytes == 24 * n
    assert wa.levels[0].ai == pytest.approx(2 / 24)
    assert wa.memory.bytes == 32 * n
    assert wa.levels[0].write_allocate_fills == n * 8 // 64
    nt = simulate_kernel("triad", h, n=n, nt=True)
    assert nt.memory.bytes == 24 * n
    assert nt.memory.bytes_written == 8 * n and nt.levels[0].write_allocate_fills == 0
    assert nt.source == {"kernel": "triad", "params": nt.source["params"],
                         "accounting": {"mode": "cold", "warmup_sweeps": 0,
                                        "counted_sweeps": 1}}  # fmt: skip
    assert nt.source["params"]["nt"] is True


def test_registry_and_unknown_names():
    names = [k.name for k in kernels()]
    assert {"copy", "scale", "add", "triad", "daxpy", "dot"} <= set(names)
    with pytest.raises(HroofError, match=r"unknown kernel 'triadd'.*did you mean 'triad'"):
        get_kernel("triadd")
    with pytest.raises(
        HroofError, match=r"has no parameter 'size'.*parameters: n, nt, sweeps, warmup"
    ):
        plan_kernel("triad", size=3)


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"n": 0}, "n must be at least 1"),
        ({"n": "many"}, "n must be a whole number"),
        ({"n": 2.5}, "n must be a whole number"),
        ({"dtype": "float16"}, "dtype must be one of float64, float32"),
        ({"nt": "maybe"}, "nt must be bool"),
        ({"align": 48}, "power of two"),
        ({"gap": -8}, "gap must be at least 0"),
    ],
)
def test_bad_parameters(params, words):
    with pytest.raises(HroofError, match=words):
        plan_kernel("triad", **params)


def test_command_line_text_values_parse():
    plan = get_kernel("daxpy").bind(n="1_000", nt="true", dtype="float32")
    assert (plan.params["n"], plan.params["nt"], plan.params["dtype"]) == (1000, True, "float32")
    assert get_kernel("copy").bind(n="1e3").params["n"] == 1000


def test_user_kernel_registration():
    """A user-defined kernel through the documented API: a sum reduction."""
    from numba import njit

    from hroof.traces import register_kernel

    @njit
    def sum_gen(pos, stop, addr, size, kind, args):
        base, elem = args
        n = 0
        while pos < stop and n < addr.shape[0]:
            addr[n] = base + pos * elem
            size[n] = elem
            kind[n] = 0
            n += 1
            pos += 1
        return n, pos

    def sum_plan(p):
        (x,) = layout([("x", 8, p["n"])])
        return Plan(arrays=(x,), flops=p["n"], iterations=p["n"], per_iteration=1,
                    accesses=p["n"], footprint=x.nbytes, gen=sum_gen, args=(x.base, 8))  # fmt: skip

    k = register_kernel(Kernel("test-sum", "s += x[i]", (Param("n", 16, "elements"),), sum_plan))
    try:
        r = simulate_kernel("test-sum", hierarchy({"name": "L1", "size": 256, "ways": 2}), n=64)
        assert (r.flops, r.accesses, r.levels[0].misses) == (64, 64, 8)
        with pytest.raises(HroofError, match="registered already"):
            register_kernel(k)
    finally:
        unregister_kernel("test-sum")


def test_generated_stream_equals_written_and_read_back(tmp_path):
    """hroof trace's path: the chunks written to npz read back identical."""
    from hroof.traces import iter_trace, write_npz

    plan = plan_kernel("add", n=300)
    path = tmp_path / "add.npz"
    write_npz(path, plan.chunks(64, reuse=False))
    back = [x for c in iter_trace(path) for x in zip(*(a.tolist() for a in c), strict=True)]
    assert back == naive_stream(plan)
    assert np.array(back).shape == (900, 3)


def test_dot_counts_steady_state_and_no_nt():
    """dot: two loads an element, no store; warm-up passes counted in accesses, not flops."""
    plan = plan_kernel("dot", n=100, sweeps=3, warmup=2, dtype="float32")
    assert (plan.per_iteration, plan.accesses, plan.flops) == (2, 2 * 100 * 5, 2 * 100 * 3)
    assert plan.footprint == 2 * 4 * 100 and [a.name for a in plan.arrays] == ["x", "y"]
    assert collect(plan, 13) == naive_stream(plan)
    assert all(kind == 0 for _, _, kind in naive_stream(plan))
    with pytest.raises(HroofError, match=r"has no parameter 'nt'.*parameters: n, sweeps, warmup"):
        plan_kernel("dot", nt=True)
