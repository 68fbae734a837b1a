"""The plugin's command-line options and ini keys (the families add their own), and every core
by default."""
from __future__ import annotations

import contextlib
import os

import pytest

from harness.errors import HarnessInputError
from harness.families.plugins import entry_point_families
from harness.files import shown
from harness.plugin.settings import add_family_options


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
    group.addoption("--rerun-failures", type=int, default=0, metavar="N",
                    help="run an unexpected failure again, up to N times, each in a fresh worker; attempts "
                         "that disagree make the case flaky (default 0)")
    group.addoption("--flaky-ok", action="store_true",
                    help="a flaky case (its reruns disagreed) does not fail the run")
    group.addoption("--recycle-rss", type=float, metavar="MIB",
                    help="replace a worker whose resident memory after a case exceeds MIB (default: half of "
                         "--memory-limit)")
    group.addoption("--assume-version", action="append", default=[], metavar="NAME=VERSION",
                    help="the version `when:` conditions see for NAME, e.g. torch-mlir=20261001 for a source "
                         "build whose version cannot be read (repeatable)")
    group.addoption("--report-json", metavar="PATH", help="write the JSON result report here")
    group.addoption("--report-md", metavar="PATH", help="write a Markdown triage report here")
    group.addoption("--report-html", metavar="PATH", help="write a self-contained HTML result matrix here")
    group.addoption("--history", metavar="DB",
                    help="record this run in a history database (created when missing; "
                         "python -m harness history show DB)")
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
