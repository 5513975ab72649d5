"""TOML reading, one place for the ``tomllib``/``tomli`` choice."""

from __future__ import annotations

import sys

from hroof._base.errors import HroofError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def load_toml(text: str) -> dict:
    """Parse TOML text; malformed text is a :class:`HroofError` naming line and column.

    >>> load_toml('a = 1')
    {'a': 1}
    """
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise HroofError(str(exc)) from None
