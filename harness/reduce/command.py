"""`python -m harness reduce`: the smallest program that fails as a case fails.

    python -m harness reduce CASE --backend NAME [--cases-file FILE | --report REPORT] --out DIR [-n N]
    python -m harness reduce --all REPORT --out DIR [-n N]

One case: harness.reduce.engine, which logs the command that reruns the reduced case as printed,
from any folder (harness.rerun). Every unexpected failure of a report, one per signature group:
harness.reduce.all_failures.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from harness.errors import HarnessInputError
from harness.families.loader import declared_options, entry_point_families
from harness.project import tool_arguments
from harness.project_files.ini import ini_file
from harness.reduce.all_failures import reduce_all
from harness.reduce.engine import Reduction, output_folder
from harness.rerun import Place, typed_flags


def reduce_command(args: argparse.Namespace) -> int:
    project = args.project   # harness.cli gives every command that takes the project its Project
    if args.parallel < 1:
        raise HarnessInputError(f"-n {args.parallel}", "must be at least 1")
    place = _place(args, project.settings.rootdir)
    if args.all is not None:
        return reduce_all(project, args.all, output_folder(args.out), args.parallel, args.verbose, place)
    if args.case is None or args.backend is None:
        raise HarnessInputError("reduce", "needs a CASE and --backend=NAME (or --all REPORT)")
    case = project.find_case(args.case, args.report)
    reduction = Reduction(case, project, project.config(args.backend), output_folder(args.out), args.parallel,
                          args.verbose, place=place)
    try:
        result = reduction.run()
    finally:
        reduction.workers.close()
    if result is None:
        print(f"{case.id} passes on {args.backend}: nothing to reduce")
    return 0


def _place(args: argparse.Namespace, rootdir: Path) -> Place:
    """The project as this command saw it (its ini, the project settings typed here) for the reduced
    cases' rerun commands; --cases-file found the case here, the rerun gives its own case.yaml."""
    flags = typed_flags(lambda dest: getattr(args, dest, None), Path.cwd(),
                        declared_options(entry_point_families()), leave_out=("cases_files",))
    return Place(rootdir, ini_file(rootdir), flags)


def add_reduce_command(commands: argparse._SubParsersAction) -> None:
    sub = commands.add_parser("reduce", parents=[tool_arguments()],
                              help="the smallest program that fails as a case does (same signature)")
    sub.add_argument("case", nargs="?", help="the case id, <family>/<name>")
    sub.add_argument("--backend", help="the backend it fails on")
    sub.add_argument("--report", type=Path, help="a JSON report holding the case (its params are read there)")
    sub.add_argument("--all", type=Path, metavar="REPORT",
                     help="reduce every unexpected failure of this report, one per signature and backend")
    sub.add_argument("--out", type=Path, required=True, help="the folder for the reduced program(s)")
    sub.add_argument("-n", dest="parallel", type=int, default=1, help="candidates run at once (workers)")
    sub.add_argument("-v", "--verbose", action="store_true", help="log every candidate's result")
    sub.set_defaults(run=reduce_command)
