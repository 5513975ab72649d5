"""Compatibility alias: :func:`simulate_kernel` moved to :mod:`hroof.studies.runs`."""

from hroof.studies.runs import simulate_kernel

__all__ = ["simulate_kernel"]
