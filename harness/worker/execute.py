"""One case on one backend, inside a worker: build, golden, compile, run, compare."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import torch

from harness.backend import Program
from harness.families import FAMILIES
from harness.outcomes import Outcome, Phase
from harness.spec import Case
from harness.worker.compare import DEFAULT_TOLERANCES, Output, compare
from harness.worker.repro import versions_of, write_repro


def execute(case_json: dict, backend_spec: dict, backend: Any,
            phase: Callable[[Phase], None], rerun: str = "") -> tuple[Outcome, str]:
    """Return (outcome, message); exceptions propagate and are attributed to the current phase.
    With a bundle on the backend, the case's inputs and repro.py are written before compiling."""
    case = Case.from_json(case_json)
    family = FAMILIES[case.family]
    built = family.load_builder()(case)
    dtype = case.params["dtype"]
    tolerance = _tolerance(backend_spec, dtype)
    reductions = family.reduction_sizes(case.params)
    if backend.bundle is not None:
        write_repro(backend.bundle, case_json, built.program, built.input_sets, backend, tolerance,
                    reductions, rerun, versions_of(backend))
    goldens = [golden(built.program, inputs) for inputs in built.input_sets]
    artifact = backend.compile(built.program, phase)
    for index, (inputs, want) in enumerate(zip(built.input_sets, goldens)):
        phase(Phase.RUN)
        got = as_outputs(built.program.output_names, backend.run(artifact, inputs, phase))
        phase(Phase.COMPARE)
        problem = compare(got, want, dtype, tolerance, reductions)
        if problem:
            shapes = f" (input set {index + 1}: shapes {[list(t.shape) for t in inputs]})" if index else ""
            return Outcome.MISMATCH, problem + shapes
    return Outcome.PASSED, ""


def golden(program: Program, inputs: tuple) -> list[Output]:
    """Eager PyTorch in float64: inputs upcast, the same module."""
    upcast = tuple(t.to(torch.float64) if t.is_floating_point() else t for t in inputs)
    with torch.no_grad():
        result = program.module(*upcast)
    return as_outputs(program.output_names, result)


def as_outputs(names, values) -> list[Output]:
    if isinstance(values, (torch.Tensor, np.ndarray)):
        values = (values,)
    values = list(values)
    names = list(names) + [f"output{i}" for i in range(len(names), len(values))]
    return [_to_output(name, value) for name, value in zip(names, values)]


def _to_output(name: str, value: Any) -> Output:
    if isinstance(value, torch.Tensor):
        dtype = str(value.dtype).removeprefix("torch.")  # "float32", "bfloat16": the case's dtype names
        if value.is_floating_point():
            value = value.to(torch.float64)
        return Output(name, value.detach().cpu().numpy(), dtype)
    array = np.asarray(value)
    return Output(name, array, array.dtype.name)


def _tolerance(backend_spec: dict, dtype: str) -> tuple[float, float]:
    configured = backend_spec.get("tolerances", {}).get(dtype)
    if configured:
        return configured["rtol"], configured["atol"]
    return DEFAULT_TOLERANCES[dtype]
