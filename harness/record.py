"""The result record: one per (case, backend); every report is a view of these."""
from __future__ import annotations

import dataclasses
import shlex
from typing import Any, Mapping

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
    phase_durations: dict[str, float]
    notes: dict[str, Any]            # what the backend reported about the case, e.g. its lowering path
    signature: str | None = None     # the normalised first error (harness.controller.signature); None: no failure
    artifacts: str | None = None     # the repro bundle directory, when one was written
    backend_versions: dict[str, str] = dataclasses.field(default_factory=dict)  # from Backend.versions(),
                                     # with a worker's first case of a backend; moved into the environment
    subject: str | None = None       # what the case tests (Family.subject), e.g. "topk"; None: not said
    attempts: list[Attempt] = dataclasses.field(default_factory=list)  # with --rerun-failures, the first
                                     # attempt first; empty when the result was not rerun
    flaky: bool = False              # its attempts disagreed
    phase_cpu_s: dict[str, float] = dataclasses.field(default_factory=dict)   # CPU seconds per phase
    phase_peak_mb: dict[str, float] = dataclasses.field(default_factory=dict)  # the worker's peak MiB per phase
    sizes: dict[str, int] = dataclasses.field(default_factory=dict)  # ops per stage, artifact bytes
    fingerprints: dict[str, str] = dataclasses.field(default_factory=dict)  # stage -> hash of its output
    cache: dict[str, str] = dataclasses.field(default_factory=dict)   # stage -> hit, miss, off, uncacheable
    cache_saved_s: float = 0.0       # what its stage cache hits saved, seconds
    perf: dict[str, Any] | None = None   # --perf's figures (harness.worker.timing); None: not timed
    expected_phase: Phase | None = None  # the phase the expectation entry names; None: no entry, or it names none
    rerun_command: str | None = None     # the command that runs it again from anywhere (harness.rerun)
    isolation: dict[str, Any] | None = None   # with --isolate, a mismatch's culprit ops (harness.plugin.isolation)
    # How close each compared floating output came to failing: its worst error over its tolerance
    # (1.0 at the limit: a pass is below 1), and float16/bfloat16 outputs' ULPs {"max", "p99"}
    # (harness.worker.compare.Accuracy). Empty: nothing compared by value (a failure before compare).
    margins: dict[str, float] = dataclasses.field(default_factory=dict)
    ulps: dict[str, dict[str, float]] = dataclasses.field(default_factory=dict)
    # The ops of its program, {"aten.add": 2} (harness.ops; empty: not listed, as an ONNX backend's
    # own export or a program that does not export), the path each took through the backend
    # ({"aten.convolution_backward": "kept"}; empty: the backend says nothing of paths) and the ops
    # the backend's decomposition made that the program did not hold.
    ops: dict[str, int] = dataclasses.field(default_factory=dict)
    lowering: dict[str, str] = dataclasses.field(default_factory=dict)
    decomposed_into: dict[str, int] = dataclasses.field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        for key in ("outcome", "expected", "verdict"):
            data[key] = data[key].value
        data["phase"] = _phase_json(self.phase)
        data["expected_phase"] = _phase_json(self.expected_phase)
        data["attempts"] = [a.to_json() for a in self.attempts]
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
                   outcome=Outcome(data["outcome"]), phase=_phase(data.get("phase")),
                   expected=Expected(data.get("expected", Expected.PASS.value)),
                   verdict=Verdict(data.get("verdict", Verdict.OK.value)), duration_s=data.get("duration_s", 0.0),
                   message=data.get("message") or "", expectation_source=data.get("expectation_source"),
                   phase_durations=dict(data.get("phase_durations") or {}), notes=dict(data.get("notes") or {}),
                   signature=data.get("signature"), artifacts=data.get("artifacts"),
                   backend_versions=dict(data.get("backend_versions") or {}), subject=data.get("subject"),
                   attempts=[Attempt.from_json(a) for a in data.get("attempts") or []],
                   flaky=bool(data.get("flaky", False)), phase_cpu_s=dict(data.get("phase_cpu_s") or {}),
                   phase_peak_mb=dict(data.get("phase_peak_mb") or {}), sizes=dict(data.get("sizes") or {}),
                   fingerprints=dict(data.get("fingerprints") or {}), cache=dict(data.get("cache") or {}),
                   cache_saved_s=data.get("cache_saved_s", 0.0),
                   perf=data.get("perf"), expected_phase=_phase(data.get("expected_phase")),
                   rerun_command=data.get("rerun_command"), isolation=_isolation(data.get("isolation")),
                   margins=_numbers(data.get("margins"), "margins"), ulps=dict(data.get("ulps") or {}),
                   ops=_numbers(data.get("ops"), "ops"), lowering=_words(data.get("lowering")),
                   decomposed_into=_numbers(data.get("decomposed_into"), "decomposed_into"))

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


def _numbers(value: Any, field: str) -> dict[str, Any]:
    if value is not None and not (isinstance(value, Mapping) and
                                  all(isinstance(v, (int, float)) for v in value.values())):
        raise ValueError(f"its {field} are not an object of numbers")
    return dict(value or {})


def _words(value: Any) -> dict[str, str]:
    if value is not None and not (isinstance(value, Mapping) and all(isinstance(v, str) for v in value.values())):
        raise ValueError("its lowering is not an object of words")
    return dict(value or {})


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
