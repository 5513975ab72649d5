"""Plain-Python reference twin of hroof's cache model.

This module re-implements, as plainly as possible, the rules written down in
``docs/cache-model.md`` (and in the "Cache model", "Miss classification",
"Traffic partition", "Bytes and AI per level" and "Result schema" sections of
the design contract). It is deliberately slow and obvious: one ``OrderedDict``
per set (least recently used first), a fully-associative ``OrderedDict`` LRU
shadow per level for the 3C classification, and Python sets for "seen at this
level" and "written back from this level at least once". The fast simulator
must match it counter for counter; nothing here imports the simulator.

Event order (see the docs for the full rules):

* a lookup that misses first requests the line from the level below
  (recursively), then inserts it as MRU, then writes the victim back if dirty;
* a writeback arriving at a level is not a lookup: a hit makes the line dirty
  and MRU, a miss allocates it dirty without a fill (which may evict in turn);
* an RFO below the level that took the store is a read (MRU on a hit, filled
  clean on a miss) but its fills count as write-allocate fills;
* NT stores bypass the caches and invalidate every cached copy, carrying a
  dirty copy's writeback down to memory;
* the final flush goes level by level from L1 down, set by set in index order,
  within a set from least to most recently used.

``quirks=True`` switches to pycachesim's (RRZE-HPC, 0.3.1) behaviour, which the
test suite checks against pycachesim itself:

1. a store that hits, at any level (a writeback arriving at a lower level
   included), does not refresh the line's LRU recency;
2. a writeback that misses a level is handled like a store miss at a
   write-allocate level: it counts as a lookup and a miss there (a
   write-allocate fill) and fetches the line from the level below (a read
   there) before allocating it dirty;
3. ``force_write_back`` walks each set from the most to the least recently
   used line (``placement[set * ways + 0]`` is pycachesim's MRU slot), not
   from LRU to MRU. The levels are still flushed L1 first and the sets in
   index order. This third difference is not in the design contract's list;
   without it the flush of the random traces does not match (see
   ``tests/test_pycachesim.py::test_pycachesim_flush_order``).

pycachesim's counters relate to this twin's (with ``quirks=True``) as:
``MISS_count == misses``; ``HIT_count == hits - store_hits`` (pycachesim does
not count a store hit, nor a writeback hit, as a HIT; it does count an RFO
from above that hits, since that is a load there); ``EVICT_count ==
writebacks`` (dirty evictions plus lines written back by the flush).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable

#: Access kinds of a trace.
LOAD, STORE, NT_STORE = 0, 1, 2

#: Kinds of a lookup at a level.
READ = "read"  # a core load, or a read from above caused by a load miss
RFO = "rfo"  # a read for ownership: a store miss at a write-allocate level (or from above)
WRITE = "write"  # a core store at L1, or a store forwarded by a no-write-allocate level

#: Inclusion policies of a level relative to the levels above it (docs/cache-model.md).
NINE, EXCLUSIVE, VICTIM, INCLUSIVE = "nine", "exclusive", "victim", "inclusive"
POLICIES = (NINE, EXCLUSIVE, VICTIM, INCLUSIVE)

#: Hardware prefetchers of a level (docs/cache-model.md, "Prefetchers").
PREFETCHERS = ("none", "next-line", "adjacent", "stride")
PAGE = 4096  # prefetches never cross a page of this many bytes
PAIR = 128  # the adjacent-line prefetcher's aligned block, bytes

CLASSES = ("compulsory", "capacity", "conflict")
PARTS = ("compulsory", "write_allocate", "capacity", "conflict")


def _field(obj, key, default=None):
    """Read ``key`` from a dict or an attribute of an object."""
    if isinstance(obj, dict):
        return obj.get(key, default)
    return getattr(obj, key, default)


class FullyAssociativeLRU:
    """A fully-associative LRU cache of ``capacity`` lines (the 3C shadow).

    Parameters
    ----------
    capacity : int
        Number of lines it holds.
    """

    def __init__(self, capacity):
        self.capacity = capacity
        self.lines = OrderedDict()  # line address -> None, least recently used first

    def touch(self, line, allocate=True):
        """Reference ``line``; return True on a hit.

        A hit makes the line MRU. A miss inserts it as MRU (evicting the LRU
        line if full) when ``allocate`` is true, and changes nothing otherwise.
        """
        if line in self.lines:
            self.lines.move_to_end(line)
            return True
        if allocate:
            if len(self.lines) >= self.capacity:
                self.lines.popitem(last=False)
            self.lines[line] = None
        return False

    def drop(self, line):
        """Forget ``line`` if present (NT-store invalidation)."""
        self.lines.pop(line, None)


class NaiveLevel:
    """One set-associative write-back cache level and its counters.

    Parameters
    ----------
    name : str
        Level name.
    size, ways, line : int
        Capacity in bytes, associativity, line size in bytes.
    write_allocate : bool
        Whether a store miss fills the line (RFO) or is forwarded down.
    inclusion : str
        ``nine`` (default), ``exclusive``, ``victim`` or ``inclusive``.
    """

    def __init__(
        self, name, size, ways, line, write_allocate=True, inclusion=NINE, prefetch="none",
        prefetch_streams=16, prefetch_distance=1,
    ):  # fmt: skip
        if prefetch not in PREFETCHERS:
            raise ValueError(f"{name}: prefetch {prefetch!r} is not one of {PREFETCHERS}")
        self.prefetch = prefetch
        self.streams = prefetch_streams
        self.distance = prefetch_distance
        # Stride streams, most recently used first: [page, last line, stride, confirmed].
        self.stride_table = []
        self.pf_lines = set()  # lines held here, put here by a prefetch, not yet hit
        self.pf_issued = self.pf_filled = self.pf_useful = self.pf_useless = 0
        self.pf_lookups = self.pf_misses = 0  # prefetch lookups from above, and their misses
        if inclusion not in POLICIES:
            raise ValueError(f"{name}: inclusion {inclusion!r} is not one of {POLICIES}")
        if ways <= 0 or line <= 0 or line & (line - 1):
            raise ValueError(f"{name}: bad geometry ways={ways} line={line}")
        if size <= 0 or size % (line * ways):
            raise ValueError(f"{name}: size {size} is not a whole number of {ways}x{line} B sets")
        self.name = name
        self.size = size
        self.ways = ways
        self.line = line
        self.write_allocate = bool(write_allocate)
        self.inclusion = inclusion
        self.nsets = size // (line * ways)
        # One OrderedDict per set: line address -> dirty flag, least recently used first.
        self.sets = [OrderedDict() for _ in range(self.nsets)]
        self.shadow = FullyAssociativeLRU(self.nsets * ways)
        self.seen = set()  # lines looked up here or written back into here
        self.written_back = set()  # lines this level has sent down at least once
        # Counters.
        self.lookups = 0
        self.hits = 0
        self.misses = 0
        self.store_hits = 0  # hits by WRITE lookups (not in the result; see module doc)
        self.fills = 0  # misses that fill the line (all but forwarded stores)
        self.by_class = dict.fromkeys(CLASSES, 0)
        self.write_allocate_fills = 0
        self.forwarded_stores = 0
        self.forwarded_bytes = 0
        self.writebacks_in = 0
        self.writebacks = 0
        self.invalidations = 0
        self.victims = 0  # clean lines sent down into an exclusive/victim level below
        self.victims_in = 0  # clean lines arriving here from above (exclusive/victim only)
        self.back_invalidations = 0  # copies here dropped by an inclusive level's eviction
        self.traffic = dict.fromkeys(PARTS, 0)  # bytes to the next level down, by part

    def set_of(self, line):
        """The set (an OrderedDict) that ``line`` maps to."""
        return self.sets[line % self.nsets]

    def traffic_below(self):
        """Bytes this level moves to and from the next level down."""
        demand = (self.fills + self.writebacks + self.victims) * self.line + self.forwarded_bytes
        return demand + self.prefetch_bytes_below()

    def prefetch_bytes_below(self):
        """Bytes that prefetch requests (this level's and those from above) fetched from below."""
        return (self.pf_filled + self.pf_misses) * self.line

    def lose(self, line):
        """``line`` leaves this level (evicted, invalidated, moved up by a prefetch)."""
        if line in self.pf_lines:
            self.pf_lines.discard(line)
            self.pf_useless += 1

    def demand_hit(self, line):
        """A demand lookup hit ``line``: True if it was a prefetched line not yet used."""
        if line in self.pf_lines:
            self.pf_lines.discard(line)
            self.pf_useful += 1
            return True
        return False

    def prefetch_targets(self, line, trigger):
        """The lines this level's prefetcher requests after a demand lookup of ``line``
        that was a ``"miss"``, a ``"hit"`` or a ``"pf-hit"`` (on a prefetched line)."""
        per_page = max(1, PAGE // self.line)
        page = line // per_page
        if self.prefetch == "next-line":
            if trigger == "hit" or (line + 1) // per_page != page:
                return []
            return [line + 1]
        if self.prefetch == "adjacent":
            per_pair = max(1, PAIR // self.line)
            first = line // per_pair * per_pair
            return (
                [y for y in range(first, first + per_pair) if y != line]
                if trigger == "miss"
                else []
            )
        if self.prefetch == "stride":
            rows = self.stride_table
            row = next((r for r in rows if r[0] == page), None)
            if row is None:
                rows.insert(0, [page, line, 0, False])
                del rows[self.streams :]
                return []
            rows.remove(row)
            rows.insert(0, row)
            if line == row[1]:
                return []
            delta = line - row[1]
            row[3] = delta == row[2]
            row[2] = delta
            row[1] = line
            target = line + self.distance * delta
            return [target] if row[3] and target >= 0 and target // per_page == page else []
        return []

    @property
    def passes_through(self):
        """True if fills from below bypass this level (exclusive and victim levels)."""
        return self.inclusion in (EXCLUSIVE, VICTIM)

    def check_invariants(self):
        """Assert the structural and counting invariants of this level."""
        everywhere = []
        for index, s in enumerate(self.sets):
            assert len(s) <= self.ways, f"{self.name} set {index} holds {len(s)} > {self.ways}"
            for line in s:
                assert line % self.nsets == index, f"{self.name}: line {line} in set {index}"
            everywhere.extend(s)
        assert len(everywhere) == len(set(everywhere)), f"{self.name}: duplicate line"
        assert set(everywhere) <= self.seen, f"{self.name}: cached line never seen"
        assert len(self.shadow.lines) <= self.shadow.capacity
        assert self.hits + self.misses == self.lookups, f"{self.name}: hits + misses != lookups"
        assert sum(self.by_class.values()) == self.misses, f"{self.name}: 3C != misses"
        assert self.fills == self.misses - self.forwarded_stores
        assert self.write_allocate_fills <= self.fills
        assert self.store_hits <= self.hits
        assert sum(self.traffic.values()) + self.prefetch_bytes_below() == self.traffic_below()
        assert self.pf_lines <= set().union(*self.sets), f"{self.name}: prefetched line not held"
        assert self.pf_filled == self.pf_useful + self.pf_useless + len(self.pf_lines)
        assert self.by_class["compulsory"] <= len(self.seen)
        assert len(self.written_back) <= self.writebacks


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


# ============================================================================ kernels
# Plain loop nests that produce each kernel's trace as a list of (addr, size, kind),
# from a bound plan's layout and parameters: the twins the generators of
# hroof.traces must match element by element (tests/test_kernels.py, test_stencils.py,
# test_dense.py, test_sparse.py).

#: STREAM kernels: the arrays loaded, in order, and the array stored.
STREAM_ARRAYS = {
    "copy": (("a",), "c"),
    "scale": (("c",), "b"),
    "add": (("a", "b"), "c"),
    "triad": (("x", "y"), "z"),
    "daxpy": (("x", "y"), "y"),
}


def naive_stream(plan):
    """The STREAM loop written out: for i, the loads in order, then the store."""
    loads, store = STREAM_ARRAYS[plan.kernel]
    arrays = {a.name: a for a in plan.arrays}
    elem = arrays[store].elem
    store_kind = 2 if plan.params["nt"] else 1
    trace = []
    for i in range(plan.params["n"]):
        for name in loads:
            trace.append((arrays[name].base + i * elem, elem, 0))
        trace.append((arrays[store].base + i * elem, elem, store_kind))
    return trace


def _grid(plan):
    """The plan's grid: sizes, strides (elements), element size, and the two bases."""
    p = plan.params
    nx = p["nx"] or p["n"]
    ny = p["ny"] or p["n"]
    three_d = "nz" in p
    nz = (p["nz"] or p["n"]) if three_d else 1
    js = nx + 2 + p["pad_row"]
    ks = js * (ny + 2) + (p["pad_plane"] if three_d else 0)
    old, new = plan.arrays
    assert old.name == "old" and new.name == "new"
    return nx, ny, nz, js, ks, old.elem, old.base, new.base, three_d


def _range(lo, hi, step):
    return range(lo, hi, step if step else hi - lo)


def stencil_trace(plan):
    """The trace of ``plan`` (any of stencil5, stencil7, stencil27), by loop nest."""
    nx, ny, nz, js, ks, elem, a, b, three_d = _grid(plan)
    p = plan.params
    bj, bk = p.get("bj", 0), p.get("bk", 0)
    trace = []
    old, new = a, b
    for _sweep in range(p["sweeps"]):
        for kk in _range(1, nz + 1, bk):
            for jj in _range(1, ny + 1, bj):
                for k in range(kk, min(kk + (bk or nz), nz + 1)):
                    for j in range(jj, min(jj + (bj or ny), ny + 1)):
                        for i in range(1, nx + 1):
                            # 2D grids have no k halo: row j of the only plane.
                            c = i + j * js + (k * ks if three_d else 0)
                            for off in _offsets(plan.kernel, js, ks):
                                trace.append((old + (c + off) * elem, elem, 0))
                            trace.append((new + c * elem, elem, 1))
        old, new = new, old
    return trace


def _offsets(kernel, js, ks):
    if kernel == "stencil5":
        return [0, -1, +1, -js, +js]
    if kernel == "stencil7":
        return [0, -1, +1, -js, +js, -ks, +ks]
    assert kernel == "stencil27"
    out = []
    for dk in (-1, 0, 1):
        for dj in (-1, 0, 1):
            for di in (-1, 0, 1):
                out.append(dk * ks + dj * js + di)
    return out


def distinct_bytes(trace):
    """Number of distinct bytes the trace touches."""
    touched = set()
    for addr, size, _kind in trace:
        for byte in range(size):
            touched.add(addr + byte)
    return len(touched)


def naive_dgemv(plan):
    """The DGEMV loop written out: load A[i][j], load x[j]; store y[i] after each row."""
    a, x, y = plan.arrays
    e = a.elem
    n = plan.params["n"]
    m = plan.params["m"] or n
    trace = []
    for i in range(m):
        for j in range(n):
            trace.append((a.base + (i * n + j) * e, e, 0))
            trace.append((x.base + j * e, e, 0))
        trace.append((y.base + i * e, e, 1))
    return trace


def tile_ranges(size, tile):
    """The (start, stop) of each tile of a loop of ``size`` (0: one tile of everything)."""
    tile = tile or size
    return [(s, min(s + tile, size)) for s in range(0, size, tile)]


def naive_gemm(plan):
    """The tiled GEMM loop nest written out: tile loops in ``order``, then the points of
    a tile in ``order``; each point loads A[i][p], B[p][j], C[i][j] and stores C[i][j]."""
    a, b, c = plan.arrays
    e = a.elem
    prm = plan.params
    m, n, k = prm["m"], prm["n"], prm["k"]
    size = {"i": m, "j": n, "k": k}
    tile = {"i": prm["ti"], "j": prm["tj"], "k": prm["tk"]}
    order = prm["order"]
    trace = []
    l0, l1, l2 = order
    for r0 in tile_ranges(size[l0], tile[l0]):
        for r1 in tile_ranges(size[l1], tile[l1]):
            for r2 in tile_ranges(size[l2], tile[l2]):
                for x0 in range(*r0):
                    for x1 in range(*r1):
                        for x2 in range(*r2):
                            idx = {l0: x0, l1: x1, l2: x2}
                            i, j, p = idx["i"], idx["j"], idx["k"]
                            trace.append((a.base + (i * k + p) * e, e, 0))
                            trace.append((b.base + (p * n + j) * e, e, 0))
                            trace.append((c.base + (i * n + j) * e, e, 0))
                            trace.append((c.base + (i * n + j) * e, e, 1))
    return trace


def naive_spmv(plan):
    """The CSR loop written out: rowptr[0] once; per row rowptr[i+1], then per nonzero
    val[j], col[j], x[col[j]], then the store of y[i]."""
    rowptr, col = plan.args[0].tolist(), plan.args[1].tolist()
    a = {arr.name: arr for arr in plan.arrays}
    ib, elem = a["rowptr"].elem, a["val"].elem
    trace = [(a["rowptr"].base, ib, 0)]
    for i in range(len(rowptr) - 1):
        trace.append((a["rowptr"].base + (i + 1) * ib, ib, 0))
        for j in range(rowptr[i], rowptr[i + 1]):
            trace.append((a["val"].base + j * elem, elem, 0))
            trace.append((a["col"].base + j * ib, ib, 0))
            trace.append((a["x"].base + col[j] * elem, elem, 0))
        trace.append((a["y"].base + i * elem, elem, 1))
    return trace


def naive_blocks(nrows, ncols, rowptr, col, r, c):
    """Block CSR by hand: the set of (block row, block column) holding a nonzero, then
    per block row its sorted block columns. Returns (browptr, bcol, pad_rows, pad_cols)."""
    nbrows = (nrows + r - 1) // r
    nbcols = (ncols + c - 1) // c
    occupied = set()
    for i in range(nrows):
        for j in range(rowptr[i], rowptr[i + 1]):
            occupied.add((i // r, col[j] // c))
    browptr, bcol = [0], []
    for bi in range(nbrows):
        cols = sorted(bj for bb, bj in occupied if bb == bi)
        bcol.extend(cols)
        browptr.append(len(bcol))
    return browptr, bcol, nbrows * r - nrows, nbcols * c - ncols


def naive_bcsr(plan):
    """The register-blocked (BCSR) loop written out from the plan's CSR matrix: browptr[0]
    once; per block row browptr[I+1]; per block bcol[b], the c x values, the r*c values
    row by row; then the r stores of y. Returns (trace, browptr, bcol)."""
    from hroof.traces.sparse import matrix_csr

    nrows, ncols, rowptr, col = matrix_csr(plan.params)
    r, c = plan.params["r"], plan.params["c"]
    browptr, bcol, _, _ = naive_blocks(nrows, ncols, rowptr.tolist(), col.tolist(), r, c)
    a = {arr.name: arr for arr in plan.arrays}
    ib, e = a["browptr"].elem, a["bval"].elem
    trace = [(a["browptr"].base, ib, 0)]
    for bi in range(len(browptr) - 1):
        trace.append((a["browptr"].base + (bi + 1) * ib, ib, 0))
        for b in range(browptr[bi], browptr[bi + 1]):
            trace.append((a["bcol"].base + b * ib, ib, 0))
            for jj in range(c):
                trace.append((a["x"].base + (bcol[b] * c + jj) * e, e, 0))
            for ii in range(r):
                for jj in range(c):
                    trace.append((a["bval"].base + (b * r * c + ii * c + jj) * e, e, 0))
        for ii in range(r):
            trace.append((a["y"].base + (bi * r + ii) * e, e, 1))
    return trace, browptr, bcol


def naive_coalescing(addrs, sizes, per_thread=1, segments=(32, 64, 128), warp=32):
    """Warp transactions the plain way: every group of ``warp * per_thread`` accesses is
    ``warp`` threads of ``per_thread`` accesses; the j-th access of each thread forms one
    warp instruction (a trailing partial group makes shorter warps); per warp, the set of
    aligned segments and the set of bytes its accesses touch.

    Returns (warps, used_bytes, {segment: transactions}).
    """
    addrs, sizes = [int(a) for a in addrs], [int(s) for s in sizes]
    group = warp * per_thread
    warps = []
    for g in range(0, len(addrs), group):
        members = list(range(g, min(g + group, len(addrs))))
        for j in range(per_thread):
            w = [i for i in members if (i - g) % per_thread == j]
            if w:
                warps.append(w)
    count, used, tr = 0, 0, {s: 0 for s in segments}
    for w in warps:
        touched = set()
        for i in w:
            touched.update(range(addrs[i], addrs[i] + sizes[i]))
        if not touched:
            continue
        count += 1
        used += len(touched)
        for s in segments:
            tr[s] += len({b // s for b in touched})
    return count, used, tr


# ============================================================================ several cores
#: Counters of a shared level attributed to the core whose access caused them.
SHARED_FIELDS = (
    "lookups", "misses", "write_allocate_fills", "writebacks_in", "writebacks", "invalidations",
)  # fmt: skip


class NaiveMultiCore:
    """``cores`` private copies of the levels above ``first_shared`` and one copy of
    the levels from it down (docs/cache-model.md, "Several cores").

    Each core is a :class:`NaiveHierarchy` whose level list holds its own private
    :class:`NaiveLevel` objects followed by the *same* shared objects, so a core's
    access recurses from its L1 into the one shared copy, access by access.
    """

    def __init__(self, levels, cores, first_shared):
        if hasattr(levels, "levels"):
            levels = levels.levels
        self.cores = cores
        self.s = first_shared
        proto = [self._hierarchy(levels) for _ in range(cores)]
        shared = proto[0].levels[first_shared:]
        for h in proto:
            h.levels[first_shared:] = shared
        self.h = proto
        self.attr = [{lv.name: dict.fromkeys(self.fields, 0) for lv in shared}
                     for _ in range(cores)]  # fmt: skip
        self.gone_in_flush = 0  # lines of a set being flushed that an eviction took first

    fields = SHARED_FIELDS  # the shared levels' counters attributed to a core

    def _hierarchy(self, levels):
        return NaiveHierarchy(levels)

    def access(self, c, addr, size, kind):
        """One access of core ``c``; its effects on the shared levels are counted for it."""
        shared = self.h[c].levels[self.s :]
        before = [[getattr(lv, f) for f in self.fields] for lv in shared]
        self.h[c].access(addr, size, kind)
        for lv, old in zip(shared, before, strict=True):
            for f, v in zip(self.fields, old, strict=True):
                self.attr[c][lv.name][f] += getattr(lv, f) - v

    def run_step(self, streams, grain):
        """One time step: ``streams[c]`` lists core ``c``'s accesses; round-robin in grains
        of ``grain`` accesses, a core whose stream has ended skipped."""
        pos = [0] * self.cores
        while any(pos[c] < len(streams[c]) for c in range(self.cores)):
            for c in range(self.cores):
                for addr, size, kind in streams[c][pos[c] : pos[c] + grain]:
                    self.access(c, int(addr), int(size), int(kind))
                pos[c] = min(pos[c] + grain, len(streams[c]))

    def _flush_level(self, c, i):
        h = self.h[c]
        for s in h.levels[i].sets:
            for line in list(s):  # least recently used first
                # a writeback sent down may evict from an inclusive shared level, whose
                # back-invalidation can take a later line of this very set (another core's
                # copy carried down, or this core's own): it has left, nothing to flush
                if line not in s:
                    self.gone_in_flush += 1
                elif s[line]:
                    s[line] = False
                    h._send_writeback(i, line)

    def flush(self):
        """Core by core its private levels from L1 down; then the shared levels."""
        for c in range(self.cores):
            shared = self.h[c].levels[self.s :]
            before = [[getattr(lv, f) for f in self.fields] for lv in shared]
            for i in range(self.s):
                self._flush_level(c, i)
            for lv, old in zip(shared, before, strict=True):
                for f, v in zip(self.fields, old, strict=True):
                    self.attr[c][lv.name][f] += getattr(lv, f) - v
        for i in range(self.s, len(self.h[0].levels)):
            self._flush_level(0, i)

    def result(self, classify=True):
        """The hierarchy's totals (private levels summed over the cores), shaped like
        :meth:`NaiveHierarchy.result`, plus ``per_core``: each core's private levels and
        its share of the shared levels' counters."""
        each = [h.result(classify=classify) for h in self.h]
        out = self.h[0].result(classify=classify)  # a fresh copy: totals go into it
        out["core"] = {k: sum(r["core"][k] for r in each) for k in out["core"]}
        for i, lv in enumerate(out["levels"]):
            if i <= self.s:
                keys = [k for k in lv if k != "name"] if i < self.s else ["bytes"]
                if i == self.s and "prefetch_bytes" in lv:
                    keys.append("prefetch_bytes")
                for k in keys:
                    if isinstance(lv[k], dict):
                        lv[k] = {p: sum(r["levels"][i][k][p] for r in each) for p in lv[k]}
                    elif isinstance(lv[k], int):
                        lv[k] = sum(r["levels"][i][k] for r in each)
        if self.s == len(out["levels"]):
            for k in out["memory"]:
                out["memory"][k] = sum(r["memory"][k] for r in each)
        else:  # one last level; every core's NT-store bytes go to memory
            nt = sum(r["core"]["bytes_nt"] for r in each[1:])
            out["memory"]["bytes_written"] += nt
            out["memory"]["bytes"] += nt
        out["per_core"] = [
            {"private": r["levels"][: self.s], "shared": self.attr[c]} for c, r in enumerate(each)
        ]
        return out


class _CoreView(NaiveHierarchy):
    """One core's hierarchy in :class:`NaiveMultiCorePolicies`: its private levels, then
    the shared ones, with an inclusive shared level's eviction reaching every core."""

    def __init__(self, levels, owner):
        super().__init__(levels)
        self.owner = owner

    def _drop_copies(self, lo, hi, line, n):
        """Drop ``line`` from this view's levels ``lo .. hi - 1`` (back-invalidations); ``n``
        writebacks of it arrive at ``lo``, a dirty copy's data is carried down. Returns
        the writebacks arriving at ``hi`` (0 or 1)."""
        for j in range(lo, hi):
            up = self.levels[j]
            if n:
                up.writebacks_in += n
                up.seen.add(line)
            carry = n > 0
            s = up.set_of(line)
            if line in s:
                up.back_invalidations += 1
                up.lose(line)
                carry |= s.pop(line)
            up.shadow.drop(line)
            if carry:
                self._count_writeback(j, line)
            n = 1 if carry else 0
        return n

    def _evict(self, i, line, dirty):
        mc = self.owner
        lv = self.levels[i]
        if lv.inclusion != INCLUSIVE or i < mc.s:
            super()._evict(i, line, dirty)
            return
        # Every core's private copies (core 0 first, each from L1 down), then the
        # shared levels above this one, where each carried dirty copy arrives.
        n = sum(h._drop_copies(0, mc.s, line, 0) for h in mc.h)
        n = self._drop_copies(mc.s, i, line, n)
        if n:
            lv.writebacks_in += n
            dirty = True
        below = self.levels[i + 1] if i + 1 < len(self.levels) else None
        if dirty:
            self._send_writeback(i, line)
        elif below is not None and below.passes_through:
            lv.victims += 1
            lv.traffic["capacity"] += lv.line
            self._victim_in(i + 1, line, dirty=False)


class NaiveMultiCorePolicies(NaiveMultiCore):
    """:class:`NaiveMultiCore` with inclusion policies and prefetchers (docs/cache-model.md,
    "Several cores"): an exclusive or victim shared level takes the victims of every
    core's level above it (each core's view recurses into the one shared copy); an
    inclusive shared level's eviction drops the copies in every core's private levels
    (:class:`_CoreView`); a private prefetcher trains on its core's lookups, a shared
    one (its table lives in the shared level) on every core's."""

    fields = (*SHARED_FIELDS, "victims", "victims_in", "back_invalidations")

    def _hierarchy(self, levels):
        return _CoreView(levels, self)
