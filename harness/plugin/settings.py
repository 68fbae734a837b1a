"""The declared settings (harness.settings) as pytest's options and ini keys, and read back from a
pytest Config, each checked (one error line per bad value); and where the run happened, for its
rerun commands (harness.rerun)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import pytest

from harness.errors import HarnessInputError
from harness.families.interface import Family, Option
from harness.families.loader import declared_options, resolve
from harness.rerun import Place, plugin_flags, typed_flags
from harness.settings import Settings, add_arguments, declarations
from harness.settings import resolve as resolve_settings


def add_settings(parser: pytest.Parser) -> None:
    """Every declared setting, as a flag and an ini key."""
    add_arguments(parser.getgroup("e2e", "torch-backend-e2e").addoption)
    for _, declared in declarations():
        if declared.ini:
            # Paths are read as text and resolved by harness.settings, as the tools read the ini.
            kind = "args" if declared.ini_type == "paths" else declared.ini_type
            parser.addini(declared.ini, declared.help, type=kind, default="" if kind == "string" else [])


def add_family_options(parser: pytest.Parser, families: Mapping[str, Family]) -> None:
    """Each option the families declare, as a flag and an ini key."""
    group = parser.getgroup("e2e")
    for option in declared_options(families):
        group.addoption(f"--{option.name}", dest=option.dest, metavar=option.metavar, help=option.help)
        parser.addini(option.ini, f"{option.help} (as --{option.name})", default="")


def settings_from(config: pytest.Config, families: Mapping[str, Family]) -> Settings:
    """The run's settings: the command line, else the ini, else the defaults."""
    here, root = Path(config.invocation_params.dir), Path(config.rootpath)   # CLI paths vs ini paths
    typed = {name: config.getoption(name) for name, declared in declarations() if declared.flag}
    ini = {declared.ini: config.getini(declared.ini) for _, declared in declarations() if declared.ini}
    options = {option.dest: resolve(option, config.getoption(option.dest), _ini(config, option), here, root)
               for option in declared_options(families)}
    settings = resolve_settings(typed, ini, here, root, options)
    if not settings.backends:
        raise HarnessInputError("--backend", "no backend named", "give one or more names, e.g. "
                                "--backend=linalg-on-tensors")
    return settings


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
