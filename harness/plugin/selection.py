"""What a run selects, seen from the pytest process (the xdist controller too, which collects
nothing itself): the paths its arguments name, and whether it touches a family, so that a line
about a family (not installed, not taken by a backend) is said only to a run that asked for it."""
from __future__ import annotations

import contextlib
import importlib.util
import re
from pathlib import Path
from typing import Callable, Iterable, Mapping

import pytest

from harness.families.interface import Family


def collected_paths(config: pytest.Config) -> list[Path]:
    """The paths pytest's arguments name, a --pyargs package by its folder (resolved)."""
    here = Path(config.invocation_params.dir)
    paths = []
    for arg in config.args:
        path = here / arg.split("::")[0]
        if config.option.pyargs and not path.exists():
            with contextlib.suppress(ImportError, ValueError):
                spec = importlib.util.find_spec(arg.split("::")[0])
                origin = spec and spec.origin and Path(spec.origin)
                if origin:
                    path = origin.parent if origin.name == "__init__.py" else origin
        paths.append(path.resolve())
    return paths


def touched_families(config: pytest.Config, ran: Iterable[str], families: Mapping[str, Family],
                     module_families: Mapping[Path, set[str]]) -> Callable[[str], bool]:
    """Whether the run touches a family: it ran a case of it (`ran`: case ids), or it collects a
    case module that holds or declares it (`module_families`, by resolved path) and its -m, if
    any, names the family or one of its markers (a run selecting one family by -m does not touch the others)."""
    ran_families = {case_id.split("/", 1)[0] for case_id in ran}
    marked = set(re.findall(r"[\w.-]+", config.option.markexpr or ""))
    collected = collected_paths(config)
    under = {name for path, names in module_families.items()
             if any(path == arg or arg in path.parents for arg in collected) for name in names}

    def touched(name: str) -> bool:
        if name in ran_families:
            return True
        family = families.get(name)
        named = {name, *(family.markers if family else ())}
        return name in under and (not marked or bool(marked & named))

    return touched
