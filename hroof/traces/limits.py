"""Limits on what a trace costs to simulate, checked before the simulator allocates it.

The simulator cuts every access that straddles cache lines into one piece per line, and with
classification keeps a page of flags for every 512-line region a trace touches (1 to 4 bytes
a line when the lines are dense, a whole page a line when every line lies in its own region;
the estimate here takes the widest flag word, 4 bytes, so it errs on the safe side).
Neither cost is bounded by the chunk size: an access of 4 GiB is 67 million pieces, a random
trace of a million lines a million pages. :func:`guard_chunks` wraps a trace's chunks and, in
front of the simulator,

* re-cuts each chunk so that no chunk expands to more than :data:`MAX_PIECES` line pieces
  (an access larger than that alone is simulated alone, if its pieces fit in memory, or
  refused with the figure), and
* with classification, counts the distinct flag pages the trace has touched so far and
  refuses, before the chunk that would pass the machine's memory, with the figure and the
  way out (``--no-classify``).

:func:`check_plan` does the same up front for a kernel, whose extent is known: its flag
pages are bounded by its arrays, its time by its access count.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from hroof._base.guards import check_memory, check_time

#: Line pieces one chunk may expand to (a piece costs the simulator about
#: :data:`BYTES_PER_PIECE` bytes while the chunk is processed).
MAX_PIECES = 1 << 21
#: Bytes of temporaries per line piece in the simulator (split, events per level).
BYTES_PER_PIECE = 128
#: Lines per flag page of the classification (``hroof.cachesim``'s page: 512 lines of at
#: most 4 bytes each; tests/test_fuzz.py checks the two agree).
PAGE_LINES = 512
#: Bytes one flag page costs at the peak of its table's growth (the table doubles: the
#: old and the new copy, and the page table's key and value). Up to 8 levels (words of
#: at most 2 bytes) this also covers the second copy a simulation on two threads keeps.
BYTES_PER_PAGE = 3 * 4 * PAGE_LINES + 32
#: The simulator's pace, accesses per second, used only to refuse absurd requests.
PACE = 1e8
#: Longest simulation accepted, in seconds (a week at :data:`PACE`: beyond that the request
#: is a typo).
MAX_SECONDS = 7 * 24 * 3600.0

#: Bytes the trace readers hold per access of a chunk (arrays and the parse's temporaries).
BYTES_PER_READ_ACCESS = 64
#: Bytes of a miss-ratio curve's state per distinct line (time bitmap, Fenwick tree and
#: line table, with their growth; ``hroof.cachesim.mrc`` keeps O(distinct lines)).
MRC_BYTES_PER_LINE = 48

_NO_CLASSIFY = "; --no-classify keeps memory bounded by the caches"


def check_plan(plan, line_bits: int, *, classify: bool, hint: str = _NO_CLASSIFY) -> None:
    """Refuse a kernel plan whose simulation would run for more than a week, or whose
    classification flags would not fit in memory (one line, with the figures)."""
    what = f"simulating {plan.kernel} ({plan.accesses:,} accesses)"
    check_time(plan.accesses, PACE, MAX_SECONDS, what, hint="; choose smaller sizes")
    if classify:
        region = PAGE_LINES << line_bits
        pages = sum(a.nbytes // region + 2 for a in plan.arrays)
        check_memory(
            pages * BYTES_PER_PAGE,
            f"classifying the misses of {plan.kernel} ({pages:,} flag pages)",
            hint=hint,
        )


def _spans(addr: np.ndarray, size: np.ndarray, line_bits: int) -> np.ndarray:
    """Lines each access covers (1 for a size the simulator will refuse anyway)."""
    a = addr.astype(np.int64, copy=False)
    s = np.clip(size.astype(np.int64, copy=False), 1, 1 << 40)
    return ((a + s - 1) >> line_bits) - (a >> line_bits) + 1


def guard_chunks(
    chunks: Iterable[tuple],
    line_bits: int,
    *,
    classify: bool,
    max_pieces: int = MAX_PIECES,
    hint: str = _NO_CLASSIFY,
) -> Iterator[tuple]:
    """The chunks of a trace, re-cut so none expands past ``max_pieces`` line pieces, and
    with classification checked page by page against the memory available (see the module
    docstring). The accesses and their order are unchanged."""
    seen = np.empty(0, dtype=np.int64)
    page_bits = line_bits + PAGE_LINES.bit_length() - 1
    for addr, size, kind in chunks:
        addr, size = np.asarray(addr), np.asarray(size)
        if classify and addr.size:
            seen = _count_pages(addr, page_bits, seen)
            check_memory(
                seen.size * BYTES_PER_PAGE,
                f"classifying the misses of this trace ({seen.size:,} distinct 512-line "
                "regions so far)",
                hint=hint,
            )
        if not addr.size or addr.dtype.kind not in "iu" or size.dtype.kind not in "iu":
            yield addr, size, kind  # the simulator reports what is wrong
            continue
        spans = _spans(addr, size, line_bits)
        total = np.cumsum(spans)
        if total[-1] <= max_pieces:
            yield addr, size, kind
            continue
        start = 0
        while start < addr.size:
            base = total[start - 1] if start else 0
            end = max(int(np.searchsorted(total, base + max_pieces, "right")), start + 1)
            if end == start + 1 and spans[start] > max_pieces:
                check_memory(
                    int(spans[start]) * BYTES_PER_PIECE,
                    f"an access of {int(size[start]):,} bytes ({int(spans[start]):,} cache lines)",
                )
            yield addr[start:end], size[start:end], kind[start:end]
            start = end


def _count_pages(addr: np.ndarray, page_bits: int, seen: np.ndarray) -> np.ndarray:
    """``seen`` (sorted page numbers) with the pages of ``addr`` added."""
    pages = addr.astype(np.int64, copy=False) >> page_bits
    lo, hi = int(pages.min()), int(pages.max())
    if hi - lo < 1 << 22:  # dense: a bitmap, no sort
        hit = np.zeros(hi - lo + 1, dtype=bool)
        hit[pages - lo] = True
        new = np.flatnonzero(hit) + lo
    else:
        new = _sorted_unique(pages)
    if seen.size and new[0] >= seen[0] and new[-1] <= seen[-1] and new.size <= seen.size:
        idx = np.searchsorted(seen, new)
        if np.array_equal(seen[np.minimum(idx, seen.size - 1)], new):
            return seen  # nothing new (the common case of a dense stream)
    # Two sorted runs: the stable sort (timsort) merges them in linear time.
    return _sorted_unique(np.concatenate([seen, new]), kind="stable")


def _sorted_unique(x: np.ndarray, kind: str = "quicksort") -> np.ndarray:
    """``np.unique`` by a sort (NumPy 2's ``unique`` took 15x a sort on 1 Mi int64 here)."""
    s = np.sort(x, kind=kind)
    keep = np.empty(s.size, dtype=bool)
    keep[:1] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


__all__ = ["MAX_PIECES", "PAGE_LINES", "check_plan", "guard_chunks"]
