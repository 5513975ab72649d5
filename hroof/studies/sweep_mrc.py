"""The miss-ratio curve of one point of a sweep, for the sweep's report.

A size sweep shows the locality walls along the problem-size axis; the
miss-ratio curve of one point's stream (:mod:`hroof.cachesim.mrc`) shows the
same walls along the cache-size axis: its knees, each level's capacity on it
and the simulated point of each level. :func:`sweep_curve` computes it for the
largest point (or a chosen one) again from the kernel's trace, with the
point's warm-up run and not counted, so that it counts what the sweep counted.

Cost, and the ``mode`` rule (``docs/mrc.md``, "In sweep reports"): the exact
pass costs about 1.3 times one classified simulation of the point, plus
generating its trace again; SHARDS (a rate of a few hundredths) costs the
trace generation and a few percent of a simulation. ``"auto"`` (the default)
draws the largest point with at most :data:`AUTO_MAX_ACCESSES` accesses (so
the report costs at most about one more simulation of that size), exactly up
to :data:`EXACT_MAX_ACCESSES` and from a SHARDS sample above, and says so when
no point is that small; ``"exact"`` and ``"sample"`` draw the largest point
whatever its size, one way or the other; ``"off"`` draws nothing. ``at``
chooses the point instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from hroof._base.errors import HroofError
from hroof.machine.model import Machine
from hroof.roofline.mrc import MrcReport, layer_capacities, report
from hroof.studies.sweep import SweepPoint

#: Choices of ``--mrc``.
MRC_MODES = ("auto", "exact", "sample", "off")
#: ``auto``: the largest point with at most this many accesses is drawn.
AUTO_MAX_ACCESSES = 1 << 25
#: ``auto``: exact up to this many accesses, SHARDS above.
EXACT_MAX_ACCESSES = 1 << 24
#: SHARDS: the rate aims at this many distinct sampled lines (from the point's footprint),
#: at least 0.01 and at most 1.
SAMPLE_LINES = 32768


@dataclass(frozen=True)
class SweepCurve:
    """The curve of one point: ``report`` (knees, levels, simulated points), the point,
    and ``how`` it was computed, in words."""

    report: MrcReport
    point: SweepPoint
    param: str
    how: str


def choose_point(points: list[SweepPoint], param: str, at=None) -> SweepPoint:
    """The point with ``param == at``, or the largest (by footprint) when ``at`` is None."""
    if at is None:
        return max(points, key=lambda p: (p.footprint, p.params[param]))
    for p in points:
        if str(p.params[param]) == str(at):
            return p
    have = ", ".join(str(p.params[param]) for p in points)
    raise HroofError(f"no point with {param}={at} in this sweep (it has {param}={have})")


def sweep_curve(
    points: list[SweepPoint],
    machine: Machine,
    param: str,
    *,
    mode: str = "auto",
    at=None,
) -> tuple[SweepCurve | None, str]:
    """The miss-ratio curve of the stream into L1 at one point of a sweep.

    Returns ``(curve, note)``: the curve (None when skipped) and a sentence saying
    how it was computed or why it was skipped.
    """
    from hroof.cachesim.mrc import miss_ratio_curve
    from hroof.traces import plan_kernel

    if mode not in MRC_MODES:
        raise HroofError(f"--mrc must be one of {', '.join(MRC_MODES)}, got {mode!r}")
    point = choose_point(points, param, at)
    if mode == "off":
        return None, "The miss-ratio curve was not drawn (--mrc off)."
    kernel = point.result.source.get("kernel")
    if not kernel:
        return None, "The miss-ratio curve was not drawn: the sweep names no kernel."
    plans = {}
    try:
        for p in points if mode == "auto" and at is None else [point]:
            plans[id(p)] = plan_kernel(kernel, **p.params)
    except HroofError as exc:
        return None, f"The miss-ratio curve was not drawn: {exc}"
    why = ""
    if mode == "auto" and at is None:
        cheap = [p for p in points if plans[id(p)].accesses <= AUTO_MAX_ACCESSES]
        if not cheap:
            return None, (
                f"The miss-ratio curve was not drawn: every point has more than "
                f"{AUTO_MAX_ACCESSES:,} accesses (the cheap default); --mrc sample draws the "
                "largest from a SHARDS sample, --mrc exact exactly."
            )
        point = choose_point(cheap, param)
        if point is not choose_point(points, param):
            why = (f" (the largest point with at most {AUTO_MAX_ACCESSES:,} accesses; "
                   "--mrc sample or --mrc exact draws the largest)")  # fmt: skip
    plan = plans[id(point)]
    accesses = plan.accesses
    where = f"{param}={point.params[param]}"
    h = machine.hierarchy
    exact = mode == "exact" or (mode == "auto" and accesses <= EXACT_MAX_ACCESSES)
    rate = None
    if not exact:
        lines = max(1, point.footprint >> h.line_bits)
        rate = min(1.0, max(0.01, SAMPLE_LINES / lines))
    warm = plan.chunks(stop=plan.warmup) if plan.warmup else None
    counted = plan.chunks(start=plan.warmup) if plan.warmup else plan.chunks()
    curve = miss_ratio_curve(counted, h, rate=rate, source=plan.source(), warmup=warm)
    lcs = layer_capacities(kernel, plan.params, h)
    rep = report(curve, h, flops=point.result.flops, simulated=point.result, layer_conditions=lcs)
    if exact:
        how = (f"exact (one stack-distance pass over the {where} stream{why}, {accesses:,} "
               "accesses)")  # fmt: skip
    else:
        s = curve.sample
        how = (
            f"estimated from a SHARDS sample of the {where} stream{why} ({accesses:,} accesses) at "
            f"rate {s['rate']:.3g} ({s['sampled_lines']:,} distinct lines sampled, estimated "
            f"mean error {s['error_estimate']:.4f})"
        )
    return SweepCurve(rep, point, param, how), how


__all__ = [
    "AUTO_MAX_ACCESSES",
    "EXACT_MAX_ACCESSES",
    "MRC_MODES",
    "SAMPLE_LINES",
    "SweepCurve",
    "choose_point",
    "sweep_curve",
]
