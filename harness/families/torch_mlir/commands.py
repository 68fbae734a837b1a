"""The torch_mlir family's subcommands: torch-mlir's xfail_sets.py imported as expectation files,
and checked against a run of the suite."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.files import print_or_write


def add_commands(commands: argparse._SubParsersAction) -> None:
    sub = commands.add_parser("import-xfail-sets", help="torch-mlir's xfail_sets.py as xfail/ and crash_sets/ "
                                                        "files of one backend, evaluated without running it")
    _xfail_sets_arguments(sub)
    sub.add_argument("--backend", required=True, help="whose files to write, e.g. linalg-on-tensors")
    sub.add_argument("--torch-version", help="the version the file's `if` blocks see (default: the installed torch)")
    sub.add_argument("--force", action="store_true", help="replace existing files")
    sub.set_defaults(run=import_xfail_sets)

    sub = commands.add_parser("check-xfail-sets", help="torch-mlir's xfail_sets.py against a run of its suite: "
                                                       "stale entries, missing ones, crashes that stopped")
    _xfail_sets_arguments(sub)
    sub.add_argument("report", type=Path, metavar="REPORT_JSON",
                     help="a --report-json of the suite on one backend (with --run-crash-set to check the crash set)")
    sub.add_argument("--backend", help="whose results to read (default: the report's only backend)")
    sub.add_argument("--markdown", action="store_true", help="Markdown instead of plain text")
    sub.add_argument("-o", "--output", type=Path, help="write the findings to this file instead of stdout")
    sub.set_defaults(run=check_xfail_sets)

    sub = commands.add_parser("export-xfail-sets", help="a run of the suite as a patch of xfail_sets.py: the tests "
                                                        "that now fail added to one e2e config's sets, those that "
                                                        "pass removed (git apply takes it)")
    sub.add_argument("report", type=Path, metavar="REPORT_JSON", help="a --report-json of the suite on one backend")
    sub.add_argument("--config", default="fx_importer",
                     help="torch-mlir's e2e config whose two sets to patch (default fx_importer)")
    sub.add_argument("--xfail-sets", type=Path, metavar="PATH",
                     help="the file, when it is not projects/pt1/e2e_testing/xfail_sets.py beside the suite")
    sub.add_argument("--set", metavar="NAME", help="the xfail set to patch instead of the config's")
    sub.add_argument("--crash-set", metavar="NAME", help="the crash set to patch instead of the config's")
    sub.add_argument("--backend", help="whose results to read (default: the report's only backend)")
    sub.add_argument("--torch-version", help="the version the file's `if` blocks see (default: the installed torch)")
    sub.add_argument("-o", "--output", type=Path, metavar="FILE", help="write the patch here (default: stdout)")
    sub.set_defaults(run=export_xfail_sets)


def _xfail_sets_arguments(sub: argparse.ArgumentParser) -> None:
    """The file and the two sets: what import-xfail-sets and check-xfail-sets both read (the suite is
    the project's --torch-mlir-suite, which the harness adds to every subcommand, as it does the
    expectation folders import-xfail-sets writes into: --xfail-dir, --crash-sets-dir)."""
    sub.add_argument("path", type=Path, metavar="XFAIL_SETS_PY", help="projects/pt1/e2e_testing/xfail_sets.py")
    sub.add_argument("--set", required=True, metavar="NAME", help="the expected failures, e.g. FX_IMPORTER_XFAIL_SET")
    sub.add_argument("--crash-set", metavar="NAME", help="the tests not to run, e.g. FX_IMPORTER_CRASHING_SET")


def import_xfail_sets(args: argparse.Namespace) -> None:
    from harness.families.torch_mlir.xfail_sets_import import import_command

    import_command(args)


def export_xfail_sets(args: argparse.Namespace) -> None:
    """The patch (empty when the run agrees with the file); what it changes, on stderr."""
    from harness.families.torch_mlir.xfail_sets_export import export_command

    patch, summary = export_command(args)
    print(summary, file=sys.stderr)
    print_or_write(patch, args.output)


def check_xfail_sets(args: argparse.Namespace) -> None:
    """Which entries of torch-mlir's sets a run found stale or missing (exit status 0 whatever it finds)."""
    from harness.families.torch_mlir.xfail_sets_check import check_command

    print_or_write(check_command(args), args.output)
