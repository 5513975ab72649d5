"""The ``hroof`` command line (:func:`main`), one module per command.

- :mod:`hroof.cli.app`: the parser built from the command modules, and :func:`main`;
- :mod:`hroof.cli.options`: argument types and the option groups commands share;
- :mod:`hroof.cli.text`: table layout and number formatting for the terminal;
- :mod:`hroof.cli.results`: text renderings of results, machines and sweeps;
- one module per command: ``simulate`` (also ``kernels``, ``trace``), ``sweep`` (also
  ``report``), ``run``, ``demo``, ``machine``, ``measure``, ``energy``,
  ``spmv_blocking``, ``table``, ``accel`` (``gemm``, ``network``, ``coalesce``, ``mwp``).
"""

from hroof.cli.app import build_parser, main
from hroof.cli.results import format_machine, format_result
from hroof.cli.text import format_bytes

__all__ = ["build_parser", "format_bytes", "format_machine", "format_result", "main"]
