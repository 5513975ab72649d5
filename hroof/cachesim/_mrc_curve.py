"""The result of a miss-ratio curve pass (:class:`MissRatioCurve`, schema ``hroof.mrc/1``).

:mod:`hroof.cachesim.mrc` computes it and re-exports everything here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from hroof._base.errors import HroofError

SCHEMA = "hroof.mrc/1"


@dataclass(frozen=True)
class MissRatioCurve:
    """The LRU misses of a stream at every capacity (fully associative) and associativity.

    Attributes
    ----------
    line : int
        Line size, bytes.
    lookups : int
        Counted references (loads, stores, RFOs; not arriving writebacks).
    tail : numpy.ndarray
        ``tail[c]``: lookups missing in a fully-associative LRU cache of ``c``
        lines (``c = 0 .. len-1``; beyond, ``tail[-1]``). Floats when sampled.
    compulsory : int or float
        Lookups of lines never seen before (misses at any capacity).
    reloads : int or float
        Lookups of lines seen before but invalidated since (non-temporal stores).
    distinct_lines : int
        Distinct lines of the stream (exact streams; the estimate when sampled).
    writes : int
        Arriving writebacks (allocate, not lookups).
    sets, max_ways : int or None
        The set-associative geometry of ``sa_misses``.
    sa_misses : numpy.ndarray or None
        ``sa_misses[w-1]``: misses with ``sets`` sets of ``w`` ways, ``w = 1 .. max_ways``.
    sample : dict or None
        SHARDS: ``rate``, ``mode`` (``"rate"``/``"size"``), ``sampled_lookups``,
        ``error_estimate`` (mean absolute miss-ratio error, estimated), ``size``.
    source : dict
        What the stream was (kernel and parameters, trace, machine and level).
    """

    line: int
    lookups: int
    tail: np.ndarray
    compulsory: float
    reloads: float
    distinct_lines: int
    writes: int = 0
    sets: int | None = None
    max_ways: int | None = None
    sa_misses: np.ndarray | None = None
    sample: dict | None = None
    source: dict = field(default_factory=dict)
    state_bytes: int = 0

    def misses(self, lines):
        """Misses of a fully-associative LRU cache of ``lines`` lines (scalar or array)."""
        c = np.asarray(lines, dtype=np.int64)
        if (c < 0).any():
            raise HroofError(f"capacities must be >= 0 lines, got {lines!r}")
        out = self.tail[np.minimum(c, self.tail.shape[0] - 1)]
        return out.item() if out.ndim == 0 else out

    def misses_at_bytes(self, nbytes):
        """Misses at a capacity in bytes (whole lines: ``nbytes // line``)."""
        return self.misses(np.asarray(nbytes, dtype=np.int64) // self.line)

    def miss_ratio(self, lines):
        """``misses(lines) / lookups`` (0 for an empty stream)."""
        m = np.asarray(self.misses(lines), dtype=np.float64)
        out = m / self.lookups if self.lookups else np.zeros_like(m)
        return out.item() if out.ndim == 0 else out

    @property
    def sampled(self) -> bool:
        return self.sample is not None

    def to_dict(self, capacities=None) -> dict:
        """JSON-ready (schema ``hroof.mrc/1``), the curve at ``capacities`` lines."""
        caps = default_capacities(self) if capacities is None else np.asarray(capacities)
        miss = np.asarray(self.misses(caps), dtype=np.float64)

        def num(x):
            return int(x) if not self.sampled else round(float(x), 3)

        out = {
            "schema": SCHEMA,
            "source": dict(self.source),
            "line": self.line,
            "lookups": self.lookups,
            "writes": self.writes,
            "compulsory": num(self.compulsory),
            "reloads": num(self.reloads),
            "distinct_lines": self.distinct_lines,
            "sample": None if self.sample is None else dict(self.sample),
            "curve": [
                {
                    "lines": int(c),
                    "bytes": int(c) * self.line,
                    "misses": num(m),
                    "miss_ratio": float(m) / self.lookups if self.lookups else 0.0,
                }
                for c, m in zip(caps.tolist(), miss.tolist(), strict=True)
            ],
            "set_associative": None,
        }
        if self.sa_misses is not None:
            out["set_associative"] = {
                "sets": self.sets,
                "max_ways": self.max_ways,
                "curve": [
                    {
                        "ways": w + 1,
                        "bytes": (w + 1) * self.sets * self.line,
                        "misses": int(m),
                        "miss_ratio": int(m) / self.lookups if self.lookups else 0.0,
                    }
                    for w, m in enumerate(self.sa_misses.tolist())
                ],
            }
        return out


def default_capacities(curve: MissRatioCurve, per_octave: int = 4) -> np.ndarray:
    """Capacities (lines) from 1 to past the distinct lines, ``per_octave`` points a doubling."""
    top = max(2, int(curve.distinct_lines) * 2)
    k = np.arange(0, int(math.log2(top) * per_octave) + 2)
    caps = np.unique(np.round(2.0 ** (k / per_octave)).astype(np.int64))
    return np.concatenate(([0], caps))
