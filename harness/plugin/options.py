"""The plugin's command-line options and ini keys (declared in harness.settings; the families add
their own), and every core by default."""
from __future__ import annotations

import contextlib
import os

import pytest

from harness.errors import HarnessInputError
from harness.families.loader import entry_point_families
from harness.files import display_path
from harness.plugin.settings import add_family_options, add_settings
from harness.settings import default_of


def pytest_addoption(parser: pytest.Parser) -> None:
    add_settings(parser)
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
    workers = str(early_config.getini("e2e_workers")).strip() or default_of("workers")
    if workers != "auto" and not workers.isdigit():
        where = display_path(early_config.inipath) if early_config.inipath else "ini"
        raise pytest.UsageError(f"{where}: e2e_workers = {workers} is not auto or a whole number; write "
                                "e2e_workers = auto, or 0 to run serially")
    if workers != "0":
        args += ["-n", workers]
