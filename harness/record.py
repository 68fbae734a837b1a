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
    subject: str | None = None       # what the case tests (Family.subject), e.g. "topk"; None: not said
    attempts: list[dict[str, Any]] = dataclasses.field(default_factory=list)  # with --rerun-failures: each
                                     # attempt's outcome, phase, signature, duration_s, the first one first
    flaky: bool = False              # its attempts disagreed

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        for key in ("outcome", "expected", "verdict"):
            data[key] = data[key].value
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Record":
        """A record of a JSON report (one written before a key existed reads with its default).
        ValueError names what is missing or wrong in a damaged one."""
        if not isinstance(data, Mapping):
            raise ValueError(f"a result is {type(data).__name__}, not an object")
        try:
            return cls._from_mapping(data)
        except KeyError as e:
            raise ValueError(f"result {data.get('case', '?')!r} has no {e.args[0]!r}") from None
        except (ValueError, TypeError) as e:
            raise ValueError(f"result {data.get('case', '?')!r}: {e}") from None

    @classmethod
    def _from_mapping(cls, data: Mapping[str, Any]) -> "Record":
        return cls(case=data["case"], backend=data["backend"], nodeid=data.get("nodeid", ""),
                   params=dict(data.get("params") or {}), tags=list(data.get("tags") or []),
                   outcome=Outcome(data["outcome"]), phase=data.get("phase"),
                   expected=Expected(data.get("expected", Expected.PASS.value)),
                   verdict=Verdict(data.get("verdict", Verdict.OK.value)), duration_s=data.get("duration_s", 0.0),
                   message=data.get("message") or "", expectation_source=data.get("expectation_source"),
                   phase_durations=dict(data.get("phase_durations") or {}), notes=dict(data.get("notes") or {}),
                   signature=data.get("signature"), artifacts=data.get("artifacts"),
                   backend_versions=dict(data.get("backend_versions") or {}), subject=data.get("subject"),
                   attempts=list(data.get("attempts") or []), flaky=bool(data.get("flaky", False)))

    @property
    def tested(self) -> str:
        """What the case tests: its subject, else its id up to the last "/"."""
        return self.subject or self.case.rsplit("/", 1)[0]

    @property
    def rerun(self) -> str:
        return repro_command(self.backend, self.nodeid, self.expected)


def repro_command(backend: str, nodeid: str, expected: Expected) -> str:
    """The command that runs one result again, from the repository root (naming the interpreter:
    a shell that activated no venv runs it too)."""
    crash_set = " --run-crash-set" if expected is Expected.CRASH else ""
    return f"{python_command()} -m pytest --backend={backend}{crash_set} {shlex.quote(nodeid)}"
