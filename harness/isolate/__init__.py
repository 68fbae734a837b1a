"""Isolation of a mismatch to the op that makes it (`python -m harness isolate`): the command
(command.py), the search over the ops on the backend (engine.py), the reference values and one-op
programs (reference.py, which imports torch and runs in a process of its own), and the prefix cut
for errors that only show in combination (prefix.py)."""
from __future__ import annotations

from harness.protocol import CaseResult


def failure_line(result: CaseResult) -> str:
    """How a program failed on the backend, in one line: outcome, phase, the message's first line."""
    first = result.message.strip().splitlines()[0] if result.message.strip() else ""
    phase = f" in phase {result.phase.value}" if result.phase else ""
    return f"{result.outcome.title}{phase}" + (f": {first[:200]}" if first else "")
