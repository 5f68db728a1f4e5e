"""Where the tests find the project: the checkout, this folder and the built-in fixtures."""

from __future__ import annotations

from pathlib import Path

SUPPORT = Path(__file__).resolve().parent
TESTS = SUPPORT.parent
REPO = TESTS.parent
BUILTIN = REPO / "fixtures"  # the built-in fixtures
