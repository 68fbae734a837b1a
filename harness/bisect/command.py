"""`python -m harness bisect`: the first version at which a case fails with its bad signature.

    python -m harness bisect CASE --backend NAME --package DIST[,DIST] --good V --bad V
                             [--find-links DIR] [--index-url URL] [--venvs DIR] [--cases-file FILE | --report REPORT]
    python -m harness bisect CASE --backend NAME --pythonpath DIR DIR [DIR ...] [--package DIST]

The bad version is probed first: its failure (phase and signature, harness.controller.signature)
is what the search looks for. Then the good one, which must not have it, then the versions
between, by halves: a version whose result has the bad failure is bad, any other (a pass, or
another failure, printed as such) is good. A version that will not install is skipped with pip's
reason, as `git bisect skip` does. Every probe runs the case in a harness worker of that
version's environment (harness.bisect.environments) with the case's timeout, so a crash or a
hang is a probe's result.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.bisect.engine import Bisection
from harness.bisect.environments import DEFAULT_CACHE, source_probe, venv_probe
from harness.bisect.versions import between
from harness.errors import HarnessInputError
from harness.project import tool_arguments


def bisect_command(args: argparse.Namespace) -> int:
    project = args.project   # harness.cli gives every command that takes the project its Project
    if args.case is None or args.backend is None:
        raise HarnessInputError("bisect", "needs a CASE and --backend=NAME")
    config = project.config(args.backend)
    case = project.find_case(args.case, args.report)
    dists = [d.strip() for d in (args.package or "").split(",") if d.strip()]
    if args.pythonpath:
        modules = [config.module_of(d) for d in dists or config.requires]
        if not modules:
            raise HarnessInputError("--pythonpath", f"which package do the builds hold? {config.name} requires none",
                                    "name it with --package DIST")
        folders = [_source_build(Path(d), modules) for d in args.pythonpath]
        if len(folders) < 2:
            raise HarnessInputError("--pythonpath", "needs at least two source builds, good first and bad last")
        bisection = Bisection(case, project, config, [str(f) for f in folders],
                              lambda i: source_probe(folders[i]), "source build")
    else:
        if not (dists and args.good and args.bad):
            raise HarnessInputError("bisect", "needs --package DIST --good V --bad V, or --pythonpath DIR DIR ...")
        versions = between(dists, args.good, args.bad, args.index_url, args.find_links)
        print(f"{' and '.join(dists)}: {len(versions)} versions from {args.good} to {args.bad}: "
              f"{', '.join(str(v) for v in versions)}", file=sys.stderr, flush=True)
        bisection = Bisection(case, project, config, [str(v) for v in versions],
                              lambda i: venv_probe(dists, versions[i], args.venvs, args.index_url, args.find_links),
                              "version")
    print(bisection.run())
    return 0


def _source_build(folder: Path, modules: list[str]) -> Path:
    """A folder that holds the bisected package (torch_mlir, for torch-mlir's builds)."""
    if not folder.is_dir():
        raise HarnessInputError(f"--pythonpath={folder}", "is not a folder")
    if not any(_holds(folder, module) for module in modules):
        raise HarnessInputError(f"--pythonpath={folder}", f"holds no {' or '.join(modules)} package",
                                "pass the folder a source build puts its Python packages in (torch-mlir: "
                                "build/tools/torch-mlir/python_packages/torch_mlir)")
    return folder.resolve()


def _holds(folder: Path, module: str) -> bool:
    path = folder.joinpath(*module.split("."))
    return path.is_dir() or path.with_suffix(".py").is_file()


def add_bisect_command(commands: argparse._SubParsersAction) -> None:
    sub = commands.add_parser("bisect", parents=[tool_arguments()],
                              help="the first version of a package at which a case fails with its bad signature")
    sub.add_argument("case", nargs="?", help="the case id")
    sub.add_argument("--backend", help="the backend it fails on")
    sub.add_argument("--package", metavar="DIST[,DIST]", help="the distribution(s) to bisect, moving together")
    sub.add_argument("--good", metavar="V", help="a version where the case does not fail so")
    sub.add_argument("--bad", metavar="V", help="a later version where it does")
    sub.add_argument("--find-links", type=Path, metavar="DIR", help="a folder of wheels (nightly wheels, say)")
    sub.add_argument("--index-url", metavar="URL", help="the package index, in place of pip's configured one")
    sub.add_argument("--pythonpath", nargs="+", metavar="DIR",
                     help="bisect over these source builds instead, in the order given (good first)")
    sub.add_argument("--venvs", type=Path, default=DEFAULT_CACHE, metavar="DIR",
                     help=f"where the probed versions' environments are kept (default {DEFAULT_CACHE})")
    sub.add_argument("--report", type=Path, help="a JSON report holding the case")
    sub.set_defaults(run=bisect_command)
