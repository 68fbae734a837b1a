"""The pytest options and ini keys as the Runner's Settings, each checked (one error line per bad value).

Paths given on the command line are relative to where pytest was started; ini paths to the rootdir.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

import pytest
from packaging.version import InvalidVersion, Version

from harness.controller.run_case import DEFAULT_MEMORY_LIMIT_MB
from harness.controller.runner import Settings
from harness.errors import HarnessInputError
from harness.families.interface import Family, Option
from harness.families.plugins import declared_options, resolve
from harness.spec import is_positive_finite


def settings_from(config: pytest.Config, families: Mapping[str, Family]) -> Settings:
    root, here = Path(config.rootpath), Path(config.invocation_params.dir)  # ini paths vs CLI paths
    names = [n.strip() for opt in (config.getoption("backend") or config.getini("e2e_backends"))
             for n in opt.split(",") if n.strip()]
    if not names:
        raise pytest.UsageError("--backend: no backend named; give one or more names, e.g. --backend=linalg-on-tensors")
    for option in ("configs_dir", "xfail_dir", "crash_sets_dir"):
        for value in _as_list(config.getoption(option)):
            if not (here / value).is_dir():
                raise pytest.UsageError(f"--{option.replace('_', '-')}={value}: no such directory")
    timeout = config.getoption("case_timeout")
    if timeout is not None and not is_positive_finite(timeout):
        raise pytest.UsageError(f"--case-timeout={timeout:g}: must be a positive, finite number of seconds")
    for option in ("memory_limit", "recycle_after", "recycle_rss"):
        value = config.getoption(option)
        if value is not None and not is_positive_finite(value):
            raise pytest.UsageError(f"--{option.replace('_', '-')}={value:g}: must be a positive, finite number")
    reruns = config.getoption("rerun_failures")
    if reruns < 0:
        raise pytest.UsageError(f"--rerun-failures={reruns}: must be 0 or more reruns")
    memory_limit = config.getoption("memory_limit") or DEFAULT_MEMORY_LIMIT_MB
    return Settings(
        rootdir=root, backends=list(dict.fromkeys(names)),
        cases_dirs=config.getini("e2e_cases_dirs") or [root / "cases"],
        configs_dirs=(config.getini("e2e_configs_dirs") or [root / "configs"])
        + [here / d for d in config.getoption("configs_dir")],
        xfail_dir=_cli_or_ini(config, "xfail_dir", here, root),
        crash_sets_dir=_cli_or_ini(config, "crash_sets_dir", here, root),
        cases_files=[here / f for f in config.getoption("cases_file")],
        run_crash_set=config.getoption("run_crash_set"), case_timeout=timeout,
        artifacts_dir=_artifacts_dir(config, here), artifacts_all=config.getoption("artifacts") == "all",
        memory_limit_mb=memory_limit, recycle_after=config.getoption("recycle_after"),
        # A worker that runs thousands of cases grows (JIT code, compiled kernels): replaced by
        # default once it holds half the memory limit, before a case pays for the growth.
        recycle_rss_mb=config.getoption("recycle_rss") or memory_limit / 2,
        assumed_versions=_assumed_versions(config.getoption("assume_version")),
        rerun_failures=reruns, flaky_ok=config.getoption("flaky_ok"),
        family_options=family_options(config, families))


def add_family_options(parser: pytest.Parser, families: Mapping[str, Family]) -> None:
    """Each option the families declare, as a command-line option and an ini key."""
    group = parser.getgroup("e2e")
    for option in declared_options(families):
        group.addoption(f"--{option.name}", dest=option.dest, metavar=option.metavar, help=option.help)
        parser.addini(option.ini, f"{option.help} (as --{option.name})", default="")


def family_options(config: pytest.Config, families: Mapping[str, Family]) -> dict[str, Any]:
    """The families' options, each from the command line, else the ini, else its default; checked."""
    here, root = Path(config.invocation_params.dir), Path(config.rootpath)
    return {option.dest: resolve(option, config.getoption(option.dest), _ini(config, option), here, root)
            for option in declared_options(families)}


def _ini(config: pytest.Config, option: Option) -> str | None:
    value = config.getini(option.ini)
    return " ".join(value) if isinstance(value, list) else (value or None)


def _assumed_versions(values: list[str]) -> dict[str, str]:
    """--assume-version NAME=VERSION options; the names are checked against the conditions later."""
    assumed = {}
    for value in values:
        name, _, version = value.partition("=")
        try:
            Version(version)
        except InvalidVersion:
            raise pytest.UsageError(f"--assume-version={value}: not NAME=VERSION with a PEP 440 version; "
                                    f"write e.g. --assume-version=torch-mlir=20261001") from None
        assumed[name.strip()] = version.strip()
    return assumed


def _artifacts_dir(config: pytest.Config, here: Path) -> Path | None:
    option = config.getoption("artifacts_dir")
    if not option:
        return None
    path = here / option
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise pytest.UsageError(f"--artifacts-dir={option}: cannot create it ({e.strerror}); "
                                "pick another directory") from None
    if not os.access(path, os.W_OK):
        raise pytest.UsageError(f"--artifacts-dir={option}: not writable; pick another directory")
    return path


def _as_list(value) -> list:
    return [] if value is None else value if isinstance(value, list) else [value]


def _cli_or_ini(config: pytest.Config, name: str, here: Path, root: Path) -> Path:
    """A command-line path is relative to where pytest was started; an ini path to the rootdir."""
    option = config.getoption(name)
    return here / option if option else root / config.getini(f"e2e_{name}")


def check_report_paths(config: pytest.Config) -> None:
    for option in ("report_json", "report_md", "report_html", "history"):
        report = config.getoption(option)
        if report and not _writable(Path(report)) and not (option == "history" and Path(report).is_file()):
            raise pytest.UsageError(f"--{option.replace('_', '-')}={report}: cannot write there; "
                                    f"create the directory or pick another path")
    if config.getoption("history") and not hasattr(config, "workerinput"):
        check_history(Path(config.getoption("history")))


def check_history(path: Path) -> None:
    """A corrupt or newer history file fails the run at its start, not after its last case."""
    from harness.history.store import open_history

    try:
        with open_history(path, write=True):
            pass
    except HarnessInputError as e:
        raise pytest.UsageError(f"--history: {e}") from None


def _writable(path: Path) -> bool:
    return path.parent.is_dir() and os.access(path.parent, os.W_OK) and not path.is_dir()
