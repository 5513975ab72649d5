"""Measured ceilings of the host: ``hroof machine measure`` and ``import-ert``.

- :mod:`hroof.machine.measure.kernels`: the Numba microkernels (compute and bandwidth) and
  the instruction census that checks what the compiler emitted.
- :mod:`hroof.machine.measure.plateaus`: bandwidth plateaus of a working-set sweep and their
  cache levels.
- :mod:`hroof.machine.measure.run`: timing, the sweeps,
  :func:`~hroof.machine.measure.run.measure_host`.
- :mod:`hroof.machine.measure.files`: the machine TOML, ERT's ``roofline.json``, and the import.
- :mod:`hroof.plots.measure`: the sweep figure and ``report.html``.

See docs/measure.md.
"""
