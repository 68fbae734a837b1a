"""The project every entry point works on: its families, backend configs, cases and expectations,
loaded from one Settings, the same way for pytest and for every `python -m harness` tool.

    families (entry points + e2e_families/--add-family) -> configs -> cases (case modules, the families'
    discoveries, --cases-file) -> known ids -> version conditions -> each backend's expectations

Each stage loads when first asked for (a pytest run starts its first worker once the configs are
known, while the cases load); `Project.load` loads them all at once (`python -m harness check`).
"""
from __future__ import annotations

import argparse
import difflib
import functools
import platform
from pathlib import Path
from typing import Any, Callable

from harness import quantization
from harness.case_data import DTYPES, Case
from harness.errors import HarnessInputError
from harness.expectations import Expectations, load_expectations
from harness.families.interface import Discovery, Family
from harness.families.loader import (
    declared_options,
    discover_each,
    entry_point_families,
    load_families,
    merged,
    resolve,
)
from harness.files import display_path
from harness.installation.packages import version_text
from harness.precision.axis import at_dtypes, variant_ids
from harness.program_kinds import PROGRAM_KINDS
from harness.project_files.cases_by_file import CasesByFile
from harness.project_files.configs import BackendConfig, load_configs, select_backend
from harness.project_files.ini import find_ini
from harness.project_files.registry import (
    BUILT_IN_CASES,
    case_module_ids,
    case_modules,
    declared_families,
    load_case_module,
    load_cases_file,
)
from harness.reports import read_report
from harness.settings import Settings, add_arguments
from harness.settings import resolve as resolve_settings


class Project:
    def __init__(self, settings: Settings):
        self.settings = settings
        # What this run leaves out or cannot do, by family, once the cases are loaded: --dtypes'
        # refusals, the int8 cases without torchao.
        self.case_notices: dict[str, list[str]] = {}
        self.left_out_ids: list[str] = []   # cases not collected here (no torchao), which entries may name

    @classmethod
    def load(cls, settings: Settings) -> "Project":
        """Every stage loaded and checked (bad input: a HarnessInputError)."""
        project = cls(settings)
        project.known_ids, project.conditions  # noqa: B018 - loads the families, configs and cases
        return project

    @classmethod
    def from_args(cls, args: argparse.Namespace, here: Path | None = None) -> "Project":
        """A tool's project (loaded as asked for): its `tool_arguments` plus the ini found from
        `here` (the working directory)."""
        return cls(settings_from_args(args, here))

    # ---- the stages

    @functools.cached_property
    def families(self) -> dict[str, Family]:
        return load_families(self.settings.families, self.settings.rootdir)

    @functools.cached_property
    def configs(self) -> dict[str, BackendConfig]:
        """Every backend config, built in and of the configs directories."""
        return load_configs(self.settings.configs_dirs)

    def config(self, backend: str, option: str = "--backend") -> BackendConfig:
        return select_backend(self.configs, backend, option)

    @property
    def case_options(self) -> dict[str, Any]:
        """What case modules' cases(options) and the families' discover(options) see: the families'
        options by dest name, and the run's `dtypes` (for the families that list their cases per dtype)."""
        return {**self.settings.family_options, "dtypes": self.settings.dtypes}

    @functools.cached_property
    def discoveries(self) -> dict[str, Discovery]:
        """What each family found outside the case modules, by family (a notice belongs to its family)."""
        return discover_each(self.families, self.case_options)

    @functools.cached_property
    def discovered(self) -> Discovery:
        """The cases the families found outside the case modules, and the families not installed."""
        return merged(self.discoveries.values())

    @functools.cached_property
    def module_families(self) -> dict[Path, set[str]]:
        """The families each case module declares (`FAMILIES`: a family that is not installed has no
        cases; a module that declares them is not loaded for it), else those it holds cases of;
        resolved: whether a run collects a family is seen from its paths."""
        return {path.resolve(): set(self._declared(path)) or {c.family for c in self.module_cases[path]}
                for path in self._modules}

    @functools.cached_property
    def module_cases(self) -> CasesByFile:
        """The cases by the file pytest collects them under: the case modules', the discovered ones,
        and --cases-file cases (see `_cases_files_homes`), each at the run's --dtypes
        (harness.precision.axis); without torchao, none that quantizes. Each file's cases load when
        first asked for (harness.project_files.cases_by_file); every id once."""
        joining = self._cases_files_homes()
        return CasesByFile([*self._modules, *self.discovered.cases, *joining],
                           lambda path: self._for_this_run(self._file_cases(path) + joining.get(path, [])))

    def _file_cases(self, path: Path) -> list[Case]:
        """A file's own cases: a family discovered them there, or its case module holds them (none:
        a cases file collected itself)."""
        if path in self.discovered.cases:
            return list(self.discovered.cases[path])
        if path not in self._module_set:
            return []
        cases = load_case_module(path, self.case_options)
        self._check_installed(path, cases)
        return cases

    def _pytorch_program(self, case: Case) -> bool:
        return PROGRAM_KINDS[self.families[case.family].program].pytorch

    def _for_this_run(self, cases: list[Case]) -> list[Case]:
        """The cases at the run's --dtypes (harness.precision.axis), without those this installation
        cannot build (int8 PyTorch programs without torchao); what it left out or refused, noted."""
        kept, left_out = quantization.collectable(cases, self._pytorch_program)
        kept_ids = {c.id for c in kept}   # a set: thousands of cases compared in a list cost 1.5 s
        self.left_out_ids += [c.id for c in cases if c.id not in kept_ids]
        at_run_dtypes, refused = at_dtypes(kept, self.families, self.settings.dtypes)
        for family, lines in [*left_out.items(), *refused.items()]:
            mine = self.case_notices.setdefault(family, [])
            mine += [line for line in lines if line not in mine]
        return at_run_dtypes

    def cases_at(self, path: Path) -> list[Case] | None:
        """The cases pytest collects under this file, however the path reaches it (`pytest --pyargs
        harness.cases` in a checkout collects harness/cases/*.py, a link to cases/*.py)."""
        key = path if path in self.module_cases else self._by_real_path.get(path.resolve())
        return None if key is None else self.module_cases[key]

    @functools.cached_property
    def _by_real_path(self) -> dict[Path, Path]:
        return {path.resolve(): path for path in self.module_cases}

    @property
    def cases(self) -> list[Case]:
        return [c for cases in self.module_cases.values() for c in cases]

    def cases_where(self, family: Callable[[str], bool]) -> list[Case]:
        """The cases of the families `family` picks, without loading the case modules that declare
        only other families."""
        return [c for path in self._files_holding(family) for c in self.module_cases[path] if family(c.family)]

    def _files_holding(self, family: Callable[[str], bool]) -> list[Path]:
        """The files that may hold cases of the families `family` picks: those that declare one, and
        those that declare none."""
        return [path for path in self.module_cases
                if not (declared := self._declared(path)) or any(map(family, declared))]

    @functools.cached_property
    def case_ids(self) -> list[str]:
        """Every case of the modules, selected by default or not, and of the run (not the other
        dtypes' variants of them)."""
        options = self.case_options
        return sorted({i for path in self._modules for i in case_module_ids(path, options)}
                      | {c.id for c in self.cases} | set(self.left_out_ids))

    @functools.cached_property
    def known_ids(self) -> list[str]:
        """What expectation entries may name: every case, and every case at every dtype (--dtypes)."""
        return sorted(set(self.case_ids) | set(variant_ids(self.cases, self.families)))

    def known_ids_of(self, families: frozenset[str] | None) -> list[str]:
        """What entries of these families may name (None: of any family), without loading the case
        modules that declare only other families."""
        if families is None:
            return self.known_ids
        paths = self._files_holding(families.__contains__)
        cases = [c for p in paths for c in self.module_cases[p] if c.family in families]
        ids = {i for p in paths if p in self._module_set for i in case_module_ids(p, self.case_options)}
        ids |= {c.id for c in cases} | set(self.left_out_ids) | set(variant_ids(cases, self.families))
        return sorted(i for i in ids if i.partition("/")[0] in families)

    @functools.cached_property
    def versions(self) -> dict[str, str]:
        """python, and torch, torch-mlir and numpy where they can be imported."""
        found = {dist: version_text(dist) for dist in ("torch", "torch-mlir", "numpy")}
        return {"python": platform.python_version(), **{d: v for d, v in found.items() if v}}

    @functools.cached_property
    def conditions(self) -> dict[str, str | None]:
        """What an expectation's `when:` may name, with its version: installed, 'unknown (source build)
        at PATH', or None (not there); --assume-version's versions replace them."""
        conditions = {**{d: version_text(d, c.module_of(d)) for c in self.configs.values() for d in c.requires},
                      **self.versions}
        for name, version in self.settings.assumed_versions.items():
            if name not in conditions:
                raise HarnessInputError(f"--assume-version={name}={version}", f"unknown name {name!r}",
                                        f"use one of {', '.join(sorted(conditions))}")
            conditions[name] = version
        return conditions

    @functools.cache  # noqa: B019 - a project lives as long as its process
    def expectations(self, backend: str) -> Expectations:
        """The backend's expectation files, checked against every case id."""
        return load_expectations(backend, self.settings.xfail_dir, self.settings.crash_sets_dir, self.known_ids_of,
                                 self.conditions, self.discovered.missing)

    def expectation_files(self, backend: str) -> tuple[Path, Path]:
        return self.settings.xfail_dir / f"{backend}.yaml", self.settings.crash_sets_dir / f"{backend}.yaml"

    def report_cases(self, report: dict) -> dict[str, Case]:
        """A JSON report's cases by id, rebuilt from the params it recorded (ids unchanged)."""
        cases = {}
        for record in report["results"]:
            family = self.families.get(record["case"].split("/", 1)[0])
            if family is not None and record["case"] not in cases:
                try:
                    cases[record["case"]] = family.case(record["case"].split("/", 1)[1], record["params"])
                except ValueError:
                    continue   # params of another harness version: that case cannot be rebuilt
        return cases

    def find_case(self, case_id: str, report: Path | None = None) -> Case:
        """The case of that id, from `report` (a JSON report: its params) or the project; else
        one error line with the closest id."""
        cases = list(self.report_cases(read_report(report)).values()) if report else self.cases
        for case in cases:
            if case.id == case_id:
                return case
        variant = self._dtype_variant(case_id, cases)
        if variant is not None:
            return variant
        # Named by where the user pointed: the report, else the cases files, else the cases dirs.
        sources = [report] if report else self.settings.cases_files or self.settings.cases_dirs
        if not report and self.settings.cases_files:
            cases = [c for file_cases in self._cases_files.values() for c in file_cases]
        where = ", ".join(display_path(p) for p in sources)
        close = difflib.get_close_matches(case_id, [c.id for c in cases], n=1)
        raise HarnessInputError(case_id, f"no such case in {where} ({len(cases)} cases)",
                                f"did you mean {close[0]}?" if close else "check the id (pytest --collect-only -q "
                                "lists them), or pass --cases-file or --report holding it")

    # ---- helpers

    def _dtype_variant(self, case_id: str, cases: list[Case]) -> Case | None:
        """`<id>/<dtype>`, a case at a dtype this run's --dtypes did not name: made as --dtypes makes it."""
        stem, _, dtype = case_id.rpartition("/")
        case = next((c for c in cases if c.id == stem), None)
        if case is None or dtype not in DTYPES or self.families[case.family].at_dtype is None:
            return None
        try:
            return at_dtypes([case], self.families, (dtype,))[0][0]
        except IndexError:   # the family cannot put it at that dtype
            return None

    def _check_installed(self, path: Path, cases: list[Case]) -> None:
        """A case module's cases name installed families: a module can import a family the entry
        points do not list (an editable install older than the family)."""
        for case in cases:
            if case.family not in self.families:
                raise HarnessInputError(display_path(path), f"its cases are of family {case.family!r}, which no "
                                        "installed entry point declares (an install older than the family?)",
                                        "pip install -e . again in the checkout, or install the package "
                                        "that declares the family")

    @functools.cached_property
    def _modules(self) -> list[Path]:
        return case_modules(self.case_dirs)

    @property
    def case_dirs(self) -> list[Path]:
        """The folders of its case modules: the settings', and the built-in cases unless left out."""
        return [*self.settings.cases_dirs, *([BUILT_IN_CASES] if self.settings.builtin_cases else [])]

    @functools.cached_property
    def _module_set(self) -> set[Path]:
        return set(self._modules)

    def _declared(self, path: Path) -> tuple[str, ...]:
        """The families a case module declares (its `FAMILIES`), known without loading its cases."""
        return declared_families(path) if path in self._module_set else ()

    def _cases_files_homes(self) -> dict[Path, list[Case]]:
        """--cases-file cases by the file they join: the first case module of the project's own of
        their family (collected with it), or, for a family no module declares (a module case in a
        bug report), its first case module; where it has none (a reduced case's folder, a project
        that runs only the built-in cases, which pytest collects only when told), the cases file
        itself."""
        if not self.settings.cases_files:
            return {}
        own_dirs = {Path(d).resolve() for d in self.settings.cases_dirs}
        own = [p for p in [*self._modules, *self.discovered.cases] if p.resolve().parent in own_dirs]
        homes: dict[str, Path] = {}
        for path in own:
            for family in self._declared(path) or [c.family for c in self._file_cases(path)]:
                homes.setdefault(family, path)
        first = next(iter(own), None)
        joining: dict[Path, list[Case]] = {}
        for path, cases in self._cases_files.items():
            for case in cases:
                joining.setdefault(homes.get(case.family, first) or path.resolve(), []).append(case)
        return joining

    @functools.cached_property
    def _cases_files(self) -> dict[Path, list[Case]]:
        """The --cases-file cases, by file (read once, whichever asks first)."""
        return {Path(path): load_cases_file(path, self.families) for path in self.settings.cases_files}


def settings_from_args(args: argparse.Namespace, here: Path | None = None) -> Settings:
    """A tool's settings: its command line (`tool_arguments`), the ini's, the defaults."""
    here = here or Path.cwd()
    root, ini = find_ini(here)
    typed = vars(args)
    options = {o.dest: resolve(o, typed.get(o.dest), _text(ini.get(o.ini)), here, root)
               for o in declared_options(entry_point_families())}
    return resolve_settings(typed, ini, here, root, options, shared_only=True)


def tool_arguments() -> argparse.ArgumentParser:
    """The parent parser of every tool that loads the project: the shared settings and the
    families' own options, as pytest takes them."""
    parser = argparse.ArgumentParser(add_help=False)
    add_tool_arguments(parser)
    return parser


def add_tool_arguments(parser: argparse.ArgumentParser) -> None:
    """The shared settings and the families' own options, added to a tool's parser."""
    add_arguments(parser.add_argument_group("project (as pytest takes them; the ini's values apply too)")
                  .add_argument, shared_only=True)
    group = parser.add_argument_group("family options (as pytest takes them)")
    for option in declared_options(entry_point_families()):
        group.add_argument(f"--{option.name}", dest=option.dest, metavar=option.metavar, help=option.help)


def _text(value: Any) -> str | None:
    return " ".join(value) if isinstance(value, list) else (str(value) if value not in (None, "") else None)
