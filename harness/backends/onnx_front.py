"""What the backends that take ONNX share: torch.onnx's export of a PyTorch program (the front-end
of a backend whose config maps `torch:` to it, its `onnx` stage taken from the stage cache when
it holds it), torch-mlir's ONNX importer, and the output types an ONNX model declares."""
from __future__ import annotations

from typing import Any

from harness.backend_interface import CaseContext, Program, signature_shapes
from harness.outcomes import Phase
from harness.stages.reuse import HARNESS, Stage, cached, package_builds, program_identity, torch_build


def export_to_onnx(program: Program, opset: int | None, case: CaseContext) -> Any:
    """torch.onnx's dynamo exporter, as torch-mlir's onnx config exports (its phase: export); the
    model from the stage cache when it holds this program's export at this opset."""
    case.enter(Phase.EXPORT)
    model = cached(case, Stage("onnx", lambda: program_identity(case, program), onnx_build, {"opset": opset},
                               _serialised, _parsed, shown=_serialised),
                   lambda: _exported(program, opset))
    case.sizes["onnx_nodes"] = len(model.graph.node)
    return model


def import_onnx(model: Any) -> Any:
    """torch-mlir's ONNX importer on the model, shapes inferred with data propagation first (as
    torch-mlir's onnx e2e config and its import_onnx tool do): Torch ONNX IR, `torch.operator`s."""
    import onnx
    from torch_mlir import ir
    from torch_mlir.dialects import torch as torch_dialect
    from torch_mlir.extras import onnx_importer

    inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    context = ir.Context()
    torch_dialect.register_dialect(context)
    info = onnx_importer.ModelInfo(inferred)
    module = info.create_module(context=context)
    onnx_importer.NodeImporter.define_function(info.main_graph, module.operation).import_all()
    return module


def onnx_build() -> dict[str, str]:
    """What computes the export: torch's exporter, onnxscript's translations, onnx, the harness."""
    return {**torch_build(), **package_builds("onnxscript", "onnx", HARNESS)}


def _exported(program: Program, opset: int | None) -> Any:
    import torch

    module = program.graph_module()
    exported = torch.onnx.export(module, tuple(program.example_inputs), dynamo=True, opset_version=opset,
                                 verbose=False, dynamic_shapes=signature_shapes(module.forward, program.dynamic_shapes))
    assert exported is not None, "dynamo=True returns the exported program"
    return without_metadata(exported.model_proto)


def _serialised(model: Any) -> bytes:
    return model.SerializeToString()


def _parsed(data: bytes) -> Any:
    import onnx

    return onnx.ModelProto.FromString(data)


def without_metadata(model: Any) -> Any:
    """The exported model, in place, without what varies with the source and not the program: the
    exporter's doc strings and each node's metadata (its source lines, module path and FX node)."""
    model.doc_string = ""
    model.graph.doc_string = ""
    for node in model.graph.node:
        node.doc_string = ""
        del node.metadata_props[:]
    return model


def declared_dtype(type_proto: Any) -> Any:
    """The numpy dtype (ml_dtypes' for bfloat16, float8, int4) of a tensor type; None for others."""
    from onnx import helper

    if not type_proto.HasField("tensor_type"):
        return None
    return helper.tensor_dtype_to_np_dtype(type_proto.tensor_type.elem_type)


def as_declared(value: Any, type_proto: Any) -> Any:
    """A result whose bytes are right but whose dtype is not (a compiler's signless integers,
    onnxruntime's float8 as uint8), viewed as the type the model declares."""
    import numpy as np

    dtype = declared_dtype(type_proto)
    if dtype is None or not isinstance(value, np.ndarray) or value.dtype == dtype:
        return value
    kinds = {value.dtype.kind, dtype.kind}
    if value.dtype.itemsize == dtype.itemsize and (kinds <= {"u", "i"} or "V" in kinds):
        return value.view(dtype)
    return value
