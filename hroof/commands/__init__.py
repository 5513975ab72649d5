"""Command-line subcommands kept out of hroof/cli.py: one module per topic, each with a
``register(sub, machine_sub)`` that adds its subparsers and the ``cmd_*`` functions they run."""
