"""Errors that hroof raises for bad input.

Every error a user can cause derives from :class:`HroofError`, which is also a
:class:`ValueError`. The command line turns any of them into one line on
stderr and exit status 2; the library never prints.
"""

from __future__ import annotations

import difflib


class HroofError(ValueError):
    """Bad input: the message names the bad value and what would be right."""


class ConfigError(HroofError):
    """An impossible cache geometry or a malformed machine file."""


class TraceFormatError(HroofError):
    """A malformed or unreadable trace file."""


def suggest(word: str, choices) -> str:
    """Return ``" (did you mean 'x'?)"`` for the closest choice, or ``""``.

    >>> suggest("wayz", ["ways", "size", "line"])
    " (did you mean 'ways'?)"
    """
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.5)
    return f" (did you mean '{close[0]}'?)" if close else ""
