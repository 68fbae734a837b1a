"""The worker half of the ONNX node-test family: a test's model and data from the lister's files."""
from __future__ import annotations

import functools

import onnx

from harness.backend import OnnxProgram
from harness.families.interface import Built
from harness.families.onnx import params
from harness.families.onnx.values import compare_values, read_data_set
from harness.spec import Case


def build_node(case: Case) -> Built:
    name = case.params["test"]
    test = params.manifest()["tests"][name]
    directory = params.test_dir(name)
    model = onnx.load(directory / "model.onnx")
    graph = model.graph
    initialised = {i.name for i in graph.initializer}
    input_names = [i.name for i in graph.input if i.name not in initialised]
    output_names = [o.name for o in graph.output]
    data_sets = sorted(directory.glob("test_data_set_*"))
    program = OnnxProgram(case.id, model, directory / "model.onnx", input_names, output_names)
    return Built(program=program,
                 input_sets=[tuple(read_data_set(d, graph, "input")) for d in data_sets],
                 goldens=[tuple(read_data_set(d, graph, "output")) for d in data_sets], float64_golden=False,
                 compare=functools.partial(compare_values, names=output_names, rtol=test["rtol"], atol=test["atol"]),
                 tolerance=(test["rtol"], test["atol"]),
                 notes={"onnx_op": params.subject(case.params), "opset": str(test["opset"])})
