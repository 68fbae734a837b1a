"""The family `onnx_model`'s pure half: a user's own ONNX model from a cases file.

    - family: onnx_model
      name: my_block
      model: models/block.onnx            # paths relative to the cases file
      inputs: [data/x.npy, data/w.pb]     # one per model input, in order: .npy or a TensorProto .pb
      outputs: [data/y.npy]               # optional: stored goldens; without them, onnxruntime's
      rtol: 1.0e-3                        # optional, ONNX's runner's defaults
      atol: 1.0e-7
      quantize: int8                      # optional: its int8 model (onnxruntime's QDQ quantizer),
                                          # judged against onnxruntime's run of it in quantization steps

Ids read `onnx_model/cases_file/<name>`. Validation checks, in a subprocess and once per set of
files (the result is cached by their sizes and times), that the model loads and that every file
fits the model's input or output it stands for: a mismatch is one line at the cases-file entry.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Mapping

from harness import quantization
from harness.case_data import check_keys
from harness.errors import HarnessInputError
from harness.families.manifest_cache import PACKAGE_ROOT
from harness.families.onnx.params import not_installed, onnx_installed
from harness.files import display_path, user_cache_dir, write_text_atomically
from harness.helper_process import ask_helper

FAMILY = "onnx_model"
PARAM_KEYS = {"model", "inputs", "outputs", "rtol", "atol", "dtype", quantization.KEY}
PATH_PARAMS = ("model", "inputs", "outputs")   # relative paths are read from the cases file's folder
CHECK_FORMAT = 1
CHECK_TIMEOUT_S = 300
DEFAULT_RTOL, DEFAULT_ATOL = 1e-3, 1e-7        # ONNX's backend runner's


def validate(params: Mapping[str, Any]) -> dict:
    check_keys(params, PARAM_KEYS)
    model = _file(params.get("model"), "model", "the .onnx file")
    inputs = _files(params.get("inputs"), "inputs")
    outputs = None if params.get("outputs") is None else _files(params["outputs"], "outputs")
    tolerance = {key: _number(params, key, default)
                 for key, default in (("rtol", DEFAULT_RTOL), ("atol", DEFAULT_ATOL))}
    if params.get("dtype", "float32") != "float32":
        raise ValueError("an onnx_model case's dtype is float32 (nominal: its outputs keep the model's own dtypes)")
    if not onnx_installed():
        raise ValueError(f"onnx_model cases need the onnx package: {not_installed()}")
    error = checked(model, inputs, outputs)
    if error:
        raise ValueError(error)
    scheme = quantization.validate(params)
    if scheme[quantization.KEY] and outputs is not None:
        raise ValueError("an int8 model's golden is onnxruntime's run of it: leave outputs out, or quantize")
    return {"model": model, "inputs": inputs, "outputs": outputs, **tolerance, "dtype": "float32", **scheme}


def derive_tags(params: Mapping[str, Any]) -> list[str]:
    return [FAMILY, *quantization.tags(params)]


def subject(params: Mapping[str, Any]) -> str:
    """The model's file name: what the case tests."""
    return Path(params["model"]).name


def _file(value: Any, key: str, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"onnx_model cases need '{key}', {what}")
    if not Path(value).is_file():
        raise ValueError(f"{key} {display_path(Path(value))} does not exist: give the path of {what}, relative to the "
                         "cases file")
    return value


def _files(value: Any, key: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"'{key}' must be a list of .npy or .pb files, one per model {key[:-1]}, in order")
    return [_file(v, key, f"an {key[:-1]} file") for v in value]


def _number(params: Mapping[str, Any], key: str, default: float) -> float:
    value = params.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError(f"{key} must be a non-negative number, not {value!r}")
    return float(value)


def checked(model: str, inputs: list[str], outputs: list[str] | None) -> str | None:
    """The worker-side check's verdict on these files (None: they fit), cached by their stats."""
    request = {"model": model, "inputs": inputs, "outputs": outputs}
    stats = [(p, os.stat(p).st_size, os.stat(p).st_mtime_ns) for p in [model, *inputs, *(outputs or [])]]
    # The messages show paths relative to the working directory: it is part of the key.
    key = hashlib.sha1(json.dumps([CHECK_FORMAT, stats, outputs is None, os.getcwd()]).encode()).hexdigest()[:16]
    return _cached_check(key, json.dumps(request))


@functools.cache
def _cached_check(key: str, request: str) -> str | None:
    path = user_cache_dir() / "onnx-model-checks" / f"{key}.json"
    if path.exists():
        return json.loads(path.read_text(encoding="utf-8"))["error"]
    error = _run_check(request)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(path, json.dumps({"error": error}))
    return error


def _run_check(request: str) -> str | None:
    """The worker-side check's verdict (harness.families.onnx.model_check), from a helper process that
    runs in the working directory: its messages show the paths as the cases file's reader sees them."""
    try:
        reply = ask_helper("harness.families.onnx.model_check", json.loads(request), rootdir=PACKAGE_ROOT,
                           cwd=Path.cwd(), what="checking the model's files", where=FAMILY, timeout=CHECK_TIMEOUT_S)
    except HarnessInputError as e:
        raise ValueError(e.problem) from None   # said at the cases file's entry
    return reply["error"]
