"""The package's layers, enforced: imports go one way and never reach for private names.

``_base <- traces <- cachesim <- machine <- roofline/accel/native <- studies <- plots <- cli``
(docs/architecture.md). Every ``import`` in ``hroof/``, at module level or inside a
function, is read from the source; a module may import its own layer or any layer
below, never one above, and never a name that starts with ``_`` from another package.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "hroof"

#: Rank of each top-level package (same rank: may import each other).
RANKS = {
    "_base": 0,
    "traces": 1,
    "cachesim": 2,
    "machine": 3,
    "roofline": 4,
    "accel": 4,
    "native": 4,
    "studies": 5,
    "plots": 6,
    "cli": 7,
}
#: Modules that exist only so that import paths from before the layers keep working:
#: each re-exports names from where they live now (and imports nothing else).
ALIASES = {"hroof/runs.py", "hroof/errors.py", "hroof/roofline/machine.py"}
#: Lazy aliases (module ``__getattr__``): names that moved up a layer, kept importable.
LAZY_ALIASES = {("hroof/cachesim/__init__.py", "hroof.machine")}
#: The package root: ``hroof/__init__.py`` and ``__main__.py`` sit above everything.
TOP = {"hroof/__init__.py": 0, "hroof/__main__.py": 8}


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "hroof" else None


def _imports(path: Path):
    """``(imported module, [names], line)`` for every hroof import in a file."""
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "hroof" or node.module.startswith("hroof."):
                yield node.module, [a.name for a in node.names], node.lineno
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("hroof."):
                    yield a.name, [], node.lineno
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            continue


def _files():
    return sorted(p for p in ROOT.rglob("*.py") if "__pycache__" not in p.parts)


def _rel(p: Path) -> str:
    return str(p.relative_to(ROOT.parent))


def violations(files=None) -> list[str]:
    bad = []
    for path in files or _files():
        rel = _rel(path)
        if rel in ALIASES:
            continue
        here = path.relative_to(ROOT).parts
        own = here[0] if len(here) > 1 else None
        rank = RANKS.get(own) if own else TOP.get(rel, 0)
        for module, names, line in _imports(path):
            layer = _layer(module)
            if module == "hroof":  # the package root: __version__, HroofError
                if own is not None and any(n not in {"__version__", "HroofError"} for n in names):
                    bad.append(f"{rel}:{line}: imports {names} from the package root")
                continue
            if layer is None:
                continue
            if layer not in RANKS:
                if not (own is None or module in {"hroof.runs", "hroof.errors"}):
                    bad.append(f"{rel}:{line}: imports {module}, which is in no layer")
                continue
            if (rel, ".".join(module.split(".")[:2])) in LAZY_ALIASES:
                continue
            if RANKS[layer] > rank:
                bad.append(f"{rel}:{line}: {own or 'hroof'} imports {module} from a higher layer")
            if layer != own:
                private = [n for n in names if n.startswith("_") and not n.startswith("__")]
                hidden = [p for p in module.split(".")[1:] if p.startswith("_") and p != "_base"]
                if private or hidden:
                    bad.append(f"{rel}:{line}: imports private {private or hidden} of {module}")
    return bad


def test_imports_go_one_way_and_use_public_names():
    assert violations() == []


@pytest.mark.parametrize(
    "source, words",
    [
        ("from hroof.cli.text import emit\n", "imports hroof.cli.text from a higher layer"),
        ("from hroof.studies.runs import simulate_kernel\n", "from a higher layer"),
        ("from hroof.cachesim.simulator import _drive\n", "imports private ['_drive']"),
        ("from hroof.plots.roofline import _figure\n", "imports private"),
    ],
)
def test_the_check_fails_on_a_back_edge(tmp_path, monkeypatch, source, words):
    # A file planted in the roofline layer that imports upward (or a private name).
    fake = ROOT / "roofline" / "_layer_probe.py"
    try:
        fake.write_text(source)
        found = violations([fake])
    finally:
        fake.unlink()
    assert any(words in v for v in found), found


def test_no_module_is_a_god_module():
    big = {_rel(p): n for p in _files() if (n := len(p.read_text().splitlines())) > 700}
    assert big == {}, "split these modules (about 600 lines at most): " + str(big)


def test_numba_options_live_in_one_place():
    # Every @njit takes its options from hroof._base.jit (JIT, GEN, MICRO ...).
    offenders = []
    for path in _files():
        for i, line in enumerate(path.read_text().splitlines(), 1):
            s = line.rstrip()  # decorators at the left margin (not docstring examples)
            if s.startswith(("@njit(", "@numba.njit(", "@jit(")) and "**" not in s:
                offenders.append(f"{_rel(path)}:{i}: {s}")
    assert offenders == []


def test_help_imports_no_numba_and_no_matplotlib():
    """``hroof --help`` (the parser with every command) loads neither Numba nor matplotlib
    nor Plotly: they load when a command that needs them runs."""
    import subprocess
    import sys

    code = (
        "import sys, contextlib, io\n"
        "from hroof.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['--help'])\n"
        "heavy = sorted(m for m in ('numba', 'matplotlib', 'plotly', 'distributed', 'dask') "
        "if m in sys.modules)\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
