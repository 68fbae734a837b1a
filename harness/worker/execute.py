"""One case on one backend, inside a worker: build, golden, compile, run, compare; with --perf,
time the passed case against eager (harness.worker.timing)."""
from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np
import torch

from harness.backend_interface import CaseContext, Program
from harness.case_data import Case
from harness.families.built import Built
from harness.families.interface import load_builder
from harness.ops.listing import harness_lists_ops, program_ops
from harness.outcomes import Outcome, Phase
from harness.protocol import PerfRequest
from harness.stages.goldens import cached_golden
from harness.training.params import BACKWARD_OPS_NOTE
from harness.worker.compare import DEFAULT_TOLERANCES, FLOATING, Accuracy, Output, compare, looser, rms_errors
from harness.worker.repro import versions_of, write_repro
from harness.worker.timing import time_case

Executed = tuple[Outcome, str, dict | None]   # the outcome, its message, and --perf's figures (or None)


def execute(case_json: dict, family: dict, backend_spec: dict, backend: Any, context: CaseContext,
            rerun: str = "", perf: PerfRequest | None = None) -> Executed:
    """Return (outcome, message, timing figures); exceptions propagate and are attributed to the
    current phase. `family` is the case family's Family.worker_request; `context` this case's,
    handed to the backend. With a bundle in it, the case's inputs and repro.py are written before
    compiling. With `perf`, every runtime gets its threads, and a passed case is timed."""
    if perf is not None:
        torch.set_num_threads(perf.threads)   # eager, Inductor's kernels, torch's side of every backend
    case = Case.from_json(case_json)
    built = load_builder(family)(case)
    built.golden.check(built)   # again: a builder may have set its golden after making the Built
    dtype = case.params["dtype"]
    tolerance = looser(_tolerance(backend_spec, dtype), built.tolerance or (0.0, 0.0))  # an op's own may be looser
    reductions = family["reduction_sizes"]
    if context.bundle is not None:
        write_repro(context.bundle, case_json, built, backend, tolerance, reductions, rerun, versions_of(backend))
    context.notes.update(built.notes)
    if built.unchecked:
        context.notes["values_not_compared"] = "; ".join(f"{name}: {why}" for name, why in built.unchecked.items())
    if built.selects:
        context.notes["indices_compared_by_value"] = ", ".join(built.selects) + (
            ": by the input's values they select (ties make indices ambiguous)")
    if harness_lists_ops(backend, built.program):   # in setup: the harness's work, not the backend's
        context.ops = program_ops(built.program, context.notes)
    rule = HarnessRule(built, dtype, tolerance, reductions, backend_spec, context,
                       Accuracy(context.margins, context.ulps))
    goldens = built.golden.compute(built, rule)   # the golden names its kind's rule: no kind is named here
    return _run_input_sets(built, backend, context, goldens,
                           lambda got, want, index: built.golden.judge(got, want, index, rule), perf)


class HarnessRule:
    """The harness's side of a case's golden (harness.families.built.GoldenContext): the
    comparison rule of harness.worker.compare with this case's tolerance, reductions, reference,
    unchecked and selected outputs, the result's notes and its outputs' margins; float64 runs from
    the stage cache when it holds them."""

    def __init__(self, built: Built, dtype: str, tolerance: tuple[float, float], reductions: dict,
                 backend_spec: dict, context: CaseContext, accuracy: Accuracy) -> None:
        self.built, self.dtype, self.tolerance, self.reductions = built, dtype, tolerance, reductions
        self.backend_spec, self.context, self.notes, self.accuracy = backend_spec, context, context.notes, accuracy
        self.names = built.program.output_names
        self.references = [as_outputs(self.names, r) for r in built.reference] if built.reference else None

    def upcast(self, inputs: tuple) -> Any:
        program = self.built.program
        assert isinstance(program, Program), "Float64Golden checked it is a PyTorch program"
        return cached_golden(self.context, program, inputs, lambda: upcast_run(program, inputs))

    def note_margin(self, output: str, margin: float) -> None:
        self.accuracy.note(output, margin)

    def compare(self, got: Any, want: Any, index: int, ratio: tuple | None = None) -> str | None:
        got, want = as_outputs(self.names, got), as_outputs(self.names, want)
        reference = self.references[index] if self.references else None
        if ratio and reference and index == 0:
            self.notes["accuracy"] = accuracy_figures(got, want, reference)
        inputs = self.built.input_sets[index]
        problem = compare(got, want, self.dtype, self.tolerance, self.reductions, ratio=ratio,
                          accuracy=self.accuracy, reference=reference, unchecked=self.built.unchecked,
                          tolerance_of=lambda d: _tolerance(self.backend_spec, d),
                          selections={name: (_to_output("source", inputs[position]).values, dim)
                                      for name, (position, dim) in self.built.selects.items()})
        if not problem or not index:
            return problem
        first, newline, rest = problem.partition("\n")   # the note ends the first line: it is every output's
        return f"{first} (input set {index + 1}: shapes {[list(t.shape) for t in inputs]}){newline}{rest}"


def _note_backward_ops(program: Any, context: CaseContext) -> None:
    """A training step's backward ops kept whole, when the backend exported its joint graph (a
    stage cache hit may skip the export): what the training-step table counts."""
    step = getattr(program, "train_step", None)
    if step is not None and step.backward_ops is not None:
        context.notes[BACKWARD_OPS_NOTE] = ", ".join(step.backward_ops) or "none"


def _run_input_sets(built: Built, backend: Any, context: CaseContext, goldens: list,
                    judge: Callable[[Any, Any, int], str | None], perf: PerfRequest | None) -> Executed:
    """Compile, then run each input set and judge its outputs against its golden: the first problem
    is a mismatch. A pass is then timed on the first input set, with `perf`."""
    try:
        artifact = backend.compile(built.program, context)
    finally:
        _note_backward_ops(built.program, context)
    first_run = 0.0
    for index, (inputs, want) in enumerate(zip(built.input_sets, goldens)):
        context.enter(Phase.RUN)
        started = time.perf_counter()
        got = backend.run(artifact, inputs, context)
        first_run = first_run or time.perf_counter() - started
        context.enter(Phase.COMPARE)
        problem = judge(got, want, index)
        if problem:
            return Outcome.MISMATCH, problem, None
    if perf is None or not perf.timed:
        return Outcome.PASSED, "", None
    context.enter(Phase.TIME)
    return Outcome.PASSED, "", time_case(backend, artifact, built, context, perf, first_run)


def accuracy_figures(got: list[Output], want: list[Output], eager: list[Output]) -> dict:
    """Per floating output: its RMS error against the float64 golden, eager's, and their ratio."""
    figures = {}
    for g, w, e in zip(got, want, eager):
        if e.dtype in FLOATING and g.values.shape == w.values.shape == e.values.shape:
            error, eager_error, _ = rms_errors(g, w, e)
            figures[w.name] = {"error": float(f"{error:.3g}"), "eager_error": float(f"{eager_error:.3g}"),
                               "ratio": float(f"{error / eager_error:.3g}") if eager_error else None}
    return figures


def golden(program: Program, inputs: tuple) -> list[Output]:
    """Eager PyTorch in float64, as Outputs: inputs upcast, the same module."""
    return as_outputs(program.output_names, upcast_run(program, inputs))


def upcast_run(program: Program, inputs: tuple) -> Any:
    """The program's module on the inputs upcast to float64, without autograd (Float64Golden's values)."""
    upcast = tuple(t.to(torch.float64) if t.is_floating_point() else t for t in inputs)
    with torch.no_grad():
        return program.module(*upcast)


def as_outputs(names, values) -> list[Output]:
    if isinstance(values, (torch.Tensor, np.ndarray, bool, int, float)):
        values = (values,)
    values = list(values)
    names = list(names) + [f"output{i}" for i in range(len(names), len(values))]
    return [_to_output(name, value) for name, value in zip(names, values)]


def _to_output(name: str, value: Any) -> Output:
    if isinstance(value, np.ndarray) and value.dtype.kind == "c":
        value = torch.from_numpy(value.copy())  # compared as real and imaginary parts, like a tensor
    if isinstance(value, torch.Tensor):
        dtype = str(value.dtype).removeprefix("torch.")  # "float32", "bfloat16": the case's dtype names
        if value.layout != torch.strided:
            value = value.to_dense()
        if value._is_zerotensor():  # autograd's symbolic zeros (the gradient of sgn)
            value = torch.zeros(value.shape, dtype=value.dtype)
        if value.is_complex():  # real and imaginary parts as a last dimension of 2
            value = torch.view_as_real(value.resolve_conj().to(torch.complex128))
        if value.is_floating_point():
            value = value.to(torch.float64)
        return Output(name, value.detach().cpu().numpy(), dtype)
    array = np.asarray(value)
    return Output(name, array, array.dtype.name, python_scalar=isinstance(value, (bool, int, float)))


def _tolerance(backend_spec: dict, dtype: str) -> tuple[float, float]:
    configured = backend_spec.get("tolerances", {}).get(dtype)
    if configured:
        return configured["rtol"], configured["atol"]
    return DEFAULT_TOLERANCES[dtype]
