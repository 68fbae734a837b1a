"""The runner's life in a pytest process: the family table and the settings at configure (one
error line for bad input), its first worker started early, the markers, the reporter, the run
order (longest first), the backends' classes checked before the first case, SIGTERM taken as
Ctrl-C, and the workers stopped at unconfigure."""
from __future__ import annotations

import contextlib
import signal
import threading
from pathlib import Path
from typing import Any

import pytest

from harness.controller.runner import Runner
from harness.controller.schedule import longest_first, read_durations
from harness.errors import HarnessInputError
from harness.families.loader import entry_point_families
from harness.files import display_path
from harness.plugin.collection import CaseItem
from harness.plugin.options import TERMINAL, check_history, place_of, settings_from, writes_to_terminal
from harness.plugin.reporting import ResultReporter
from harness.plugin.selection import collected_paths
from harness.plugin.state import DURATIONS, RUNNER
from harness.plugin.worker_check import WorkersCheck, answer
from harness.project import Project
from harness.settings import Settings
from harness.views import json_report

BACKEND_CHECK = pytest.StashKey[WorkersCheck]()   # xdist's controller: the classes checked by its workers
SIGTERM_BEFORE = pytest.StashKey[Any]()   # the SIGTERM handler this process had before the run


def pytest_configure(config: pytest.Config) -> None:
    try:
        project = Project(settings_from(config, entry_point_families()))
        runner = Runner(project, start_worker=_runs_cases(config) and _collects_cases(config, project),
                        place=place_of(config, entry_point_families()),
                        xdist_run=getattr(config, "workerinput", {}).get("testrunuid"))
    except HarnessInputError as e:
        raise pytest.UsageError(str(e)) from None
    _collect_discovered(config, runner)
    try:
        _load_collected(config, runner)
    except HarnessInputError as e:
        runner.close()
        raise pytest.UsageError(str(e)) from None
    config.addinivalue_line("markers", "e2e: an end-to-end case run through a backend")
    for name in sorted(runner.families):
        config.addinivalue_line("markers", f"{name}: the cases of the family {name} (torch-backend-e2e)")
    for marker in sorted({m for family in runner.families.values() for m in family.markers} - set(runner.families)):
        config.addinivalue_line("markers", f"{marker}: cases tagged {marker} (torch-backend-e2e)")
    config.stash[RUNNER] = runner
    _interrupt_on_sigterm(config)
    if _xdist_controller_runs_cases(config, project):   # the first answer of its workers, before any case
        config.stash[BACKEND_CHECK] = check = WorkersCheck()
        config.pluginmanager.register(check, "e2e-workers-check")
    config.stash[DURATIONS] = _durations(config, runner.settings)   # before this run's report replaces the last one
    config.pluginmanager.register(ResultReporter(config), "e2e-reporter")
    if runner.settings.history and not hasattr(config, "workerinput"):
        check_history(runner.settings.history)


@pytest.hookimpl(optionalhook=True)   # pytest-xdist's: its controller's view of the terminal, for its workers
def pytest_configure_node(node: Any) -> None:
    node.workerinput[TERMINAL] = writes_to_terminal(node.config)


def _runs_cases(config: pytest.Config) -> bool:
    """Whether this process runs cases: not with --collect-only, nor as the xdist controller."""
    return not config.option.collectonly and (hasattr(config, "workerinput")
                                              or not getattr(config.option, "numprocesses", None))


def _xdist_controller_runs_cases(config: pytest.Config, project: Project) -> bool:
    return (not config.option.collectonly and not hasattr(config, "workerinput")
            and bool(getattr(config.option, "numprocesses", None)) and _collects_cases(config, project))


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    """Before the first case, every selected backend's class imports, takes its config's options
    and creates the backend (the first worker tried while pytest collected), else one error line.
    Under xdist the workers check and the controller waits for the first answer (worker_check)."""
    config = session.config
    if config.option.collectonly:   # listing cases runs none: no backend to check, no worker to wait on
        return
    for item in session.items:
        if isinstance(item, CaseItem):
            item.guard(config.stash[RUNNER])
    try:
        check = config.stash.get(BACKEND_CHECK, None)
        if check is not None:
            check.wait(session)
        elif hasattr(config, "workerinput"):
            answer(config, config.stash[RUNNER])
        else:
            config.stash[RUNNER].check_backends()
    except HarnessInputError as e:
        raise pytest.UsageError(str(e)) from None


def _collects_cases(config: pytest.Config, project: Project) -> bool:
    """Whether a path pytest collects holds cases (`pytest tests` in a checkout collects none)."""
    collected = collected_paths(config)
    homes = [Path(p).resolve() for p in [*project.case_dirs, *project.settings.cases_files, *project.discovered.cases]]
    return any(a == h or a in h.parents or h in a.parents for a in collected for h in homes)


def _load_collected(config: pytest.Config, runner: Runner) -> None:
    """The cases of each file pytest will collect, loaded now: a bad case or an id two files share
    is one error line before collection. A file outside the run's paths is never loaded (a run
    of one family lists no other family's database)."""
    collected = collected_paths(config)
    for path in runner.module_cases:
        real = path.resolve()
        if any(real == p or p in real.parents for p in collected):
            runner.module_cases[path]   # noqa: B018 - loads it


def _interrupt_on_sigterm(config: pytest.Config) -> None:
    """SIGTERM (timeout, docker stop, Kubernetes, Slurm, CI runners out of time) stops the run as
    Ctrl-C does: the workers stopped, the report written with every finished result, marked
    incomplete, and pytest's interrupted status. A handler someone else set is left alone."""
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        config.stash[SIGTERM_BEFORE] = signal.signal(signal.SIGTERM, _raise_interrupt)


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"{signal.Signals(signum).name} received")


def pytest_unconfigure(config: pytest.Config) -> None:
    runner = config.stash.get(RUNNER, None)
    if runner is not None:
        runner.close()
    check = config.stash.get(BACKEND_CHECK, None)
    if check is not None:
        check.stop()
    before = config.stash.get(SIGTERM_BEFORE, None)
    if before is not None:
        signal.signal(signal.SIGTERM, before)


@pytest.hookimpl(trylast=True)   # after -k, -m and pytest-split have chosen the items
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list) -> None:
    durations = config.stash.get(DURATIONS, None)
    if durations:
        items[:] = longest_first(items, durations)


def _durations(config: pytest.Config, settings: Settings) -> dict[str, float]:
    """An explicit --durations-from file; under xdist, else the JSON report the last run wrote (its
    workers read it at start-up, before the controller writes this run's)."""
    explicit = settings.durations_from
    if explicit:
        try:
            return read_durations(explicit, f"--durations-from={display_path(explicit)}")
        except HarnessInputError as e:
            raise pytest.UsageError(str(e)) from None
    last = settings.reports.get(json_report.FORMAT.name)
    if hasattr(config, "workerinput") and last and last.is_file():
        with contextlib.suppress(HarnessInputError):   # not a report (yet): the collection order
            return read_durations(last)
    return {}


def _collect_discovered(config: pytest.Config, runner: Runner) -> None:
    """The folders of the cases a family discovered join the paths pytest collects, so that they
    are collected wherever the run starts (unless a path given already holds them)."""
    collected = collected_paths(config)
    for folder in dict.fromkeys(path.parent for path in runner.discovered.cases):
        if not any(folder == path or path in folder.parents for path in collected):
            config.args.append(str(folder))
            collected.append(folder)
    for path in runner.settings.cases_files:   # a cases file that is its cases' own home
        path = Path(path).resolve()
        if path in runner.module_cases and not any(path == p or p in path.parents for p in collected):
            config.args.append(str(path))
