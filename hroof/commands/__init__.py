"""Subcommands of the ``hroof`` command line that live outside :mod:`hroof.cli`: each
module defines ``register(sub, machine_sub)``, adding its subparsers, and its ``cmd_*``
functions."""
