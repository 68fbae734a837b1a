"""Shared fixtures of the harness's own tests.

End-to-end tests lay out a tiny harness project in a pytester directory (`e2e_project`, see
e2e_support.Project): a pytest.ini selecting the eager backend, `cases/tiny.py` with three tiny
convolution cases, configs/eager.yaml from the repo, tests/fake_backends.py, and any FaultyBackend
configs the test adds. They run pytest in a subprocess with `-p harness.plugin` (the plugin spawns
worker processes); the worker puts the project root on PYTHONPATH, so `fake_backends` imports there.

Self-tests are unit tests or end-to-end ones, marked `e2e`: those that start pytest, `python -m
harness` or a worker (harness.worker) in a subprocess, or run a case through a real backend.
`pytest tests -m "not e2e"` is the quick loop (README); `pytest tests` runs both. A test gets the
mark in one of two ways, and a third catches a test that has neither:
- automatically, when it can reach the `pytester` fixture: e2e_support.Project.run (the
  `e2e_project` fixture and every fixture built on it) starts pytest through pytester, and nothing
  else here uses it, so a new test on a tiny project is e2e without anyone writing the mark;
- by hand, `pytestmark = pytest.mark.e2e` for a module that is wholly end-to-end, else
  `@pytest.mark.e2e` on the test: those that start pytest or the harness by subprocess.run
  (e2e_support.run_pytest_with included), through a script, or a WorkerPool;
- a test not marked e2e that starts pytest, `python -m harness` or a worker fails at that moment,
  naming the mark (an audit hook: `_spawn_guard`), so the quick loop cannot quietly grow an
  end-to-end test. A script that starts pytest itself (.ci/nightly.py, benchmarks/) is not seen.
Self-tests marked `nightly` (all install sets but the base one, and the slowest others, each
beside one CI keeps: its comment says which) skip unless `--run-nightly` is given: the nightly
workflow's self-tests job runs them (`pytest tests -m nightly --run-nightly`), which keeps CI's
`pytest tests` within its time.
The harness's plugin registers a marker of the same name for its cases; cases and self-tests never
share a session (the self-tests run theirs in subprocesses), so the two never meet.
"""
from __future__ import annotations

import os
import sys

import pytest
from e2e_support import Project, python_path_env
from extras import missing
from self_test_options import add_options

from harness.files import user_cache_dir

pytest_plugins = ["pytester"]

# The user's cache, named for every run the self-tests start, also those pytester gives a HOME of
# their own: the collection's listings (OpInfo's samples, ONNX's node tests, keyed on what
# determines them) are made once, not once a test, which cost CI minutes. A test about the cache
# itself names its own.
os.environ.setdefault("TORCH_BACKEND_E2E_CACHE", str(user_cache_dir()))

E2E_FIXTURES = frozenset({"pytester"})   # a test that can reach one of these is end-to-end
_UNIT_TEST: list[str | None] = [None]     # the node id of the running test when it is not marked e2e


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


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "extra(*names): needs these extras of the harness (tests/extras.py)")
    config.addinivalue_line("markers", "nightly: a slow self-test the nightly runs, CI not; run it with --run-nightly")
    config.addinivalue_line("markers", "e2e: (self-tests) starts pytest, the harness or a worker in a subprocess, "
                                       "or runs a case through a real backend; deselect with -m 'not e2e'")


@pytest.hookimpl(tryfirst=True)   # before -m deselects
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if E2E_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.e2e)


def starts_pytest_or_harness(argv) -> bool:
    """Whether a command line runs pytest, `python -m harness[.x]` or the worker (also under `sh -c`)."""
    words = " ".join(map(os.fsdecode, argv)).split()
    modules = [w[2:] for w in words if w.startswith("-m") and len(w) > 2]
    modules += [after for before, after in zip(words, words[1:]) if before == "-m"]
    return (any(m.split(".")[0] in ("pytest", "harness") for m in modules)
            or any(os.path.basename(w) == "pytest" for w in words))


def _spawn_guard(event: str, args: tuple) -> None:
    """subprocess.Popen's audit event, (executable, argv, cwd, env): a unit test must not start pytest
    or the harness."""
    if event == "subprocess.Popen" and _UNIT_TEST[0] and starts_pytest_or_harness(args[1]):
        command = " ".join(map(os.fsdecode, args[1]))
        pytest.fail(f"{_UNIT_TEST[0]} is not marked e2e but starts {command[:200]!r}: mark it "
                    "@pytest.mark.e2e (tests/conftest.py)", pytrace=False)


sys.addaudithook(_spawn_guard)   # once per process: conftest modules are imported once


def pytest_runtest_logfinish() -> None:
    _UNIT_TEST[0] = None


def pytest_runtest_setup(item: pytest.Item) -> None:
    _UNIT_TEST[0] = None if item.get_closest_marker("e2e") else item.nodeid   # before any fixture is set up
    if item.get_closest_marker("nightly") and not item.config.getoption("--run-nightly"):
        pytest.skip("the nightly's self-test: run it with --run-nightly")
    for mark in item.iter_markers("extra"):
        reason = missing(mark.args)
        if reason:
            pytest.skip(reason)
