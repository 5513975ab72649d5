"""Measured ceilings of the host: ``hroof machine measure`` and ``import-ert``.

- :mod:`hroof.measure.kernels`: the Numba microkernels (compute and bandwidth) and
  the instruction census that checks what the compiler emitted.
- :mod:`hroof.measure.plateaus`: bandwidth plateaus of a working-set sweep and their
  cache levels.
- :mod:`hroof.measure.run`: timing, the sweeps, :func:`~hroof.measure.run.measure_host`.
- :mod:`hroof.measure.files`: the machine TOML, ERT's ``roofline.json``, and the import.
- :mod:`hroof.measure.report`: the sweep figure and ``report.html``.

See docs/measure.md.
"""
