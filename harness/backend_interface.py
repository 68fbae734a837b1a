"""The interface every compiler under test implements (runs inside a worker process).

A backend is a class with `compile` and `run`. The harness builds the program (an
nn.Module, example inputs and optional dynamic shapes), computes the float64 golden values
and compares; the backend only turns the program into something runnable and runs it.

Call `case.enter(Phase...)` before each stage so that a failure, hang or crash is attributed to
the stage it happened in: export, decompose, import, lower, compile (inside `compile`), run
(inside `run`).
"""
from __future__ import annotations

import dataclasses
import importlib
import inspect
import os
import types
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from harness.case_findings import Findings
from harness.outcomes import Phase
from harness.stages.fingerprinting import fingerprint_of

PhaseSetter = Callable[[Phase], None]
FINGERPRINTS_ON = os.environ.get("HARNESS_FINGERPRINTS", "1") != "0"


@dataclasses.dataclass
class CaseContext(Findings):
    """One case as a backend sees it, new for every case (as lit hands each test to its format's
    `execute`): which case it is, so that a backend can refuse what it does not support with one
    message (`if case.params.get("dilation") ...: raise NotImplementedError(...)`); the backend
    says which phase the case is in, records each stage's input in the bundle, and notes facts for
    the report in the fields it has as a Findings (harness.case_findings: `notes`, `sizes`, `ops`,
    `lowering`, `decomposed_into`, `cache`; `fingerprint(stage, output)` fills `fingerprints`),
    which go to the record as they are."""

    enter: PhaseSetter   # enter(Phase.LOWER): the case is in that phase now (a crash or hang is blamed on it)
    id: str = ""         # the case id, "<family>/<name>", e.g. "myfamily/2d/dil2"
    family: str = ""     # the family that built it, the id's first part ("myfamily")
    # Its parameters, read-only, in its family's schema (docs/reference/case-params.md).
    params: Mapping[str, Any] = dataclasses.field(default_factory=lambda: types.MappingProxyType({}))
    tags: tuple[str, ...] = ()   # its tags, derived (rank2, dilated, grouped, ...) and written
    bundle: Any = None   # harness.worker.bundle.Bundle with --artifacts-dir (the IR of each stage), else None
    # With --perf: the threads the backend's runtime may use (its sessions, task pools), fixed so that
    # timings compare; torch's own are set already. None: the runtime's default.
    threads: int | None = None

    def fingerprint(self, stage: str, output: Any) -> None:
        """Record the fingerprint of what a stage produced: MLIR or other text (locations are
        dropped), bytes, an ExportedProgram or an FX graph. Hand it what the stage made anyway;
        HARNESS_FINGERPRINTS=0 turns fingerprints off (to measure what they cost)."""
        if FINGERPRINTS_ON:
            self.fingerprints[stage] = fingerprint_of(output)


@dataclasses.dataclass
class Program:
    """What a backend compiles: torch objects, built in the worker."""

    name: str                       # the case id, usable as a symbol name after sanitising
    module: Any                     # torch.nn.Module
    example_inputs: tuple           # tuple of torch.Tensor
    dynamic_shapes: Any = None      # for torch.export.export: one {dim: Dim} or None per input, or None
    output_names: Sequence[str] = ()
    # For a module that runs autograd inside (a gradient case): the same computation with autograd
    # traced out, as one graph of aten ops (forward and backward). Backends that capture a graph
    # (torch.export, torch.compile) compile it instead of `module`, in their export phase.
    traced: Callable[[], Any] | None = None
    # A training step (harness.training.step.TrainStep, also `module`): export_program gives its joint
    # forward-and-backward graph; a backend that compiles the forward pass and lets autograd run the
    # backward (torch.compile) calls `train_step.step(compiled_loss, inputs)` around `train_step.loss`.
    train_step: Any = None

    def graph_module(self) -> Any:
        """The module a graph-capturing backend compiles."""
        return self.traced() if self.traced is not None else self.module


@dataclasses.dataclass
class OnnxProgram:
    """What a backend compiles from an ONNX model: the model, built in the worker."""

    name: str                       # the case id
    model: Any                      # onnx.ModelProto
    path: Path                      # the model's file (an importer that reads files reads it)
    input_names: Sequence[str] = ()
    output_names: Sequence[str] = ()


def graph_inputs(model: Any) -> list:
    """An ONNX model's inputs a caller feeds (ValueInfoProtos): not those an initializer gives."""
    initialised = {i.name for i in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in initialised]


@dataclasses.dataclass(frozen=True)
class Standalone:
    """A backend's standalone reproduction: its script (copied into the bundle) and its constants."""

    script: Path
    constants: dict[str, Any]


STANDALONE_SCRIPTS = Path(__file__).parent / "backends" / "standalone"


def case_context(case: Mapping[str, Any], enter: PhaseSetter, **fields: Any) -> CaseContext:
    """The context of a case given as `Case.to_json()` gives it (what a worker receives)."""
    return CaseContext(enter, id=case["id"], family=case["family"], params=types.MappingProxyType(case["params"]),
                       tags=tuple(case.get("tags", ())), **fields)


def load_object(path: str) -> Any:
    """The object a "package.module:name" path names (backend classes, family builders)."""
    module_name, _, attr = path.partition(":")
    return getattr(importlib.import_module(module_name), attr)


def create_backend(name: str, class_path: str, options: Mapping[str, Any]) -> "Backend":
    """Instantiate a backend from its config's class path and options (in a worker)."""
    return load_object(class_path)(name, options)


def export_program(program: Program, strict: bool = False):
    """torch.export of the program with its dynamic shapes: the common first step of most backends.
    `strict` traces with TorchDynamo (torch-mlir's FX importer configs do), which turns a
    data-dependent `float(tensor)` into a scalar of the graph; non-strict tracing cannot guard on it.
    A training step gives its joint graph: the loss, the gradients, then the updated parameters."""
    import torch  # here, not at the top: this interface module must stay importable without torch

    if program.train_step is not None:
        return program.train_step.joint_graph(tuple(program.example_inputs), program.dynamic_shapes, strict)
    module = program.graph_module()
    return torch.export.export(module, tuple(program.example_inputs), strict=strict,
                               dynamic_shapes=signature_shapes(module.forward, program.dynamic_shapes))


def signature_shapes(forward: Callable, dynamic_shapes: Any) -> Any:
    """Per-input dynamic shapes as torch.export matches them to forward's parameters: a
    `forward(*inputs)` has one parameter, the tuple of every input."""
    if dynamic_shapes is None:
        return None
    kinds = [p.kind for p in inspect.signature(forward).parameters.values()]
    return (tuple(dynamic_shapes),) if kinds == [inspect.Parameter.VAR_POSITIONAL] else dynamic_shapes


def user_output_count(exported) -> int:
    """How many of a compiled program's results are its own outputs: the last ones. An op that
    writes into its input (exponential_, batch norm's running stats) makes that input a result too,
    before them, once the program is functionalised (as torch-mlir's and IREE's importers do). A
    joint graph's own outputs are its loss and gradients."""
    from torch.export.graph_signature import OutputKind

    own = (OutputKind.USER_OUTPUT, OutputKind.LOSS_OUTPUT, OutputKind.GRADIENT_TO_PARAMETER,
           OutputKind.GRADIENT_TO_USER_INPUT)
    return sum(spec.kind in own for spec in exported.graph_signature.output_specs)


def own_outputs(results: Sequence[Any], count: int) -> list:
    return list(results[len(results) - count:]) if count else list(results)


class Backend:
    """Base class. Subclasses set nothing else up in __init__ that imports slowly per case.
    `compile` gets a program of each kind its config's `programs:` names (a Program, an OnnxProgram)."""

    # The `options:` keys the class reads, each with a one-line description: a config's other keys
    # are an error at their line when the run starts (and in `python -m harness check`). None: not
    # declared, any key is taken (a backend written before OPTIONS).
    OPTIONS: Mapping[str, str] | None = None
    # What the backend says of each case's ops (CaseContext.ops, .lowering). LISTS_OPS: True, it sets
    # case.ops from the program it exports; False, it asks the harness to export the program in
    # setup to list them (a backend that captures graphs anyway: it meets what export meets, and the
    # first export of a worker costs seconds, inside the case's timeout); None, the default, nobody
    # lists them (eager: a program that hangs torch.export must not hang the reference).
    # LOWERING_PATHS: the words its case.lowering uses (torch-mlir's: "kept", "decomposed"); empty:
    # it says nothing of paths, and a config may not claim one (`lowering:`).
    LISTS_OPS: bool | None = None
    LOWERING_PATHS: tuple[str, ...] = ()
    # The stages it fingerprints (CaseContext.fingerprint's names), in the order a program goes
    # through them; a program may take some only (an ONNX model skips the export). A record lists
    # its fingerprints in this order, whatever order they were taken in, and the first changed stage
    # of a compiler change is the first in it (harness.stages.changes). The stage cache and the run
    # history key on the names: keep them stable.
    STAGES: tuple[str, ...] = ()
    # Modules the backend imports only when it compiles (its compiler's), so that a run whose stages
    # all come from the stage cache never waits for them. A fork server imports them once its first
    # worker has started: the workers it forks after that have them already.
    COMPILER_MODULES: tuple[str, ...] = ()

    def __init__(self, name: str, options: Mapping[str, Any]):
        self.name = name
        self.options = dict(options)

    def compile(self, program: Program, case: CaseContext) -> Any:
        """Return an artifact that `run` accepts. Raise to report a compile error."""
        raise NotImplementedError

    def run(self, artifact: Any, inputs: Sequence[Any], case: CaseContext) -> Sequence[Any]:
        """Run the artifact on the inputs (torch tensors for a Program; numpy arrays, lists of them
        for sequences and None for empty optionals for an OnnxProgram); return its outputs alike."""
        raise NotImplementedError

    def versions(self) -> dict[str, str]:
        """Versions of what this backend exercises, for the report's environment block."""
        return {}

    def standalone(self, program: Program) -> Standalone | None:
        """The backend half of a bundle's standalone repro.py: a Python file defining
        `compile_and_run(model, example_inputs, dynamic_shapes, input_sets, constants)` (a PyTorch
        program) or `run_onnx(model, input_sets, constants)` (an OnnxProgram: a ModelProto and numpy
        inputs) -> one list of outputs per input set, with torch or onnx and this backend's own
        package only, and the JSON-able constants it reads (see harness/backends/standalone).
        None: no standalone reproduction."""
        return None
