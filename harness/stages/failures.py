"""A compiler's failure remembered. Some stretches of a backend are deterministic: torch.export,
or a pass pipeline that fails to legalize an op, fails the same way for the same input, builds
and options. The stage cache writes such
a failure as an entry of its own, keyed like a stage. A warm rerun then gives it again instead of
computing it: it enters the same phases, notes the same findings and raises the same message.

Only an exception is remembered. A crash or a hang kills the worker before an entry is written,
and running out of memory says nothing of the program. A stretch that succeeds leaves its stages'
own entries. With --artifacts-dir the stretch is always computed, because its bundle needs each
stage's IR.

    with remembered_failure(case, "lowering", fingerprint_source(case, "decomposed"), builds, options):
        ...   # import, lower: the passes whose failure is the same every time
"""
from __future__ import annotations

import contextlib
import copy
import json
import time
from typing import Any, Callable, Iterator, Mapping

from harness.backend_interface import CaseContext
from harness.errors import ReplayedError, describe_error
from harness.outcomes import Phase
from harness.stages.keys import stage_key
from harness.stages.reuse import worker_cache

# What a stretch notes of a case, given again with its failure (the cache's statuses are set apart).
NOTED = ("sizes", "fingerprints", "notes", "ops", "lowering", "decomposed_into")


@contextlib.contextmanager
def remembered_failure(case: CaseContext, stretch: str, source: Callable[[], str],
                       builds: Callable[[], Mapping[str, str]], options: Mapping[str, Any]) -> Iterator[None]:
    """Run the block, or give its remembered failure again; a failure of the block is written."""
    cache = worker_cache()
    if cache is None or case.bundle is not None or not (known := source()):
        yield
        return
    name = f"{stretch}_failure"   # its entry's stage name, and its status in the case's `cache`
    key = stage_key(name, known, builds(), options)
    entry = cache.get(key)
    if entry is not None and (failure := _failure(entry.payload)) is not None:
        case.cache_saved_s += entry.seconds
        _replay(case, name, failure)
    before, phases = _noted(case), _recording_phases(case)
    started = time.perf_counter()
    try:
        yield
    except MemoryError:
        raise
    except Exception as error:
        record = {"phases": phases, "noted": _changed(before, _noted(case)), "error": describe_error(error),
                  "cache": {stage: status for stage, status in case.cache.items()
                            if before["cache"].get(stage) != status}}
        case.cache[name] = "miss"
        cache.put(key, json.dumps(record, sort_keys=True).encode(), time.perf_counter() - started)
        raise
    finally:
        case.enter = phases.enter


class _Phases(list):
    """The phases a block enters, in order, each passed on to the case's own `enter`."""

    def __init__(self, enter: Callable[[Phase], None]):
        super().__init__()
        self.enter = enter

    def __call__(self, phase: Phase) -> None:
        self.append(Phase(phase).value)
        self.enter(phase)


def _recording_phases(case: CaseContext) -> _Phases:
    phases = _Phases(case.enter)
    case.enter = phases
    return phases


def _noted(case: CaseContext) -> dict[str, dict]:
    return {field: copy.deepcopy(getattr(case, field)) for field in (*NOTED, "cache")}


def _changed(before: Mapping[str, dict], after: Mapping[str, dict]) -> dict[str, dict]:
    """Per field, the keys the block set or changed, with their values after it."""
    return {field: changed for field in NOTED
            if (changed := {k: v for k, v in after[field].items() if before[field].get(k) != v})}


def _failure(payload: bytes) -> dict | None:
    """A remembered failure, or None when the entry does not read as one (then it is computed)."""
    try:
        record = json.loads(payload)
        valid = (isinstance(record["error"], str) and isinstance(record["noted"], dict)
                 and all(isinstance(p, str) for p in record["phases"]) and isinstance(record["cache"], dict))
        return record if valid else None
    except (ValueError, KeyError, TypeError):
        return None


def _replay(case: CaseContext, name: str, failure: dict) -> None:
    """The remembered failure, given again: its phases entered, its findings noted, its error raised;
    the stages it had computed or loaded count as hits, for nothing of them is computed now."""
    for phase in failure["phases"]:
        case.enter(Phase(phase))
    for field, values in failure["noted"].items():
        if field in NOTED:
            getattr(case, field).update(values)
    case.cache.update({stage: "hit" for stage in failure["cache"]})
    case.cache[name] = "hit"
    raise ReplayedError(failure["error"])
