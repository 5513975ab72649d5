"""Compatibility alias: the errors moved to :mod:`hroof._base.errors`."""

from hroof._base.errors import ConfigError, HroofError, TraceFormatError, suggest

__all__ = ["ConfigError", "HroofError", "TraceFormatError", "suggest"]
