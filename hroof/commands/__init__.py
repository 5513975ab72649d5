"""Command-line subcommands, one module per topic, each with ``register(sub, machine_sub)``."""
