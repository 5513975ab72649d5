"""Command-line subcommands added by topic: each module defines ``register(sub, machine_sub)``
and its ``cmd_*`` functions (see hroof/cli.py, build_parser)."""
