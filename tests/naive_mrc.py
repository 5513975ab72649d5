"""Plain-Python twins of the miss-ratio-curve passes (``hroof.cachesim.mrc``).

The fully-associative twin keeps the LRU stack as a ``sortedcontainers.SortedList``
of last-access times (holes included, see the module notes of
``hroof.cachesim.mrc``), so a line's stack distance is the number of entries
after its time. The set-associative twin keeps a plain list per set. A third
twin simulates each capacity separately with an ``OrderedDict`` LRU that frees
a slot on invalidation: it checks the hole rule itself.
"""

from __future__ import annotations

from collections import OrderedDict

from sortedcontainers import SortedList

OP_LOOKUP, OP_WRITE, OP_INVAL, OP_INVAL_SEEN = 0, 1, 2, 3


def naive_fa(lines, ops):
    """``(hist, cold, reload, writes, distinct)``: lookups by stack distance (a dict)."""
    entries = SortedList()  # times of the stack's entries (lines and holes)
    holes = set()
    last: dict[int, int] = {}  # line -> time of its entry, lines in the stack only
    seen: set[int] = set()
    hist: dict[int, int] = {}
    cold = reload = writes = 0
    now = 0
    for line, op in zip(lines, ops, strict=True):
        line, op = int(line), int(op)
        if op in (OP_INVAL, OP_INVAL_SEEN):
            if op == OP_INVAL_SEEN:
                seen.add(line)
            if line in last:
                holes.add(last.pop(line))
            continue
        t = last.get(line)
        if op == OP_LOOKUP:
            if t is None:
                if line in seen:
                    reload += 1
                else:
                    cold += 1
            else:
                d = len(entries) - entries.bisect_right(t)
                hist[d] = hist.get(d, 0) + 1
        else:
            writes += 1
        seen.add(line)
        top_hole = max(holes) if holes else None
        if top_hole is not None and (t is None or top_hole > t):
            holes.remove(top_hole)
            entries.remove(top_hole)
            if t is not None:
                holes.add(t)
        elif t is not None:
            entries.remove(t)
        entries.add(now)
        last[line] = now
        now += 1
    return hist, cold, reload, writes, len(seen)


def naive_fa_misses(lines, ops, capacities):
    """Lookup misses of fully-associative LRU caches, each capacity simulated on its own."""
    out = []
    for cap in capacities:
        cache: OrderedDict[int, None] = OrderedDict()
        misses = 0
        for line, op in zip(lines, ops, strict=True):
            line, op = int(line), int(op)
            if op in (OP_INVAL, OP_INVAL_SEEN):
                cache.pop(line, None)
                continue
            if line in cache:
                cache.move_to_end(line)
                continue
            if op == OP_LOOKUP:
                misses += 1
            if cap == 0:
                continue
            if len(cache) >= cap:
                cache.popitem(last=False)
            cache[line] = None
        out.append(misses)
    return out


def naive_sa_misses(lines, ops, sets, max_ways):
    """Lookup misses with ``sets`` sets of ``w`` ways, ``w = 1..max_ways`` (one run each)."""
    out = []
    for ways in range(1, max_ways + 1):
        cache = [OrderedDict() for _ in range(sets)]
        misses = 0
        for line, op in zip(lines, ops, strict=True):
            line, op = int(line), int(op)
            s = cache[line % sets]
            if op in (OP_INVAL, OP_INVAL_SEEN):
                s.pop(line, None)
                continue
            if line in s:
                s.move_to_end(line)
                continue
            if op == OP_LOOKUP:
                misses += 1
            if len(s) >= ways:
                s.popitem(last=False)
            s[line] = None
        out.append(misses)
    return out


_M64 = 2**64 - 1


def naive_mix(x: int) -> int:
    """splitmix64's finaliser on Python integers (the SHARDS hash of ``_mrc_kernels``)."""
    z = (x + 0x9E3779B97F4A7C15) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def naive_prefilter(src, shift, kinds, opmap, key, thresh):
    """``(lines, ops, hashes, subs, lookups)`` of the events whose line hashes below
    ``thresh``: a line's hash is the top 24 bits of ``naive_mix(line ^ key)``, its
    sub-sample the low 2 bits; ``lookups`` counts every event mapped to a lookup."""
    out = ([], [], [], [])
    lookups = 0
    for a, k in zip(src, kinds, strict=True):
        line = int(a) >> shift
        op = int(opmap[int(k)])
        lookups += op == OP_LOOKUP
        z = naive_mix((line ^ key) & _M64)
        if z >> 40 < thresh:
            for lst, v in zip(out, (line, op, z >> 40, z & 3), strict=True):
                lst.append(v)
    return (*out, lookups)
