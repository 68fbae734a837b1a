"""The worker process: builds a case, computes golden values, compiles, runs and compares.

Started by harness.pool as `python -m harness.worker`. Protocol: one JSON object per line,
requests on stdin, replies on the original stdout (fd 1 is then pointed at stderr, so whatever
a case or compiler prints lands in the captured log and cannot corrupt the protocol).

  worker -> controller  {"type": "ready", "pid": ...}   (after creating the backends of $HARNESS_WORKER_PRELOAD)
  controller -> worker  {"type": "run", "case": {...}, "backend": {...},
                         "bundle": {"path": ..., "rerun": ...}}   (bundle: with --artifacts-dir only)
  worker -> controller  {"type": "phase", "phase": "lower"}          (zero or more)
  worker -> controller  {"type": "result", "outcome": ..., "phase": ..., "message": ...,
                         "durations": {phase: seconds}, "notes": {...},
                         "versions": {...}}   (versions: with a backend's first result only)
"""
from __future__ import annotations

import ctypes
import faulthandler
import json
import os
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable

from harness.artifacts import Bundle
from harness.backend import create_backend
from harness.native_stack import install_crash_dump
from harness.outcomes import Outcome, Phase, outcome_for_exception

MESSAGE_LIMIT = 6000  # characters of an error message kept in the result
PRELOAD_ENV = "HARNESS_WORKER_PRELOAD"  # JSON list of backend specs to create before "ready"


class Session:
    """Per-worker state: backends are instantiated once and reused across cases."""

    def __init__(self, send: Callable[[dict], None], execute: Callable):
        self.send = send
        self.execute = execute  # harness.execute.execute: passed in so that torch loads before "ready"
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

    def run(self, request: dict) -> dict:
        clock = PhaseClock(self.send)
        backend = None
        first_use = request["backend"]["name"] not in self.reported
        bundle = request.get("bundle")
        try:
            backend = self.backend(request["backend"])
            backend.notes = {}
            backend.bundle = Bundle(Path(bundle["path"])) if bundle else None
            outcome, message = self.execute(request["case"], request["backend"], backend, clock.enter,
                                            bundle["rerun"] if bundle else "")
        except Exception as e:  # noqa: BLE001 - every exception is a result, attributed to its phase
            outcome, message = outcome_for_exception(clock.phase), describe(e)
        clock.stop()
        result = {"type": "result", "outcome": outcome.value,
                  "phase": None if outcome is Outcome.PASSED else clock.phase.value,
                  "message": message[:MESSAGE_LIMIT], "durations": clock.durations,
                  "notes": getattr(backend, "notes", {})}
        if first_use and backend is not None:  # once per worker: versions() may be slow (a compiler probe)
            result["versions"] = _versions(backend)
            self.reported.add(backend.name)
        return result


class PhaseClock:
    """Tracks the current phase, reports each change and times every phase."""

    def __init__(self, send: Callable[[dict], None]):
        self.send = send
        self.phase = Phase.SETUP
        self.started = time.perf_counter()
        self.durations: dict[str, float] = {}

    def enter(self, phase: Phase) -> None:
        self.stop()
        self.phase = Phase(phase)
        self.started = time.perf_counter()
        self.send({"type": "phase", "phase": self.phase.value})

    def stop(self) -> None:
        now = time.perf_counter()
        key = self.phase.value
        self.durations[key] = round(self.durations.get(key, 0.0) + now - self.started, 6)
        self.started = now


def _versions(backend: Any) -> dict[str, str]:
    try:
        return {str(k): str(v) for k, v in backend.versions().items()}
    except Exception as e:  # noqa: BLE001 - a failing probe must not fail the case
        return {"error": describe(e)}


def describe(error: BaseException) -> str:
    """The error's type and message, plus where in Python it was raised."""
    frames = traceback.extract_tb(error.__traceback__)
    location = f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    return f"{type(error).__name__}: {str(error).strip()}{location}"


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this worker when the controller dies, even mid native call."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() == 1:  # the parent died before prctl took effect
        os._exit(1)


def main() -> None:
    reply = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the controller decides when workers stop
    faulthandler.disable()  # PYTHONFAULTHANDLER enabled it at start-up; it must come after:
    install_crash_dump()    # it prints the Python stack, then chains to the native stack dump
    faulthandler.enable(all_threads=True)
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # the controller asks "where are you?" before a kill
    _die_with_parent()

    def send(message: dict) -> None:
        reply.write(json.dumps(message) + "\n")

    from harness.execute import execute  # imports torch: before "ready", off any case's clock
    session = Session(send, execute)
    session.preload(json.loads(os.environ.get(PRELOAD_ENV, "[]")))
    send({"type": "ready", "pid": os.getpid()})
    for line in sys.stdin:
        request = json.loads(line)
        if request["type"] == "run":
            send(session.run(request))


if __name__ == "__main__":
    main()
