"""What a run's results depend on: its package versions per scope, and the fingerprint of a
backend's (the history compares results only across runs of one fingerprint)."""
from __future__ import annotations

import json
from typing import Any


def scoped_versions(environment: dict) -> dict[str, dict[str, str | None]]:
    """A report environment's package versions: '' -> the run's own (python, torch, ...), and each
    backend -> the versions its config checked and its workers reported (null: not installed)."""
    def text(value: Any) -> str | None:
        return None if value is None else str(value)

    top = {k: text(v) for k, v in environment.items() if isinstance(v, (str, int, float)) and k not in NOT_VERSIONS}
    scoped: dict[str, dict[str, str | None]] = {"": top}
    for backend, block in (environment.get("backends") or {}).items():
        if isinstance(block, dict):
            scoped[backend] = {str(k): text(v) for part in ("versions", "reported")
                               for k, v in (block.get(part) or {}).items()}
    return scoped


# Environment keys that are not package versions (commits and the machine are compared apart, in the fingerprint).
NOT_VERSIONS = {"platform", "machine", "run_crash_set", "command", "harness_commit", "project_commit",
                "assumed_versions"}


def fingerprint(scoped: dict[str, dict[str, str | None]], backend: str, environment: dict) -> str:
    """What a backend's results depend on in a run: the run's versions, the backend's, the commits,
    the machine (a report older than the machine key leaves it out)."""
    commits = {"harness commit": environment.get("harness_commit"),
               "project commit": environment.get("project_commit"),
               **({"machine": environment["machine"]} if environment.get("machine") else {})}
    versions = {**scoped.get("", {}), **scoped.get(backend, {}), **commits}
    return json.dumps(versions, sort_keys=True)
