"""Whether a backend config's class imports, takes the config's options and creates a backend: the
check every run makes before its first case (a worker's preload, harness.worker.session) and
`python -m harness check` makes of every config (this module run as `python -m
harness.worker.backend_check`, one process for all of them).

It runs where a backend may be imported, never in the pytest process. A problem is reported as
data, {"stage": "import" | "options" | "create", ...}; harness.project_files.configs.backend_problem turns
it into the error line with the config's file and line.

As a program: the backend specs (BackendConfig.to_json()) as a JSON list on stdin; on stdout, per
backend, a line {"name": NAME} before it is checked and {"name": NAME, "problem": ...} after, so
that a class that kills the process on import is named by the last line.
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any

from harness.backend_interface import load_object


def one_line(error: BaseException) -> str:
    """`ModuleNotFoundError: No module named 'x'`: the first line of the message."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


def class_problem(spec: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
    """(the class, None), or (None, the problem): it does not import, or an option is not among its OPTIONS."""
    try:
        cls = load_object(spec["class"])
    except Exception as e:  # noqa: BLE001 - any failure to import is the config's problem to report
        return None, {"stage": "import", "error": one_line(e)}
    accepted = getattr(cls, "OPTIONS", None)
    if accepted is not None:
        unknown = [key for key in spec.get("options", {}) if key not in accepted]
        if unknown:
            return None, {"stage": "options", "unknown": unknown, "accepted": sorted(accepted)}
    paths = tuple(getattr(cls, "LOWERING_PATHS", ()))
    for op, path in (spec.get("lowering") or {}).items():   # a claim in a word the class never reports
        if path not in paths:
            return None, {"stage": "lowering", "op": op, "path": path, "paths": list(paths)}
    return cls, None


def checked_backend(spec: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
    """(the backend, None), or (None, the problem): created as a worker creates it, once its class
    imported and takes the options (its __init__ may still refuse them)."""
    cls, problem = class_problem(spec)
    if problem is not None:
        return None, problem
    try:
        return cls(spec["name"], spec.get("options", {})), None
    except Exception as e:  # noqa: BLE001 - any failure to create it is the config's problem to report
        return None, {"stage": "create", "error": one_line(e)}


def backend_problem(spec: dict[str, Any]) -> dict[str, Any] | None:
    """The problem of a spec, or None."""
    return checked_backend(spec)[1]


def main() -> None:
    reply = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)   # what an import prints goes to stderr, not into the replies
    sys.stdout = sys.stderr
    for spec in json.load(sys.stdin):
        reply.write(json.dumps({"name": spec["name"]}) + "\n")
        reply.write(json.dumps({"name": spec["name"], "problem": backend_problem(spec)}) + "\n")


if __name__ == "__main__":
    main()
