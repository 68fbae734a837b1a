"""Shared fixtures of the harness's own tests.

End-to-end tests lay out a tiny harness project in a pytester directory (`e2e_project`, see
e2e_support.Project): a pytest.ini selecting the eager backend, `cases/tiny.py` with three tiny
convolution cases, configs/eager.yaml from the repo, tests/fake_backends.py, and any FaultyBackend
configs the test adds. They run pytest in a subprocess with `-p harness.plugin` (the plugin spawns
worker processes); the worker puts the project root on PYTHONPATH, so `fake_backends` imports there.
"""
from __future__ import annotations

import pytest
from e2e_support import Project, python_path_env
from extras import missing

pytest_plugins = ["pytester"]


@pytest.fixture
def e2e_project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Project:
    """A tiny harness project in the pytester directory (the cwd), harness importable."""
    monkeypatch.setenv("PYTHONPATH", python_path_env())
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    return Project(pytester.path, pytester)


@pytest.fixture(scope="session")
def run_cache() -> dict:
    """Results of expensive pytest runs shared by several tests (each run happens once)."""
    return {}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "extra(*names): needs these extras of the harness (tests/extras.py)")


def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers("extra"):
        reason = missing(mark.args)
        if reason:
            pytest.skip(reason)
