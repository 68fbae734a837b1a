"""The result record: one per (case, backend); every report is a view of these."""
from __future__ import annotations

import dataclasses
import shlex
from typing import Any, Mapping

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

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Record":
        """A record of a JSON report (one written before a key existed reads with its default)."""
        return cls(case=data["case"], backend=data["backend"], nodeid=data.get("nodeid", ""),
                   params=dict(data.get("params") or {}), tags=list(data.get("tags") or []),
                   outcome=Outcome(data["outcome"]), phase=data.get("phase"),
                   expected=Expected(data.get("expected", Expected.PASS.value)),
                   verdict=Verdict(data.get("verdict", Verdict.OK.value)), duration_s=data.get("duration_s", 0.0),
                   message=data.get("message") or "", expectation_source=data.get("expectation_source"),
                   phase_durations=dict(data.get("phase_durations") or {}), notes=dict(data.get("notes") or {}),
                   signature=data.get("signature"), artifacts=data.get("artifacts"),
                   backend_versions=dict(data.get("backend_versions") or {}))


def repro_command(record: Mapping[str, Any]) -> str:
    """The command that runs this one result again, from the repository root (naming the
    interpreter: a shell that activated no venv runs it too)."""
    crash_set = " --run-crash-set" if record["expected"] == Expected.CRASH else ""
    return f"{python_command()} -m pytest --backend={record['backend']}{crash_set} {shlex.quote(record['nodeid'])}"
