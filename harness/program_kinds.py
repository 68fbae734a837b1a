"""The kinds of program a case is and a backend takes ("torch", "onnx", "train_step"), each named
once here with all the harness needs of it: what a run calls its programs, the class a builder
returns, the front-end a config takes it through when it says nothing, and the modules the tools
cut its programs with. Those are "module:name" paths, imported only where they are used (a worker,
`python -m harness reduce`, `isolate`): reading this table imports nothing.
"""
from __future__ import annotations

import dataclasses

TORCH, ONNX, TRAIN_STEP = "torch", "onnx", "train_step"
PROGRAM = "harness.backend_interface:Program"   # a PyTorch program: a module, its inputs and dynamic shapes


@dataclasses.dataclass(frozen=True)
class ProgramKind:
    name: str                 # as Family.program, a config's `programs:` and Family.reruns/.isolates name it
    description: str          # what a run's summary and its errors call these programs
    program_class: str        # what a family's builder returns for one (Built.program)
    # A config without `programs:` takes these through this front-end; None: only a config naming the kind.
    default_front_end: str | None = None
    # `python -m harness reduce`: the graph a program of this kind is cut as (Family.graph's default).
    graph: str | None = None
    # `python -m harness isolate`: the module run as a process (`python -m`) that builds a program of
    # this kind and cuts out its ops, fed the float64 reference values of their arguments.
    reference_process: str | None = None
    variant_of: str | None = None   # a program of that kind, as its families build it, in another form

    @property
    def pytorch(self) -> bool:
        """A PyTorch program (harness.backend_interface.Program): one an int8 case quantizes and a
        training step trains, and whose outputs' reduction lengths the family knows."""
        return self.program_class == PROGRAM


PROGRAM_KINDS = {kind.name: kind for kind in (
    ProgramKind(TORCH, "PyTorch programs", PROGRAM, default_front_end="the backend's own",
                graph="harness.reduce.torch_graph:program_graph", reference_process="harness.isolate.reference"),
    ProgramKind(ONNX, "ONNX models", "harness.backend_interface:OnnxProgram",
                graph="harness.reduce.onnx_graph:program_graph", reference_process="harness.isolate.reference_onnx"),
    # A training step of a PyTorch program (harness.training): export_program gives its joint graph.
    ProgramKind(TRAIN_STEP, "PyTorch training steps", PROGRAM, default_front_end="export_program's joint graph",
                variant_of=TORCH),
)}


def default_programs() -> dict[str, str]:
    """The kinds a config without `programs:` takes, each with its front-end."""
    return {kind.name: kind.default_front_end for kind in PROGRAM_KINDS.values() if kind.default_front_end}
