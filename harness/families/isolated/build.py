"""The isolated family's torch half (worker only): the ops' folders as one program, and `OpGolden`,
which judges each op's results and records each one's figures in the result's notes.

The program is one nn.Module holding every op's `Model` (its model.py), fed each op's own inputs
in turn, returning every op's results: one compile for the whole batch. Its golden is the ops'
float64 references; eager's results at the case's dtype (on the same inputs) are `Built.reference`,
so the ratio rule and the dtype checks have eager's own error on each op.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import sys
from pathlib import Path
from typing import Any, ClassVar

import torch

from harness.backend_interface import Program
from harness.case_data import Case
from harness.families.built import Built, GivenGolden
from harness.graph_source import standalone_source

NOTES_KEY = "isolate"   # the notes' per-output figures and verdicts: harness.isolate.engine reads them


class Batch(torch.nn.Module):
    """forward(*every op's inputs, in turn) -> every op's results, in turn."""

    def __init__(self, ops: list[torch.nn.Module], counts: list[int], input_names: list[str], source: str):
        super().__init__()
        self.ops = torch.nn.ModuleList(ops)
        self.counts = counts
        self.input_names = input_names   # the bundle names the inputs' files after them
        self.source = source

    def forward(self, *inputs):
        results, start = [], 0
        for op, count in zip(self.ops, self.counts):
            results += list(op(*inputs[start:start + count]))
            start += count
        return tuple(results)

    def repro_source(self) -> str:
        """A one-op batch's model.py, read from its folder; a batch of several has no bundle."""
        if len(self.ops) != 1:
            raise NotImplementedError("a repro bundle holds one op: isolate writes one per culprit")
        return self.source


@dataclasses.dataclass(frozen=True)
class OpGolden(GivenGolden):
    """The ops' float64 references, each op's results judged under the case family's rule (the ratio
    rule when `ratio` is given, else the harness's tolerance), and each result's RMS error against
    its reference recorded beside eager's own: notes["isolate"] = {"figures": {name: {error,
    eager_error}}, "off": [names the rule fails]}."""

    names: tuple[str, ...] = ()
    eager: tuple = ()   # eager's results at the case's dtype, as Built.reference's one input set
    ratio: tuple | None = None   # the case family's (multiplier, floor, relative)
    kind: ClassVar[str] = "op"

    def check(self, built: Built) -> None:
        super().check(built)
        self._needs_reference(built)

    def judge(self, got: Any, want: Any, index: int, context: Any) -> str | None:
        figures = {}
        if len(got) == len(want):
            for name, g, w, e in zip(self.names, got, want, self.eager):
                figures[name] = _figures(g, w, e)
        problem = context.compare(got, want, index, ratio=self.ratio)
        failing = {line.partition(": ")[0] for line in (problem or "").splitlines()} & set(self.names)
        context.notes[NOTES_KEY] = {"figures": figures, "off": sorted(failing)}
        return problem


def _figures(got: Any, want: torch.Tensor, eager: torch.Tensor) -> dict[str, float | None]:
    """RMS errors against the float64 reference over the elements finite in all three; None where
    the backend's result has another shape (the rule says so)."""
    got = torch.as_tensor(got)
    if got.shape != want.shape or not got.is_floating_point():
        return {"error": None, "eager_error": None}
    g, w, e = got.double(), want.double(), eager.double()
    finite = torch.isfinite(g) & torch.isfinite(w) & torch.isfinite(e)
    if not bool(finite.any()):
        return {"error": 0.0, "eager_error": 0.0}
    rms = lambda d: float(d[finite].pow(2).mean().sqrt())   # noqa: E731 - one expression, three uses
    return {"error": rms(g - w), "eager_error": rms(e - w)}


def _load_op(folder: Path) -> tuple[torch.nn.Module, list, dict]:
    path = folder / "model.py"
    name = f"isolated_op_{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, "a .py file has a spec and a loader"
    loaded = sys.modules[name] = importlib.util.module_from_spec(spec)   # torch.export looks the class up
    spec.loader.exec_module(loaded)
    return loaded.Model(), list(torch.load(folder / "inputs.pt")), torch.load(folder / "references.pt")


def build(case: Case) -> Built:
    params = case.params
    folders = [Path(f) for f in params["ops"]]
    ops, inputs, want, eager, names, counts, outputs = [], [], [], [], [], [], []
    for folder in folders:
        module, op_inputs, references = _load_op(folder)
        ops.append(module)
        counts.append(len(op_inputs))
        inputs += op_inputs
        arguments = list(inspect.signature(module.forward).parameters)   # the op's argument nodes
        names += arguments if len(folders) == 1 else [f"op{folder.name}_{a}" for a in arguments]
        want += references["want"]
        eager += references["eager"]
        outputs += references["names"]
    source = standalone_source(folders[0] / "model.py")
    program = Program(case.id, Batch(ops, counts, names, source), tuple(inputs), None, outputs)
    tolerance = params["tolerance"]
    ratio = tuple(params["ratio"]) if params["ratio"] else None
    return Built(program, [tuple(inputs)], reference=[tuple(eager)],
                 golden=OpGolden([tuple(want)], names=tuple(outputs), eager=tuple(eager), ratio=ratio),
                 tolerance=tolerance and (tolerance["rtol"], tolerance["atol"]), notes={"ops": str(len(ops))})
