"""Families from other packages, registered beside the built-in ones (pytest process only).

Two ways in, both naming an object that is a harness.families.interface.Family or a list of them:

* an entry point of group `torch_backend_e2e.families` in the package's metadata, e.g. in its
  pyproject.toml: `[project.entry-points."torch_backend_e2e.families"]  reductions = "mypkg.families:FAMILIES"`;
* a line of the ini key `e2e_families`: `mypkg.families:FAMILIES`, or a file relative to the
  rootdir, `families/mine.py:FAMILIES` (the rootdir is on the import path, as in a worker).

The objects are loaded in the pytest process, which never imports torch: the module that defines a
family holds its pure half only, and its `builder` names the torch half, imported in a worker.
"""
from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import re
import sys
from pathlib import Path
from typing import Any, Callable, Iterable

from harness.errors import HarnessInputError
from harness.families import FAMILIES
from harness.families.interface import Family

ENTRY_POINT_GROUP = "torch_backend_e2e.families"
INI_KEY = "e2e_families"


def load_plugin_families(entries: Iterable[str], rootdir: Path) -> None:
    """Register every entry point's families, then every ini entry's."""
    for point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        distribution = point.dist.name if point.dist else "an unknown distribution"
        where = f"entry point {point.name} = {point.value} of {distribution} (group {ENTRY_POINT_GROUP})"
        _register(_loaded(point.load, where, f"fix {distribution} or uninstall it"), where)
    for entry in entries:
        where = f"{INI_KEY} entry {entry!r}"
        _register(_loaded(lambda entry=entry: _import_entry(entry, rootdir), where, "fix the entry or the module"),
                  where)


def _import_entry(entry: str, rootdir: Path) -> Any:
    target, colon, name = entry.strip().rpartition(":")
    if not colon or not name.isidentifier():
        raise _Unusable("not an object path", "write it as package.module:NAME or path/to/file.py:NAME")
    if target.endswith(".py"):
        path = rootdir / target
        if not path.is_file():
            raise _Unusable(f"no file {path}", "give the path relative to the rootdir")
        module_name = "harness_family_" + re.sub(r"\W", "_", str(path.resolve()))
        module = sys.modules.get(module_name)
        if module is None:
            spec = importlib.util.spec_from_file_location(module_name, path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            sys.modules[module_name] = module
    else:
        if str(rootdir) not in sys.path:
            sys.path.insert(0, str(rootdir))   # the workers find the builder the same way
        module = importlib.import_module(target)
    if not hasattr(module, name):
        raise _Unusable(f"{target} has no attribute {name!r}", "name the Family (or the list of them) it defines")
    return getattr(module, name)


class _Unusable(Exception):
    def __init__(self, problem: str, fix: str):
        super().__init__(problem)
        self.problem, self.fix = problem, fix


def _loaded(load: Callable[[], Any], where: str, fix: str) -> list[Family]:
    try:
        found = load()
    except _Unusable as e:
        raise HarnessInputError(where, e.problem, e.fix) from None
    except Exception as e:  # noqa: BLE001 - any failure to import the object is the package's
        raise HarnessInputError(where, f"loading it failed ({type(e).__name__}: {e})", fix) from None
    families = [found] if isinstance(found, Family) else found
    if not isinstance(families, (list, tuple)) or not families or not all(isinstance(f, Family) for f in families):
        raise HarnessInputError(where, f"it is {type(found).__name__} {found!r:.60}, not a "
                                "harness.families.interface.Family or a non-empty list of them", fix)
    return list(families)


def _register(families: list[Family], where: str) -> None:
    for family in families:
        if FAMILIES.get(family.name) is family:   # loaded before in this process (pytester, a second session)
            continue
        if family.name in FAMILIES:
            raise HarnessInputError(where, f"family {family.name!r} is already registered (built in, or by "
                                    "another package)", "rename the family")
        FAMILIES[family.name] = family
