"""Worker-side check of an `onnx_model` case: does the model load, and do its input (and stored
output) files match the model's graph? Run once per set of files by the family's validate
(harness.families.onnx.model_params), in a subprocess, as the pytest process never imports onnx.

`python -m harness.families.onnx.model_check` reads the request as JSON on stdin, {"model": path,
"inputs": [paths], "outputs": [paths] or null}, and prints {"error": "<one sentence>"} or {"error": null}
(a one-shot helper: harness.helper_process.ask_helper).
"""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any, Sequence

import onnx
from google.protobuf.message import DecodeError
from onnx import helper

from harness.backend_interface import graph_inputs
from harness.families.onnx.values import read_value_file
from harness.files import display_path
from harness.installation.extras import install_command

FILE_KINDS = ".npy (numpy.save) or .pb (an ONNX TensorProto)"


def load_model(path: Path) -> onnx.ModelProto:
    """The model, or ValueError saying that the file is not one (protobuf parses many files as an
    empty message: one without a graph or an IR version is not a model)."""
    try:
        model = onnx.load(str(path), load_external_data=False)
    except (DecodeError, OSError, ValueError, RuntimeError) as e:
        first = (str(e).splitlines() or [""])[0]
        raise ValueError(f"{display_path(path)} is not an ONNX model ({type(e).__name__}: {first})") from None
    if not model.ir_version or not model.HasField("graph"):
        raise ValueError(f"{display_path(path)} is not an ONNX model (no IR version or graph in it)")
    return model


def described(value: onnx.ValueInfoProto) -> str:
    tensor = value.type.tensor_type
    if not value.type.HasField("tensor_type"):
        return f"{value.name!r} (not a tensor)"
    dims = ",".join(str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?") for d in tensor.shape.dim)
    return f"{value.name!r} ({onnx.TensorProto.DataType.Name(tensor.elem_type).lower()}[{dims}])"


def mismatch(array: Any, value: onnx.ValueInfoProto) -> str | None:
    """What about the array does not fit the graph's value, or None."""
    if not value.type.HasField("tensor_type"):
        return "only tensor inputs and outputs are supported"
    tensor = value.type.tensor_type
    want = helper.tensor_dtype_to_np_dtype(tensor.elem_type)
    if array.dtype != want:
        return f"its dtype is {array.dtype}, not {want}"
    if tensor.HasField("shape"):
        dims = tensor.shape.dim
        if len(dims) != array.ndim:
            return f"it has {array.ndim} dimensions, not {len(dims)}"
        for i, (d, size) in enumerate(zip(dims, array.shape)):
            if d.HasField("dim_value") and d.dim_value != size:
                return f"its dimension {i} is {size}, not {d.dim_value}"
    return None


def check_files(kind: str, paths: Sequence[Path], values: Sequence[onnx.ValueInfoProto], model: Path) -> None:
    if len(paths) != len(values):
        raise ValueError(f"{len(paths)} {kind} files for the {len(values)} {kind}s of {display_path(model)} "
                         f"({'; '.join(described(v) for v in values)}): give one file per {kind}, in the model's order")
    for path, value in zip(paths, values):
        if path.suffix not in (".npy", ".pb"):
            raise ValueError(f"{display_path(path)}: {kind} files are {FILE_KINDS}")
        try:
            array = read_value_file(path)
        except (OSError, ValueError, DecodeError) as e:
            raise ValueError(f"{display_path(path)} cannot be read as {FILE_KINDS} ({e})") from None
        problem = mismatch(array, value)
        if problem:
            raise ValueError(f"{display_path(path)} does not fit {kind} {described(value)} of "
                             f"{display_path(model)}: {problem}; give a file of that dtype and shape")


def check(request: dict) -> None:
    model_path = Path(request["model"])
    model = load_model(model_path)
    check_files("input", [Path(p) for p in request["inputs"]], graph_inputs(model), model_path)
    if request.get("outputs") is not None:
        check_files("output", [Path(p) for p in request["outputs"]], list(model.graph.output), model_path)
    elif importlib.util.find_spec("onnxruntime") is None:
        raise ValueError("without stored outputs the golden is onnxruntime's, and onnxruntime is not installed: "
                         f"give outputs: files or {install_command(['onnx'])}")


def main() -> None:
    request = json.load(sys.stdin)
    try:
        check(request)
        error = None
    except ValueError as e:
        error = str(e)
    print(json.dumps({"error": error}))


if __name__ == "__main__":
    main()
