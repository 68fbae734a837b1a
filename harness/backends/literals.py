"""Weights into torch-mlir's IR at the speed of a memory copy.

torch-mlir's FX importer makes each weight a `dense_resource` blob, as it should, but reads the
tensor through `np.array(tensor.tolist())` first (a Python float per element), because a tensor
under FakeTensorMode cannot hand out its buffer: ResNet-18's 11.2M parameters took 128 s to import
here, against IREE's importer's 0.8 s (benchmarks/model_weights.py). Its public hook for literals,
`FxImporterHooks.resolve_literal`, lets this module build the same `torch.vtensor.literal` from
the tensor's own buffer for every real tensor; a fake one, a scalar and a type numpy lacks are
left to the importer.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import torch
from torch._subclasses.fake_tensor import FakeTensor
from torch_mlir import ir
from torch_mlir.extras.fx_importer import TORCH_DTYPE_TO_NPY_TYPE, FxImporterHooks, create_mlir_tensor_type

# A buffer numpy can view: the dtype's own, or (bfloat16) its bits reinterpreted.
_BITS = {torch.bfloat16: (torch.int16, ml_dtypes.bfloat16)}


class BufferLiterals(FxImporterHooks):
    """Weights as `dense_resource` blobs read straight from their buffers, one blob per tensor
    however often the program reads it (as the importer's own path keeps them). One per import."""

    def __init__(self):
        self.blobs: dict[int, tuple[torch.Tensor, ir.Attribute]] = {}   # id -> (the tensor, kept alive; its blob)

    def resolve_literal(self, gni, literal, info):
        if (not isinstance(literal, torch.Tensor) or isinstance(literal, FakeTensor) or literal.numel() <= 1
                or literal.dtype not in TORCH_DTYPE_TO_NPY_TYPE or literal.is_sparse):
            return None   # the importer's own path: splats, fakes, types without a numpy twin
        if id(literal) not in self.blobs:
            blob = f"torch_tensor_{'_'.join(map(str, literal.shape))}_{literal.dtype}"
            self.blobs[id(literal)] = literal, ir.DenseResourceElementsAttr.get_from_buffer(
                as_array(literal), blob, create_mlir_tensor_type(literal))
        value = self.blobs[id(literal)][1]
        vtensor = gni._cc.tensor_to_vtensor_type(literal)   # the importer's own types (si64, not i64)
        return ir.Operation.create("torch.vtensor.literal", results=[vtensor], attributes={"value": value}).result


def as_array(tensor: torch.Tensor) -> np.ndarray:
    """The tensor's values as a contiguous numpy array sharing nothing with autograd."""
    plain = tensor.detach().cpu().contiguous()
    if plain.dtype in _BITS:
        bits, numpy_type = _BITS[plain.dtype]
        return plain.view(bits).numpy().view(numpy_type)
    return plain.numpy().astype(TORCH_DTYPE_TO_NPY_TYPE[plain.dtype], copy=False)
