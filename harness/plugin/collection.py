"""Collection and the test item: case modules and discovered cases become one item per (case,
backend); an item runs its case in a worker and fails with the harness's message, no traceback."""
from __future__ import annotations

import functools
from pathlib import Path

import pytest

from harness.case_data import Case
from harness.outcomes import Expected, Verdict
from harness.plugin.isolation import isolation_of
from harness.plugin.state import RUNNER

OUTER_GUARD_SLACK = 360.0  # pytest-timeout's limit over a case's own timeout: worker start-up and reporting


@pytest.hookimpl(tryfirst=True)
def pytest_collect_directory(path: Path, parent: pytest.Collector):
    """The directories a family asks to be plain (harness.families.interface.Discovery.plain_dirs):
    collected without importing their __init__.py, which a Package would do."""
    runner = parent.config.stash.get(RUNNER, None)
    if runner is not None and any(path == d or d in path.parents for d in runner.discovered.plain_dirs):
        return pytest.Dir.from_parent(parent, path=path)
    return None


def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    runner = parent.config.stash.get(RUNNER, None)
    if runner is not None and runner.project.cases_at(file_path) is not None:
        return CaseModule.from_parent(parent, path=file_path)
    return None


class CaseModule(pytest.File):
    """A case module: one item per (case, selected backend)."""

    def collect(self):
        runner = self.config.stash[RUNNER]
        for case in runner.project.cases_at(self.path) or []:   # None: not a case module (not collected)
            for backend in runner.backends_for(case):
                yield CaseItem.from_parent(self, name=f"{case.id}[{backend}]", case=case, backend=backend,
                                           **_structured_id(self, case.id, backend))


def _structured_id(module: pytest.File, case: str, backend: str) -> dict:
    """pytest 9's structured node id, the case's name with the backend as its parameters, as a
    parametrized test's: the cache provider (--lf, --ff, --sw) matches the ids it wrote as text by
    that structure, and would miss a name holding the brackets. pytest 8 builds ids from names."""
    return {"nodeid": module.id.child(case).with_params(backend)} if hasattr(module, "id") else {}


@functools.cache
def _mark(name: str) -> pytest.MarkDecorator:
    return getattr(pytest.mark, name)  # made once: tens of thousands of items share a few markers


@functools.cache
def _timeout_mark(seconds: float) -> pytest.MarkDecorator:
    return pytest.mark.timeout(seconds)


class CaseFailure(Exception):
    """An unexpected result; its message is the whole failure report (no Python traceback)."""


class CaseItem(pytest.Item):
    def __init__(self, *, case: Case, backend: str, **kwargs):
        super().__init__(**kwargs)
        self.case, self.backend = case, backend
        runner = self.config.stash[RUNNER]
        for marker in ("e2e", case.family, *(m for m in runner.families[case.family].markers if m in case.tags)):
            self.add_marker(_mark(marker))
        self.extra_keyword_matches.update(case.tags)  # `-k transposed` selects by tag
        self.record: dict | None = None

    def guard(self, runner) -> None:
        """pytest-timeout's outer limit, over the case's own timeouts (set when the run starts:
        listing cases needs no expectation looked up for each)."""
        self.add_marker(_timeout_mark(runner.timeout(self.case, self.backend) * runner.most_attempts
                                      + OUTER_GUARD_SLACK))

    def runtest(self) -> None:
        runner = self.config.stash[RUNNER]
        record = runner.run(self.case, self.backend, self._address())
        record.isolation = isolation_of(runner, self.case, record)
        self.record = record.to_json()
        # Plain strings: xdist sends user_properties to the controller, and execnet sends no enums.
        phase = record.phase.value if record.phase else ""
        self.user_properties += [("e2e_outcome", record.outcome.value), ("e2e_phase", phase),
                                 ("e2e_verdict", record.verdict.value)]
        if record.verdict is Verdict.SKIPPED:
            pytest.skip(record.message)
        if record.verdict is Verdict.UNEXPECTED_PASS:
            # The entry first: pytest's short summary cuts the message at the terminal's width.
            raise CaseFailure(f"{record.expectation_source} expects a failure, but it passed: delete that entry "
                              f"(or narrow its id)")
        if record.verdict is Verdict.UNEXPECTED_FAILURE:
            raise CaseFailure(_failure_text(record))
        if record.verdict is Verdict.FLAKY:
            return   # --flaky-ok: its reruns disagreed; the summary, the report and the history say so
        if record.expected is not Expected.PASS:
            pytest.xfail(f"{record.outcome.value} in {record.phase} ({record.expectation_source})")

    def _address(self) -> str:
        """Its node id, or, for a file outside the rootdir (`pytest --pyargs harness.cases` in another
        project: pytest's node id is then relative to the package), its absolute path and name, which
        a rerun command can give from the rootdir."""
        if self.config.rootpath in self.path.parents:
            return self.nodeid
        return f"{self.path}::{self.name}"

    def repr_failure(self, excinfo, style=None):
        # An xfail's reason is all it reports: pytest would otherwise render (and parse the source
        # of) every frame of its traceback, 50 to 150 ms per expected failure, for nothing shown.
        if isinstance(excinfo.value, (CaseFailure, pytest.xfail.Exception)):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, f"{self.case.id} on {self.backend}"


def _failure_text(record) -> str:
    head = f"{record.outcome.value} in phase {record.phase}"
    if record.attempts:
        attempts = ", ".join(a.outcome.value for a in record.attempts)
        head += f" (attempts: {attempts}{'; flaky' if record.flaky else ''})"
    if record.expected is not Expected.PASS:
        head += f" (expected {record.expected.value} at {record.expectation_source}, in a different phase)"
    return f"{head}\n{record.message}\nparams: {record.params}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if call.when == "call" and isinstance(item, CaseItem) and item.record is not None:
        outcome.get_result().e2e = item.record  # travels to the xdist controller with the report
