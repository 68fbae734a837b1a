"""Reporting: the records of every case (from xdist workers too), the JSON, HTML and Markdown
reports, and the run's summary in the terminal."""
from __future__ import annotations

import contextlib
import json
import os
import platform
import tempfile
from pathlib import Path

import pytest

from harness.controller.bundles import remove_empty_folders
from harness.files import write_text_atomically
from harness.installation.commits import run_identity
from harness.perf.machine import machine
from harness.plugin.proposals import write_proposals
from harness.plugin.selection import touched_families
from harness.plugin.state import RUNNER
from harness.record import Record
from harness.reports import build_report
from harness.views.terminal import terminal_lines


class ResultReporter:
    """Gathers the records of every case (from xdist workers too) and writes the reports."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.records: list[dict] = []
        self.backend_versions: dict[str, dict] = {}  # what each backend says of itself
        self.messages: list[str] = []   # the summary's lines after the results: history, proposals
        self.identity = run_identity(config.rootpath)  # the command line and the commits, at the start

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record = getattr(report, "e2e", None)
        if record is not None and report.when == "call":
            record = dict(record)
            self.backend_versions.setdefault(record["backend"], {}).update(record.pop("backend_versions", {}))
            self.records.append(record)

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus) -> None:
        if hasattr(self.config, "workerinput"):  # the xdist controller writes, workers send
            return
        if exitstatus == pytest.ExitCode.USAGE_ERROR:   # bad input found as the run starts: no report
            return
        runner = self.config.stash[RUNNER]
        if runner.settings.artifacts_dir is not None:
            remove_empty_folders(runner.settings.artifacts_dir)
        complete = exitstatus != pytest.ExitCode.INTERRUPTED and not (session.shouldstop or session.shouldfail)
        report = build_report(self.environment(), self.records, complete)
        option = self.config.getoption
        if option("report_json"):
            write_text_atomically(Path(option("report_json")), json.dumps(report, indent=1) + "\n")
        if option("history"):
            self.messages.append(record_history(Path(option("history")), report, option("report_json")))
        if option("report_html"):
            from harness.views.html import render_html  # the views load only when asked for
            write_text_atomically(Path(option("report_html")), render_html(report))
        if option("report_md") or option("update_expectations"):
            self.messages += write_proposals(self.config, report, complete)

    def environment(self) -> dict:
        runner = self.config.stash[RUNNER]
        versions = {name.replace("-", "_"): version for name, version in runner.versions.items()}
        return {**versions, "platform": platform.platform(), "machine": machine(), **self.identity,
                "backends": {name: {**info, "reported": self.backend_versions.get(name, {})}
                             for name, info in runner.backend_environment().items()},
                "run_crash_set": runner.settings.run_crash_set,
                **({"assumed_versions": runner.settings.assumed_versions} if runner.settings.assumed_versions else {})}

    def pytest_terminal_summary(self, terminalreporter) -> None:
        runner = self.config.stash[RUNNER]
        touched = touched_families(self.config, (r["case"] for r in self.records), runner.families,
                                   runner.project.module_families)
        notices = runner.notices(worker_processes(self.config), touched) + self.messages
        if self.records or notices:
            terminalreporter.section("e2e summary")
            for line in terminal_lines([Record.from_json(r) for r in self.records]) + notices:
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


def record_history(database: Path, report: dict, report_json: str | None) -> str:
    """Ingest the run into the history (from its JSON report, written to a temporary file when
    --report-json was not given); the line the summary says."""
    from harness.errors import HarnessInputError
    from harness.history.store import open_history

    with contextlib.ExitStack() as stack:
        if report_json:
            path = Path(report_json)
        else:
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="e2e-history-")))
            path = folder / "report.json"
            path.write_text(json.dumps(report), encoding="utf-8")
        try:
            with open_history(database, write=True) as store:
                number, _ = store.ingest(path)
        except HarnessInputError as e:
            return f"history: not recorded: {e}"
    return f"history: recorded as run {number} in {database}"
