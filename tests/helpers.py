"""Helpers shared by the cache-model tests: level dicts, expected results, pycachesim."""

from __future__ import annotations


def lvl(name, sets, ways, line=64, write_allocate=True):
    """A level dict of ``sets x ways`` lines of ``line`` bytes."""
    return {
        "name": name,
        "size": sets * ways * line,
        "ways": ways,
        "line": line,
        "write_allocate": write_allocate,
    }


def expected_level(
    name,
    *,
    lookups=0,
    hits=0,
    misses=0,
    classes=(0, 0, 0),
    wa=0,
    fwd=0,
    wb_in=0,
    wb=0,
    inv=0,
    nbytes=0,
    traffic=(0, 0, 0, 0),
):
    """The result dict of one level; ``classes`` is (compulsory, capacity, conflict),
    ``traffic`` is (compulsory, write_allocate, capacity, conflict)."""
    return {
        "name": name,
        "lookups": lookups,
        "hits": hits,
        "misses": misses,
        "misses_by_class": dict(zip(("compulsory", "capacity", "conflict"), classes, strict=True)),
        "write_allocate_fills": wa,
        "forwarded_stores": fwd,
        "writebacks_in": wb_in,
        "writebacks": wb,
        "invalidations": inv,
        "bytes": nbytes,
        "traffic_below": dict(
            zip(("compulsory", "write_allocate", "capacity", "conflict"), traffic, strict=True)
        ),
    }


def core(loads=0, stores=0, nt=0, bl=0, bs=0, bnt=0):
    return {
        "loads": loads,
        "stores": stores,
        "nt_stores": nt,
        "bytes_loaded": bl,
        "bytes_stored": bs,
        "bytes_nt": bnt,
    }


def memory(read, written):
    return {"bytes_read": read, "bytes_written": written, "bytes": read + written}


def build_pycachesim(cachesim, geom):
    """pycachesim's hierarchy for ``geom`` (a list of (sets, ways, line), L1 first).

    Levels are made from the last up, each loading from and storing to the one
    below; the last one is attached to main memory. Returns ``(simulator,
    caches L1 first, memory)``.
    """
    mem = cachesim.MainMemory()
    below = None
    caches = []
    for i in reversed(range(len(geom))):
        sets, ways, line = geom[i]
        c = cachesim.Cache(f"L{i + 1}", sets, ways, line, "LRU", store_to=below, load_from=below)
        if below is None:
            mem.load_to(c)
            mem.store_from(c)
        caches.insert(0, c)
        below = c
    return cachesim.CacheSimulator(caches[0], mem), caches, mem


def run_pycachesim(cachesim, geom, trace, flush=True):
    """Run ``trace`` (loads and stores) through pycachesim; return (per-level, memory) stats.

    A one-element list takes pycachesim's exact ``iterload``/``iterstore`` path:
    a scalar address goes through a 32-bit parse that leaves the upper half of
    the line id uninitialised (see tests/test_pycachesim.py). Addresses stay
    below ``2**32``, which pycachesim 0.3.1 aliases above.
    """
    cs, caches, mem = build_pycachesim(cachesim, geom)
    for addr, size, kind in trace:
        assert kind in (0, 1) and addr + size <= 2**32
        if kind == 0:
            cs.load([addr], length=size)
        else:
            cs.store([addr], length=size)
    if flush:
        cs.force_write_back()
    return [c.stats() for c in caches], mem.stats()


#: The per-level counters the naive twin and the fast simulator both report.
COMPARED = (
    "lookups",
    "hits",
    "misses",
    "misses_by_class",
    "write_allocate_fills",
    "forwarded_stores",
    "writebacks_in",
    "writebacks",
    "invalidations",
    "bytes",
    "traffic_below",
)


def assert_same(fast, naive):
    """Every counter of a fast result's ``to_dict()`` equals the naive twin's."""
    assert fast["core"] == {k: naive["core"][k] for k in fast["core"]}
    for f, n in zip(fast["levels"], naive["levels"], strict=True):
        for key in COMPARED:
            assert f[key] == n[key], f"{f['name']} {key}: fast {f[key]} != naive {n[key]}"
    for key in ("bytes_read", "bytes_written", "bytes"):
        assert fast["memory"][key] == naive["memory"][key], key


def collect_plan(plan, chunk_size):
    """A kernel plan's trace as a list of (addr, size, kind), chunk by chunk, checking that
    no chunk is longer than ``chunk_size`` (or one iteration, if that is longer)."""
    out = []
    for addr, size, kind in plan.chunks(chunk_size):
        assert len(addr) <= max(chunk_size, plan.per_iteration)
        out.extend(zip(addr.tolist(), size.tolist(), kind.tolist(), strict=True))
    return out


def run_cli(capsys, *argv):
    """Run ``hroof ARGV`` in-process; return (exit status, stdout, stderr)."""
    from hroof.cli import main

    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_cli_bad(capsys, argv, *words, ignore_case=True):
    """Exit 2, nothing on stdout, no traceback, one ``hroof: error:`` line naming every
    one of ``words``; returns that line."""
    code, out, err = run_cli(capsys, *argv)
    assert code == 2, (code, out, err)
    assert out == ""
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("hroof: error: "), err
    for word in words:
        if ignore_case:
            assert str(word).lower() in err.lower(), (word, err)
        else:
            assert str(word) in lines[0], (word, lines[0])
    return err
