"""A worker's state across cases: backends created once, each case timed phase by phase and
turned into one result message, whatever it raised."""
from __future__ import annotations

import time
import traceback
from pathlib import Path
from typing import Any, Callable

from harness.backend import CaseContext, create_backend
from harness.outcomes import Outcome, Phase, outcome_for_exception
from harness.protocol import CaseResult, Message, PhaseEvent, RunRequest
from harness.worker.bundle import Bundle

MESSAGE_LIMIT = 6000  # characters of an error message kept in the result


PRELOAD_ENV = "HARNESS_WORKER_PRELOAD"  # JSON list of backend specs to create before "ready"


class Session:
    """Per-worker state: backends are instantiated once and reused across cases."""

    def __init__(self, send: Callable[[Message], None], execute: Callable):
        self.send = send
        self.execute = execute  # harness.worker.execute.execute: passed in so that torch loads before "ready"
        self.backends: dict[str, Any] = {}
        self.reported: set[str] = set()  # backends whose versions went out with a result

    def backend(self, spec: dict) -> Any:
        """The backend instance for a spec, created on first use."""
        if spec["name"] not in self.backends:
            self.backends[spec["name"]] = create_backend(spec["name"], spec["class"], spec.get("options", {}))
        return self.backends[spec["name"]]

    def preload(self, specs: list[dict]) -> None:
        """Create these backends now, before "ready", so that no case pays for their imports. A
        backend that fails here is left for its first case, which then reports the error."""
        for spec in specs:
            try:
                self.backend(spec)
            except Exception:  # noqa: BLE001
                pass

    def run(self, request: RunRequest) -> CaseResult:
        clock = PhaseClock(self.send)
        backend = None
        first_use = request.backend["name"] not in self.reported
        bundle = request.bundle
        context = CaseContext(clock.enter)   # this case's alone: nothing of it outlives the case
        try:
            context.bundle = Bundle(Path(bundle.path)) if bundle else None
            backend = self.backend(request.backend)
            outcome, message = self.execute(request.case, request.family, request.backend, backend, context,
                                            bundle.rerun if bundle else "")
        except Exception as e:  # noqa: BLE001 - every exception is a result, attributed to its phase
            outcome, message = outcome_for_exception(clock.phase), describe_error(e)
        clock.stop()
        result = CaseResult(outcome=outcome, phase=None if outcome is Outcome.PASSED else clock.phase,
                            message=message[:MESSAGE_LIMIT], durations=clock.durations,
                            notes=context.notes)
        if first_use and backend is not None:  # once per worker: versions() may be slow (a compiler probe)
            result.versions = _versions(backend)
            self.reported.add(backend.name)
        return result


class PhaseClock:
    """Tracks the current phase, reports each change and times every phase."""

    def __init__(self, send: Callable[[Message], None]):
        self.send = send
        self.phase = Phase.SETUP
        self.started = time.perf_counter()
        self.durations: dict[str, float] = {}

    def enter(self, phase: Phase) -> None:
        self.stop()
        self.phase = Phase(phase)
        self.started = time.perf_counter()
        self.send(PhaseEvent(self.phase))

    def stop(self) -> None:
        now = time.perf_counter()
        key = self.phase.value
        self.durations[key] = round(self.durations.get(key, 0.0) + now - self.started, 6)
        self.started = now


def _versions(backend: Any) -> dict[str, str]:
    try:
        return {str(k): str(v) for k, v in backend.versions().items()}
    except Exception as e:  # noqa: BLE001 - a failing probe must not fail the case
        return {"error": describe_error(e)}


def describe_error(error: BaseException) -> str:
    """The error's type and message, plus where in Python it was raised."""
    frames = traceback.extract_tb(error.__traceback__)
    location = f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    return f"{type(error).__name__}: {str(error).strip()}{location}"

