"""The reference model: hroof's cache model in plain Python, one event at a time.

This package re-implements, as plainly as possible, the rules written down in
``docs/cache-model.md`` (and in the "Cache model", "Miss classification",
"Traffic partition", "Bytes and AI per level" and "Result schema" sections of
the design contract). It is deliberately slow and obvious: one ``OrderedDict``
per set (least recently used first; made when a line first maps to it), a
fully-associative ``OrderedDict`` LRU shadow per level for the 3C classification, and
Python sets for "seen at this level" and "written back from this level at least once".
The fast simulator
must match it counter for counter (the tests compare the two on every model feature);
nothing here imports the simulator, nor Numba. ``hroof simulate`` runs small kernels on
it (:mod:`hroof.cachesim.reference.engine`, ``--engine``): they finish before Numba
would have loaded.

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

from hroof.cachesim.reference.hierarchy import NaiveHierarchy, simulate
from hroof.cachesim.reference.level import (
    CLASSES,
    EXCLUSIVE,
    INCLUSIVE,
    LOAD,
    NINE,
    NT_STORE,
    PAGE,
    PAIR,
    PARTS,
    POLICIES,
    PREFETCHERS,
    READ,
    RFO,
    STORE,
    VICTIM,
    WRITE,
    FullyAssociativeLRU,
    NaiveLevel,
)
from hroof.cachesim.reference.multicore import (
    SHARED_FIELDS,
    NaiveMultiCore,
    NaiveMultiCorePolicies,
)

__all__ = [
    "CLASSES",
    "EXCLUSIVE",
    "INCLUSIVE",
    "LOAD",
    "NINE",
    "NT_STORE",
    "PAGE",
    "PAIR",
    "PARTS",
    "POLICIES",
    "PREFETCHERS",
    "READ",
    "RFO",
    "SHARED_FIELDS",
    "STORE",
    "VICTIM",
    "WRITE",
    "FullyAssociativeLRU",
    "NaiveHierarchy",
    "NaiveLevel",
    "NaiveMultiCore",
    "NaiveMultiCorePolicies",
    "simulate",
]
