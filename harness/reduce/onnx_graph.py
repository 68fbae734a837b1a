"""An ONNX model as a graph to cut (the reducer's side: imports onnx).

The units are the graph's nodes. The model is run once on its first input set by ONNX's
reference evaluator, which keeps every intermediate value; a candidate is a set of kept nodes,
written as a model of its own (model.onnx, and model.onnx.txt in ONNX's text format to read)
and run as a case of the family that reruns ONNX models (Family.reruns):

* a tensor a kept node reads from a cut node becomes a graph input, fed the value the whole model
  computed there (a sequence or an optional cannot be fed: such a candidate is no program);
* initializers stay initializers, the model's opsets and local functions stay;
* the outputs are the kept nodes' results no kept node reads, plus the model's own outputs, each
  with the value the whole model computed as its stored golden.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import helper
from onnx.reference import ReferenceEvaluator

from harness.backend_interface import OnnxProgram, graph_inputs
from harness.families.interface import Built
from harness.program_kinds import ONNX
from harness.reduce import candidate_family


def program_graph(built: Built, case_params: dict) -> "OnnxGraph":
    """The seam's default for ONNX models (Family.graph)."""
    return OnnxGraph(built)


class OnnxGraph:
    program_file = "model.onnx.txt"   # what a report links to: the model as ONNX's text format

    def __init__(self, built: Built):
        self.family = candidate_family(ONNX)   # the candidates'
        assert isinstance(built.program, OnnxProgram), "the ONNX reducer is chosen for an ONNX model"
        self.model: onnx.ModelProto = built.program.model
        graph = self.model.graph
        self.units = list(graph.node)
        self.initializers = {i.name: i for i in graph.initializer}
        self.declared = {v.name: v for v in [*graph.input, *graph.output]}
        self.own_outputs = [o.name for o in graph.output]
        feeds = dict(zip((i.name for i in graph_inputs(self.model)), built.input_sets[0]))
        intermediate = ReferenceEvaluator(self.model).run(None, feeds, intermediate=True)
        assert isinstance(intermediate, dict), "intermediate=True: every value by name"
        self.values = {**feeds, **intermediate}
        self.tolerance = built.tolerance or (1e-3, 1e-7)
        self.reads = [_read_names(node) for node in self.units]

    def op_names(self, kept: frozenset[int]) -> list[str]:
        return [_op_name(self.units[i]) for i in sorted(kept)]

    def describe(self, kept: frozenset[int]) -> str:
        count = len(kept)
        return f"{count} op{'s' * (count != 1)}"

    def write(self, kept: frozenset[int], folder: Path) -> dict | None:
        """Write model.onnx, its inputs and its outputs' goldens (.npy) into `folder`; return the
        candidate's params (a model file, input and output files, tolerance), or None when it is no program."""
        nodes = [self.units[i] for i in sorted(kept)]
        made = {name for node in nodes for name in node.output if name}
        read = [name for i in sorted(kept) for name in self.reads[i]]
        needed = list(dict.fromkeys(n for n in read if n and n not in made and n not in self.initializers))
        outputs = [n for n in self.own_outputs if n in made]
        outputs += [n for node in nodes for n in node.output if n and n not in read and n not in outputs]
        if not outputs or not all(isinstance(self.values.get(n), np.ndarray) for n in needed + outputs):
            return None
        graph = helper.make_graph(nodes, "reduced", [self._value_info(n) for n in needed],
                                  [self._value_info(n) for n in outputs],
                                  initializer=[self.initializers[n] for n in dict.fromkeys(read)
                                               if n in self.initializers])
        model = helper.make_model(graph, opset_imports=self.model.opset_import, ir_version=self.model.ir_version,
                                  functions=self.model.functions)
        folder.mkdir(parents=True, exist_ok=True)
        onnx.save(model, folder / "model.onnx")
        (folder / "model.onnx.txt").write_text(onnx.printer.to_text(model), encoding="utf-8")   # to read
        files: dict[str, list] = {}
        for kind, names in (("input", needed), ("output", outputs)):
            files[kind] = []
            for index, name in enumerate(names):
                path = folder / f"{kind}_{index}.npy"
                np.save(path, self.values[name], allow_pickle=False)
                files[kind].append(str(path))
        return {"model": str(folder / "model.onnx"), "inputs": files["input"], "outputs": files["output"],
                "rtol": self.tolerance[0], "atol": self.tolerance[1]}

    def _value_info(self, name: str) -> onnx.ValueInfoProto:
        if name in self.declared:   # as the model declares it (dynamic dims too)
            return self.declared[name]
        value = self.values[name]
        return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(value.dtype), list(value.shape))


def _read_names(node: onnx.NodeProto) -> list[str]:
    """What a node reads: its inputs, and the outer values its subgraphs (If, Loop, Scan) use."""
    names = list(node.input)
    for attribute in node.attribute:
        for graph in [attribute.g] if attribute.type == onnx.AttributeProto.GRAPH else list(attribute.graphs):
            inner = {i.name for i in graph.input} | {i.name for i in graph.initializer}
            for inner_node in graph.node:
                names += [n for n in _read_names(inner_node) if n not in inner]
                inner |= set(inner_node.output)
    return names


def _op_name(node: onnx.NodeProto) -> str:
    return f"{node.domain}.{node.op_type}" if node.domain not in ("", "ai.onnx") else node.op_type

