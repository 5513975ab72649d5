"""One level of the reference model: its sets, its 3C shadow, its counters and its
prefetcher (see :mod:`hroof.cachesim.reference`)."""

from __future__ import annotations

from collections import OrderedDict

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


class Sets:
    """The ``n`` sets of a level, each an ``OrderedDict`` (line -> dirty flag, least
    recently used first) made when first used, so that a large level (a 27.5 MiB L3 has
    40,960 sets) costs nothing until a line maps to it. Iterating yields the sets made so
    far in index order (one never used holds no line: nothing to flush or check)."""

    def __init__(self, n):
        self.n = n
        self.made = {}  # set index -> OrderedDict

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        if not 0 <= index < self.n:
            raise IndexError(index)
        s = self.made.get(index)
        if s is None:
            s = self.made[index] = OrderedDict()
        return s

    def items(self):
        """``(index, set)`` of the sets made so far, in index order."""
        return [(i, self.made[i]) for i in sorted(self.made)]

    def __iter__(self):
        return iter([s for _, s in self.items()])


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
        self.sets = Sets(self.nsets)
        self.shadow = FullyAssociativeLRU(self.nsets * ways)
        self.seen = set()  # lines looked up here or written back into here
        self.written_back = set()  # lines this level has sent down at least once
        self.reset_counters()

    def reset_counters(self):
        """Zero the counters; the contents, the 3C state (shadow, lines seen, lines written
        back before), the lines marked prefetched and the stride table stay, as the
        simulator's ``reset_counters`` keeps them (a steady-state run's warm-up)."""
        self.pf_issued = self.pf_filled = self.pf_useful = self.pf_useless = 0
        self.pf_lookups = self.pf_misses = 0  # prefetch lookups from above, and their misses
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
        made = self.sets.made
        index = line % self.nsets
        s = made.get(index)
        if s is None:
            s = made[index] = OrderedDict()
        return s

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
        for index, s in self.sets.items():
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
