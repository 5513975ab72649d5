"""A measured point against the predicted bound: the ratio and a verdict in words.

The predicted bound is the hierarchical roofline bound of the simulated trace
on a machine model (:func:`hroof.roofline.analysis.roofline`); the measured
performance is the native run's median GFLOP/s on this host
(:mod:`hroof.native`). Unless the machine is this host (``--machine host``,
written by ``hroof machine measure``), the two describe different machines and
the ratio says how this host compares with the model, not how good the code is.

The verdict uses the five regions of :func:`hroof.roofline.analysis.region`,
against the roof of the level that binds: at least half the bound is "near the
roof", below half is "poor", above it is "above the bound".
"""

from __future__ import annotations

from dataclasses import dataclass

from hroof.cachesim import SimResult
from hroof.machine.model import Machine
from hroof.roofline.analysis import region, roofline

#: Verdict words for each region (REGIONS), as tables and reports print them.
VERDICTS = {
    "unattainable": "above the bound",
    "memory-bound": "near the roof (memory-bound)",
    "compute-bound": "near the roof (compute-bound)",
    "poor (memory side)": "POOR: under half the bound (memory side)",
    "poor (compute side)": "POOR: under half the bound (compute side)",
}


@dataclass(frozen=True)
class Comparison:
    """Measured GFLOP/s against a machine's predicted bound for the same run.

    Attributes
    ----------
    measured : float
        GFLOP/s measured (median).
    predicted : float
        GFLOP/s: the hierarchical bound of the simulated run on the machine.
    binding : str
        The level (or ``"compute"``) that sets the bound.
    ratio : float
        ``measured / predicted``.
    region : str
        One of :data:`hroof.roofline.analysis.REGIONS`.
    """

    measured: float
    predicted: float
    binding: str
    ratio: float
    region: str

    @property
    def poor(self) -> bool:
        return self.region.startswith("poor")

    @property
    def verdict(self) -> str:
        return VERDICTS[self.region]

    def to_dict(self) -> dict:
        return {
            "measured_gflop_s": self.measured,
            "predicted_gflop_s": self.predicted,
            "binding": self.binding,
            "measured_over_predicted": self.ratio,
            "region": self.region,
            "verdict": self.verdict,
        }


def compare(result: SimResult, measured: float, machine: Machine) -> Comparison | None:
    """Compare a measured GFLOP/s with the bound of ``result`` on ``machine``.

    Returns None when there is nothing to compare: the run does no flops (copy),
    or the machine lacks a figure the bound needs (see ``Machine.missing``).
    """
    r = roofline(result, machine)
    if not r.complete or not r.bound or not result.flops:
        return None
    if r.binding == "compute":
        level, ai = r.levels[-1].name, r.levels[-1].ai
    else:
        lv = r.level(r.binding)
        level, ai = lv.name, lv.ai
    where = region(ai, float(measured), machine, level=level)
    return Comparison(float(measured), r.bound, r.binding, measured / r.bound, where)


def iqr_text(measured: dict) -> str:
    """``"q1..q3"`` GFLOP/s of a sweep point's ``measured`` dict (min..max if no quartiles)."""
    lo = measured.get("gflop_s_q1", measured.get("gflop_s_min"))
    hi = measured.get("gflop_s_q3", measured.get("gflop_s_max"))
    return "-" if lo is None or hi is None else f"{lo:.3g}..{hi:.3g}"


__all__ = ["VERDICTS", "Comparison", "compare", "iqr_text"]
