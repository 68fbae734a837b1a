"""The result record: one per (case, backend); every report is a view of these."""
from __future__ import annotations

import dataclasses
import shlex
from typing import Any

from harness.installation.executables import python_command
from harness.outcomes import Expected, Outcome, Verdict


@dataclasses.dataclass
class Record:
    case: str
    backend: str
    nodeid: str
    params: dict[str, Any]
    tags: list[str]
    outcome: Outcome
    phase: str | None
    expected: Expected
    verdict: Verdict
    duration_s: float
    message: str
    expectation_source: str | None   # "xfail/linalg-on-tensors.yaml:12", or None
    phase_durations: dict[str, float]
    notes: dict[str, Any]            # what the backend reported about the case, e.g. its lowering path
    signature: str | None = None     # the normalised first error (harness.controller.signature); None: no failure
    artifacts: str | None = None     # the repro bundle directory, when one was written
    backend_versions: dict[str, str] = dataclasses.field(default_factory=dict)  # from Backend.versions(),
                                     # with a worker's first case of a backend; moved into the environment

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        for key in ("outcome", "expected", "verdict"):
            data[key] = data[key].value
        return data


def repro_command(record: dict) -> str:
    """The command that runs this one result again, from the repository root (naming the
    interpreter: a shell that activated no venv runs it too)."""
    crash_set = " --run-crash-set" if record["expected"] == "crash" else ""
    return f"{python_command()} -m pytest --backend={record['backend']}{crash_set} {shlex.quote(record['nodeid'])}"
