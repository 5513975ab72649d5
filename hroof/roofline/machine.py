"""Compatibility alias: the machine model moved to :mod:`hroof.machine.model`."""

from hroof.machine.model import *  # noqa: F403
from hroof.machine.model import __all__  # noqa: F401
