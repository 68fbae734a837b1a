"""The case registry: every case of the configured case modules plus any --cases-file entries.

Loading a case module imports only harness modules (no torch), so the pytest process stays light.
"""
from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from typing import Any, Iterable, Mapping

from harness.case_data import Case
from harness.errors import HarnessInputError
from harness.files import display_path, where
from harness.project_files.yamlio import load_yaml

# The harness's own cases, the package harness.cases (in a checkout, a link to the top-level cases/).
BUILT_IN_CASES = Path(__file__).parents[1] / "cases"


def case_modules(dirs: Iterable[Path]) -> list[Path]:
    """The case modules of the given directories: every *.py not starting with '_', each file once
    however it is reached (the built-in cases are cases/ too in a checkout)."""
    found: dict[Path, Path] = {}
    for path in (p for d in dirs for p in sorted(Path(d).glob("*.py")) if not p.name.startswith("_")):
        found.setdefault(path.resolve(), path)
    return list(found.values())


def load_case_module(path: Path, options: Mapping[str, Any] | None = None) -> list[Case]:
    """The cases of a case module: its CASES list, or what its `cases(options)` returns (`options`:
    every option the families declare, by dest name: `--my-option` is options["my_option"])."""
    module = _import(path)
    source = getattr(module, "cases", None)
    cases = source(options or {}) if callable(source) else getattr(module, "CASES", None)
    if not isinstance(cases, list) or not all(isinstance(c, Case) for c in cases):
        raise HarnessInputError(display_path(path), "a case module must define CASES, a list of harness.api.Case, "
                                "or a function cases(options) that returns one")
    return list(cases)  # a copy: the module is cached, and runners add --cases-file cases to the list


def declared_families(path: Path) -> tuple[str, ...]:
    """The families a case module declares it holds (its optional `FAMILIES`), which it may not
    hold cases of here (its family is not installed)."""
    declared = getattr(_import(path), "FAMILIES", ())
    return tuple(declared) if isinstance(declared, (list, tuple)) else ()


def case_module_ids(path: Path, options: Mapping[str, Any] | None = None) -> list[str]:
    """Every id an expectation entry may name in this module: its `case_ids(options)`, else its cases'."""
    source = getattr(_import(path), "case_ids", None)
    if callable(source):
        return list(source(options or {}))
    return [case.id for case in load_case_module(path, options)]


def _import(path: Path):
    name = "harness_cases_" + re.sub(r"\W", "_", str(path.resolve()))
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None, "a .py file has a spec and a loader"
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except (ValueError, TypeError) as e:  # a bad case declaration
            raise HarnessInputError(display_path(path), str(e)) from None
        except SyntaxError as e:
            raise HarnessInputError(f"{display_path(path)}:{e.lineno}",
                                    f"syntax error ({e.msg})", "fix the module") from None
        except Exception as e:  # noqa: BLE001 - any failure to import the module is the module's
            raise HarnessInputError(display_path(path), f"importing it failed ({type(e).__name__}: {e})",
                                    "fix the module or move it out of the cases directory") from None
        sys.modules[name] = module
    return module


def load_cases_file(path: Path, families: Mapping[str, Any]) -> list[Case]:
    """Cases from a YAML or JSON list of parameter sets (the report's `params` schema)."""
    path = Path(path)
    if path.suffix == ".json":
        try:
            entries = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise HarnessInputError(display_path(path), f"cannot read JSON ({e})") from None
    else:
        entries = load_yaml(path)
    if isinstance(entries, dict) and "results" in entries:  # a JSON report: each case's params, once
        try:
            by_case = {r["case"]: r["params"] for r in entries["results"]}
        except (KeyError, TypeError):
            raise HarnessInputError(display_path(path), "a report's results must each have 'case' and 'params'",
                                    "pass a report written by --report-json") from None
        entries = [dict(params, family=case.split("/")[0], name=case.split("/", 1)[1])
                   for case, params in by_case.items()]
    if not isinstance(entries, list) or not entries:
        raise HarnessInputError(display_path(path), "a cases file must be a non-empty list of parameter sets")
    return [case_from_entry(path, i, entry, families) for i, entry in enumerate(entries)]


def case_from_entry(path: Path, index: int, entry: Any, families: Mapping[str, Any]) -> Case:
    """One entry of a cases file as a case of its family (`families`: the run's harness.families.interface
    Family objects by name; the one marked default takes an entry without `family:`)."""
    at = where(path, entry) if isinstance(entry, dict) else f"{display_path(path)} entry {index + 1}"
    if not isinstance(entry, dict):
        raise HarnessInputError(at, "each entry must be a mapping of parameters")
    entry = dict(entry)
    default = next((name for name, family in families.items() if family.default), None)
    family = entry.pop("family", default)
    if family not in families:
        raise HarnessInputError(at, f"unknown family {family!r}" if family else "no family given",
                                f"use one of {', '.join(sorted(families))}")
    name = str(entry.pop("name", f"{_slug(path.stem)}_{index}"))
    extra_tags = entry.pop("tags", [])
    if not isinstance(extra_tags, list) or not all(isinstance(t, str) for t in extra_tags):
        raise HarnessInputError(at, f"tags must be a list of strings, not {extra_tags!r}", "write tags: [a, b]")
    timeout = entry.pop("timeout", None)
    for key in families[family].path_params:
        if key in entry:
            entry[key] = _from_folder(path.parent, entry[key])
    try:
        return families[family].case(f"cases_file/{_slug(name)}", entry, tags=extra_tags + ["cases_file"],
                                     timeout=timeout, errors_named=False)
    except (ValueError, TypeError) as e:
        raise HarnessInputError(at, str(e)) from None


def _from_folder(folder: Path, value: Any) -> Any:
    """A path param (a path or a list of them) relative to the cases file's folder, made absolute."""
    if isinstance(value, list):
        return [_from_folder(folder, v) for v in value]
    return str((folder / value).resolve()) if isinstance(value, str) and value else value


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", text)
