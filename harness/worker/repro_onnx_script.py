"""Reproduce one ONNX case of the harness without it: python repro.py (needs onnx, numpy and the
backend's own package).

It reads model.onnx, each test_data_set_<i>/ (input_<j>.pb, and output_<j>.pb: the expected
outputs), repro.json and backend_repro.py beside it (the backend's `run_onnx`, from the harness's
backends/standalone), runs the model on the backend and compares with ONNX's backend-runner rule
(allclose at the case's rtol and atol, strings and integers exactly). Exit status 0: every output
matched; 1: one did not (printed); the backend's own error otherwise.
"""
from __future__ import annotations  # the shared functions' annotations name typing.Any

import json
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

# beside this file in its bundle, found through the path entry above (mypy checks the template alone)
import backend_repro  # type: ignore[import-not-found]  # noqa: E402


def read_value(path, type_proto):
    data = path.read_bytes()
    if type_proto.HasField("sequence_type"):
        sequence = onnx.SequenceProto()
        sequence.ParseFromString(data)
        return numpy_helper.to_list(sequence)
    if type_proto.HasField("optional_type"):
        optional = onnx.OptionalProto()
        optional.ParseFromString(data)
        return numpy_helper.to_optional(optional)
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


# The harness's own reading of an output as the model declares it (signless integers, float8 as
# uint8): a bundle's repro.py has the functions' source in place of this import (written by
# harness.worker.repro_onnx), so it runs without the harness and cannot disagree with it.
from harness.backends.onnx_front import as_declared  # noqa: E402


def main():
    constants = json.loads((HERE / "repro.json").read_text())
    model = onnx.load(HERE / "model.onnx")
    graph = model.graph
    initialized = {i.name for i in graph.initializer}
    declared_inputs = [i for i in graph.input if i.name not in initialized]
    input_sets, expected = [], []
    for data_set in constants["data_sets"]:
        directory = HERE / data_set
        input_sets.append([read_value(directory / f"input_{j}.pb", declared_inputs[j].type)
                           for j in range(len(list(directory.glob("input_*.pb"))))])
        expected.append([read_value(directory / f"output_{j}.pb", graph.output[j].type)
                         for j in range(len(list(directory.glob("output_*.pb"))))])
    results = backend_repro.run_onnx(model, input_sets, constants["backend_constants"])
    for data_set, got, want in zip(constants["data_sets"], results, expected):
        for output, g, w in zip(graph.output, got, want):
            problem = differs(as_declared(g, output.type), w, constants["rtol"], constants["atol"])
            if problem:
                print(f"{data_set} {output.name}: {problem}")
                return 1
    print(f"every output matched on {constants['backend']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
