"""The result record: one per (case, backend); every report is a view of these."""
from __future__ import annotations

import dataclasses
import shlex
from typing import Any, Mapping

from harness.case_findings import Findings
from harness.installation.executables import python_command
from harness.outcomes import Expected, Outcome, Phase, Verdict


@dataclasses.dataclass(frozen=True)
class Attempt:
    """One attempt of a result that --rerun-failures ran again (Record.attempts: the first, then
    each rerun). Its JSON has the keys and strings reports have always had."""

    outcome: Outcome
    phase: Phase | None
    signature: str | None   # the normalised first error (harness.controller.signature); None: a pass
    duration_s: float

    def to_json(self) -> dict[str, Any]:
        return {"outcome": self.outcome.value, "phase": _phase_json(self.phase), "signature": self.signature,
                "duration_s": self.duration_s}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Attempt":
        # A hand-made report may leave out the signature and the time; the outcome it must give.
        if not isinstance(data, Mapping):
            raise ValueError(f"an attempt is {type(data).__name__}, not an object")
        return cls(outcome=Outcome(data["outcome"]), phase=_phase(data.get("phase")),
                   signature=data.get("signature"), duration_s=data.get("duration_s", 0.0))


@dataclasses.dataclass
class Record:
    case: str
    backend: str
    nodeid: str
    params: dict[str, Any]
    tags: list[str]
    outcome: Outcome
    phase: Phase | None              # where it failed; None: passed, not run, or crashed before any phase
    expected: Expected
    verdict: Verdict
    duration_s: float
    message: str
    expectation_source: str | None   # "xfail/linalg-on-tensors.yaml:12", or None
    # What the case's run found out (phase figures, sizes, fingerprints, notes, margins, ops, ...), as the
    # worker sent it; in the JSON its keys are the record's own, as reports have always had them.
    findings: Findings = dataclasses.field(default_factory=Findings)
    signature: str | None = None     # the normalised first error (harness.controller.signature); None: no failure
    artifacts: str | None = None     # the repro bundle directory, when one was written
    backend_versions: dict[str, str] = dataclasses.field(default_factory=dict)  # from Backend.versions(),
                                     # with a worker's first case of a backend; moved into the environment
    subject: str | None = None       # what the case tests (Family.subject), e.g. "topk"; None: not said
    attempts: list[Attempt] = dataclasses.field(default_factory=list)  # with --rerun-failures, the first
                                     # attempt first; empty when the result was not rerun
    flaky: bool = False              # its attempts disagreed
    expected_phase: Phase | None = None  # the phase the expectation entry names; None: no entry, or it names none
    rerun_command: str | None = None     # the command that runs it again from anywhere (harness.rerun)
    isolation: dict[str, Any] | None = None   # with --isolate, a mismatch's culprit ops (harness.plugin.isolation)

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        for key in ("outcome", "expected", "verdict"):
            data[key] = data[key].value
        data["phase"] = _phase_json(self.phase)
        data["expected_phase"] = _phase_json(self.expected_phase)
        data["attempts"] = [a.to_json() for a in self.attempts]
        return _spliced(data, "findings")   # flat, as reports have always had them

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
                   outcome=Outcome(data["outcome"]), phase=_phase(data.get("phase")),
                   expected=Expected(data.get("expected", Expected.PASS.value)),
                   verdict=Verdict(data.get("verdict", Verdict.OK.value)), duration_s=data.get("duration_s", 0.0),
                   message=data.get("message") or "", expectation_source=data.get("expectation_source"),
                   findings=Findings.from_json(data), signature=data.get("signature"), artifacts=data.get("artifacts"),
                   backend_versions=dict(data.get("backend_versions") or {}), subject=data.get("subject"),
                   attempts=[Attempt.from_json(a) for a in data.get("attempts") or []],
                   flaky=bool(data.get("flaky", False)), expected_phase=_phase(data.get("expected_phase")),
                   rerun_command=data.get("rerun_command"), isolation=_isolation(data.get("isolation")))

    @property
    def what_it_tests(self) -> str:
        """What the case tests: its subject, else its id up to the last "/"."""
        return self.subject or self.case.rsplit("/", 1)[0]

    @property
    def rerun(self) -> str:
        return self.rerun_command or repro_command(self.backend, self.nodeid, self.expected)


def _isolation(value: Any) -> dict[str, Any] | None:
    if value is not None and not (isinstance(value, Mapping) and isinstance(value.get("culprits", []), list)):
        raise ValueError("its isolation is not an object with a list of culprits")
    return None if value is None else dict(value)


def _spliced(data: dict[str, Any], key: str) -> dict[str, Any]:
    """The dict with the items of its dict at `key` in that key's place."""
    return {k: v for name, value in data.items() for k, v in (value.items() if name == key else [(name, value)])}


def _phase(value: str | None) -> Phase | None:
    return None if value is None else Phase(value)


def _phase_json(phase: Phase | None) -> str | None:
    return None if phase is None else phase.value


def repro_command(backend: str, nodeid: str, expected: Expected) -> str:
    """The command that runs one result again, from its project's rootdir (naming the interpreter:
    a shell that activated no venv runs it too): for a record of a report written before records
    carried their own (`rerun_command`, from harness.rerun)."""
    crash_set = " --run-crash-set" if expected is Expected.CRASH else ""
    return f"{python_command()} -m pytest --backend={backend}{crash_set} {shlex.quote(nodeid)}"
