"""``python -m hroof``: the same as the ``hroof`` console script."""

from __future__ import annotations

import sys

from hroof.cli import main

if __name__ == "__main__":
    sys.exit(main())
