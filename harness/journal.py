"""The results journal: with `--report-json=R`, the pytest process appends every result to `R.journal`
as it arrives (one JSON line, flushed and fsync'd), so that a killed run keeps what it finished.
Once R is written the journal is removed; after a SIGKILL, `python -m harness recover R` writes R
from it, marked incomplete.

The lines follow pytest-reportlog's shape (one JSON object a line, its kind under `$report_type`),
with kinds of our own: a `SessionStart` header holding what the report needs that is known as the
run starts (run id, start time, environment), then one `E2EResult` line per record. A record line
holds the record as the report does, not pytest's TestReport: the report is rebuilt from records
alone, and a TestReport's captured output and traceback would double the journal for nothing.

Only the last line may be cut (the process died while writing it): recovery drops it and says so.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import IO, Callable, Iterable

from harness.errors import HarnessInputError
from harness.files import display_path
from harness.record import Record
from harness.reports import SCHEMA_VERSION, build_report, check_report

SUFFIX = ".journal"
VERSION = 1
HEADER, RESULT = "SessionStart", "E2EResult"
RERUN = "rerun the cases, or pass a report that has its journal beside it"


def journal_path(report: Path) -> Path:
    """The journal of a report: beside it, its name with `.journal` added (`report.json.journal`), so a
    glob of reports (`*.json`) never takes a journal for a report."""
    report = Path(report)
    return report.with_name(report.name + SUFFIX)


def split_versions(records: Iterable[dict], into: dict[str, dict]) -> list[dict]:
    """The records without the versions a backend said of itself (a worker's first case of a
    backend carries them); those go `into` {backend: versions}, which the environment reports."""
    kept = []
    for record in records:
        record = dict(record)
        into.setdefault(record["backend"], {}).update(record.pop("backend_versions", {}) or {})
        kept.append(record)
    return kept


def with_reported(environment: dict, reported: dict[str, dict]) -> dict:
    """The environment with each backend's self-reported versions."""
    backends = {name: {**info, "reported": reported.get(name, {})}
                for name, info in (environment.get("backends") or {}).items()}
    return {**environment, "backends": backends}


class JournalWriter:
    """Appends a run's records to its journal. The header (`header()`: the run id, the environment)
    goes first, with the first record, so a run that finishes nothing leaves no journal."""

    def __init__(self, path: Path, header: Callable[[], dict], warn: Callable[[str], None] = print):
        self.path, self.header, self.warn = Path(path), header, warn
        self.file: IO[str] | None = None
        self.failed = False   # the journal could not be written: said once, the run goes on without it

    def append(self, record: dict) -> None:
        if self.failed:
            return
        try:
            if self.file is None:
                self.file = open(self.path, "w", encoding="utf-8")
                self._write({"$report_type": HEADER, "e2e_journal": VERSION, **self.header()})
            self._write({"$report_type": RESULT, "record": record})
        except OSError as e:
            self.failed = True
            self.warn(f"results journal: cannot write {self.path} ({e.strerror or e}): the run goes on, but a "
                      "killed run could not be recovered")

    def _write(self, line: dict) -> None:
        assert self.file is not None, "opened by append"
        self.file.write(json.dumps(line) + "\n")
        self.file.flush()
        os.fsync(self.file.fileno())   # 0.2 ms a line here: a machine's crash keeps it too

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None

    def remove(self) -> None:
        """Once the report is written: the journal has served."""
        self.close()
        self.path.unlink(missing_ok=True)


def recovered_report(report: Path) -> tuple[dict, int, int]:
    """The report the journal of `report` holds, marked incomplete; with how many records it
    holds and how many lines were dropped (a last line cut mid-way). One error line for a journal
    that is missing, unreadable or damaged elsewhere than at its end."""
    path = journal_path(report)
    where = display_path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise HarnessInputError(where, "no such journal (a run with --report-json writes it beside the report "
                                "until the report is written)", RERUN) from None
    except (OSError, UnicodeDecodeError) as e:
        raise HarnessInputError(where, f"cannot be read ({getattr(e, 'strerror', None) or e})", RERUN) from None
    lines, dropped = _complete_lines(text, where)
    header = lines[0] if lines and isinstance(lines[0], dict) else {}
    if header.get("$report_type") != HEADER or header.get("e2e_journal") != VERSION:
        raise HarnessInputError(where, "is not a results journal of this harness (no header line)", RERUN)
    records = []
    for number, line in enumerate(lines[1:], start=2):
        if not isinstance(line, dict) or line.get("$report_type") != RESULT or not isinstance(line.get("record"), dict):
            raise HarnessInputError(where, f"line {number} is not a result", RERUN)
        records.append(_checked(line["record"], f"line {number}", where))
    environment = header.get("environment") or {}
    check_report(where, {"schema_version": SCHEMA_VERSION, "environment": environment, "results": []})
    reported: dict[str, dict] = {}
    records = split_versions(records, reported)
    created = path.stat().st_mtime   # when its last result arrived
    recovered = build_report(with_reported(environment, reported), records, complete=False,
                             run_id=header.get("run_id"), created=created)
    check_report(where, recovered)   # a result twice, say
    return recovered, len(records), dropped


def _checked(record: dict, line: str, where: str) -> dict:
    if not all(isinstance(record.get(k), str) for k in ("backend", "case", "outcome")):
        raise HarnessInputError(where, f"{line} is a result without its backend, case or outcome", RERUN)
    try:
        Record.from_json(record)
    except ValueError as e:
        raise HarnessInputError(where, f"{line}: {e}", RERUN) from None
    return record


def _complete_lines(text: str, where: str) -> tuple[list[dict], int]:
    """The journal's lines as JSON, and 1 when the last was cut: the process died while writing it,
    so it has no newline after it and is not whole JSON. A bad line before it is damage, not a cut."""
    lines = text.split("\n")
    last = lines.pop()   # after the final newline: empty unless the process died mid-line
    parsed = []
    for number, line in enumerate(lines, start=1):
        try:
            parsed.append(json.loads(line))
        except ValueError:
            raise HarnessInputError(where, f"line {number} is not JSON, and only the last line can be cut "
                                    "by a killed run", RERUN) from None
    try:
        whole = json.loads(last) if last else None
    except ValueError:
        return parsed, 1
    return parsed + ([whole] if isinstance(whole, dict) else []), int(last != "" and not isinstance(whole, dict))
