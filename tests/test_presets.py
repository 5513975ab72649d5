"""The presets' inclusion policies, their citations, and the layer conditions that use them.

What each bundled machine's levels do towards the levels above them is written
in the machine file with where it is documented (``inclusion_source``);
``hroof machine show`` prints both. The layer-condition predictions read the
capacity each policy keeps (:func:`hroof.roofline.layers.effective_capacity`),
checked here by hand and against the simulator on a small hierarchy.
"""

from __future__ import annotations

import json

import pytest
from helpers import assert_cli_bad
from helpers import run_cli as run

from hroof.cachesim import hierarchy
from hroof.machine.catalog import bundled_machines
from hroof.roofline import load_machine
from hroof.roofline.layers import effective_capacity, stencil_layer_conditions, stencil_walls

MiB = 2**20

#: Per preset: the policy of every level, and a word its L3 citation must contain
#: (None: no citation, the level stays NINE).
DOCUMENTED = {
    "skylake-sp": (("nine", "nine", "exclusive"), "000027820"),
    "haswell": (("nine", "nine", "inclusive"), "000027820"),
    "i7-950": (("nine", "nine", "inclusive"), "SDM Vol. 3A"),
    "zen4": (("nine", "nine", "nine"), None),
}


@pytest.mark.parametrize("name", sorted(DOCUMENTED))
def test_presets_say_what_their_caches_do(name):
    policies, cite = DOCUMENTED[name]
    m = load_machine(name)
    assert tuple(lv.inclusion for lv in m.hierarchy.levels) == policies
    assert m.inclusion_sources[:2] == (None, None)
    if cite is None:
        assert m.inclusion_sources[2] is None
        assert "no citable AMD source" in bundled_machines()[name].read_text()
    else:
        assert cite in m.inclusion_sources[2]


@pytest.mark.parametrize("name", sorted(bundled_machines()))
def test_every_policy_other_than_nine_is_cited(name):
    """A preset may only leave the default where it says where the policy is documented."""
    m = load_machine(name)
    for lv, src in zip(m.hierarchy.levels, m.inclusion_sources, strict=True):
        assert (lv.inclusion != "nine") == (src is not None), (name, lv.name)


def test_machine_show_prints_each_policy_and_its_source(capsys):
    code, out, err = run(capsys, "machine", "show", "skylake-sp")
    assert code == 0 and err == ""
    rows = {ln.split()[0]: ln.split() for ln in out.splitlines() if ln[:2] in ("L1", "L2", "L3")}
    assert [rows[n][9] for n in ("L1", "L2", "L3")] == ["nine", "nine", "exclusive"]
    notes = " ".join(out.split("Inclusion policies, where documented")[1].split())
    assert "L3 exclusive: Intel support article 000027820" in notes
    assert "Cornell Virtual Workshop" in notes
    code, out, _ = run(capsys, "machine", "show", "zen4")
    assert code == 0 and "where documented" not in out  # nothing cited, nothing claimed


def test_inclusion_source_must_be_text(tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text('[machine]\nname = "bad"\n[[level]]\nsize = "1 KiB"\nways = 2\n'
                    'inclusion_source = 3\n')  # fmt: skip
    assert_cli_bad(capsys, ["machine", "show", path], "inclusion_source", "non-empty text")


# --------------------------------------------------------------------------- capacities
def three(l3: str, l2: str = "nine"):
    return hierarchy(
        {"name": "L1", "size": "32 KiB", "ways": 8},
        {"name": "L2", "size": "1 MiB", "ways": 16, "inclusion": l2},
        {"name": "L3", "size": "27.5 MiB", "ways": 11, "inclusion": l3},
    )


def l3_3d(h):
    """The predicted wall of L3's 3D layer condition (cubic stencil7, safety 1)."""
    return next(w for w in stencil_walls({}, h) if (w.level, w.condition) == ("L3", "3D"))


def test_exclusive_shared_level_with_several_cores():
    """P cores with private L2s and a shared exclusive L3: each core's layers fit in its own
    L2 plus 1/P of the L3 (not (L2 + L3) / P), and the whole working set in P L2s plus the
    L3. NINE levels keep the old rule (the shared L3 divided by P)."""
    from dataclasses import replace

    h = three("exclusive")
    h = replace(h, levels=(*h.levels[:2], replace(h.levels[2], shared=True)))
    for cores in (1, 2, 4):
        walls = {(w.level, w.condition): w for w in stencil_walls({}, h, steady=True, cores=cores)}
        per_core = 1 * MiB + 27.5 * MiB / cores
        assert walls["L3", "3D"].n == stencil_walls(
            {}, hierarchy({"name": "L1", "size": int(per_core), "ways": 1}))[0].n  # fmt: skip
        whole = walls["L3", "whole"]
        assert whole.n**3 * 16 <= cores * MiB + 27.5 * MiB < (whole.n + 1) ** 3 * 16 * 1.05
        if cores > 1:
            assert f"each of {cores} cores: L2 + L3/{cores}" in walls["L3", "3D"].explanation
            assert f"{cores} x L2 + L3" in whole.explanation
    nine = replace(h, levels=(*h.levels[:2], replace(h.levels[2], inclusion="nine")))
    three_d = {c: next(w.n for w in stencil_walls({}, nine, cores=c) if w.level == "L3")
               for c in (1, 4)}  # fmt: skip
    l1_only = hierarchy({"name": "L1", "size": int(27.5 * MiB / 4), "ways": 1})
    assert three_d[4] == stencil_walls({}, l1_only)[0].n < three_d[1]


def test_effective_capacity_by_hand():
    """NINE and inclusive: the level alone; exclusive and victim: plus the level above,
    down the chain of exclusive levels."""
    assert effective_capacity(three("nine"), 2) == (int(27.5 * MiB), "")
    size, words = effective_capacity(three("inclusive"), 2)
    assert size == int(27.5 * MiB) and "L3 alone" in words and "L2's copies" in words
    assert effective_capacity(three("exclusive"), 2) == (
        int(28.5 * MiB),
        "L2 + L3 = 28.5 MiB (L3 is exclusive: the levels hold disjoint lines)",
    )
    size, words = effective_capacity(three("victim"), 2)
    assert size == int(28.5 * MiB) and words.startswith("at most L2 + L3 = 28.5 MiB")
    size, words = effective_capacity(three("exclusive", l2="exclusive"), 2)
    assert size == 32 * 1024 + int(28.5 * MiB) and words.startswith("L1 + L2 + L3 = ")
    assert effective_capacity(three("exclusive", l2="exclusive"), 1)[0] == 32 * 1024 + MiB
    assert effective_capacity(three("exclusive"), 0) == (32 * 1024, "")


def test_l3_wall_moves_with_the_capacity_by_hand():
    """3D condition 8 (4 kS - 2 jS) <= C with jS = n + 2, kS = jS**2: with C = 27.5 MiB the
    largest n is 947 (x = n + 2 = 949: 8 (4 x^2 - 2 x) = 28,804,048 <= 28,835,840 and
    x = 950 needs 28,864,800); with C = 28.5 MiB (29,884,416) it is 964 (x = 966:
    29,845,536; x = 967: 29,907,376)."""
    for l3, n, cap in (("nine", 947, 28_835_840), ("inclusive", 947, 28_835_840),
                       ("exclusive", 964, 29_884_416), ("victim", 964, 29_884_416)):  # fmt: skip
        w = l3_3d(three(l3))
        assert (w.n, w.capacity) == (n, cap), l3
        x = n + 2
        assert 8 * (4 * x * x - 2 * x) <= cap < 8 * (4 * (x + 1) ** 2 - 2 * (x + 1))
        assert ("capacity" in w.explanation) == (l3 != "nine")
        lc = stencil_layer_conditions({"n": n + 1}, three(l3), safety=1.0)[2]
        assert lc.effective_capacity == cap and lc.holds == "2D"
        assert lc.to_dict()["effective_capacity"] == cap
        assert stencil_layer_conditions({"n": n}, three(l3), safety=1.0)[2].holds == "3D"


SMALL = """[machine]
name = "small {pol}"
[[level]]
name = "L1"
size = "4 KiB"
ways = 4
[[level]]
name = "L2"
size = "128 KiB"
ways = 16
[[level]]
name = "L3"
size = "512 KiB"
ways = 16
inclusion = "{pol}"
"""


@pytest.mark.slow
def test_the_simulated_l3_wall_is_where_the_effective_capacity_puts_it(tmp_path, capsys):
    """On L2 128 KiB + L3 512 KiB the 3D condition holds up to n = 126 at L3 alone and
    n = 141 at L2 + L3 (stencil_walls). The simulated L3 misses per point (steady state,
    nz = 16: the condition depends on the plane only) step from about 0.27 (old read once)
    to 0.5 (three times) just after those sizes: NINE and inclusive by n = 130, exclusive
    not before n = 142."""
    from hroof.studies.runs import simulate_kernel

    def misses(pol, n):
        path = tmp_path / f"{pol}.toml"
        path.write_text(SMALL.format(pol=pol))
        r = simulate_kernel("stencil7", load_machine(path).hierarchy, classify=False, n=n,
                            nz=16, warmup=1, sweeps=1)  # fmt: skip
        return r.levels[-1].misses / (n * n * 16)

    walls = {}
    for pol in ("nine", "exclusive"):
        path = tmp_path / f"{pol}.toml"
        path.write_text(SMALL.format(pol=pol))
        h = load_machine(path).hierarchy
        walls[pol] = l3_3d(h).n
    assert walls == {"nine": 126, "exclusive": 141}
    for pol in ("nine", "inclusive"):
        assert misses(pol, 120) < 0.28 and misses(pol, 130) > 0.45, pol
    assert misses("exclusive", 130) < 0.28 and misses("exclusive", 141) < 0.28
    assert misses("exclusive", 144) > 0.45


def test_sweep_model_nine_predicts_and_simulates_the_plain_model(tmp_path, capsys):
    """``hroof sweep --model nine`` runs every level NINE and predicts its walls for NINE."""
    path = tmp_path / "m.toml"
    path.write_text(SMALL.format(pol="exclusive"))
    args = ["sweep", "stencil7", "n=8,12", "nz=4", "warmup=1", "--machine", path, "--json",
            "--no-cache", "--workers", "1", "-q"]  # fmt: skip
    for model, pol in (("nine", "nine"), ("machine", "exclusive")):
        code, out, err = run(capsys, *args, "--model", model)
        assert code == 0, err
        doc = json.loads(out)
        levels = doc["points"][0]["result"]["levels"]
        assert [lv["inclusion"] for lv in levels] == ["nine", "nine", pol]


def test_mrc_of_an_exclusive_level_asks_for_model_nine(capsys):
    """The preset's exclusive L3 has no NINE stream: one line naming --model nine, which works."""
    argv = ["mrc", "stencil7", "n=8", "--level", "L3", "-q"]
    assert_cli_bad(capsys, argv, "exclusive", "--model nine")
    code, out, err = run(capsys, *argv, "--model", "nine")
    assert "MiB" in out
    assert code == 0, err


def _load_benchmark_result(machine, working_set=18_480_000, passes=2):
    """likwid-bench ``load`` as the preset's L3 figure was measured: 8-byte loads streaming
    over an 18.48 MB working set, warm (one pass first, not counted)."""
    import numpy as np

    from hroof.cachesim import Simulator

    sim = Simulator(machine.hierarchy, classify=False)
    addr = np.arange(0, working_set // 64 * 64, 8, dtype=np.int64) + (1 << 30)
    size = np.full(addr.shape, 8, dtype=np.int64)
    kind = np.zeros(addr.shape, dtype=np.uint8)
    sim.feed(addr, size, kind)
    sim.reset_counters()
    for _ in range(passes):
        sim.feed(addr, size, kind)
    return sim.finish(flush=False, flops=int(addr.shape[0]) * passes), int(addr.nbytes) * passes


def test_the_l3_roof_times_what_its_bandwidth_was_measured_on():
    """Replayed through the preset, the benchmark behind L3's 24.42 GB/s moves two bytes
    between L2 and L3 per byte loaded (each line loaded from L3 pushes one clean L2 victim
    into it), and the roofline times exactly the bytes loaded: the benchmark's own stream
    takes its measured time (docs/cache-model.md, "Time at an exclusive or victim level")."""
    from hroof.roofline import roofline

    m = load_machine("skylake-sp")
    r, loaded = _load_benchmark_result(m)
    l3 = r.levels[2]
    assert l3.bytes == 2 * loaded and l3.victims_in * 64 == loaded
    assert l3.timed_bytes == loaded
    roof = roofline(r, m).level("L3")
    assert roof.bytes == loaded and roof.ai == pytest.approx(r.flops / loaded)
    # the plain model has no victims: its traffic is the bytes loaded, timed alike
    nine = load_machine("skylake-sp")
    from dataclasses import replace

    nine = replace(nine, hierarchy=nine.hierarchy.with_inclusion("nine"))
    rn, _ = _load_benchmark_result(nine)
    assert rn.levels[2].bytes == rn.levels[2].timed_bytes == loaded
    assert roofline(rn, nine).level("L3").attainable == pytest.approx(roof.attainable)


def test_timed_bytes_leave_out_only_clean_victims():
    """A small exclusive L2: every clean line L1 evicts is traffic into L2 but not timed;
    dirty ones are timed as writebacks; the guidance's parts still add up to what is timed."""
    import numpy as np

    from hroof.cachesim import Simulator
    from hroof.roofline import machine_from_dict, roofline
    from hroof.roofline.guidance import guidance

    m = machine_from_dict({
        "compute": {"peak": 10.0}, "memory": {"bandwidth": 10.0},
        "level": [{"name": "L1", "size": 256, "ways": 2, "bandwidth": 100.0},
                  {"name": "L2", "size": 1024, "ways": 4, "bandwidth": 50.0,
                   "inclusion": "exclusive"}],
    })  # fmt: skip
    rng = np.random.default_rng(7)
    addr = rng.integers(0, 64, 4000).astype(np.int64) * 64
    kind = (rng.random(4000) < 0.3).astype(np.uint8)
    sim = Simulator(m.hierarchy, classify=True)
    sim.feed(addr, np.full(4000, 8, dtype=np.int64), kind)
    r = sim.finish(flops=4000)
    l1, l2 = r.levels
    assert l1.victims > 0 and l2.victims_in == l1.victims
    assert l2.timed_bytes == l2.bytes - 64 * l1.victims
    assert l2.timed_bytes == (l1.fills + l1.writebacks) * 64 + l1.forwarded_store_bytes
    assert l1.timed_bytes == l1.bytes
    rf = roofline(r, m)
    assert rf.level("L2").bytes == l2.timed_bytes
    g = guidance(r, m)  # the capacity part less the victims: never a negative share
    assert all(s.gain is None or s.gain >= 1 for s in g.steps)
