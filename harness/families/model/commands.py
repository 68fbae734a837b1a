"""The model family's subcommand: `python -m harness model-table`, its matrix of models and backends."""
from __future__ import annotations

import argparse
from pathlib import Path

from harness import reports
from harness.families.model.table import model_table, write_into_page
from harness.record import Record


def add_commands(commands: argparse._SubParsersAction) -> None:
    sub = commands.add_parser("model-table", help="the model family's matrix of JSON reports: per model and "
                                                  "backend, passed or the phase it failed in")
    sub.add_argument("reports", nargs="+", type=Path, metavar="REPORT_JSON")
    sub.add_argument("--page", type=Path,
                     help="replace the table between this page's marker lines (docs/results/models.md) "
                          "instead of printing it")
    sub.set_defaults(run=print_or_write_table)


def print_or_write_table(args: argparse.Namespace) -> None:
    """The matrix of every model result in the reports, printed or written into a page."""
    records = [Record.from_json(r) for path in args.reports for r in reports.read_report(path)["results"]]
    table = model_table(records)
    if args.page is None:
        print(table, end="")
    else:
        write_into_page(args.page, table)
