"""The family table: every family of the run, loaded in the controller (never in a worker).

Two ways in, both naming an object that is a harness.families.interface.Family or a list of them:

* an entry point of group `torch_backend_e2e.families` in a package's metadata, e.g. in its
  pyproject.toml: `[project.entry-points."torch_backend_e2e.families"]  reductions = "mypkg.families:FAMILIES"`.
  The built-in families are entry points of torch-backend-e2e itself.
* a line of the ini key `e2e_families`: `mypkg.families:FAMILIES`, or a file relative to the
  rootdir, `families/mine.py:FAMILIES` (the rootdir is on the import path, as in a worker). Such a
  family is loaded after pytest has read the command line, so it may not declare options.

The objects are loaded in the pytest process, which never imports torch: the module that defines a
family holds its pure half only, and its `builder` names the torch half, imported in a worker.
The options families declare are read here too (`declared_options`, `resolve`).
"""
from __future__ import annotations

import functools
import importlib
import importlib.metadata
import importlib.util
import re
import sys
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from harness.entry_points import distribution, installed_entry_points
from harness.errors import HarnessInputError
from harness.families.interface import Discovery, Family, Option

ENTRY_POINT_GROUP = "torch_backend_e2e.families"
INI_KEY = "e2e_families"

_from_entry_points: dict[str, Family] | None = None   # loaded once per process


def serving_family(tool: str, kind: str) -> Family:
    """The one installed family that runs what a tool cuts out of a program of this kind: `tool`
    is the Family field that says so ("reruns" for reduce, "isolates" for isolate)."""
    found = [family for family in entry_point_families().values() if getattr(family, tool) == kind]
    if len(found) != 1:
        names = ", ".join(family.name for family in found) or "none"
        raise HarnessInputError("the installed families", f"{len(found)} of them declare {tool}={kind!r} ({names})",
                                f"install exactly one with Family.{tool}={kind!r} (the built-in ones do)")
    return found[0]


def entry_point_families() -> dict[str, Family]:
    """The families of every installed package's entry points, the built-in ones first."""
    global _from_entry_points
    if _from_entry_points is None:
        table: dict[str, Family] = {}
        for point, where in installed_entry_points(ENTRY_POINT_GROUP, "families"):
            _register(table, _loaded(point.load, where, f"fix {distribution(point)} or uninstall it"), where)
        _from_entry_points = table
    return dict(_from_entry_points)


def family(name: str) -> Family:
    """An installed family (built in, or of a package's entry point) by name: its `case(name,
    params)` makes a validated case of it. KeyError with the names installed when there is none."""
    table = entry_point_families()
    if name not in table:
        raise KeyError(f"no family {name!r} is installed; the installed ones: {', '.join(table)}")
    return table[name]


def load_families(ini_entries: Iterable[str], rootdir: Path) -> dict[str, Family]:
    """The entry points' families, then the ini entries' (e2e_families; `--family` of the CLI)."""
    table = entry_point_families()
    for entry in ini_entries:
        where = f"{INI_KEY} entry {entry!r}"
        families = _loaded(functools.partial(_import_entry, entry, rootdir), where, "fix the entry or the module")
        for family in families:
            if family.options:
                raise HarnessInputError(where, f"family {family.name!r} declares options, which pytest must know "
                                        "before it reads the ini", "register the family through an entry point")
        _register(table, families, where)
    defaults = [name for name, family in table.items() if family.default]
    if len(defaults) > 1:
        raise HarnessInputError("case families", f"{', '.join(defaults)} are all marked default",
                                "mark at most one (it takes cases-file entries without `family:`)")
    return table


def declared_options(families: Mapping[str, Family]) -> list[Option]:
    """Every option the families declare, once each (two different options of one name are an error)."""
    options: dict[str, Option] = {}
    for family in families.values():
        for option in family.options:
            if options.setdefault(option.name, option) is not option:
                raise HarnessInputError(f"family {family.name}", f"option --{option.name} is declared by another "
                                        "family too", "rename one of them")
    return list(options.values())


def resolve(option: Option, typed: str | None, ini: str | None, here: Path, root: Path) -> Any:
    """The option's value: typed on the command line (paths relative to `here`), else in the ini
    (relative to `root`), else its default; None when none is given. Bad text: one error line."""
    text: str | None
    if typed is not None:
        text, source, base = typed, f"--{option.name}={typed}", here
    elif ini:
        text, source, base = ini, f"{option.ini} = {ini}", root
    else:
        text, source, base = option.default, f"--{option.name}'s default {option.default}", root
    if text is None:
        return None
    try:
        return option.parse(base / text if option.path else text)
    except ValueError as e:
        raise HarnessInputError(source, str(e)) from None


def default_options(families: Mapping[str, Family], root: Path | None = None) -> dict[str, Any]:
    """Every declared option at its default (what a case module sees outside pytest)."""
    root = root or Path.cwd()
    return {o.dest: resolve(o, None, None, root, root) for o in declared_options(families)}


def discover_each(families: Mapping[str, Family], options: Mapping[str, Any]) -> dict[str, Discovery]:
    """What each family's `discover(options)` found, by family (those that found nothing left out)."""
    found = {name: family.discover(options) if family.discover else None for name, family in families.items()}
    return {name: discovery for name, discovery in found.items() if discovery is not None}


def merged(discoveries: Iterable[Discovery]) -> Discovery:
    """Several families' discoveries as one."""
    found = Discovery(cases={})
    for mine in discoveries:
        found.cases.update(mine.cases)
        found.notices += mine.notices
        found.plain_dirs += mine.plain_dirs
        found.missing.update(mine.missing)
    return found


def worker_env(families: Mapping[str, Family]) -> dict[str, str]:
    """The environment the families' builders need in every worker."""
    env: dict[str, str] = {}
    for family in families.values():
        for name, value in family.worker_env.items():
            if env.setdefault(name, value) != value:
                raise HarnessInputError(f"family {family.name}", f"its workers need {name}={value}, another "
                                        f"family's need {name}={env[name]}", "run the two families separately")
    return env


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
            assert spec is not None and spec.loader is not None, "a .py file has a spec and a loader"
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


def _register(table: dict[str, Family], families: list[Family], where: str) -> None:
    for family in families:
        if table.get(family.name) is family:   # the same object twice (an ini entry naming an entry point's)
            continue
        if family.name in table:
            raise HarnessInputError(where, f"family {family.name!r} is already registered (built in, or by "
                                    "another package)", "rename the family")
        table[family.name] = family
