"""What the history reads of a JSON report besides its results: the keys before them, the run's
identity, its package versions per scope, and the fingerprint of what a backend's results depend on."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.errors import HarnessInputError
from harness.files import shown

REPORT_FIX = "pass a file written by pytest --report-json (or python -m harness merge)"
RESULTS_KEY = '"results": ['


def header_before_results(report: Path, chunk: int = 1 << 16) -> dict[str, Any] | None:
    """json.dumps(build_report(...)) puts every key but the summary before "results": those keys,
    from the file's first bytes, without reading its results; None when the file is not so."""
    try:
        with open(report, "rb") as stream:
            text = stream.read(chunk).decode("utf-8", errors="replace")
            while RESULTS_KEY not in text and len(text) < 64 * chunk:
                more = stream.read(chunk)
                if not more:
                    break
                text += more.decode("utf-8", errors="replace")
    except OSError as e:
        raise HarnessInputError(shown(report), f"cannot be read ({e.strerror})", REPORT_FIX) from None
    head, found, _ = text.partition(RESULTS_KEY)
    if not found:
        return None
    try:
        header = json.loads(head.rstrip().rstrip(",") + "}")
    except ValueError:
        return None
    return header if isinstance(header, dict) else None


def report_identity(report: dict) -> str:
    """What identifies a report's run: its run_id, else (a report older than run_id) its time."""
    return report.get("run_id") or f"created:{report['created']!r}"


def scoped_versions(environment: dict) -> dict[str, dict[str, str]]:
    """A report environment's package versions: '' -> the run's own (python, torch, ...), and each
    backend -> the versions its config checked and its workers reported (null: not installed)."""
    def text(value: Any) -> str | None:
        return None if value is None else str(value)

    top = {k: text(v) for k, v in environment.items() if isinstance(v, (str, int, float)) and k not in NOT_VERSIONS}
    scoped = {"": top}
    for backend, block in (environment.get("backends") or {}).items():
        if isinstance(block, dict):
            scoped[backend] = {str(k): text(v) for part in ("versions", "reported")
                               for k, v in (block.get(part) or {}).items()}
    return scoped


# Environment keys that are not package versions (commits are compared apart, in the fingerprint).
NOT_VERSIONS = {"platform", "run_crash_set", "command", "harness_commit", "project_commit", "assumed_versions"}


def fingerprint(scoped: dict[str, dict[str, str]], backend: str, environment: dict) -> str:
    """What a backend's results depend on in a run: the run's versions, the backend's, the commits."""
    commits = {"harness commit": environment.get("harness_commit"),
               "project commit": environment.get("project_commit")}
    versions = {**scoped.get("", {}), **scoped.get(backend, {}), **commits}
    return json.dumps(versions, sort_keys=True)
