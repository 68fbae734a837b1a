"""A backend's deterministic stretch, remembered. Some stretches of a backend give the same result
for the same input, builds and options: torch.export, or the pass pipelines from an import to
LLVM IR. The stage cache keeps what such a stretch ended in, keyed like a stage:

- its failure (`<stretch>_failure`): a warm rerun enters the same phases, notes the same findings
  and raises the same message, without computing anything;
- its success (`<stretch>`): what the backend needs to go on without the stretch's objects (the
  MLIR backends: the entry function's signature, whose machine code the cache holds), with the
  phases and findings, given back the same way.

A crash or a hang kills the worker before an entry is written, and running out of memory says
nothing of the program: neither is remembered. With --artifacts-dir the stretch is always
computed, because its bundle needs each stage's IR.

    lowering = Stretch(case, "lowering", fingerprint_source(case, "decomposed"), builds, options)
    if (known := lowering.success()) is not None and (code := ...the machine code, stored...):
        lowering.replay(known)
        return ...from known.value and code
    with lowering.failure_remembered():
        ...   # import, lower: the passes whose failure is the same every time
    lowering.remember({...})   # once the rest (the JIT) went well
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import time
from typing import Any, Callable, Iterator, Mapping

from harness.backend_interface import CaseContext
from harness.errors import ReplayedError, describe_error
from harness.outcomes import Phase
from harness.stages.entries import StageCache
from harness.stages.keys import stage_key
from harness.stages.reuse import worker_cache

# What a stretch notes of a case, given again with its end (the cache's statuses are set apart).
NOTED = ("sizes", "fingerprints", "notes", "ops", "lowering", "decomposed_into")


@dataclasses.dataclass(frozen=True)
class Remembered:
    """How a stretch ended: the phases it entered, the findings it noted, the statuses of the
    stages it computed or loaded, and its error's description or its value (JSON)."""

    phases: list[str]
    noted: dict[str, dict]
    cache: dict[str, str]
    error: str | None = None
    value: Any = None
    seconds: float = 0.0

    @classmethod
    def read(cls, payload: bytes, seconds: float) -> Remembered | None:
        """The record an entry holds, or None when it does not read as one (then it is computed)."""
        try:
            record = json.loads(payload)
            remembered = cls(record["phases"], record["noted"], record["cache"], record.get("error"),
                             record.get("value"), seconds)
        except (ValueError, KeyError, TypeError):
            return None
        valid = (all(isinstance(p, str) for p in remembered.phases) and isinstance(remembered.noted, dict)
                 and isinstance(remembered.cache, dict) and isinstance(remembered.error, (str, type(None))))
        return remembered if valid else None

    def payload(self) -> bytes:
        fields = {"phases": self.phases, "noted": self.noted, "cache": self.cache}
        ended = {"error": self.error} if self.error is not None else {"value": self.value}
        return json.dumps({**fields, **ended}, sort_keys=True).encode()


class Stretch:
    """One case's pass through a stretch: what it enters and notes from now on is recorded, so
    that its failure or its success can be written, and a remembered one given again."""

    def __init__(self, case: CaseContext, name: str, source: Callable[[], str],
                 builds: Callable[[], Mapping[str, str]], options: Mapping[str, Any]):
        self.case, self.name = case, name
        cache = worker_cache()
        known = source() if cache is not None and case.bundle is None else ""
        self._cache: StageCache | None = cache if known else None
        self._keys = {end: stage_key(end, known, builds(), options) for end in (f"{name}_failure", name)} \
            if known else {}
        self._before = _noted(case) if self._cache is not None else {}
        self._phases: list[str] = []
        self._started = time.perf_counter()

    def success(self) -> Remembered | None:
        """The stretch's remembered success, nothing of it noted yet; None when there is none."""
        remembered = self._remembered(self.name)
        return remembered if remembered is not None and remembered.error is None else None

    def replay(self, remembered: Remembered) -> None:
        """A remembered end given again: its phases entered, its findings noted; the stages it had
        computed or loaded count as hits, for nothing of them is computed now."""
        for phase in remembered.phases:
            self.case.enter(Phase(phase))
        for field, values in remembered.noted.items():
            if field in NOTED:
                getattr(self.case, field).update(values)
        self.case.cache.update({stage: "hit" for stage in remembered.cache})
        end = f"{self.name}_failure" if remembered.error is not None else self.name
        self.case.cache[end] = "hit"
        self.case.cache_saved_s += remembered.seconds

    @contextlib.contextmanager
    def failure_remembered(self) -> Iterator[None]:
        """Run the block, or give its remembered failure again; a failure of the block is written."""
        failure = self._remembered(f"{self.name}_failure")
        if failure is not None and failure.error is not None:
            self.replay(failure)
            raise ReplayedError(failure.error)
        enter = self.case.enter
        self.case.enter = self._entering(enter)
        try:
            yield
        except MemoryError:
            raise
        except Exception as error:
            self._write(f"{self.name}_failure", error=describe_error(error))
            raise
        finally:
            self.case.enter = enter

    def remember(self, value: Any) -> None:
        """The stretch went well: its value (JSON), phases and findings, for the next run."""
        self._write(self.name, value=value)

    def _entering(self, enter: Callable[[Phase], None]) -> Callable[[Phase], None]:
        def entering(phase: Phase) -> None:
            self._phases.append(Phase(phase).value)
            enter(phase)
        return entering

    def _remembered(self, end: str) -> Remembered | None:
        entry = self._cache.get(self._keys[end]) if self._cache is not None else None
        return Remembered.read(entry.payload, entry.seconds) if entry is not None else None

    def _write(self, end: str, error: str | None = None, value: Any = None) -> None:
        if self._cache is None:
            return
        after = _noted(self.case)
        remembered = Remembered(list(self._phases), _changed(self._before, after),
                                {stage: status for stage, status in after["cache"].items()
                                 if self._before["cache"].get(stage) != status}, error, value)
        self.case.cache[end] = "miss"
        self._cache.put(self._keys[end], remembered.payload(), time.perf_counter() - self._started)


def _noted(case: CaseContext) -> dict[str, dict]:
    return {field: copy.deepcopy(getattr(case, field)) for field in (*NOTED, "cache")}


def _changed(before: Mapping[str, dict], after: Mapping[str, dict]) -> dict[str, dict]:
    """Per field, the keys the stretch set or changed, with their values after it."""
    return {field: changed for field in NOTED
            if (changed := {k: v for k, v in after[field].items() if before[field].get(k) != v})}
