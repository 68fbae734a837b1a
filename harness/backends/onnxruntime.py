"""The `onnxruntime` backend: ONNX Runtime's CPU execution provider.

It takes ONNX models as they are, and PyTorch programs through torch.onnx's exporter:
  export   (PyTorch programs) torch.onnx.export(dynamo=True) at the config's opset
  compile  an InferenceSession of the model (graph optimisation and kernel selection fail here)
  run      the session on the inputs

numpy has no bfloat16, float8 or int4: such inputs go in as OrtValues of their ONNX type, and
outputs of those types are read as the model declares them (ONNX Runtime hands float8 back as
uint8 and cannot hand bfloat16 back as numpy at all).

Options (configs/onnxruntime.yaml):
  intra_op_threads   the session's intra-op threads (default 1: a worker runs one case at a time)
  opset              the opset PyTorch programs are exported at (default: torch.onnx's)
  graph_optimization ORT_DISABLE_ALL, ORT_ENABLE_BASIC, ORT_ENABLE_EXTENDED or ORT_ENABLE_ALL (the default)
"""
from __future__ import annotations

import ctypes
import dataclasses
from typing import Any, Sequence

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper

from harness.backend_interface import (
    STANDALONE_SCRIPTS,
    Backend,
    CaseContext,
    OnnxProgram,
    Program,
    Standalone,
    graph_inputs,
)
from harness.backends.onnx_front import as_declared, declared_dtype, export_to_onnx
from harness.outcomes import Phase

NUMPY_HAS_NO = "No corresponding Numpy type"


@dataclasses.dataclass
class Session:
    session: ort.InferenceSession
    input_types: list[onnx.TypeProto]
    output_types: list[onnx.TypeProto]
    torch_inputs: bool = False      # a PyTorch program's: its inputs are tensors


class OnnxRuntimeBackend(Backend):
    LISTS_OPS = False   # the harness exports the program to list them (torch.onnx exports it too)
    STAGES = ("onnx",)   # the model the session is made from
    OPTIONS = {"intra_op_threads": "a session's intra-op threads without --perf (default 1)",
               "graph_optimization": "a GraphOptimizationLevel name (default ORT_ENABLE_ALL)",
               "opset": "the opset torch.onnx exports PyTorch programs at (default: its own)"}

    def compile(self, program: OnnxProgram | Program, case: CaseContext) -> Session:
        torch_inputs = isinstance(program, Program)
        model = export_to_onnx(program, self.options.get("opset"), case) if isinstance(program, Program) \
            else program.model
        case.enter(Phase.COMPILE)
        options = ort.SessionOptions()
        options.intra_op_num_threads = case.threads or int(self.options.get("intra_op_threads", 1))
        options.inter_op_num_threads = case.threads or 0   # --perf fixes both; else onnxruntime's default
        options.log_severity_level = 3   # errors only: its warnings would fill every case's log
        options.graph_optimization_level = getattr(ort.GraphOptimizationLevel,
                                                   self.options.get("graph_optimization", "ORT_ENABLE_ALL"))
        serialised = model.SerializeToString()
        case.fingerprint("onnx", serialised)
        session = ort.InferenceSession(serialised, options, providers=["CPUExecutionProvider"])
        return Session(session, [i.type for i in graph_inputs(model)],
                       [o.type for o in model.graph.output], torch_inputs)

    def run(self, artifact: Session, inputs: Sequence[Any], case: CaseContext) -> list:
        case.enter(Phase.RUN)
        if artifact.torch_inputs:
            inputs = [value.detach().cpu().numpy() for value in inputs]
        names = [i.name for i in artifact.session.get_inputs()]
        feed = {name: ort_input(value) for name, value in zip(names, inputs)}
        try:
            results = artifact.session.run(None, feed)
        except Exception as e:  # noqa: BLE001 - onnxruntime raises its own classes, not importable alike
            if NUMPY_HAS_NO not in str(e):
                raise
            values = {name: v if isinstance(v, ort.OrtValue) else ort.OrtValue.ortvalue_from_numpy(v)
                      for name, v in feed.items()}
            results = [raw_tensor(value, t) for value, t in
                       zip(artifact.session.run_with_ort_values(None, values), artifact.output_types)]
        return [as_declared(value, t) for value, t in zip(results, artifact.output_types)]

    def standalone(self, program: OnnxProgram | Program) -> Standalone | None:
        if not isinstance(program, OnnxProgram):
            return None
        return Standalone(STANDALONE_SCRIPTS / "onnxruntime.py", {
            "intra_op_threads": int(self.options.get("intra_op_threads", 1)),
            "graph_optimization": self.options.get("graph_optimization", "ORT_ENABLE_ALL")})

    def versions(self) -> dict[str, str]:
        return {"onnxruntime": ort.__version__, "onnx": onnx.__version__}


def ort_input(value: Any) -> Any:
    """A value as onnxruntime takes it: numpy has the dtype, or an OrtValue of its ONNX type."""
    if isinstance(value, list) or value is None:
        return value
    array = np.require(np.asarray(value), requirements="C")   # ascontiguousarray makes a 0-d array 1-d
    if array.dtype.type.__module__ != "ml_dtypes":   # numpy's own dtype
        return array
    onnx_type = helper.np_dtype_to_tensor_dtype(array.dtype)
    if array.dtype.name in SUB_BYTE_BITS:
        # The OrtValue takes its shape from the array and reads its first bytes as packed elements
        carrier = np.zeros(array.shape, np.uint8)
        packed = pack_sub_byte(array)
        carrier.reshape(-1)[:packed.size] = packed
        return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(carrier, onnx_type)
    same_width = np.dtype(f"uint{8 * array.dtype.itemsize}")
    return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(array.view(same_width), onnx_type)


# ONNX packs these types several to a byte, the first element in the lowest bits.
SUB_BYTE_BITS = {"int4": 4, "uint4": 4, "float4_e2m1fn": 4, "int2": 2, "uint2": 2}


def pack_sub_byte(array: np.ndarray) -> np.ndarray:
    bits = SUB_BYTE_BITS[array.dtype.name]
    per_byte, mask = 8 // bits, (1 << bits) - 1
    codes = array.reshape(-1).view(np.uint8) & mask
    codes = np.concatenate([codes, np.zeros(-codes.size % per_byte, np.uint8)]).reshape(-1, per_byte)
    return np.bitwise_or.reduce(codes << (bits * np.arange(per_byte, dtype=np.uint8)), axis=1).astype(np.uint8)


def unpack_sub_byte(raw: bytes, dtype: np.dtype, shape: Sequence[int]) -> np.ndarray:
    bits = SUB_BYTE_BITS[dtype.name]
    per_byte, mask = 8 // bits, (1 << bits) - 1
    packed = np.frombuffer(raw, np.uint8)
    codes = ((packed[:, None] >> (bits * np.arange(per_byte, dtype=np.uint8))) & mask).reshape(-1)
    codes = codes[:int(np.prod(shape))].astype(np.uint8)
    if dtype.name.startswith("float"):
        values = codes.view(dtype)
    elif dtype.name.startswith("int"):   # sign-extend the field
        signed = np.where(codes >> (bits - 1), codes.astype(np.int16) - (1 << bits), codes)
        values = signed.astype(np.int8).astype(dtype)
    else:
        values = codes.astype(dtype)
    return values.reshape(shape)


def raw_tensor(value: ort.OrtValue, type_proto: onnx.TypeProto) -> Any:
    """An output numpy cannot be given by onnxruntime, copied from its memory as declared."""
    dtype = declared_dtype(type_proto)
    if dtype is None or not value.is_tensor():
        return value.numpy()
    raw = bytes((ctypes.c_uint8 * value.tensor_size_in_bytes()).from_address(value.data_ptr()))
    if dtype.name in SUB_BYTE_BITS:
        return unpack_sub_byte(raw, dtype, value.shape())
    return np.frombuffer(raw, dtype=dtype).reshape(value.shape())
