"""The plugin's command-line options and ini keys (declared in harness.settings; the families and
the report formats add their own), every core by default, and the settings read back from a pytest
Config, each checked (one error line per bad value); and where the run happened, for its rerun
commands (harness.rerun)."""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any, Iterable, Mapping

import pytest

from harness.errors import HarnessInputError
from harness.families.interface import Family, Option
from harness.families.loader import declared_options, entry_point_families, resolve
from harness.files import display_path
from harness.rerun import Place, plugin_flags, typed_flags
from harness.settings import Settings, add_arguments, declarations, default_of, resolve_outputs
from harness.settings import resolve as resolve_settings
from harness.views.formats import ReportFormat, report_formats


def pytest_addoption(parser: pytest.Parser) -> None:
    add_settings(parser)
    with contextlib.suppress(HarnessInputError):   # a broken entry point is one error line, in pytest_configure
        add_family_options(parser, entry_point_families())
    with contextlib.suppress(HarnessInputError):
        add_format_options(parser, report_formats().values())


def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    """Every core by default, as lit and torch-mlir's runner do: `-n <e2e_workers>` joins the
    command line unless it says -n (or --dist), disables xdist (-p no:xdist), only collects, or
    debugs (--pdb). An xdist worker is told by its controller."""
    known = early_config.known_args_namespace
    if (not early_config.pluginmanager.has_plugin("xdist") or "PYTEST_XDIST_WORKER" in os.environ
            or known.numprocesses is not None or known.dist != "no" or known.collectonly or known.usepdb
            or known.help or known.version):
        return
    workers = str(early_config.getini("e2e_workers")).strip() or default_of("workers")
    if workers != "auto" and not workers.isdigit():
        where = display_path(early_config.inipath) if early_config.inipath else "ini"
        raise pytest.UsageError(f"{where}: e2e_workers = {workers} is not auto or a whole number; write "
                                "e2e_workers = auto, or 0 to run serially")
    if workers != "0":
        args += ["-n", workers]


def add_settings(parser: pytest.Parser) -> None:
    """Every declared setting, as a flag and an ini key."""
    add_arguments(parser.getgroup("e2e", "torch-backend-e2e").addoption)
    for _, declared in declarations():
        if declared.ini:
            # Paths are read as text and resolved by harness.settings, as the tools read the ini.
            kind: Any = "args" if declared.ini_type == "paths" else declared.ini_type   # one of addini's names
            parser.addini(declared.ini, declared.help, type=kind, default="" if kind == "string" else [])


def add_family_options(parser: pytest.Parser, families: Mapping[str, Family]) -> None:
    """Each option the families declare, as a flag and an ini key."""
    group = parser.getgroup("e2e")
    for option in declared_options(families):
        group.addoption(f"--{option.name}", dest=option.dest, metavar=option.metavar, help=option.help)
        parser.addini(option.ini, f"{option.help} (as --{option.name})", default="")


def add_format_options(parser: pytest.Parser, formats: Iterable[ReportFormat]) -> None:
    """Each report format's file, as a flag and an ini key."""
    group = parser.getgroup("e2e")
    for one in formats:
        declared = one.declared
        assert declared.flag and declared.ini, "a report format declares both (harness.views.formats)"
        group.addoption(declared.flag, dest=one.dest, help=declared.help, **declared.kind)
        parser.addini(declared.ini, declared.help, default="")


def settings_from(config: pytest.Config, families: Mapping[str, Family]) -> Settings:
    """The run's settings: the command line, else the ini, else the defaults."""
    here, root = Path(config.invocation_params.dir), Path(config.rootpath)   # CLI paths vs ini paths
    typed = {name: config.getoption(name) for name, declared in declarations() if declared.flag}
    ini = {declared.ini: config.getini(declared.ini) for _, declared in declarations() if declared.ini}
    options = {option.dest: resolve(option, config.getoption(option.dest), _ini(config, option), here, root)
               for option in declared_options(families)}
    formats = report_formats()
    reports = resolve_outputs({name: f.declared for name, f in formats.items()},
                              {name: config.getoption(f.dest) for name, f in formats.items()},
                              {f.declared.ini: config.getini(f.declared.ini)
                               for f in formats.values() if f.declared.ini},
                              here, root)
    settings = resolve_settings(typed, ini, here, root, options, reports=reports)
    if settings.warm_server == "auto":
        settings.warm_server = "on" if writes_to_terminal(config) else "off"
    if not settings.backends:
        raise HarnessInputError("--backend", "no backend named", "give one or more names, e.g. "
                                "--backend=linalg-on-tensors")
    return settings


TERMINAL = "e2e_terminal"   # the xdist controller's answer of writes_to_terminal, for its workers


def writes_to_terminal(config: pytest.Config) -> bool:
    """Whether the run's output reaches a terminal (--warm-server=auto): this process's stdout, or
    under xdist its controller's."""
    workerinput = getattr(config, "workerinput", None)
    return bool(workerinput.get(TERMINAL)) if workerinput is not None else os.isatty(1)


def place_of(config: pytest.Config, families: Mapping[str, Family]) -> Place:
    """The run's rootdir, ini file, `-p` plugins, -o overrides and typed project settings: what a
    rerun command repeats so that it runs as printed from anywhere."""
    overrides = tuple(word for text in config.getoption("override_ini") or () for word in ("-o", text))
    flags = typed_flags(config.getoption, Path(config.invocation_params.dir), declared_options(families))
    inifile = Path(config.inipath) if config.inipath else None
    return Place(Path(config.rootpath), inifile, plugin_flags(config.invocation_params.args) + overrides + flags)


def _ini(config: pytest.Config, option: Option) -> str | None:
    value: Any = config.getini(option.ini)
    return " ".join(value) if isinstance(value, list) else (value or None)


def check_history(path: Path) -> None:
    """A corrupt or newer history file fails the run at its start, not after its last case."""
    from harness.history.store import open_history

    try:
        with open_history(path, write=True):
            pass
    except HarnessInputError as e:
        raise pytest.UsageError(f"--history: {e}") from None
