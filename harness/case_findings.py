"""What one case's run found out, as one object from the worker to the report: `Findings`.

A backend fills most of it through its CaseContext (which is a Findings), the worker adds the
phase figures and --perf's, the result message carries it (harness.protocol.CaseResult.findings)
and the record holds it (harness.record.Record.findings). A fact added here travels all the way,
read back from reports written before it existed, with nothing else to change. Its JSON is flat:
each field is a key of a report's result, under the name reports have always used
("phase_durations", "fingerprints", "ops", ...).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping

Reader = Callable[[Mapping[str, Any], dataclasses.Field[Any]], Any]   # a field's value from a result's JSON


def _as_given(data: Mapping[str, Any], field: dataclasses.Field[Any]) -> Any:
    return data.get(field.name, field.default)


def _mapping(data: Mapping[str, Any], field: dataclasses.Field[Any]) -> dict[str, Any]:
    return dict(data.get(field.name) or {})


def _numbers(data: Mapping[str, Any], field: dataclasses.Field[Any]) -> dict[str, Any]:
    value = data.get(field.name)
    if value is not None and not (isinstance(value, Mapping) and
                                  all(isinstance(v, (int, float)) for v in value.values())):
        raise ValueError(f"its {field.name} are not an object of numbers")
    return dict(value or {})


def _words(data: Mapping[str, Any], field: dataclasses.Field[Any]) -> dict[str, str]:
    value = data.get(field.name)
    if value is not None and not (isinstance(value, Mapping) and all(isinstance(v, str) for v in value.values())):
        raise ValueError(f"its {field.name} is not an object of words")
    return dict(value or {})


def _table(read: Reader = _mapping) -> Any:
    """A field that is an object of the JSON, empty by default, read back by `read`."""
    return dataclasses.field(default_factory=dict, metadata={"read": read})


@dataclasses.dataclass(kw_only=True)
class Findings:
    # Seconds, CPU seconds, and the worker's peak resident MiB, per phase (harness.worker.session's clock).
    phase_durations: dict[str, float] = _table()
    phase_cpu_s: dict[str, float] = _table()
    phase_peak_mb: dict[str, float] = _table()
    # Deterministic size figures, noise-free on a shared machine: ops after each stage
    # ("torch_ops", "backend_ops", "linalg_ops") and the compiled artifact's bytes ("artifact_bytes").
    sizes: dict[str, int] = _table()
    # Stage fingerprints (harness.stages.fingerprinting): stage name -> a short hex hash of its output in
    # a canonical form; in the backend's Backend.STAGES order once the case is over.
    fingerprints: dict[str, str] = _table()
    # The stage cache (harness.stages.reuse): stage name -> "hit", "miss", "off" or
    # "uncacheable", and the seconds its hits saved (what computing them cost when written).
    cache: dict[str, str] = _table()
    cache_saved_s: float = 0.0
    notes: dict[str, Any] = _table()   # what the backend and the harness noted, JSON-able; kept when the case fails
    # How close each compared output came to failing (harness.worker.compare.Accuracy): output name ->
    # its worst error over its tolerance (1.0 at the limit: a pass is below 1), and float16/bfloat16
    # outputs' ULPs {"max", "p99"}. Empty: nothing compared by value (a failure before compare).
    margins: dict[str, float] = _table(_numbers)
    ulps: dict[str, dict[str, float]] = _table()
    # The program's ops, {"aten.add": 2} (harness.ops; empty: not listed, as an ONNX backend's own
    # export or a program that does not export), the path each took through the backend in its
    # Backend.LOWERING_PATHS words ({"aten.convolution_backward": "kept"}; empty: the backend says
    # nothing of paths) and the ops its decomposition made that the program did not hold.
    ops: dict[str, int] = _table(_numbers)
    lowering: dict[str, str] = _table(_words)
    decomposed_into: dict[str, int] = _table(_numbers)
    perf: dict[str, Any] | None = None   # --perf's figures (harness.worker.timing); None: not timed

    @classmethod
    def of(cls, filled: Findings) -> Findings:
        """The findings alone of what filled them (a CaseContext, which holds more than its findings)."""
        return cls(**{field.name: getattr(filled, field.name) for field in dataclasses.fields(Findings)})

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Findings:
        """The findings of a result's JSON (a report's result, or a worker's message): a key it lacks
        (a report written before the key existed) reads as empty. ValueError names a damaged one."""
        return cls(**{field.name: field.metadata.get("read", _as_given)(data, field)
                      for field in dataclasses.fields(cls)})
