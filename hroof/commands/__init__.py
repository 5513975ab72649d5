"""Command-line modules: each defines ``register(sub, machine_sub)`` and its ``cmd_*`` functions."""
