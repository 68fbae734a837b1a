"""`python -m harness check`: every backend config's class and every expectation file checked against
the case registry, running no case (for pre-commit and CI)."""
from __future__ import annotations

import argparse
import sys

from harness.controller.backend_probe import check_backends
from harness.errors import HarnessInputError
from harness.files import display_path
from harness.project import Project, tool_arguments
from harness.project_files.configs import BackendConfig, missing_requirement


def add_check_command(commands: argparse._SubParsersAction) -> None:
    sub = commands.add_parser("check", parents=[tool_arguments()],
                              help="validate every backend config (each class imported with its options, in "
                                   "a process of its own) and every expectation file against the case registry "
                                   "(for pre-commit and CI; runs no case)")
    sub.set_defaults(run=check)


def check(args: argparse.Namespace) -> int | None:
    """Validate every backend config (its class imported, with its options, in a process of its own)
    and every backend's expectation files against the case registry, running nothing. A bad config
    is one line and exit status 4, as pytest gives it."""
    try:
        configs = args.project.configs
    except HarnessInputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 4
    project = Project.load(args.project.settings)
    for notice in project.discovered.notices:
        print(notice, file=sys.stderr)
    entries, inapplicable = _check_expectations(project)
    checkable = _checkable(configs)
    try:
        check_backends(checkable, project.settings.rootdir)
    except HarnessInputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 4
    more = f"; {inapplicable} more do not apply here (above)" if inapplicable else ""
    skipped = len(configs) - len(checkable)
    print(f"ok: {entries - inapplicable} expectation entries of {len(project.configs)} backends match the "
          f"{len(project.case_ids)} cases{more}; the classes of {len(checkable)} backends import and take "
          f"their options{f' ({skipped} skipped, above)' if skipped else ''}")
    return None


def _check_expectations(project: Project) -> tuple[int, int]:
    """(entries, of them those whose family is not installed here), once every backend's expectation
    files load and match the cases; else one HarnessInputError listing every problem. A file named
    after no backend is a problem too."""
    problems, entries, inapplicable = [], 0, 0
    for name in sorted(project.configs):
        try:
            expectations = project.expectations(name)
        except HarnessInputError as e:
            problems.append(str(e))
            continue
        inapplicable += sum(bool(e.missing_family) for e in expectations.entries)
        entries += len(expectations.entries)
        for line in expectations.not_installed_lines(project.discovered.missing):
            print(line, file=sys.stderr)
    for directory in (project.settings.xfail_dir, project.settings.crash_sets_dir):
        problems += [f"{display_path(p)}: no backend is named {p.stem!r}; rename the file after a config in configs/ "
                     f"or delete it" for p in sorted(directory.glob("*.yaml")) if p.stem not in project.configs]
    if problems:
        raise HarnessInputError("expectations", f"{len(problems)} problem(s):\n" + "\n".join(problems))
    return entries, inapplicable


def _checkable(configs: dict[str, BackendConfig]) -> list[BackendConfig]:
    """The configs whose class can be checked here, by name; each of the others (its class imports a
    package that is not installed: not broken, not checkable here) is said on stderr."""
    checkable = []
    for name, config in sorted(configs.items()):
        dist = missing_requirement(config)
        if dist is None:
            checkable.append(config)
        else:
            print(f"{name}: class not checked: it needs {dist!r}, which is not installed ({config.install})",
                  file=sys.stderr)
    return checkable
