"""The self-tests' own pytest options (tests/conftest.py adds them; tests/test_docs.py knows them)."""
from __future__ import annotations

import pytest


def add_options(parser: pytest.Parser) -> None:
    parser.addoption("--run-nightly", action="store_true",
                     help="also run the self-tests marked nightly (the nightly workflow's self-tests job)")
