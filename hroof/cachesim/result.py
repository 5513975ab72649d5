"""Immutable simulation results and their ``hroof.result/1`` JSON form."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

SCHEMA = "hroof.result/1"
MISS_CLASSES = ("compulsory", "capacity", "conflict")
TRAFFIC_PARTS = ("compulsory", "write_allocate", "capacity", "conflict")


def _ai(flops: int | None, nbytes: int) -> float | None:
    """Arithmetic intensity in FLOP/byte; None when flops are unknown or no bytes moved."""
    if flops is None or nbytes == 0:
        return None
    return flops / nbytes


@dataclass(frozen=True)
class CoreCounts:
    """What the core issued: accesses (not lines) and their bytes."""

    loads: int = 0
    stores: int = 0
    nt_stores: int = 0
    bytes_loaded: int = 0
    bytes_stored: int = 0
    bytes_nt: int = 0

    @property
    def accesses(self) -> int:
        return self.loads + self.stores + self.nt_stores

    def to_dict(self) -> dict:
        return {
            "loads": self.loads,
            "stores": self.stores,
            "nt_stores": self.nt_stores,
            "bytes_loaded": self.bytes_loaded,
            "bytes_stored": self.bytes_stored,
            "bytes_nt": self.bytes_nt,
        }


@dataclass(frozen=True)
class LevelResult:
    """Counters of one cache level; see ``docs/cache-model.md`` for each field.

    ``bytes`` are the bytes of this level (what it moves for the level above)
    and ``traffic_below`` the four-part split of the bytes it moves to the
    level below (None without classification).
    """

    name: str
    size: int
    ways: int
    line: int
    sets: int
    lookups: int
    hits: int
    misses: int
    misses_by_class: dict[str, int] | None
    write_allocate_fills: int
    forwarded_stores: int
    forwarded_store_bytes: int
    writebacks_in: int
    writebacks: int
    invalidations: int
    bytes: int
    ai: float | None
    traffic_below: dict[str, int] | None
    traffic_below_bytes: int
    #: The inclusion policy and its counters (docs/cache-model.md, "Inclusion policies");
    #: results written before they existed load as a NINE level with zeros.
    inclusion: str = "nine"
    victims: int = 0
    victims_in: int = 0
    back_invalidations: int = 0
    #: The prefetcher and its counters (docs/cache-model.md, "Prefetchers"); results
    #: written before they existed load as a level without one, with zeros.
    #: ``bytes`` and ``traffic_below_bytes`` include the prefetch traffic
    #: (``prefetch_bytes``, ``prefetch_bytes_below``); ``ai_demand`` leaves it out.
    prefetch: str = "none"
    prefetches_issued: int = 0
    prefetches_filled: int = 0
    prefetches_useful: int = 0
    prefetches_useless: int = 0
    prefetches_unused_at_end: int = 0
    prefetch_lookups: int = 0
    prefetch_misses: int = 0
    prefetch_bytes: int = 0
    prefetch_bytes_below: int = 0
    ai_demand: float | None = None

    @property
    def timed_bytes(self) -> int:
        """The bytes that take this level's bandwidth time: :attr:`bytes` less the clean
        lines the level above evicted into it (an exclusive or victim level), which a
        measured load bandwidth of such a cache already includes (docs/cache-model.md,
        "Time at an exclusive or victim level"). Equal to :attr:`bytes` at a NINE or
        inclusive level."""
        return self.bytes - self.victims_in * self.line

    @property
    def fills(self) -> int:
        """Misses that brought a line in (all but the forwarded stores)."""
        return self.misses - self.forwarded_stores

    @property
    def miss_ratio(self) -> float | None:
        return self.misses / self.lookups if self.lookups else None

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "size": self.size,
            "ways": self.ways,
            "line": self.line,
            "sets": self.sets,
            "lookups": self.lookups,
            "hits": self.hits,
            "misses": self.misses,
            "misses_by_class": None if self.misses_by_class is None else dict(self.misses_by_class),
            "write_allocate_fills": self.write_allocate_fills,
            "forwarded_stores": self.forwarded_stores,
            "forwarded_store_bytes": self.forwarded_store_bytes,
            "writebacks_in": self.writebacks_in,
            "writebacks": self.writebacks,
            "invalidations": self.invalidations,
            "bytes": self.bytes,
            "ai": self.ai,
            "traffic_below": None if self.traffic_below is None else dict(self.traffic_below),
            "inclusion": self.inclusion,
            "victims": self.victims,
            "victims_in": self.victims_in,
            "back_invalidations": self.back_invalidations,
            **{key: getattr(self, key) for key in PREFETCH_KEYS},
        }


#: The prefetch fields of a level (``LevelResult``, JSON ``levels[i]``).
PREFETCH_KEYS = (
    "prefetch",
    "prefetches_issued",
    "prefetches_filled",
    "prefetches_useful",
    "prefetches_useless",
    "prefetches_unused_at_end",
    "prefetch_lookups",
    "prefetch_misses",
    "prefetch_bytes",
    "prefetch_bytes_below",
    "ai_demand",
)


@dataclass(frozen=True)
class MemoryResult:
    name: str
    bytes_read: int
    bytes_written: int
    ai: float | None
    #: The part of ``bytes_read`` that prefetch requests of the last level(s) moved.
    prefetch_bytes_read: int = 0

    @property
    def bytes(self) -> int:
        return self.bytes_read + self.bytes_written

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "bytes_read": self.bytes_read,
            "bytes_written": self.bytes_written,
            "bytes": self.bytes,
            "ai": self.ai,
            "prefetch_bytes_read": self.prefetch_bytes_read,
        }


@dataclass(frozen=True)
class SimResult:
    """The outcome of one simulation, schema ``hroof.result/1``.

    Attributes
    ----------
    source : dict
        ``{"kernel": ..., "params": ...}`` or ``{"trace": PATH, "format": ...}``.
    flops : int or None
        Floating-point operations of the run, if known; every ``ai`` is None
        without them.
    levels : tuple of LevelResult
        L1 first.
    """

    source: dict[str, Any]
    flops: int | None
    core: CoreCounts
    levels: tuple[LevelResult, ...]
    memory: MemoryResult
    timing: dict[str, float] = field(default_factory=dict)
    classified: bool = True
    flushed: bool = True
    machine: str | None = None
    #: Set sampling (see :mod:`hroof.cachesim.sampling`): None for a whole simulation.
    sampling: dict[str, Any] | None = None
    #: Threads the simulation ran on (2: L1 beside the levels below; same counts).
    threads: int = 1
    #: Several cores (docs/cache-model.md, "Several cores"): the number of cores, the
    #: round-robin grain (accesses), the names of the shared levels, and per core its
    #: issued accesses, its private levels' counters and its share of the shared
    #: levels' (JSON-ready dicts). A single-core run: 1, None, (), None.
    cores: int = 1
    grain: int | None = None
    shared_levels: tuple[str, ...] = ()
    per_core: tuple[dict, ...] | None = None
    #: The engine that ran the simulation: "numba" (the simulator) or "reference" (the
    #: plain-Python reference model, :mod:`hroof.cachesim.reference`; the same counts).
    #: Results written before it existed load as "numba", the only engine then.
    engine: str = "numba"

    @property
    def accesses(self) -> int:
        return self.core.accesses

    def level(self, name: str) -> LevelResult:
        for lvl in self.levels:
            if lvl.name == name:
                return lvl
        raise KeyError(f"no level named {name!r}; levels: {[lv.name for lv in self.levels]}")

    def to_dict(self) -> dict:
        d = {
            "schema": SCHEMA,
            "source": dict(self.source),
            "flops": self.flops,
            "accesses": self.accesses,
            "machine": self.machine,
            "options": {
                "classify": self.classified,
                "flush": self.flushed,
                "threads": self.threads,
                "engine": self.engine,
            },
            "core": self.core.to_dict(),
            "levels": [lvl.to_dict() for lvl in self.levels],
            "memory": self.memory.to_dict(),
            "timing": {
                key: float(self.timing.get(key, 0.0))
                for key in ("trace_s", "read_s", "generate_s", "check_s", "simulate_s")
            },
        }
        if self.sampling is not None:
            d["sampling"] = dict(self.sampling)
        if self.per_core is not None:
            d["cores"] = self.cores
            d["grain"] = self.grain
            d["shared_levels"] = list(self.shared_levels)
            d["per_core"] = [dict(c) for c in self.per_core]
        return d

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, d: dict) -> SimResult:
        """Rebuild a result from :meth:`to_dict`'s output (schema ``hroof.result/1``)."""
        if d.get("schema") != SCHEMA:
            raise ValueError(f"not a {SCHEMA} result (schema {d.get('schema')!r})")
        flops = d["flops"]
        levels = []
        below = [lv["bytes"] for lv in d["levels"][1:]]
        mem = d["memory"]
        nt = d["core"].get("bytes_nt", 0)
        below.append(mem["bytes"] - nt)
        for lv, traffic in zip(d["levels"], below, strict=True):
            levels.append(
                LevelResult(
                    name=lv["name"], size=lv["size"], ways=lv["ways"], line=lv["line"],
                    sets=lv["sets"], lookups=lv["lookups"], hits=lv["hits"],
                    misses=lv["misses"], misses_by_class=lv["misses_by_class"],
                    write_allocate_fills=lv["write_allocate_fills"],
                    forwarded_stores=lv.get("forwarded_stores", 0),
                    forwarded_store_bytes=lv.get("forwarded_store_bytes", 0),
                    writebacks_in=lv["writebacks_in"], writebacks=lv["writebacks"],
                    invalidations=lv.get("invalidations", 0), bytes=lv["bytes"],
                    ai=_ai(flops, lv["bytes"]), traffic_below=lv["traffic_below"],
                    traffic_below_bytes=traffic, inclusion=lv.get("inclusion", "nine"),
                    victims=lv.get("victims", 0), victims_in=lv.get("victims_in", 0),
                    back_invalidations=lv.get("back_invalidations", 0),
                    **{k: lv[k] for k in PREFETCH_KEYS if k in lv},
                )
            )  # fmt: skip
        options = d.get("options", {})
        return cls(
            source=dict(d["source"]),
            flops=flops,
            core=CoreCounts(**d["core"]),
            levels=tuple(levels),
            memory=MemoryResult(
                mem["name"],
                mem["bytes_read"],
                mem["bytes_written"],
                _ai(flops, mem["bytes"]),
                mem.get("prefetch_bytes_read", 0),
            ),
            timing=dict(d.get("timing", {})),
            classified=options.get("classify", True),
            flushed=options.get("flush", True),
            machine=d.get("machine"),
            sampling=d.get("sampling"),
            threads=options.get("threads", 1),
            engine=options.get("engine", "numba"),
            cores=int(d.get("cores", 1)),
            grain=d.get("grain"),
            shared_levels=tuple(d.get("shared_levels", ())),
            per_core=None if d.get("per_core") is None else tuple(d["per_core"]),
        )


def timing_dict(trace_s: float, generated: bool, check_s: float, simulate_s: float) -> dict:
    """A result's ``timing``: producing the trace (``read_s`` or ``generate_s``; their sum
    ``trace_s``, as before those two), simulating it (``simulate_s``, as before: checking
    the chunks included) and, part of that, checking the chunks (``check_s``)."""
    return {
        "trace_s": trace_s,
        "read_s": 0.0 if generated else trace_s,
        "generate_s": trace_s if generated else 0.0,
        "check_s": check_s,
        "simulate_s": check_s + simulate_s,
    }
