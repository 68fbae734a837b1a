"""The JSON report, which every other view (Markdown, HTML, diff, merge) reads."""
from __future__ import annotations

import collections
import json
import time
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


def build_report(environment: dict, records: list[dict], complete: bool) -> dict[str, Any]:
    """The JSON report: every view (Markdown, HTML, diff, merge) reads this structure."""
    records = sorted(records, key=lambda r: (r["backend"], r["case"]))
    return {"schema_version": SCHEMA_VERSION, "complete": complete, "created": time.time(),
            "environment": environment, "results": records, "summary": summarise(records)}


def write_json(path: Path, environment: dict, records: list[dict], complete: bool) -> None:
    write_text_atomically(path, json.dumps(build_report(environment, records, complete), indent=1) + "\n")

