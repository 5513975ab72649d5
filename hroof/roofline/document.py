"""What a reader of ``hroof simulate`` sees, as data: the ``analysis`` of a result.

:func:`analysis_doc` is the block ``simulate --json`` and every stored sweep
point carry beside the simulation counts (``hroof.result/1`` gains the field
``analysis``; a result without it still loads): the accounting (cold or steady
state), per-level AI and attainable performance, the bound and the binding
level, the cache-aware AI and bound, the locality walls with their parts, and
the guidance steps, so a script gets the same answer as a reader.
"""

from __future__ import annotations

from hroof._base.errors import HroofError
from hroof.cachesim.result import SimResult
from hroof.machine.model import Machine
from hroof.roofline.analysis import roofline
from hroof.traces.kernels import accounting, accounting_text


def analysis_doc(result: SimResult, machine: Machine) -> dict:
    """The analysis block of one result on one machine (JSON-ready).

    Keys: ``accounting`` (``mode`` cold/steady, ``warmup_sweeps``,
    ``counted_sweeps``, ``text``), ``roofline`` (:meth:`Roofline.to_dict`:
    ``levels`` with ``ai`` and ``attainable_gflop_s``, ``bound_gflop_s``,
    ``binding``, ``carm`` with its ``ai``, ``bound_gflop_s`` and ``binding``,
    ``walls`` with ``parts`` in bytes), ``guidance`` (the steps, or None) and
    ``guidance_note`` (why there is none).
    """
    from hroof.roofline.guidance import guidance

    if result.cores > 1 and machine.cores != result.cores:  # a cores = P run: the P-core figures
        from hroof.machine.cores import for_cores

        machine = for_cores(machine, result.cores)
    acc = dict(accounting(result.source), text=accounting_text(result.source))
    doc = {"accounting": acc, "roofline": roofline(result, machine).to_dict(),
           "guidance": None, "guidance_note": None}  # fmt: skip
    try:
        doc["guidance"] = guidance(result, machine).to_dict()
    except HroofError as exc:
        doc["guidance_note"] = str(exc)
    return doc


def result_doc(result: SimResult, machine: Machine | None) -> dict:
    """``result.to_dict()`` plus ``analysis`` (when a machine is given)."""
    d = result.to_dict()
    if machine is not None:
        d["analysis"] = analysis_doc(result, machine)
    return d


__all__ = ["analysis_doc", "result_doc"]
