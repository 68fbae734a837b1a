"""The JSON report, which every other view (Markdown, HTML, diff, merge) reads."""
from __future__ import annotations

import collections
import hashlib
import json
import time
import uuid
from pathlib import Path
from typing import Any, Iterable

from harness.files import write_text_atomically

SCHEMA_VERSION = 1


def summarise(records: Iterable[dict]) -> dict[str, Any]:
    """Counts per backend: outcomes and verdicts."""
    per_backend: dict[str, dict] = {}
    for r in records:
        entry = per_backend.setdefault(r["backend"], {"total": 0, "outcomes": collections.Counter(),
                                                       "verdicts": collections.Counter()})
        entry["total"] += 1
        entry["outcomes"][r["outcome"]] += 1
        entry["verdicts"][r["verdict"]] += 1
    return {name: {"total": e["total"], "outcomes": dict(e["outcomes"]), "verdicts": dict(e["verdicts"])}
            for name, e in sorted(per_backend.items())}


def build_report(environment: dict, records: list[dict], complete: bool, run_id: str | None = None,
                 created: float | None = None) -> dict[str, Any]:
    """The JSON report: every view (Markdown, HTML, diff, merge, the history) reads this structure.
    `run_id` identifies the run (the history records a run once); a new one unless given."""
    records = sorted(records, key=lambda r: (r["backend"], r["case"]))
    return {"schema_version": SCHEMA_VERSION, "run_id": run_id or uuid.uuid4().hex, "complete": complete,
            "created": time.time() if created is None else created,
            "environment": environment, "results": records, "summary": summarise(records)}


def write_json(path: Path, environment: dict, records: list[dict], complete: bool, run_id: str | None = None,
               created: float | None = None) -> None:
    report = build_report(environment, records, complete, run_id, created)
    write_text_atomically(path, json.dumps(report, indent=1) + "\n")


def merged_run_id(run_ids: list[str]) -> str:
    """The run id of a report merged from shards: the same shards give the same id, so ingesting
    the merge of a night twice records that night once."""
    return hashlib.sha256("\n".join(sorted(run_ids)).encode()).hexdigest()[:32]

