"""A worker's state across cases: backends created once, each case timed phase by phase and
turned into one result message, whatever it raised."""
from __future__ import annotations

import dataclasses
import os
import resource
import time
from pathlib import Path
from typing import Any, Callable

from harness.backend_interface import CaseContext, case_context, create_backend
from harness.case_findings import Findings
from harness.errors import describe_error
from harness.outcomes import Outcome, Phase, outcome_for_exception
from harness.protocol import CaseResult, Message, PhaseEvent, RunRequest
from harness.stages.changes import in_stage_order
from harness.worker.backend_check import checked_backend
from harness.worker.bundle import Bundle

MESSAGE_LIMIT = 6000  # characters of an error message kept in the result


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

    def preload(self, specs: list[dict]) -> dict[str, dict]:
        """Create these backends now, before "ready", so that no case pays for their imports; return
        those that fail (the class does not import, an option it does not declare, its __init__
        raises), by name, for Ready: the controller stops the run before its first case."""
        problems = {}
        for spec in specs:
            backend, problem = checked_backend(spec)
            if problem is None:
                self.backends[spec["name"]] = backend
            else:
                problems[spec["name"]] = problem
        return problems

    def run(self, request: RunRequest) -> CaseResult:
        clock = PhaseClock(self.send)
        backend = None
        first_use = request.backend["name"] not in self.reported
        bundle = request.bundle
        # this case's alone: nothing of it outlives the case
        context = case_context(request.case, clock.enter, threads=request.perf.threads if request.perf else None)
        perf = None
        try:
            context.bundle = Bundle(Path(bundle.path)) if bundle else None
            backend = self.backend(request.backend)
            outcome, message, perf = self.execute(request.case, request.family, request.backend, backend, context,
                                                  bundle.rerun if bundle else "", request.perf)
        except Exception as e:  # noqa: BLE001 - every exception is a result, attributed to its phase
            outcome, message = outcome_for_exception(clock.phase), describe_error(e)
        clock.stop()
        result = CaseResult(outcome=outcome, phase=None if outcome is Outcome.PASSED else clock.phase,
                            message=message[:MESSAGE_LIMIT], findings=_findings(context, clock, backend, perf))
        if first_use and backend is not None:  # once per worker: versions() may be slow (a compiler probe)
            result.versions = _versions(backend)
            self.reported.add(backend.name)
        return result


class PhaseClock:
    """Tracks the current phase, reports each change, and measures every phase: wall time, CPU time
    (the worker's threads and the compiler processes it waited for) and the worker's peak resident
    memory while in it."""

    def __init__(self, send: Callable[[Message], None]):
        self.send = send
        self.phase = Phase.SETUP
        self.durations: dict[str, float] = {}
        self.cpu_s: dict[str, float] = {}
        self.peak_mb: dict[str, float] = {}
        self.started, self.cpu_started = time.perf_counter(), cpu_seconds()
        PEAK.reset()

    def enter(self, phase: Phase) -> None:
        self.stop()
        self.phase = Phase(phase)
        self.send(PhaseEvent(self.phase))

    def stop(self) -> None:
        now, cpu, peak = time.perf_counter(), cpu_seconds(), PEAK.read_mb()
        key = self.phase.value
        self.durations[key] = round(self.durations.get(key, 0.0) + now - self.started, 6)
        self.cpu_s[key] = round(self.cpu_s.get(key, 0.0) + cpu - self.cpu_started, 6)
        if peak is not None:
            self.peak_mb[key] = round(max(self.peak_mb.get(key, 0.0), peak), 1)
        self.started, self.cpu_started = time.perf_counter(), cpu_seconds()
        PEAK.reset()


def cpu_seconds() -> float:
    """CPU time of this process's threads and of the child processes it has waited for (a compiler
    run as a subprocess, such as iree-compile)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


class PeakMemory:
    """The process's peak resident memory since the last reset: Linux resets the high-water mark
    on writing 5 to /proc/self/clear_refs, and getrusage then reports the peak since (14 us a
    phase here). Elsewhere: None (a lifetime peak would say nothing of the phase)."""

    def __init__(self):
        try:
            self.fd: int | None = os.open("/proc/self/clear_refs", os.O_WRONLY)
        except OSError:
            self.fd = None

    def reset(self) -> None:
        if self.fd is not None:
            try:
                os.write(self.fd, b"5")
            except OSError:
                self.fd = None

    def read_mb(self) -> float | None:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 if self.fd is not None else None


PEAK = PeakMemory()


def _findings(context: CaseContext, clock: PhaseClock, backend: Any, perf: dict | None) -> Findings:
    """What the backend and the harness noted in the context, with the clock's figures and --perf's."""
    return dataclasses.replace(Findings.of(context), phase_durations=clock.durations, phase_cpu_s=clock.cpu_s,
                               phase_peak_mb=clock.peak_mb, cache_saved_s=round(context.cache_saved_s, 3),
                               fingerprints=in_stage_order(context.fingerprints, getattr(backend, "STAGES", ())),
                               perf=perf)


def _versions(backend: Any) -> dict[str, str]:
    try:
        return {str(k): str(v) for k, v in backend.versions().items()}
    except Exception as e:  # noqa: BLE001 - a failing probe must not fail the case
        return {"error": describe_error(e)}
