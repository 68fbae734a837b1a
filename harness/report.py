"""Views of the result records: the JSON report and the lit-style terminal summary."""
from __future__ import annotations

import collections
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable

from harness.outcomes import Outcome, Verdict

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


def write_json(path: Path, environment: dict, records: list[dict], complete: bool) -> None:
    """Write the report atomically: a reader sees the old file or the new one, never half."""
    records = sorted(records, key=lambda r: (r["backend"], r["case"]))
    report = {"schema_version": SCHEMA_VERSION, "complete": complete, "created": time.time(),
              "environment": environment, "results": records, "summary": summarise(records)}
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(report, out, indent=1)
            out.write("\n")
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def terminal_lines(records: list[dict]) -> list[str]:
    """Per backend: counts per outcome, then each unexpected result on one line."""
    lines = []
    for backend, summary in summarise(records).items():
        counts = "  ".join(f"{o.value}={summary['outcomes'][o.value]}" for o in Outcome
                           if summary["outcomes"].get(o.value))
        lines.append(f"{backend}: {summary['total']} cases  {counts}")
        for r in sorted(records, key=lambda r: r["case"]):
            if r["backend"] == backend and r["verdict"] in (Verdict.UNEXPECTED_FAILURE.value,
                                                            Verdict.UNEXPECTED_PASS.value):
                where = f" in {r['phase']}" if r["phase"] else ""
                first = r["message"].splitlines()[0][:160] if r["message"] else ""
                lines.append(f"  {r['verdict'].upper()}: {r['case']} [{r['outcome']}{where}] {first}")
    return lines
