"""A backend for the self-tests of `python -m harness isolate` on ONNX models (never used by the product).

`PerturbingOnnxBackend` runs the model on onnxruntime exactly, except that the first output of
every node of the op type named by its `perturb` option ("Softmax") comes out 1% off: a Mul by 1.01
is inserted after it. With `perturb_after` OP too, only where the node's first input is made by
an OP node (a fusion of the two that is wrong): alone, fed an input, the node is exact, so only a
prefix of the model shows it.
"""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

from harness.backend_interface import Backend
from harness.outcomes import Phase

FACTOR = "perturbing/1.01"


class PerturbingOnnxBackend(Backend):
    OPTIONS = {"perturb": "the op type whose first output comes out 1% off, e.g. Softmax",
               "perturb_after": "perturb only where the node's first input is made by a node of this op type"}

    def compile(self, program, case):
        case.enter(Phase.COMPILE)
        model = perturbed(program.model, self.options["perturb"], self.options.get("perturb_after"))
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])

    def run(self, session, inputs, case):
        case.enter(Phase.RUN)
        return session.run(None, dict(zip((i.name for i in session.get_inputs()), inputs)))


def perturbed(model: onnx.ModelProto, op_type: str, after: str | None) -> onnx.ModelProto:
    """A copy of the (float32) model whose op_type nodes' first outputs are multiplied by 1.01."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    graph = copy.graph
    makers = {output: node.op_type for node in graph.node for output in node.output}
    nodes = []
    for node in graph.node:
        nodes.append(node)
        if node.op_type == op_type and (after is None or makers.get(node.input[0]) == after):
            exact, result = f"{node.output[0]}/exact", node.output[0]
            node.output[0] = exact
            nodes.append(helper.make_node("Mul", [exact, FACTOR], [result]))
    del graph.node[:]
    graph.node.extend(nodes)
    graph.initializer.append(numpy_helper.from_array(np.array(1.01, np.float32), FACTOR))
    return copy
