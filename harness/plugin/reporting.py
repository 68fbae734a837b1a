"""Reporting: the records of every case (from xdist workers too), each journaled as it arrives beside
the JSON report (harness.journal), the report formats asked for (harness.views.formats: each one's
file, and the terminal's summary), the run recorded in the history, and the expectation files
rewritten with --update-expectations."""
from __future__ import annotations

import contextlib
import functools
import json
import os
import platform
import tempfile
import uuid
from pathlib import Path

import pytest

from harness.controller.bundles import remove_empty_folders
from harness.controller.runner import Runner
from harness.errors import HarnessInputError
from harness.files import display_path
from harness.installation.commits import run_identity
from harness.journal import JournalWriter, journal_path, split_versions, with_reported
from harness.perf.machine import machine
from harness.plugin.selection import touched_families
from harness.plugin.state import RUNNER
from harness.plugin.update_expectations import proposals_for, update_expectations
from harness.reports import build_report
from harness.views import json_report
from harness.views.formats import Proposals, ReportContext, report_formats, terminal_lines_of, write_reports


class ResultReporter:
    """Gathers the records of every case (from xdist workers too) and writes the reports."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.records: list[dict] = []
        self.backend_versions: dict[str, dict] = {}  # what each backend says of itself
        self.messages: list[str] = []   # the summary's lines after the results: history, proposals
        self.report: dict | None = None  # the run's report, once it is over
        self.identity = run_identity(config.rootpath)  # the command line and the commits, at the start
        self.run_id = uuid.uuid4().hex
        self._environment: dict | None = None   # without the backends' reported versions: known at the start
        self.journal = self._journal()

    def _journal(self) -> JournalWriter | None:
        """With --report-json, in the process that writes it: the journal beside the report."""
        report_json = self.config.stash[RUNNER].settings.reports.get(json_report.FORMAT.name)
        if report_json is None or hasattr(self.config, "workerinput"):
            return None
        return JournalWriter(journal_path(report_json), lambda: {"run_id": self.run_id,
                                                                  "environment": self.base_environment()},
                             warn=self.messages.append)

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if self.journal is not None:   # an earlier killed run's: this run writes the report it would recover
            self.journal.remove()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record = getattr(report, "e2e", None)
        if record is not None and report.when == "call":
            # The report's list first: a SIGTERM (raised as KeyboardInterrupt at the next line) after
            # the journal's fsync would otherwise leave a journaled result out of the report.
            self.records += split_versions([record], self.backend_versions)
            if self.journal is not None:
                self.journal.append(record)

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus) -> None:
        if hasattr(self.config, "workerinput"):  # the xdist controller writes, workers send
            return
        if exitstatus == pytest.ExitCode.USAGE_ERROR:   # bad input found as the run starts: no report
            if self.journal is not None:
                self.journal.remove()
            return
        runner = self.config.stash[RUNNER]
        if runner.settings.artifacts_dir is not None:
            remove_empty_folders(runner.settings.artifacts_dir)
        complete = exitstatus != pytest.ExitCode.INTERRUPTED and not (session.shouldstop or session.shouldfail)
        self.report = report = build_report(self.environment(), self.records, complete, self.run_id)
        settings = runner.settings
        proposals = functools.cache(lambda: self.proposals(runner, report))
        context = ReportContext(find_proposals=lambda: shown(proposals()),
                                find_history=lambda: history_of(settings.history, report))
        record = {name: path for name, path in settings.reports.items() if name == json_report.FORMAT.name}
        write_reports(report, record, context)   # first: the history ingests that file
        if self.journal is not None:
            self.journal.remove()
        if settings.history:
            self.messages.append(record_history(settings.history, report, record.get(json_report.FORMAT.name)))
        write_reports(report, {name: path for name, path in settings.reports.items() if name not in record}, context)
        if settings.update_expectations:
            self.messages += update_expectations(runner, proposals(), complete)

    def proposals(self, runner: Runner, report: dict) -> dict[Path, str]:
        """The expectation files that would make this run match (none, said in the summary, when
        an expectation file changed during the run)."""
        try:
            return proposals_for(runner, report["results"])
        except HarnessInputError as e:
            self.messages.append(f"no expectation proposals: {e}")
            return {}

    def environment(self) -> dict:
        return with_reported(self.base_environment(), self.backend_versions)

    def base_environment(self) -> dict:
        """The run's environment as known when it starts: all but what the backends report of
        themselves with their first case (computed once: the journal's header needs it too)."""
        if self._environment is None:
            runner = self.config.stash[RUNNER]
            versions = {name.replace("-", "_"): version for name, version in runner.versions.items()}
            settings = runner.settings
            self._environment = {
                **versions, "platform": platform.platform(), "machine": machine(), **self.identity,
                "backends": runner.backend_environment(), "run_crash_set": settings.run_crash_set,
                **({"assumed_versions": settings.assumed_versions} if settings.assumed_versions else {})}
        return self._environment

    def pytest_terminal_summary(self, terminalreporter) -> None:
        runner = self.config.stash[RUNNER]
        touched = touched_families(self.config, (r["case"] for r in self.records), runner.families,
                                   runner.project.module_families)
        notices = runner.notices(worker_processes(self.config), touched) + self.messages
        lines = terminal_lines_of(self.report, report_formats().values()) if self.report else []
        if lines or notices:
            terminalreporter.section("e2e summary")
            for line in lines + notices:
                terminalreporter.write_line(line)


def worker_processes(config: pytest.Config) -> int:
    """pytest-xdist's processes (-n), 1 without it."""
    processes = getattr(config.option, "numprocesses", None)
    return (os.cpu_count() or 1) if processes in ("auto", "logical") else int(processes or 1)


def pytest_report_header(config: pytest.Config) -> list[str]:
    """A warning that must come before the run, not after it."""
    runner = config.stash.get(RUNNER, None)
    contention = runner and runner.perf_contention(worker_processes(config))
    return [f"WARNING: {contention}"] if contention else []


def shown(proposals: dict[Path, str]) -> Proposals:
    """Proposals as a report shows them: by the path as the user would type it, beside the text now."""
    return Proposals({display_path(p): text for p, text in proposals.items()},
                     {display_path(p): p.read_text(encoding="utf-8") if p.exists() else "" for p in proposals})


def history_of(database: Path | None, report: dict) -> list[dict] | None:
    """This run's cases' statuses, when it was recorded in a history (--history)."""
    if database is None:
        return None
    from harness.history.status import run_statuses

    try:
        return run_statuses(database, report)
    except HarnessInputError:
        return None   # the summary says why the run was not recorded


def record_history(database: Path, report: dict, report_json: Path | None) -> str:
    """Ingest the run into the history (from its JSON report, written to a temporary file when
    --report-json was not given); the line the summary says."""
    from harness.history.store import open_history

    with contextlib.ExitStack() as stack:
        if report_json:
            path = report_json
        else:
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="e2e-history-")))
            path = folder / "report.json"
            path.write_text(json.dumps(report), encoding="utf-8")
        try:
            with open_history(database, write=True) as store:
                number, _ = store.ingest(path)
        except HarnessInputError as e:
            return f"history: not recorded: {e}"
    return f"history: recorded as run {number} in {display_path(database)}"
