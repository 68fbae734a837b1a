"""Reproduce one ONNX case of the harness without it: python repro.py (needs onnx, numpy, onnxruntime).

It reads model.onnx, each test_data_set_<i>/ (input_<j>.pb, and output_<j>.pb: the expected
outputs) and repro.json beside it, runs the model with onnxruntime's CPU execution provider and
compares with ONNX's backend-runner rule (allclose at the case's rtol and atol, strings and
integers exactly). Exit status 0: every output matched; 1: one did not (printed); the backend's
own error otherwise. For a backend other than onnxruntime it prints the harness command instead.
"""
import json
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

HERE = Path(__file__).resolve().parent


def read_value(path, type_proto):
    data = path.read_bytes()
    for field, proto, convert in (("sequence_type", onnx.SequenceProto, numpy_helper.to_list),
                                  ("optional_type", onnx.OptionalProto, numpy_helper.to_optional)):
        if type_proto.HasField(field):
            value = proto()
            value.ParseFromString(data)
            return convert(value)
    tensor = onnx.TensorProto()
    tensor.ParseFromString(data)
    return numpy_helper.to_array(tensor)


def differs(got, want, rtol, atol):
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return f"a sequence of {len(want)} was expected, got {got!r:.200}"
        return next((p for p in (differs(g, w, rtol, atol) for g, w in zip(got, want)) if p), None)
    if want is None or got is None:
        return None if want is None and got is None else f"got {got!r:.200}, want {want!r:.200}"
    got, want = np.asarray(got), np.asarray(want)
    if want.dtype == object:
        return None if np.array_equal(got.astype(str), want.astype(str)) else "strings differ"
    try:
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol)
    except AssertionError as e:
        return str(e).strip()
    return None


def main():
    constants = json.loads((HERE / "repro.json").read_text())
    if constants["backend"] != "onnxruntime":
        raise SystemExit(f"backend {constants['backend']}: no standalone reproduction of ONNX models yet; "
                         f"rerun it through the harness:\n  {constants['rerun']}")
    import onnxruntime as ort

    model = onnx.load(HERE / "model.onnx")
    graph = model.graph
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    for data_set in constants["data_sets"]:
        directory = HERE / data_set
        inputs = [read_value(directory / f"input_{j}.pb", graph.input[j].type)
                  for j in range(len(list(directory.glob("input_*.pb"))))]
        want = [read_value(directory / f"output_{j}.pb", graph.output[j].type)
                for j in range(len(list(directory.glob("output_*.pb"))))]
        got = session.run(None, dict(zip(names, inputs)))
        for output, g, w in zip(graph.output, got, want):
            problem = differs(g, w, constants["rtol"], constants["atol"])
            if problem:
                print(f"{data_set} {output.name}: {problem}")
                return 1
    print("every output matched")
    return 0


if __name__ == "__main__":
    sys.exit(main())
