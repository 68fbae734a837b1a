"""The worker halves of the ONNX families: a node test's model and data from the lister's files
(onnx_node), a user's model and input files (onnx_model)."""
from __future__ import annotations

import collections
import functools
from pathlib import Path

import onnx

from harness.backend_interface import OnnxProgram, graph_inputs
from harness.case_data import Case
from harness.families.built import FamilyGolden
from harness.families.interface import Built
from harness.families.onnx import params
from harness.families.onnx.values import compare_values, margins, read_data_set, read_value_file
from harness.families.quantized.golden import QuantizedGolden
from harness.families.quantized.qdq import QDQ_OPS, quantize_qdq


def build_node(case: Case) -> Built:
    name = case.params["test"]
    test = params.manifest()["tests"][name]
    directory = params.test_dir(name)
    model = onnx.load(directory / "model.onnx")
    graph = model.graph
    input_names = [i.name for i in graph_inputs(model)]
    output_names = [o.name for o in graph.output]
    data_sets = sorted(directory.glob("test_data_set_*"))
    program = OnnxProgram(case.id, model, directory / "model.onnx", input_names, output_names)
    return Built(program=program,
                 input_sets=[tuple(read_data_set(d, graph, "input")) for d in data_sets],
                 golden=_golden([tuple(read_data_set(d, graph, "output")) for d in data_sets], output_names,
                                test["rtol"], test["atol"]),
                 tolerance=(test["rtol"], test["atol"]),
                 notes={"onnx_op": params.subject(case.params), "opset": str(test["opset"])})


def build_model(case: Case) -> Built:
    """A user's model and input files; the goldens are the stored outputs, else onnxruntime's."""
    p = case.params
    path = Path(p["model"])
    model = onnx.load(str(path))
    output_names = [o.name for o in model.graph.output]
    inputs = tuple(read_value_file(Path(f)) for f in p["inputs"])
    if p.get("quantize"):
        return _int8_built(case.id, path, [i.name for i in graph_inputs(model)], output_names, inputs)
    if p["outputs"] is not None:
        golden, source = tuple(read_value_file(Path(f)) for f in p["outputs"]), "stored outputs"
    else:
        golden, source = tuple(onnxruntime_outputs(path, inputs)), "onnxruntime"
    program = OnnxProgram(case.id, model, path, [i.name for i in graph_inputs(model)], output_names)
    return Built(program=program, input_sets=[inputs], golden=_golden([golden], output_names, p["rtol"], p["atol"]),
                 tolerance=(p["rtol"], p["atol"]), notes={"golden": source})


def _golden(values: list, names: list[str], rtol: float, atol: float) -> FamilyGolden:
    """The stored outputs, compared as ONNX's backend runner does, with each output's margin."""
    return FamilyGolden(values, functools.partial(compare_values, names=names, rtol=rtol, atol=atol),
                        functools.partial(margins, names=names, rtol=rtol, atol=atol))


def _int8_built(case_id: str, path: Path, input_names: list[str], output_names: list[str], inputs: tuple) -> Built:
    """The model's QDQ int8 model (harness.families.quantized.qdq), its golden onnxruntime's run
    of it, judged in quantization steps."""
    quantized = quantize_qdq(path, input_names, [inputs])
    model = onnx.load(str(quantized))
    golden = [tuple(onnxruntime_outputs(quantized, inputs))]
    program = OnnxProgram(case_id, model, quantized, input_names, output_names)
    counts = collections.Counter(n.op_type for n in model.graph.node if n.op_type in QDQ_OPS)
    return Built(program=program, input_sets=[inputs], reference=golden, golden=QuantizedGolden(tuple(output_names)),
                 notes={"golden": "onnxruntime's run of the int8 model",
                        "quantized": ", ".join(f"{op} x{n}" for op, n in sorted(counts.items()))})


def onnxruntime_outputs(path: Path, inputs: tuple) -> list:
    """The model's outputs on onnxruntime's CPU provider, all optimisations off: the reference."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return session.run(None, {i.name: value for i, value in zip(session.get_inputs(), inputs)})
