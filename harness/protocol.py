"""The worker protocol: what the controller (harness.controller.pool) and a worker
(harness.worker) say to each other, one JSON object per line, each with a "type".

    controller -> worker  Start        once, first: the backends to create up front, the stage cache to use
    worker -> controller  Ready        once, after creating the preloaded backends (with those it could not)
    controller -> worker  RunRequest   one case on one backend (bundle: with --artifacts-dir only)
    worker -> controller  PhaseEvent   zero or more: where the case is now (a hang or crash is blamed on it)
    worker -> controller  CaseResult   the case's result; the controller builds one too when the worker
                                       is lost (crashed, hung, over its memory limit)
    controller -> worker  Flush        before the controller ends or recycles a worker that ran cases
    worker -> controller  Flushed      its stage-cache entries are written (harness.stages.writer)

`encode` and `decode` are the only places that know the wire format.
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any

from harness.case_findings import Findings
from harness.outcomes import Outcome, Phase

KEEPER_NAME = "e2e-keeper"   # the process name of a worker's keeper (harness.worker.__main__)


@dataclasses.dataclass(frozen=True)
class CacheSettings:
    """The stage cache a worker reads and writes (--cache, --cache-dir, --cache-size)."""

    mode: str     # harness.stages.entries.CacheMode's value: on, read, write or off
    dir: str      # its folder
    size: int     # its cap, in bytes


@dataclasses.dataclass(frozen=True)
class Start:
    preload: list[dict[str, Any]] = dataclasses.field(default_factory=list)   # BackendConfig.to_json() of
                                                                              # each backend created before Ready
    cache: CacheSettings | None = None   # None: no stage cache (as --cache=off)


@dataclasses.dataclass(frozen=True)
class Ready:
    pid: int
    # The preloaded backends it could not create, by name: harness.worker.backend_check's reports
    problems: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class BundleRequest:
    path: str     # the case's repro bundle folder
    rerun: str    # the command that reruns the case through the harness, for the bundle's files


@dataclasses.dataclass(frozen=True)
class PerfRequest:
    """--perf: once the case passes its comparison, time it against eager (harness.worker.timing)."""

    threads: int = 1          # the threads every runtime may use (torch, IREE, onnxruntime), in every case
    budget_s: float = 3.0     # per case: the repeats stop when it is spent
    target: float = 0.05      # ... or when each side's median is known within this fraction (95%)
    timed: bool = True        # False for a case expected to fail: its threads are set, it is not timed


@dataclasses.dataclass(frozen=True)
class RunRequest:
    case: dict[str, Any]                 # harness.case_data.Case.to_json()
    backend: dict[str, Any]              # harness.project_files.configs.BackendConfig.to_json()
    family: dict[str, Any] = dataclasses.field(default_factory=dict)   # Family.worker_request(params)
    bundle: BundleRequest | None = None
    perf: PerfRequest | None = None      # with --perf


@dataclasses.dataclass(frozen=True)
class PhaseEvent:
    phase: Phase


@dataclasses.dataclass
class CaseResult:
    outcome: Outcome
    phase: Phase | None                  # None when it passed
    message: str
    findings: Findings = dataclasses.field(default_factory=Findings)   # what the case's run found out
    frame: str | None = None             # the innermost meaningful frame of a crash or hang, when known
    versions: dict[str, str] | None = None  # the backend's own versions(), with its first result in a
                                            # worker (None: reported before)


@dataclasses.dataclass(frozen=True)
class Flush:
    pass


@dataclasses.dataclass(frozen=True)
class Flushed:
    pass


Message = Start | Ready | RunRequest | PhaseEvent | CaseResult | Flush | Flushed
_TYPES = {"start": Start, "ready": Ready, "run": RunRequest, "phase": PhaseEvent, "result": CaseResult,
          "flush": Flush, "flushed": Flushed}
_NAMES = {cls: name for name, cls in _TYPES.items()}


def encode(message: Message) -> str:
    """One line of JSON (the enums as their values)."""
    fields = dataclasses.asdict(message)
    return json.dumps({"type": _NAMES[type(message)], **fields}) + "\n"


def decode(line: str | bytes) -> Message:
    data = json.loads(line)
    kind = _TYPES[data.pop("type")]
    if kind is Start and data.get("cache"):
        data["cache"] = CacheSettings(**data["cache"])
    if kind is RunRequest and data.get("bundle"):
        data["bundle"] = BundleRequest(**data["bundle"])
    if kind is RunRequest and data.get("perf"):
        data["perf"] = PerfRequest(**data["perf"])
    if kind is PhaseEvent:
        data["phase"] = Phase(data["phase"])
    if kind is CaseResult:
        data["outcome"] = Outcome(data["outcome"])
        data["phase"] = data["phase"] and Phase(data["phase"])
        data["findings"] = Findings.from_json(data["findings"])
    return kind(**data)
