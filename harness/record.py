"""The result record: one per (case, backend); every report is a view of these."""
from __future__ import annotations

import dataclasses
from typing import Any

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
    signature: str | None = None     # the normalised first error (harness.signature); None if it did not fail
    artifacts: str | None = None     # the repro bundle directory, when one was written
    backend_versions: dict[str, str] = dataclasses.field(default_factory=dict)  # from Backend.versions(),
                                     # with a worker's first case of a backend; moved into the environment

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        for key in ("outcome", "expected", "verdict"):
            data[key] = data[key].value
        return data
