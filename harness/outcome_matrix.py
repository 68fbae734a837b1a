"""A matrix of cases and backends from records: per case and backend, `pass` or the outcome and
phase it failed in with a numbered note; the notes list each distinct failure's signature once
(the model family's `model-table`, the training steps' `train-step-table`), and the command that
prints or writes one: below the views, as a family's own command uses it."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable, Sequence

from harness import reports
from harness.files import write_between_markers
from harness.outcomes import Outcome
from harness.record import Record

# A further column: its heading, and its cell from the case's records (one per backend)
Column = tuple[str, Callable[[list[Record]], str]]


def outcome_matrix(records: list[Record], row_of: Callable[[Record], str | None], heading: str,
                   columns: Sequence[Column] = ()) -> str:
    """Markdown: a row per `row_of(record)` (None: left out), sorted; after its name, `columns`,
    then a column per backend; the notes below."""
    by_row: dict[str, dict[str, Record]] = {}
    for r in records:
        row = row_of(r)
        if row is not None:
            by_row.setdefault(row, {})[r.backend] = r
    backends = sorted({b for results in by_row.values() for b in results})
    notes: dict[tuple[str, str], int] = {}   # (phase, signature) -> its number, in order of first use
    head = [heading, *(name for name, _ in columns), *(f"`{b}`" for b in backends)]
    rows = [head, ["---"] * len(head)]
    for row, results in sorted(by_row.items()):
        rows.append([f"`{row}`", *(cell(list(results.values())) for _, cell in columns),
                     *(_cell(results.get(b), notes) for b in backends)])
    table = "\n".join("| " + " | ".join(cells) + " |" for cells in rows) + "\n"
    listed = [f"{n}. {phase}: {signature}" for (phase, signature), n in notes.items()]
    return table + ("\n" + "\n".join(listed) + "\n" if listed else "")


def _cell(record: Record | None, notes: dict[tuple[str, str], int]) -> str:
    if record is None:
        return ""
    if record.outcome is Outcome.PASSED:
        return "pass"
    phase = record.phase.value if record.phase else record.outcome.value
    signature = record.signature or (record.message.splitlines() or [""])[0]
    number = notes.setdefault((phase, signature.replace("|", "\\|")), len(notes) + 1)
    return f"{record.outcome.value} in {phase} [{number}]" if record.phase else f"{record.outcome.value} [{number}]"


def add_matrix_command(commands: argparse._SubParsersAction, name: str, help: str, page: str,
                       table: Callable[[list[Record]], str], markers: tuple[str, str]) -> None:
    """`python -m harness NAME REPORT_JSON... [--page PAGE]`: `table` of the reports' records,
    printed, or written into PAGE between its marker lines (`page` names the usual one)."""
    sub = commands.add_parser(name, help=help)
    sub.add_argument("reports", nargs="+", type=Path, metavar="REPORT_JSON")
    sub.add_argument("--page", type=Path,
                     help=f"replace the table between this page's marker lines ({page}) instead of printing it")

    def print_or_write(args: argparse.Namespace) -> None:
        records = [Record.from_json(r) for path in args.reports for r in reports.read_report(path)["results"]]
        text = table(records)
        if args.page is None:
            print(text, end="")
        else:
            write_between_markers(args.page, *markers, text)

    sub.set_defaults(run=print_or_write)
