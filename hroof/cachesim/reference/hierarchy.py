"""The reference model's hierarchy: L1..Ln and memory, one access at a time, and
:func:`simulate` (see :mod:`hroof.cachesim.reference`)."""

from __future__ import annotations

from collections.abc import Iterable

from hroof.cachesim.reference.level import (
    EXCLUSIVE,
    INCLUSIVE,
    LOAD,
    NINE,
    NT_STORE,
    READ,
    RFO,
    STORE,
    WRITE,
    NaiveLevel,
    _field,
)


class NaiveHierarchy:
    """L1..Ln plus memory, simulated one event at a time.

    Parameters
    ----------
    levels : sequence
        Level descriptions, L1 first: dicts with keys ``name``, ``size``,
        ``ways``, ``line`` and optionally ``write_allocate`` (default True), or
        objects with those attributes (e.g. ``hroof.cachesim.LevelConfig``),
        or an object with a ``levels`` attribute (a ``HierarchyConfig``).
    quirks : bool
        Adopt pycachesim's behaviour (see the module docstring).
    flush_mru_first : bool or None
        Within a set, flush from MRU to LRU instead of LRU to MRU. Defaults to
        ``quirks`` (pycachesim's order); only the tests set it separately.
    """

    def __init__(self, levels, *, quirks=False, flush_mru_first=None):
        if hasattr(levels, "levels"):
            levels = levels.levels
        self.levels = [
            NaiveLevel(
                _field(lv, "name", f"L{i + 1}"),
                _field(lv, "size"),
                _field(lv, "ways"),
                _field(lv, "line", 64),
                _field(lv, "write_allocate", True),
                _field(lv, "inclusion", NINE),
                _field(lv, "prefetch", "none"),
                _field(lv, "prefetch_streams", 16),
                _field(lv, "prefetch_distance", 1),
            )
            for i, lv in enumerate(levels)
        ]
        if not self.levels:
            raise ValueError("a hierarchy needs at least one level")
        if self.levels[0].inclusion != NINE:
            raise ValueError("L1 has no level above it: its inclusion must be 'nine'")
        if len({lv.line for lv in self.levels}) != 1:
            raise ValueError("all levels must share one line size")
        self.line = self.levels[0].line
        self.triggers = []  # (level, line, trigger) of the demand lookups of one access
        self.quirks = quirks
        self.flush_mru_first = quirks if flush_mru_first is None else flush_mru_first
        self.core = {
            "loads": 0,
            "stores": 0,
            "nt_stores": 0,
            "bytes_loaded": 0,
            "bytes_stored": 0,
            "bytes_nt": 0,
        }

    # ------------------------------------------------------------------ core side

    def access(self, addr, size, kind):
        """Run one core access: ``kind`` 0 load, 1 store, 2 NT store."""
        if size < 1:
            raise ValueError(f"access size must be >= 1, got {size}")
        if kind == LOAD:
            self.core["loads"] += 1
            self.core["bytes_loaded"] += size
        elif kind == STORE:
            self.core["stores"] += 1
            self.core["bytes_stored"] += size
        elif kind == NT_STORE:
            self.core["nt_stores"] += 1
            self.core["bytes_nt"] += size
        else:
            raise ValueError(f"unknown access kind {kind!r}")
        end = addr + size
        for line in range(addr // self.line, (end - 1) // self.line + 1):
            # The part of the access inside this line.
            nbytes = min(end, (line + 1) * self.line) - max(addr, line * self.line)
            if kind == LOAD:
                self._lookup(0, line, READ, nbytes)
            elif kind == STORE:
                self._lookup(0, line, WRITE, nbytes)
            else:
                self._nt_store_line(line)
            # Then the prefetchers of the levels it looked up, L1 first.
            triggers, self.triggers = self.triggers, []
            for i, x, trigger in triggers:
                for y in self.levels[i].prefetch_targets(x, trigger):
                    self._prefetch(i, y)

    def run(self, accesses):
        """Run every ``(addr, size, kind)`` of ``accesses`` in order."""
        for addr, size, kind in accesses:
            self.access(int(addr), int(size), int(kind))

    # ------------------------------------------------------------------ levels

    def _lookup(self, i, line, kind, nbytes):
        """A lookup of ``line`` at level ``i`` (``i == n`` is memory).

        Returns True if the line delivered to the level above is dirty (a dirty
        line leaving an exclusive level on a hit carries its dirty bit up).
        """
        if i == len(self.levels):
            return False  # memory serves every read and absorbs every write
        lv = self.levels[i]
        lv.lookups += 1
        through = lv.passes_through
        forwards = kind == WRITE and (not lv.write_allocate or through)
        allocates = not forwards and not through
        first_time = line not in lv.seen
        lv.seen.add(line)
        shadow_hit = lv.shadow.touch(line, allocate=allocates)
        s = lv.set_of(line)
        if line in s:
            lv.hits += 1
            trigger = "pf-hit" if lv.demand_hit(line) else "hit"
            if lv.prefetch != "none":
                self.triggers.append((i, line, trigger))
            if kind == WRITE:
                lv.store_hits += 1
                s[line] = True  # dirty
                if not self.quirks:  # quirk 1: a store hit keeps its recency
                    s.move_to_end(line)
                return False
            if lv.inclusion == EXCLUSIVE:
                # The line moves up and leaves this level (its shadow too).
                lv.shadow.drop(line)
                return s.pop(line)
            s.move_to_end(line)
            return False
        lv.misses += 1
        if lv.prefetch != "none":
            self.triggers.append((i, line, "miss"))
        cls = "compulsory" if first_time else ("conflict" if shadow_hit else "capacity")
        lv.by_class[cls] += 1
        if forwards:
            # Forwarded store: no fill, the store's bytes go to the next level.
            lv.forwarded_stores += 1
            lv.forwarded_bytes += nbytes
            lv.traffic[cls] += nbytes
            self._lookup(i + 1, line, WRITE, nbytes)
            return False
        lv.fills += 1
        if kind == READ:
            lv.traffic[cls] += lv.line
        else:  # an RFO from above, or a store miss here
            lv.write_allocate_fills += 1
            lv.traffic["write_allocate"] += lv.line
        dirty = self._lookup(i + 1, line, READ if kind == READ else RFO, lv.line)
        if through:
            return dirty  # the line goes to the level above only
        self._insert(i, line, dirty=kind == WRITE or dirty)
        return False

    def _insert(self, i, line, dirty, prefetched=False):
        """Insert ``line`` as MRU at level ``i`` (marked prefetched if ``prefetched``); then
        evict the victim (see :meth:`_evict`)."""
        lv = self.levels[i]
        s = lv.set_of(line)
        victim = None
        if len(s) >= lv.ways:
            victim, victim_dirty = s.popitem(last=False)
            lv.lose(victim)
        s[line] = dirty
        if prefetched:
            lv.pf_lines.add(line)
        if victim is not None:
            self._evict(i, victim, victim_dirty)

    def _prefetch(self, i, line):
        """Level ``i``'s prefetcher requests ``line``: if absent, it is fetched from below as
        a read (prefetch lookups there) and inserted here, MRU, marked prefetched."""
        lv = self.levels[i]
        lv.pf_issued += 1
        if line in lv.set_of(line):
            return  # present: nothing changes, not even its recency
        lv.pf_filled += 1
        lv.seen.add(line)
        lv.shadow.touch(line, allocate=True)
        dirty = self._pf_lookup(i + 1, line)
        self._insert(i, line, dirty, prefetched=True)

    def _pf_lookup(self, i, line):
        """A prefetch lookup (a read) of ``line`` at level ``i``; returns the dirty bit an
        exclusive level hands up. Counted apart from the demand lookups; trains no
        prefetcher."""
        if i == len(self.levels):
            return False
        lv = self.levels[i]
        lv.pf_lookups += 1
        lv.seen.add(line)
        lv.shadow.touch(line, allocate=not lv.passes_through)
        s = lv.set_of(line)
        if line in s:
            if lv.inclusion == EXCLUSIVE:
                lv.shadow.drop(line)
                lv.lose(line)
                return s.pop(line)
            s.move_to_end(line)
            return False
        lv.pf_misses += 1
        dirty = self._pf_lookup(i + 1, line)
        if lv.passes_through:
            return dirty
        self._insert(i, line, dirty)
        return False

    def _evict(self, i, line, dirty):
        """Level ``i`` has evicted ``line``: back-invalidate, then send it down.

        An inclusive level first drops the copies above it, L1 first, carrying a
        dirty copy's data down to it as an NT store does; the line is then dirty
        here. A dirty line is written back to level ``i + 1``; a clean one moves
        no bytes unless level ``i + 1`` is exclusive or victim, which takes
        every line evicted from above, clean or dirty.
        """
        lv = self.levels[i]
        if lv.inclusion == INCLUSIVE:
            carry = False
            for j in range(i):
                up = self.levels[j]
                if carry:
                    up.writebacks_in += 1
                    up.seen.add(line)
                s = up.set_of(line)
                if line in s:
                    up.back_invalidations += 1
                    up.lose(line)
                    carry |= s.pop(line)
                up.shadow.drop(line)
                if carry:
                    self._count_writeback(j, line)
            if carry:
                lv.writebacks_in += 1
                dirty = True
        below = self.levels[i + 1] if i + 1 < len(self.levels) else None
        if dirty:
            self._send_writeback(i, line)
        elif below is not None and below.passes_through:
            lv.victims += 1
            lv.traffic["capacity"] += lv.line
            self._victim_in(i + 1, line, dirty=False)

    def _victim_in(self, i, line, dirty):
        """``line`` evicted from level ``i - 1`` arrives at exclusive/victim level ``i``."""
        lv = self.levels[i]
        if dirty:
            lv.writebacks_in += 1
        else:
            lv.victims_in += 1
        lv.seen.add(line)
        lv.shadow.touch(line, allocate=True)
        s = lv.set_of(line)
        if line in s:
            s[line] = s[line] or dirty
            s.move_to_end(line)
            return
        self._insert(i, line, dirty)

    def _count_writeback(self, i, line):
        """Count a writeback of ``line`` sent down by level ``i``."""
        lv = self.levels[i]
        lv.writebacks += 1
        if line in lv.written_back:
            lv.traffic["capacity"] += lv.line
        else:
            lv.written_back.add(line)
            lv.traffic["compulsory"] += lv.line

    def _send_writeback(self, i, line):
        """Level ``i`` writes ``line`` back; it arrives at level ``i + 1``."""
        self._count_writeback(i, line)
        self._writeback_in(i + 1, line)

    def _writeback_in(self, i, line):
        """A writeback of ``line`` arriving at level ``i`` (not a lookup)."""
        if i == len(self.levels):
            return  # memory
        lv = self.levels[i]
        if lv.passes_through:
            self._victim_in(i, line, dirty=True)
            return
        lv.writebacks_in += 1
        first_time = line not in lv.seen
        lv.seen.add(line)
        shadow_hit = lv.shadow.touch(line, allocate=True)
        s = lv.set_of(line)
        if line in s:
            s[line] = True
            if not self.quirks:  # quirk 1 again: an arriving writeback is a store hit
                s.move_to_end(line)
            return
        if self.quirks:
            # Quirk 2: pycachesim treats the writeback as a store at a write-allocate
            # level: a lookup that misses, an RFO (a read) to the level below, a fill.
            lv.lookups += 1
            lv.misses += 1
            cls = "compulsory" if first_time else ("conflict" if shadow_hit else "capacity")
            lv.by_class[cls] += 1
            lv.fills += 1
            lv.write_allocate_fills += 1
            lv.traffic["write_allocate"] += lv.line
            self._lookup(i + 1, line, RFO, lv.line)
        # A whole-line write needs no read: allocate dirty without a fill.
        self._insert(i, line, dirty=True)

    def _nt_store_line(self, line):
        """Invalidate ``line`` everywhere, carrying a dirty copy down to memory."""
        carry = False
        for i, lv in enumerate(self.levels):
            if carry:
                lv.writebacks_in += 1
                lv.seen.add(line)
            s = lv.set_of(line)
            if line in s:
                lv.invalidations += 1
                lv.lose(line)
                carry |= s.pop(line)
            lv.shadow.drop(line)
            if carry:
                self._count_writeback(i, line)

    def reset_counters(self):
        """Zero every counter, keeping the caches' contents and the 3C state: what ran so
        far was a warm-up, the result is the steady state of what runs next (the
        simulator's ``reset_counters``). :meth:`check_invariants` holds for whole runs."""
        for key in self.core:
            self.core[key] = 0
        for lv in self.levels:
            lv.reset_counters()

    # ------------------------------------------------------------------ end of run

    def flush(self):
        """Write every dirty line back: L1 first, sets in index order, LRU to MRU."""
        for i, lv in enumerate(self.levels):
            for s in lv.sets:
                order = list(s)  # least recently used first
                if self.flush_mru_first:
                    order.reverse()
                for line in order:
                    if s[line]:
                        s[line] = False  # keeps the line's position in the set
                        self._send_writeback(i, line)

    def check_invariants(self):
        """Assert every level's invariants (see :meth:`NaiveLevel.check_invariants`)."""
        for lv in self.levels:
            lv.check_invariants()

    def check_inclusion(self):
        """Assert the inclusion properties (before the flush, which only cleans lines).

        An exclusive level shares no line with the level just above it when
        that level is L1, exclusive or inclusive (a NINE or victim level may
        hold a line twice: it keeps a copy a lower level holds, or allocates a
        writeback from above of a line it has already evicted down); an
        inclusive level holds every line held by any level above it.
        """
        held = [set().union(*lv.sets) for lv in self.levels]
        for i, lv in enumerate(self.levels):
            up = self.levels[i - 1].inclusion if i else NINE
            if lv.inclusion == EXCLUSIVE and (i == 1 or up in (EXCLUSIVE, INCLUSIVE)):
                both = held[i - 1] & held[i]
                assert not both, f"{lv.name} exclusive but shares {sorted(both)[:4]}"
            if lv.inclusion == INCLUSIVE:
                above = set().union(*held[:i])
                assert above <= held[i], (
                    f"{lv.name} inclusive but lacks {sorted(above - held[i])[:4]}"
                )

    def result(self, classify=True):
        """The counters, shaped like the relevant parts of ``hroof.result/1``."""
        levels = []
        above = self.core["bytes_loaded"] + self.core["bytes_stored"]
        policies = any(lv.inclusion != NINE for lv in self.levels)
        prefetching = any(lv.prefetch != "none" for lv in self.levels)
        pf_above = 0
        for lv in self.levels:
            extra = {}
            if policies:  # the plain model's result keeps its keys exactly
                extra = {
                    "inclusion": lv.inclusion,
                    "victims": lv.victims,
                    "victims_in": lv.victims_in,
                    "back_invalidations": lv.back_invalidations,
                }
            traffic = dict(lv.traffic)
            if prefetching:
                traffic["prefetch"] = lv.prefetch_bytes_below()
                extra |= {
                    "prefetch": lv.prefetch,
                    "prefetches_issued": lv.pf_issued,
                    "prefetches_filled": lv.pf_filled,
                    "prefetches_useful": lv.pf_useful,
                    "prefetches_useless": lv.pf_useless,
                    "prefetches_unused_at_end": len(lv.pf_lines),
                    "prefetch_lookups": lv.pf_lookups,
                    "prefetch_misses": lv.pf_misses,
                    "prefetch_bytes": pf_above,
                    "prefetch_bytes_below": lv.prefetch_bytes_below(),
                }
            pf_above = lv.prefetch_bytes_below()
            levels.append(
                extra
                | {
                    "name": lv.name,
                    "lookups": lv.lookups,
                    "hits": lv.hits,
                    "misses": lv.misses,
                    "misses_by_class": dict(lv.by_class) if classify else None,
                    "write_allocate_fills": lv.write_allocate_fills,
                    "forwarded_stores": lv.forwarded_stores,
                    "writebacks_in": lv.writebacks_in,
                    "writebacks": lv.writebacks,
                    "invalidations": lv.invalidations,
                    "bytes": above,
                    "traffic_below": traffic if classify else None,
                }
            )
            above = lv.traffic_below()
        last = self.levels[-1]
        read = last.fills * last.line + last.prefetch_bytes_below()
        written = last.writebacks * last.line + last.forwarded_bytes + self.core["bytes_nt"]
        return {
            "core": dict(self.core),
            "levels": levels,
            "memory": {"bytes_read": read, "bytes_written": written, "bytes": read + written},
        }


def simulate(
    levels, accesses: Iterable, *, classify=True, flush=True, quirks=False, check=False
) -> dict:
    """Simulate ``accesses`` through ``levels`` with the plain-Python model.

    Parameters
    ----------
    levels : sequence
        Level descriptions, L1 first (see :class:`NaiveHierarchy`).
    accesses : iterable of (int, int, int)
        ``(addr, size, kind)`` with kind 0 load, 1 store, 2 NT store.
    classify : bool
        If False, ``misses_by_class`` and ``traffic_below`` are None.
    flush : bool
        Write every dirty line back at the end.
    quirks : bool
        Behave like pycachesim 0.3.1 (see the module docstring).
    check : bool
        Assert the invariants after the run.

    Returns
    -------
    dict
        ``{"core": {...}, "levels": [{...}, ...], "memory": {...}}`` with the
        keys of the ``hroof.result/1`` schema that the model defines.
    """
    h = NaiveHierarchy(levels, quirks=quirks)
    h.run(accesses)
    if flush:
        h.flush()
    if check:
        h.check_invariants()
    return h.result(classify=classify)
