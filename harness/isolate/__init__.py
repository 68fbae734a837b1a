"""Isolation of a mismatch to the op that makes it (`python -m harness isolate`): the command
(command.py), the search over the ops on the backend (engine.py), the reference values and one-op
programs (reference.py for PyTorch programs, which imports torch, and reference_onnx.py for ONNX
models, which imports onnx; each runs in a process of its own), and the prefix cut for errors that
only show in combination (prefix.py)."""
from __future__ import annotations

import json
import os
import sys
import traceback
from typing import Callable

from harness.protocol import CaseResult


def failure_line(result: CaseResult) -> str:
    """How a program failed on the backend, in one line: outcome, phase, the message's first line."""
    first = result.message.strip().splitlines()[0] if result.message.strip() else ""
    phase = f" in phase {result.phase.value}" if result.phase else ""
    return f"{result.outcome.description}{phase}" + (f": {first[:200]}" if first else "")


def serve(answer: Callable[[dict], dict]) -> None:
    """A reference process's main: the JSON request on stdin, `answer`'s reply as one JSON line on
    stdout, or {"error": one line} when it raises (the traceback goes to stderr). What the builder
    or a library prints goes to stderr too, never into the reply."""
    reply = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    request = json.load(sys.stdin)
    try:
        written = answer(request)
    except Exception as e:  # noqa: BLE001 - the exporter's, builder's or evaluator's error, in one line
        traceback.print_exc()
        first = str(e).strip().splitlines()
        reply.write(json.dumps({"error": f"{type(e).__name__}: {first[0] if first else ''}"}) + "\n")
        return
    reply.write(json.dumps(written) + "\n")
