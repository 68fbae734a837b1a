"""The project's pytest ini, found as pytest finds it, for the tools that run outside pytest.

From the working directory upwards, the first folder holding pytest.ini, .pytest.ini,
pyproject.toml with a [tool.pytest] or [tool.pytest.ini_options] table, tox.ini with [pytest], or
setup.cfg with [tool:pytest] gives the ini and the rootdir; with none, the rootdir is the working
directory and the ini is empty. (pytest's -c and --rootdir have no counterpart here.)
"""
from __future__ import annotations

import configparser
import tomllib
from pathlib import Path
from typing import Any

from harness.errors import HarnessInputError

_SECTIONS = {"pytest.ini": "pytest", ".pytest.ini": "pytest", "tox.ini": "pytest", "setup.cfg": "tool:pytest"}


def find_ini(start: Path) -> tuple[Path, dict[str, Any]]:
    """(rootdir, the ini's keys) for a tool started in `start`."""
    path, keys = _locate(start)
    return (path.parent, keys) if path else (start, {})


def ini_file(start: Path) -> Path | None:
    """The ini file a tool started in `start` reads, or None (what a rerun command passes with -c)."""
    return _locate(start)[0]


def _locate(start: Path) -> tuple[Path | None, dict[str, Any]]:
    for folder in (start, *start.parents):
        for name in ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg"):
            path = folder / name
            if path.is_file():
                keys = _read(path)
                if keys is not None:
                    return path, keys
    return None, {}


def _read(path: Path) -> dict[str, Any] | None:
    """The pytest keys of one file, or None when it has no pytest section (pytest.ini always counts)."""
    try:
        if path.suffix == ".toml":
            tool = tomllib.loads(path.read_text(encoding="utf-8")).get("tool", {})
            pytest = tool.get("pytest")
            if not isinstance(pytest, dict):
                return None
            return dict(pytest.get("ini_options", pytest))
        parser = configparser.ConfigParser(interpolation=None)
        parser.read(path, encoding="utf-8")
    except (OSError, ValueError, configparser.Error) as e:
        raise HarnessInputError(str(path), f"cannot be read as pytest's ini ({e})", "fix its syntax") from None
    section = _SECTIONS[path.name]
    if not parser.has_section(section):
        return {} if path.name in ("pytest.ini", ".pytest.ini") else None
    return dict(parser.items(section))
