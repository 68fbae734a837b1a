"""The pytest plugin: options, collection of case modules, verdicts, reports.

Loaded by the rootdir conftest.py and by the `pytest11` entry point of the installed package.
It never imports torch: cases run in worker processes (harness.controller.pool, harness.worker).
"""
from __future__ import annotations

import contextlib
import functools
import json
import os
import platform
from pathlib import Path

import pytest

from harness.controller.bundles import remove_empty_folders
from harness.controller.runner import Runner
from harness.controller.schedule import longest_first, read_durations
from harness.errors import HarnessInputError
from harness.families.plugins import entry_point_families, load_families
from harness.files import shown, write_text_atomically
from harness.outcomes import Expected, Verdict
from harness.plugin_settings import add_family_options, check_report_paths, settings_from
from harness.record import Record
from harness.spec import Case
from harness.views.json_report import build_report
from harness.views.terminal import terminal_lines

RUNNER = pytest.StashKey[Runner]()
DURATIONS = pytest.StashKey[dict]()   # nodeid -> seconds of an earlier run: longest cases first
OUTER_GUARD_SLACK = 360.0  # pytest-timeout's limit over a case's own timeout: worker start-up and reporting


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("e2e", "torch-backend-e2e")
    group.addoption("--backend", action="append", default=[], metavar="NAME[,NAME...]",
                    help="backend(s) to run the cases on (repeatable or comma list; default: ini e2e_backends)")
    group.addoption("--configs-dir", action="append", default=[], metavar="DIR",
                    help="an extra directory of backend configs (repeatable)")
    group.addoption("--xfail-dir", metavar="DIR", help="expected-failure files (default: ini e2e_xfail_dir)")
    group.addoption("--crash-sets-dir", metavar="DIR", help="crash-set files (default: ini e2e_crash_sets_dir)")
    group.addoption("--cases-file", action="append", default=[], metavar="FILE",
                    help="YAML or JSON list of parameter sets (any family's, e.g. family: module) to add as cases "
                         "(repeatable)")
    group.addoption("--run-crash-set", action="store_true", help="attempt crash-set cases instead of not running them")
    group.addoption("--case-timeout", type=float, metavar="SECONDS",
                    help="per-case timeout; an expectation entry's or a case's own timeout beats it, and it "
                         "beats the backend config's default")
    group.addoption("--memory-limit", type=float, metavar="MIB",
                    help="a worker's resident memory limit (default 8192, or the config's memory_limit_mb)")
    group.addoption("--recycle-after", type=int, metavar="N", help="replace each worker after N cases")
    group.addoption("--recycle-rss", type=float, metavar="MIB",
                    help="replace a worker whose resident memory after a case exceeds MIB (default: half of "
                         "--memory-limit)")
    group.addoption("--assume-version", action="append", default=[], metavar="NAME=VERSION",
                    help="the version `when:` conditions see for NAME, e.g. torch-mlir=20261001 for a source "
                         "build whose version cannot be read (repeatable)")
    group.addoption("--report-json", metavar="PATH", help="write the JSON result report here")
    group.addoption("--report-md", metavar="PATH", help="write a Markdown triage report here")
    group.addoption("--report-html", metavar="PATH", help="write a self-contained HTML result matrix here")
    group.addoption("--update-expectations", action="store_true",
                    help="rewrite xfail/ and crash_sets/ files of the selected backends to match this run")
    group.addoption("--artifacts-dir", metavar="DIR",
                    help="write a repro bundle (inputs, IR per stage, repro.py) per unexpected result here")
    group.addoption("--artifacts", choices=("unexpected", "all"), default="unexpected",
                    help="which results keep their bundle (default: unexpected)")
    group.addoption("--durations-from", metavar="PATH",
                    help="run the longest cases first, by the durations in this JSON report or pytest-split "
                         "durations file (default under xdist: the --report-json file of the last run, if any)")
    parser.addini("e2e_backends", "default backends", type="args", default=["linalg-on-tensors"])
    parser.addini("e2e_cases_dirs", "directories of case modules", type="paths", default=[])
    parser.addini("e2e_families", "case families of this project, one per line: package.module:NAME or "
                  "path/to/file.py:NAME (a Family or a list of them)", type="linelist", default=[])
    parser.addini("e2e_configs_dirs", "directories of backend configs", type="paths", default=[])
    parser.addini("e2e_xfail_dir", "directory of xfail/<backend>.yaml files", default="xfail")
    parser.addini("e2e_crash_sets_dir", "directory of crash_sets/<backend>.yaml files", default="crash_sets")
    parser.addini("e2e_workers", "pytest-xdist workers when no -n is given: auto (one per core), or N; 0 runs "
                  "serially", default="auto")
    with contextlib.suppress(HarnessInputError):   # a broken entry point is one error line, in pytest_configure
        add_family_options(parser, entry_point_families())


def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    """Every core by default, as lit and torch-mlir's runner do: `-n <e2e_workers>` joins the
    command line unless it says -n (or --dist), disables xdist (-p no:xdist), only collects, or
    debugs (--pdb). An xdist worker is told by its controller."""
    known = early_config.known_args_namespace
    if (not early_config.pluginmanager.has_plugin("xdist") or "PYTEST_XDIST_WORKER" in os.environ
            or known.numprocesses is not None or known.dist != "no" or known.collectonly or known.usepdb
            or known.help or known.version):
        return
    workers = str(early_config.getini("e2e_workers")).strip()
    if workers != "auto" and not workers.isdigit():
        where = shown(early_config.inipath) if early_config.inipath else "ini"
        raise pytest.UsageError(f"{where}: e2e_workers = {workers} is not auto or a whole number; write "
                                "e2e_workers = auto, or 0 to run serially")
    if workers != "0":
        args += ["-n", workers]


def pytest_configure(config: pytest.Config) -> None:
    try:
        families = load_families(config.getini("e2e_families"), Path(config.rootpath))   # before the case modules
        runner = Runner(settings_from(config, families), families, start_worker=_runs_cases(config))
    except HarnessInputError as e:
        raise pytest.UsageError(str(e)) from None
    _collect_discovered(config, runner)
    config.addinivalue_line("markers", "e2e: an end-to-end case run through a backend")
    for marker in sorted({m for family in families.values() for m in family.markers}):
        config.addinivalue_line("markers", f"{marker}: cases tagged {marker} (torch-backend-e2e)")
    config.stash[RUNNER] = runner
    config.stash[DURATIONS] = _durations(config)   # before this run's report replaces the last one
    config.pluginmanager.register(ResultReporter(config), "e2e-reporter")
    check_report_paths(config)


def _runs_cases(config: pytest.Config) -> bool:
    """Whether this process runs cases: not with --collect-only, nor as the xdist controller."""
    return not config.option.collectonly and (hasattr(config, "workerinput")
                                              or not getattr(config.option, "numprocesses", None))


def pytest_unconfigure(config: pytest.Config) -> None:
    runner = config.stash.get(RUNNER, None)
    if runner is not None:
        runner.close()


@pytest.hookimpl(trylast=True)   # after -k, -m and pytest-split have chosen the items
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list) -> None:
    durations = config.stash.get(DURATIONS, None)
    if durations:
        items[:] = longest_first(items, durations)


def _durations(config: pytest.Config) -> dict[str, float]:
    """An explicit --durations-from file; under xdist, else the report the last run wrote (its
    workers read it at start-up, before the controller writes this run's)."""
    here = Path(config.invocation_params.dir)
    explicit = config.getoption("durations_from")
    if explicit:
        try:
            return read_durations(here / explicit, f"--durations-from={explicit}")
        except HarnessInputError as e:
            raise pytest.UsageError(str(e)) from None
    last = config.getoption("report_json")
    if hasattr(config, "workerinput") and last and (here / last).is_file():
        with contextlib.suppress(HarnessInputError):   # not a report (yet): the collection order
            return read_durations(here / last)
    return {}


def _collect_discovered(config: pytest.Config, runner: Runner) -> None:
    """The folders of the cases a family discovered join the paths pytest collects, so that they
    are collected wherever the run starts (unless a path given already holds them)."""
    here = Path(config.invocation_params.dir)
    collected = [(here / arg.split("::")[0]).resolve() for arg in config.args]
    for folder in dict.fromkeys(path.parent for path in runner.module_cases if path not in runner.case_module_paths):
        if not any(folder == path or path in folder.parents for path in collected):
            config.args.append(str(folder))
            collected.append(folder)


@pytest.hookimpl(tryfirst=True)
def pytest_collect_directory(path: Path, parent: pytest.Collector):
    """The directories a family asks to be plain (harness.families.interface.Discovery.plain_dirs):
    collected without importing their __init__.py, which a Package would do."""
    runner = parent.config.stash.get(RUNNER, None)
    if runner is not None and any(path == d or d in path.parents for d in runner.plain_dirs):
        return pytest.Dir.from_parent(parent, path=path)
    return None


def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    runner = parent.config.stash.get(RUNNER, None)
    if runner is not None and file_path in runner.module_cases:
        return CaseModule.from_parent(parent, path=file_path)
    return None


class CaseModule(pytest.File):
    """A case module: one item per (case, selected backend)."""

    def collect(self):
        runner = self.config.stash[RUNNER]
        for case in runner.module_cases[self.path]:
            for backend in runner.configs:
                yield CaseItem.from_parent(self, name=f"{case.id}[{backend}]", case=case, backend=backend)


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
        for marker in ("e2e", *(m for m in runner.families[case.family].markers if m in case.tags)):
            self.add_marker(_mark(marker))
        self.extra_keyword_matches.update(case.tags)  # `-k transposed` selects by tag
        self.add_marker(_timeout_mark(runner.timeout(case, backend) + OUTER_GUARD_SLACK))
        self.record: dict | None = None

    def runtest(self) -> None:
        record = self.config.stash[RUNNER].run(self.case, self.backend, self.nodeid)
        self.record = record.to_json()
        self.user_properties += [("e2e_outcome", record.outcome.value), ("e2e_phase", record.phase or ""),
                                 ("e2e_verdict", record.verdict.value)]
        if record.verdict is Verdict.SKIPPED:
            pytest.skip(record.message)
        if record.verdict is Verdict.UNEXPECTED_PASS:
            raise CaseFailure(f"unexpectedly passed; the entry at {record.expectation_source} expects it to "
                              f"fail: delete that line's entry (or narrow its id)")
        if record.verdict is Verdict.UNEXPECTED_FAILURE:
            raise CaseFailure(_failure_text(record))
        if record.expected is not Expected.PASS:
            pytest.xfail(f"{record.outcome.value} in {record.phase} ({record.expectation_source})")

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
    if record.expected is not Expected.PASS:
        head += f" (expected {record.expected.value} at {record.expectation_source}, in a different phase)"
    return f"{head}\n{record.message}\nparams: {record.params}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if call.when == "call" and isinstance(item, CaseItem) and item.record is not None:
        outcome.get_result().e2e = item.record  # travels to the xdist controller with the report


class ResultReporter:
    """Gathers the records of every case (from xdist workers too) and writes the reports."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.records: list[dict] = []
        self.backend_versions: dict[str, dict] = {}  # what each backend says of itself
        self.messages = config.stash[RUNNER].notices()  # for the terminal summary, after the results

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record = getattr(report, "e2e", None)
        if record is not None and report.when == "call":
            record = dict(record)
            self.backend_versions.setdefault(record["backend"], {}).update(record.pop("backend_versions", {}))
            self.records.append(record)

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus) -> None:
        if hasattr(self.config, "workerinput"):  # the xdist controller writes, workers send
            return
        runner = self.config.stash[RUNNER]
        if runner.settings.artifacts_dir is not None:
            remove_empty_folders(runner.settings.artifacts_dir)
        complete = exitstatus != pytest.ExitCode.INTERRUPTED and not (session.shouldstop or session.shouldfail)
        report = build_report(self.environment(), self.records, complete)
        option = self.config.getoption
        if option("report_json"):
            write_text_atomically(Path(option("report_json")), json.dumps(report, indent=1) + "\n")
        if option("report_html"):
            from harness.views.html import render_html  # the views load only when asked for
            write_text_atomically(Path(option("report_html")), render_html(report))
        if option("report_md") or option("update_expectations"):
            self.write_proposals(report, complete)

    def write_proposals(self, report: dict, complete: bool) -> None:
        """The expectation files that would make this run match: into the Markdown report, and
        written over the files with --update-expectations (only after a complete run)."""
        try:
            proposals = self.proposals(report["results"])
        except HarnessInputError as e:  # an expectation file changed during the run
            self.messages.append(f"no expectation proposals: {e}")
            proposals = {}
        if self.config.getoption("report_md"):
            from harness.views.markdown import render_markdown
            text = render_markdown(report, {shown(p): t for p, t in proposals.items()},
                                   originals={shown(p): p.read_text(encoding="utf-8") if p.exists() else ""
                                              for p in proposals})
            write_text_atomically(Path(self.config.getoption("report_md")), text)
        if not self.config.getoption("update_expectations"):
            return
        if not complete:
            self.messages.append("--update-expectations: the run was interrupted; no file changed")
        elif not proposals:
            self.messages.append("--update-expectations: the expectation files already match this run")
        else:
            from harness.tools.expectation_update import apply
            apply(proposals)
            self.messages += [f"--update-expectations: rewrote {shown(p)} (review the '# review:' entries)"
                              for p in proposals]

    def proposals(self, records: list[dict]) -> dict[Path, str]:
        from harness.tools.expectation_update import propose
        runner = self.config.stash[RUNNER]
        ids = runner.known_ids
        found: dict[Path, str] = {}
        for backend in runner.configs:
            mine = [Record.from_json(r) for r in records if r["backend"] == backend]
            if mine:
                found.update(propose(mine, *runner.expectation_files(backend), case_ids=ids,
                                     versions=runner.conditions))
        return found

    def environment(self) -> dict:
        runner = self.config.stash[RUNNER]
        versions = {name.replace("-", "_"): version for name, version in runner.versions.items()}
        return {**versions, "platform": platform.platform(),
                "backends": {name: {**info, "reported": self.backend_versions.get(name, {})}
                             for name, info in runner.backend_environment().items()},
                "run_crash_set": runner.settings.run_crash_set,
                **({"assumed_versions": runner.settings.assumed_versions} if runner.settings.assumed_versions else {})}

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if self.records or self.messages:
            terminalreporter.section("e2e summary")
            for line in terminal_lines(self.records) + self.messages:
                terminalreporter.write_line(line)
