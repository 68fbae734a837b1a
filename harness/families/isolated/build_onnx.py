"""The isolated_onnx family's worker half: the node folders harness.isolate.reference_onnx wrote
as one ONNX model, and `NodeGolden`, which judges each node's results and records each one's
figures in the result's notes, as the isolated family's OpGolden does for PyTorch ops.

One node's folder is run as it is (model.onnx beside its test_data_set_0: a repro bundle copies
both). Several go in one model, one compile: their nodes side by side, each node's inputs and
initializers renamed `op<n>/<name>` (two nodes may read one value; a node's input may be another's
output), their outputs keeping their names, written to batches/<hash>.onnx beside the folders.
"""
from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import onnx
from onnx import helper

from harness.backend_interface import OnnxProgram
from harness.case_data import Case
from harness.families.built import Built, Golden
from harness.families.onnx.values import compare_values, read_data_set

NOTES_KEY = "isolate"   # the notes' per-output figures and verdicts: harness.isolate.engine reads them


@dataclasses.dataclass(frozen=True)
class NodeGolden(Golden):
    """The nodes' float64 results (or the reference runtime's, for a node with no float64 run),
    each output judged as ONNX's backend runner compares (its dtype, then allclose under the case's
    rtol and atol) against them, and each one's error recorded beside the reference runtime's, as
    the worst element's in tolerances (_figures: the rule's own measure, so that one element off
    counts as the rule counts it): notes["isolate"] = {"figures": {name: {error, eager_error}},
    "off": [names the rule fails]}."""

    want: tuple            # float64
    eager: tuple           # the reference runtime's, at the model's dtypes
    names: tuple[str, ...]
    rtol: float
    atol: float
    kind: ClassVar[str] = "node"

    def compute(self, built: Built, context: Any) -> list:
        return [self.want]

    def judge(self, got: Any, want: Any, index: int, context: Any) -> str | None:
        got = list(got)
        if len(got) != len(self.names):
            context.notes[NOTES_KEY] = {"figures": {}, "off": list(self.names)}
            return f"expected {len(self.names)} outputs ({', '.join(self.names)}), got {len(got)}"
        figures, problems = {}, []
        for name, g, w, e in zip(self.names, got, self.want, self.eager):
            figures[name] = _figures(np.asarray(g), w, e, self.rtol, self.atol)
            problem = compare_values([g], [w.astype(e.dtype)], [name], self.rtol, self.atol)
            if problem:
                problems.append(problem)
        context.notes[NOTES_KEY] = {"figures": figures, "off": [p.partition(": ")[0] for p in problems]}
        return "\n".join(problems) or None


def _figures(got: np.ndarray, want: np.ndarray, eager: np.ndarray, rtol: float, atol: float) -> dict:
    """The worst element's error in tolerances (|got - want| / (atol + rtol |want|), the measure of
    ONNX's rule: over 1 fails it), the backend's and the reference runtime's, over the elements
    finite in all three; None where the backend's result has another shape or is not floating."""
    if got.shape != want.shape or not (got.dtype.kind == "f" or got.dtype.name == "bfloat16"):
        return {"error": None, "eager_error": None}
    g, e = got.astype(np.float64), eager.astype(np.float64)
    finite = np.isfinite(g) & np.isfinite(want) & np.isfinite(e)
    if not finite.any():
        return {"error": 0.0, "eager_error": 0.0}
    allowed = np.maximum(atol + rtol * np.abs(want[finite]), np.finfo(np.float64).tiny)   # atol 0 at a 0
    return {"error": float(np.max(np.abs(g - want)[finite] / allowed)),
            "eager_error": float(np.max(np.abs(e - want)[finite] / allowed))}


def _batch(folders: list[Path], models: list[onnx.ModelProto]) -> tuple[onnx.ModelProto, Path]:
    """The folders' nodes as one model, and the file it is saved in."""
    nodes: list[onnx.NodeProto] = []
    inputs: list[onnx.ValueInfoProto] = []
    initializers: list[onnx.TensorProto] = []
    outputs: list[onnx.ValueInfoProto] = []
    for folder, model in zip(folders, models):
        graph = model.graph
        names = [v.name for v in graph.input] + [t.name for t in graph.initializer]
        renamed = {name: f"op{folder.name}/{name}" for name in names}
        for node in graph.node:
            copy = onnx.NodeProto()
            copy.CopyFrom(node)
            copy.input[:] = [renamed.get(name, name) for name in node.input]
            nodes.append(copy)
        for value in graph.input:
            inputs.append(onnx.ValueInfoProto())
            inputs[-1].CopyFrom(value)
            inputs[-1].name = renamed[value.name]
        for tensor in graph.initializer:
            initializers.append(onnx.TensorProto())
            initializers[-1].CopyFrom(tensor)
            initializers[-1].name = renamed[tensor.name]
        outputs += graph.output
    first = models[0]
    model = helper.make_model(helper.make_graph(nodes, "isolated", inputs, outputs, initializer=initializers),
                              opset_imports=first.opset_import, ir_version=first.ir_version, functions=first.functions)
    key = hashlib.sha1("\n".join(map(str, folders)).encode()).hexdigest()[:16]
    path = folders[0].parent / "batches" / f"{key}.onnx"
    path.parent.mkdir(exist_ok=True)
    onnx.save(model, path)
    return model, path


def build(case: Case) -> Built:
    params = case.params
    folders = [Path(f) for f in params["ops"]]
    models = [onnx.load(folder / "model.onnx") for folder in folders]
    inputs, want, eager = [], [], []
    for folder, model in zip(folders, models):
        inputs += read_data_set(folder / "test_data_set_0", model.graph, "input")
        with np.load(folder / "references.npz") as references:
            count = len(model.graph.output)
            want += [references[f"want_{j}"] for j in range(count)]
            eager += [references[f"eager_{j}"].astype(helper.tensor_dtype_to_np_dtype(o.type.tensor_type.elem_type))
                      for j, o in enumerate(model.graph.output)]
    model, path = (models[0], folders[0] / "model.onnx") if len(folders) == 1 else _batch(folders, models)
    names = tuple(o.name for o in model.graph.output)
    program = OnnxProgram(case.id, model, path, [i.name for i in model.graph.input], list(names))
    rtol, atol = params["tolerance"]["rtol"], params["tolerance"]["atol"]
    return Built(program, [tuple(inputs)], golden=NodeGolden(tuple(want), tuple(eager), names, rtol, atol),
                 tolerance=(rtol, atol), notes={"ops": str(len(folders))})
