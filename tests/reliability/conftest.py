"""The reliability suite (soak, signals, output floods) uses the fixtures of tests/conftest.py
(`e2e_project`, `run_cache`) and its helpers in reliability_support.py."""
from __future__ import annotations


def pytest_configure(config):
    config.addinivalue_line("markers", "soak: the 400-case random-fault soak (about 70 s on 2 cores); "
                                       "deselect with -m 'not soak'")
