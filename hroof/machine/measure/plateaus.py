"""Bandwidth plateaus of a working-set sweep, and which cache level each belongs to.

A bandwidth sweep measures GB/s at working sets from a few KiB to several times
the last-level cache. While the working set fits a level, the bandwidth stays
roughly level (a plateau); as it outgrows the level, it falls to the next
plateau. This is how the Empirical Roofline Toolkit (ERT) reads its sweeps: its
``summary.py`` bins the bandwidths of the points past the maximum and keeps bins
holding several points, merging two plateaus less than a factor 1.25 apart.

:func:`find_plateaus` does the same job on the curve in working-set order, so a
plateau is a contiguous range of sizes that can be matched to a cache level:

1. Split the points, smallest working set first, into runs: a point joins the
   current run while its bandwidth is within a factor ``1 + tol`` of the run's
   median; otherwise it starts a new run.
2. A run of at least ``min_points`` points is trimmed of end points more than
   ``tol / 2`` off the median of what is left (the head or tail of a ramp), and is a
   candidate if
   it is flat: 3/4 of its points within ``1 + tol`` of its median, and the
   least-squares line through log bandwidth against log2 working set falls or
   rises by at most ``slope`` (10 %) per doubling. The steps between cache levels
   fall by 30-50 % per doubling, so a ramp yields no plateau rather than an
   invented one; a level's own plateau may drift by a few per cent per doubling
   (prefetchers, a shared L3, per-pass overheads at the smallest sizes).
3. Two neighbouring candidates whose medians differ by less than a factor
   ``step`` are not separated by a clear step: they are merged, with the points
   between them (so an outlier inside a plateau does not split it), if the
   merged range is still flat; otherwise the longer one is kept.

:func:`match_levels` assigns each plateau to the level whose working-set range
(above the previous level's capacity, up to its own) it overlaps most on a log
scale, memory being everything above the last level. A level no plateau is
assigned to stays unknown, with a note saying why.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: Default relative tolerance of a plateau (10 %).
TOL = 0.10
#: Default least factor between two plateaus (ERT's 1.25).
STEP = 1.25
#: Default least points in a plateau.
MIN_POINTS = 3
#: Default largest drift of a plateau per doubling of the working set (10 %).
SLOPE = 0.10
#: A spread is too wide to trust when its interquartile range exceeds this share of the median.
WIDE = 0.10
#: Windows of :func:`level_figures`: a level's plateau is looked for from AFTER times the
#: previous level's capacity up to BEFORE times its own; memory's from MEMORY_AFTER times
#: the last level's capacity up.
AFTER = 1.5
BEFORE = 0.8
MEMORY_AFTER = 2.0
#: Relative tolerance of a plateau inside a window (the window already keeps levels apart,
#: so it can be looser than :data:`TOL`; DRAM on a shared host wobbles by 10-20 %).
WINDOW_TOL = 0.15
#: Relative tolerance of memory's plateau: on a shared host the neighbours' traffic makes
#: DRAM bandwidth wobble by 20-25 % from one working set to the next.
MEMORY_TOL = 0.25
#: A window's plateau must span at least this share of the window's points (and
#: ``min_points``): a two-point blip in a long window is no plateau.
MIN_SHARE = 0.3
#: A window's range is no plateau when a point before it in the window is this many
#: times faster: it is the bottom of a fall (as in the read curves of this host whose L1
#: points ran at 210, 156, 131, 118, 131 ... GB/s), not the level's own plateau.
FALL = 1.5


@dataclass(frozen=True)
class Plateau:
    """A range of working sets over which the bandwidth stays level.

    Attributes
    ----------
    start, stop : int
        Indices of its first point and one past its last, in the sweep.
    lo_bytes, hi_bytes : int
        Smallest and largest working set in it, bytes.
    gbs : float
        Its bandwidth: the median of its points, GB/s.
    points : int
        How many sweep points it spans.
    """

    start: int
    stop: int
    lo_bytes: int
    hi_bytes: int
    gbs: float
    points: int

    def to_dict(self) -> dict:
        return {
            "lo_bytes": self.lo_bytes,
            "hi_bytes": self.hi_bytes,
            "gbs": self.gbs,
            "points": self.points,
        }


def _validate(sizes, gbs) -> tuple[np.ndarray, np.ndarray]:
    sizes = np.asarray(sizes, dtype=np.float64)
    gbs = np.asarray(gbs, dtype=np.float64)
    if sizes.ndim != 1 or sizes.shape != gbs.shape:
        raise ValueError(
            f"sizes and gbs must be 1-D and of one length, got {sizes.shape} and {gbs.shape}"
        )
    if sizes.size and (np.any(np.diff(sizes) <= 0) or sizes[0] <= 0):
        raise ValueError("sizes must be positive and increasing")
    if np.any(~np.isfinite(gbs)) or np.any(gbs <= 0):
        raise ValueError("every bandwidth must be a positive finite number of GB/s")
    return sizes, gbs


def _runs(gbs: np.ndarray, tol: float) -> list[tuple[int, int]]:
    """Step 1: maximal runs of points within ``1 + tol`` of the run's median."""
    runs = []
    start = 0
    limit = math.log1p(tol)
    for i in range(1, len(gbs) + 1):
        if i == len(gbs) or abs(math.log(gbs[i] / np.median(gbs[start:i]))) > limit:
            runs.append((start, i))
            start = i
    return runs


def _trim(g: np.ndarray, start: int, stop: int, tol: float, min_points: int) -> tuple[int, int]:
    """Drop points at either end more than ``tol / 2`` off the median of what is left
    (the head or tail of a ramp into or out of the plateau), keeping ``min_points``."""
    limit = math.log1p(tol / 2)
    while stop - start > min_points:
        med = np.median(g[start:stop])
        head, tail = abs(math.log(g[start] / med)), abs(math.log(g[stop - 1] / med))
        if max(head, tail) <= limit:
            break
        if head >= tail:
            start += 1
        else:
            stop -= 1
    return start, stop


def _flat(x: np.ndarray, g: np.ndarray, tol: float, slope: float) -> bool:
    """Most points near the median, and no trend: the least-squares line through
    log GB/s against log2 bytes changes by at most ``slope`` per doubling."""
    med = np.median(g)
    near = np.abs(np.log(g / med)) <= math.log1p(tol)
    if near.mean() < 0.75:
        return False
    if len(g) < 2:
        return True
    fitted = np.polyfit(np.log2(x), np.log(g), 1)[0]
    return abs(fitted) <= math.log1p(slope)


def find_plateaus(
    sizes: Sequence[float],
    gbs: Sequence[float],
    *,
    tol: float = TOL,
    step: float = STEP,
    min_points: int = MIN_POINTS,
    slope: float = SLOPE,
) -> list[Plateau]:
    """The bandwidth plateaus of a working-set sweep, smallest working set first.

    Parameters
    ----------
    sizes : sequence of float
        Working sets, bytes, increasing.
    gbs : sequence of float
        Bandwidth at each, GB/s (positive).
    tol : float
        Relative spread allowed within a plateau (0.10: within 10 % of its median).
    step : float
        Least ratio between neighbouring plateaus (ERT uses 1.25); closer ones merge.
    min_points : int
        Least points in a plateau.
    slope : float
        Largest relative change per doubling of the working set within a plateau.

    Returns
    -------
    list of Plateau
        Possibly empty (a ramp, or too few points); no two neighbours closer than ``step``.

    Examples
    --------
    >>> sizes = [2**k for k in range(10, 22)]
    >>> bw = [200, 201, 199, 200, 100, 101, 99, 100, 20, 20, 21, 20]
    >>> [(p.gbs, p.points) for p in find_plateaus(sizes, bw)]
    [(200.0, 4), (100.0, 4), (20.0, 4)]
    """
    if not tol > 0 or not step > 1 or min_points < 2:
        raise ValueError(
            f"need tol > 0, step > 1, min_points >= 2; got {tol}, {step}, {min_points}"
        )
    sizes, gbs = _validate(sizes, gbs)

    def judged(start: int, stop: int) -> tuple[int, int] | None:
        start, stop = _trim(gbs, start, stop, tol, min_points)
        if stop - start >= min_points and _flat(sizes[start:stop], gbs[start:stop], tol, slope):
            return start, stop
        return None

    groups: list[tuple[int, int]] = []
    for run in _runs(gbs, tol):
        if run[1] - run[0] < min_points:
            continue
        cand = judged(*run)
        if cand is None:
            continue
        if groups:
            prev = groups[-1]
            a, b = np.median(gbs[prev[0] : prev[1]]), np.median(gbs[cand[0] : cand[1]])
            if max(a, b) / min(a, b) < step:  # no clear step between them
                merged = judged(prev[0], cand[1])
                if merged is not None:
                    groups[-1] = merged
                elif cand[1] - cand[0] > prev[1] - prev[0]:
                    groups[-1] = cand
                continue
        groups.append(cand)
    return [
        Plateau(start, stop, int(sizes[start]), int(sizes[stop - 1]),
                float(np.median(gbs[start:stop])), stop - start)
        for start, stop in groups
    ]  # fmt: skip


@dataclass(frozen=True)
class Spread:
    """How a figure varied over its trials (same unit as the figure).

    Attributes
    ----------
    lo, hi : float
        Smallest and largest trial.
    q1, q3 : float
        Lower and upper quartile of the trials.
    median : float
        Median trial.
    n : int
        Number of trials.
    """

    lo: float
    hi: float
    q1: float
    q3: float
    median: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        """The spread of some trial values (at least one).

        >>> s = Spread.of([10.0, 11.0, 12.0, 13.0, 30.0])
        >>> (s.lo, s.hi, s.median, s.q1, s.q3, s.wide)
        (10.0, 30.0, 12.0, 11.0, 13.0, True)
        """
        v = np.asarray(values, dtype=np.float64)
        if v.size == 0:
            raise ValueError("a spread needs at least one trial")
        q1, med, q3 = np.percentile(v, [25, 50, 75])
        return cls(float(v.min()), float(v.max()), float(q1), float(q3), float(med), int(v.size))

    @property
    def iqr_rel(self) -> float:
        """The interquartile range relative to the median."""
        return (self.q3 - self.q1) / self.median if self.median > 0 else math.inf

    @property
    def wide(self) -> bool:
        """Too wide to trust: the middle half of the trials spans more than
        :data:`WIDE` of the median."""
        return self.iqr_rel > WIDE

    def text(self, unit: str) -> str:
        """``"trials 110..118 GB/s (IQR 2 %)"``, plus a warning when :attr:`wide`."""
        out = (
            f"{self.n} trials {self.lo:.4g}..{self.hi:.4g} {unit} (IQR {self.iqr_rel * 100:.0f} %)"
        )
        if self.wide:
            out += "; spread too wide to trust (a busy machine?)"
        return out


@dataclass(frozen=True)
class LevelFigure:
    """A level's measured bandwidth, or why it has none.

    Attributes
    ----------
    name : str
        The level's (or memory's) name.
    gbs : float or None
        The plateau's bandwidth, GB/s, or None when no clear plateau was found.
    plateau : Plateau or None
        The plateau it comes from.
    note : str
        How it was found, or why it is unknown.
    """

    name: str
    gbs: float | None
    plateau: Plateau | None
    note: str
    spread: Spread | None = None


def _fmt(nbytes: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.4g} {unit}"
    return f"{nbytes:.0f} B"


def _where(lo: float | None, hi: float) -> str:
    """Working-set range in words: "up to 32 KiB", "32 KiB..1 MiB", "above 32 MiB"."""
    if lo is None:
        return f"working sets up to {_fmt(hi)}"
    if hi == math.inf:
        return f"working sets above {_fmt(lo)}"
    return f"working sets {_fmt(lo)}..{_fmt(hi)}"


def match_levels(
    plateaus: Sequence[Plateau],
    levels: Sequence[tuple[str, int]],
    memory: str = "DRAM",
    *,
    swept: tuple[float, float] | None = None,
) -> list[LevelFigure]:
    """Assign plateaus to cache levels (and memory) by working-set size.

    Level ``k``'s range is the working sets above level ``k-1``'s capacity up to
    its own (L1: from 0); memory's is above the last level's. Each plateau goes to
    the level whose range it overlaps most on a log scale; if two plateaus claim
    a level, the one overlapping it more wins and the other is reported in that
    level's note.

    Parameters
    ----------
    plateaus : sequence of Plateau
        From :func:`find_plateaus`.
    levels : sequence of (str, int)
        Name and capacity (bytes) of each cache level, L1 first, as the sweep sees
        them (for several threads: the capacity they share).
    memory : str
        The memory's name.
    swept : (float, float), optional
        Smallest and largest working set measured, bytes, to say when a level's
        range was not swept at all.

    Returns
    -------
    list of LevelFigure
        One per level, then memory.

    Examples
    --------
    >>> p = [Plateau(0, 4, 4096, 32768, 200.0, 4), Plateau(8, 12, 2**26, 2**28, 20.0, 4)]
    >>> [(f.name, f.gbs) for f in match_levels(p, [("L1", 49152), ("L2", 2**21)])]
    [('L1', 200.0), ('L2', None), ('DRAM', 20.0)]
    """
    names = [n for n, _ in levels] + [memory]
    bounds = [1.0] + [float(c) for _, c in levels] + [math.inf]
    best: dict[int, tuple[float, Plateau]] = {}
    losers: dict[int, list[Plateau]] = {}
    for p in plateaus:
        lo, hi = math.log(max(p.lo_bytes, 1)), math.log(max(p.hi_bytes, 1))
        overlaps = []
        for k in range(len(names)):
            a, b = (
                math.log(bounds[k]),
                math.log(bounds[k + 1]) if bounds[k + 1] < math.inf else math.inf,
            )
            ov = min(hi, b) - max(lo, a)
            # a one-point plateau has no width: count containment as a tiny overlap
            overlaps.append(ov if ov > 0 or (a <= lo <= b) else -math.inf)
        k = int(np.argmax(overlaps))
        if overlaps[k] == -math.inf:
            continue
        if k in best and best[k][0] >= overlaps[k]:
            losers.setdefault(k, []).append(p)
            continue
        if k in best:
            losers.setdefault(k, []).append(best[k][1])
        best[k] = (overlaps[k], p)
    out = []
    for k, name in enumerate(names):
        lo, hi = bounds[k], bounds[k + 1]
        where = _where(lo if k else None, hi)
        if k in best:
            p = best[k][1]
            note = (
                f"plateau of {p.points} points, {_fmt(p.lo_bytes)}..{_fmt(p.hi_bytes)}, "
                f"median {p.gbs:.4g} GB/s"
            )
            if k in losers:
                note += "; also " + ", ".join(
                    f"{q.gbs:.4g} GB/s at {_fmt(q.lo_bytes)}..{_fmt(q.hi_bytes)}" for q in losers[k]
                )
            out.append(LevelFigure(name, p.gbs, p, note))
            continue
        if swept is not None and (swept[1] < lo * 1.5 or swept[0] > hi):
            why = f"not measured: the sweep covered {_fmt(swept[0])}..{_fmt(swept[1])}, not {where}"
        else:
            why = f"no clear plateau in {where} (the bandwidth ramps or is too noisy there)"
        out.append(LevelFigure(name, None, None, why))
    return out


def windows(
    capacities: Sequence[tuple[str, int]], memory: str = "DRAM", lo: float = 1.0
) -> list[tuple[str, float, float]]:
    """Each level's (and memory's) search window, bytes: ``(name, lo, hi)``.

    >>> [(n, a, b) for n, a, b in windows([("L1", 32768), ("L2", 2**20)], lo=4096)]
    [('L1', 4096, 26214.4), ('L2', 49152.0, 838860.8), ('DRAM', 2097152.0, inf)]
    """
    out = []
    prev = None
    for name, cap in capacities:
        a = lo if prev is None else prev * AFTER
        out.append((name, a, cap * BEFORE))
        prev = cap
    out.append((memory, (prev or lo) * MEMORY_AFTER if prev else lo, math.inf))
    return out


def _window_plateau(
    x: np.ndarray, g: np.ndarray, need: int, tol: float, slope: float, last: bool = False
) -> tuple[int, int] | None:
    """The longest flat range ``[i, j)`` of a window (at least ``need`` points), or None.

    Flat: every point within ``1 + tol`` of the median but one in six (memory: one
    in four; never an end point), and the other points drift by at most ``slope``
    per doubling (as in :func:`find_plateaus`, whose looser 3/4 rule let a long
    range swallow the bottom of a fall). A range is
    refused when a point before it in the window is faster than its median by more
    than :data:`FALL`: then it is the bottom of a fall, not the level's plateau
    (bandwidth does not rise as the working set grows within one level). Of the flat
    ranges, those more than :data:`STEP` below the fastest one are lower plateaus
    and lose; of the rest the longest wins, then the tightest. Windows hold tens of
    points, so trying every range is cheap.

    ``last`` (memory's window, whose working sets only grow past the last cache): the
    bandwidth there falls slowly out of a shared last-level cache, so neither rule
    about faster points before applies; the longest flat range wins.
    """
    n = g.size
    flat = []  # (length, -spread, i, j, median)
    for length in range(need, n + 1):
        for i in range(0, n - length + 1):
            j = i + length
            seg = g[i:j]
            med = float(np.median(seg))
            off = np.abs(np.log(seg / med)) > math.log1p(tol)
            if off[0] or off[-1] or off.sum() > length // (4 if last else 6):
                continue
            if not _flat(x[i:j][~off], seg[~off], tol, slope):  # the drift of the inliers
                continue
            if not last and i and g[:i].max() > FALL * med:
                continue
            flat.append((length, -float(np.abs(np.log(seg / med)).mean()), i, j, med))
    if not flat:
        return None
    top = 0.0 if last else max(f[4] for f in flat)
    _, _, i, j, _ = max(f for f in flat if f[4] * STEP >= top)
    return i, j


def level_figures(
    sizes: Sequence[float],
    gbs: Sequence[float],
    capacities: Sequence[tuple[str, int]],
    memory: str = "DRAM",
    *,
    trials: Sequence[Sequence[float]] | None = None,
    tol: float = WINDOW_TOL,
    min_points: int = MIN_POINTS,
    slope: float = SLOPE,
) -> list[LevelFigure]:
    """Each level's bandwidth from a sweep: the plateau inside the level's window.

    Unlike :func:`find_plateaus` followed by :func:`match_levels`, this knows the
    capacities before it looks: level ``k``'s plateau is searched only among the
    working sets clearly inside it (:func:`windows`: past :data:`AFTER` times the
    previous capacity, below :data:`BEFORE` times its own; memory from
    :data:`MEMORY_AFTER` times the last level's). So two levels whose bandwidths
    differ by less than ERT's factor 1.25 (L2 118 against L3 100 GB/s on this
    host) are never merged into one, and a ramp at a level's edge (a shared L3
    emptying into DRAM) does not hide the flat part before it. Inside a window
    :func:`find_plateaus` runs with ``tol`` (``step`` large, so nothing is merged
    across a jump), and the longest plateau wins if it spans at least
    :data:`MIN_SHARE` of the window's points.

    Parameters
    ----------
    sizes, gbs : sequence of float
        The sweep (bytes increasing, GB/s): for each point the best of its trials.
    capacities : sequence of (str, int)
        Name and capacity (bytes) of each level as the sweep's threads share them.
    memory : str
        Memory's name.
    trials : sequence of sequences of float, optional
        Every trial's GB/s, ``trials[t][i]`` for trial ``t`` at point ``i``: gives each
        figure its :class:`Spread` (of the trials' medians over the plateau).

    Returns
    -------
    list of LevelFigure
        One per level, then memory; a level without a plateau has ``gbs`` None and a
        note saying which working sets were searched.
    """
    x, g = _validate(sizes, gbs)
    t = None
    if trials is not None:
        t = np.asarray(trials, dtype=np.float64)
        if t.ndim != 2 or t.shape[1] != g.size:
            raise ValueError(f"trials must be (n_trials, {g.size}), got shape {t.shape}")
    out = []
    swept_lo = float(x[0]) if x.size else 1.0
    swept_hi = float(x[-1]) if x.size else 1.0
    for name, lo, hi in windows(capacities, memory, swept_lo):
        inside = np.flatnonzero((x >= lo) & (x <= hi))
        where = _where(lo, hi)
        if inside.size == 0 or swept_hi < lo:
            out.append(LevelFigure(name, None, None, f"not measured: the sweep covered "
                                   f"{_fmt(swept_lo)}..{_fmt(swept_hi)}, not {where}"))  # fmt: skip
            continue
        need = max(min_points, math.ceil(MIN_SHARE * inside.size))
        a0, a1 = int(inside[0]), int(inside[-1]) + 1
        last = hi == math.inf
        span = _window_plateau(
            x[a0:a1], g[a0:a1], need, max(tol, MEMORY_TOL) if last else tol, slope, last
        )
        if span is None:
            out.append(LevelFigure(name, None, None,
                                   f"no clear plateau in {where} ({inside.size} points; "
                                   f"the bandwidth ramps or is too noisy there)"))  # fmt: skip
            continue
        i, j = a0 + span[0], a0 + span[1]
        p = Plateau(i, j, int(x[i]), int(x[j - 1]), float(np.median(g[i:j])), j - i)
        note = (
            f"plateau of {p.points} of the {inside.size} points in {where}: "
            f"{_fmt(p.lo_bytes)}..{_fmt(p.hi_bytes)}, median {p.gbs:.4g} GB/s"
        )
        spread = None
        if t is not None:
            spread = Spread.of(np.median(t[:, p.start : p.stop], axis=1))
            note += f"; {spread.text('GB/s')}"
        out.append(LevelFigure(name, p.gbs, p, note, spread))
    return out


__all__ = [
    "MIN_POINTS",
    "SLOPE",
    "STEP",
    "TOL",
    "LevelFigure",
    "Plateau",
    "Spread",
    "find_plateaus",
    "level_figures",
    "match_levels",
    "windows",
]
