"""The reference model of several cores (docs/cache-model.md, "Several cores"): private
levels per core, one copy of the shared ones (see :mod:`hroof.cachesim.reference`)."""

from __future__ import annotations

from hroof.cachesim.reference.hierarchy import NaiveHierarchy
from hroof.cachesim.reference.level import INCLUSIVE

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
