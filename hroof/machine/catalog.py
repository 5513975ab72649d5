"""Which machine a name means: the bundled presets, the measured host, or a file.

``--machine NAME|FILE`` everywhere resolves through :func:`machine_path`; the file is
then read and validated once by :func:`hroof.machine.model.load_machine`.
"""

from __future__ import annotations

from pathlib import Path

from hroof._base.errors import ConfigError, suggest
from hroof._base.paths import host_machine_path

_DATA = Path(__file__).resolve().parent.parent / "data"
#: The machine used when none is named.
DEFAULT_MACHINE = "skylake-sp"
#: The name that selects the measured host (``hroof machine measure`` writes it).
HOST_MACHINE = "host"


def bundled_machines() -> dict[str, Path]:
    """Names and paths of the machine files shipped with hroof."""
    return {p.stem: p for p in sorted(_DATA.glob("*.toml"), key=lambda p: p.stem)}


def machine_path(name_or_path: str | Path | None) -> Path:
    """The machine file a ``--machine`` value names (default :data:`DEFAULT_MACHINE`).

    A bundled name, ``host`` (the measured host), or a path; an unknown name is an
    error that lists the known ones and suggests the nearest.
    """
    text = DEFAULT_MACHINE if name_or_path is None else str(name_or_path)
    known = bundled_machines()
    if text in known:
        return known[text]
    if text == HOST_MACHINE:
        path = host_machine_path()
        if not path.is_file():
            raise ConfigError(
                f"no measured host at {path}: run 'hroof machine measure' first (or set "
                "HROOF_HOST_MACHINE to a machine file)"
            )
        return path
    if Path(text).is_file() or text.endswith(".toml") or "/" in text:
        return Path(text)
    raise ConfigError(
        f"unknown machine '{text}'{suggest(text, [*known, HOST_MACHINE])}; known: "
        f"{', '.join(known)}, {HOST_MACHINE} (once measured), or a path to a machine TOML file"
    )


def is_measured_host(machine) -> bool:
    """Whether ``machine`` (anything with a ``source`` path) was loaded from the measured
    host file (``--machine host``)."""
    if not getattr(machine, "source", None):
        return False
    try:
        return Path(machine.source).resolve() == host_machine_path().resolve()
    except OSError:
        return False


__all__ = [
    "DEFAULT_MACHINE",
    "HOST_MACHINE",
    "bundled_machines",
    "host_machine_path",
    "is_measured_host",
    "machine_path",
]
