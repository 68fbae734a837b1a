"""The floor benchmarks/overhead.py measures the harness against: torch-mlir alone, no harness.

One process, nothing of the harness imported. For each convolution-backward case of a JSON file
(its geometry, output mask, dtype, input shapes and tolerances, written by overhead.py), it builds
the module, calls `torch_mlir.fx.export_and_import(..., output_type="linalg-on-tensors")` with the
backend's export mode and legal ops, lowers the result with its RefBackend-style pass list,
JIT-compiles it with the MLIR ExecutionEngine at O2, runs each input set and compares with a
float64 run of the module. The process's start and imports count, as the harness's do. Prints
one JSON line: the cases and how many did not pass.

    python benchmarks/bare_loop.py CASES.json
"""
from __future__ import annotations

import ctypes
import json
import sys

import numpy as np
import torch
import torch_mlir.fx
from torch_mlir.compiler_utils import run_pipeline_with_repro_report
from torch_mlir.execution_engine import ExecutionEngine
from torch_mlir.runtime import get_unranked_memref_descriptor, unranked_memref_to_numpy
from torch_mlir.runtime.np_to_memref import UnrankedMemRefDescriptor

DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
          "bfloat16": torch.bfloat16}   # no numpy type: its cases fail to lower, as in the harness
ELEMENTS = {"float32": ("f32", np.float32), "float64": ("f64", np.float64), "float16": ("f16", np.float16)}


class ConvolutionBackward(torch.nn.Module):
    def __init__(self, case: dict) -> None:
        super().__init__()
        self.case = case

    def forward(self, grad_output, input, weight):
        c = self.case
        grads = torch.ops.aten.convolution_backward(
            grad_output, input, weight, c["bias_sizes"], c["stride"], c["padding"], c["dilation"],
            c["transposed"], c["output_padding"], c["groups"], c["output_mask"])
        return tuple(g for g, keep in zip(grads, c["output_mask"]) if keep)


class Compiled:
    """A case's module lowered to LLVM and JIT-compiled. The entry point takes unranked memrefs
    and hands its results to a consume function, registered here once, before the first call (a
    registration after a call hung here)."""

    def __init__(self, module: torch.nn.Module, inputs: tuple, case: dict, backend: dict) -> None:
        batch = torch.export.Dim("batch")
        shapes = ({0: batch}, {0: batch}, None) if case["dynamic"] else None
        mlir = torch_mlir.fx.export_and_import(module, *inputs, output_type="linalg-on-tensors", func_name="forward",
                                               dynamic_shapes=shapes, strict=backend["strict_export"],
                                               backend_legal_ops=backend["backend_legal_ops"])
        run_pipeline_with_repro_report(mlir, backend["llvm_lowering_passes"], "Linalg-on-Tensors to LLVM")
        self.engine = ExecutionEngine(mlir, opt_level=2)
        element, carrier = ELEMENTS[case["dtype"]]
        self.results: list[np.ndarray] = []

        def consume(*memrefs):
            self.results.extend(unranked_memref_to_numpy(m, carrier).copy() for m in memrefs)

        count = sum(case["output_mask"])
        self.callback = ctypes.CFUNCTYPE(None, *[ctypes.POINTER(UnrankedMemRefDescriptor)] * count)(consume)
        self.engine.register_runtime("refbackend_consume_func_return_" + "_".join([f"mr{element}"] * count),
                                     self.callback)

    def __call__(self, inputs: tuple) -> list[np.ndarray]:
        self.results = []
        arrays = [t.numpy() for t in inputs]
        self.engine.invoke("forward", *(ctypes.pointer(ctypes.pointer(get_unranked_memref_descriptor(a)))
                                        for a in arrays))
        return self.results


def passes(case: dict, module: ConvolutionBackward, backend: dict) -> bool:
    dtype = DTYPES[case["dtype"]]
    input_sets = []
    for index, shapes in enumerate(case["input_sets"]):
        torch.manual_seed(index)
        input_sets.append(tuple(torch.rand(s, dtype=dtype) * 2 - 1 for s in shapes))
    compiled = Compiled(module, input_sets[0], case, backend)
    for inputs in input_sets:
        with torch.no_grad():
            wants = module(*(t.to(torch.float64) for t in inputs))
        gots = compiled(inputs)
        if not all(np.allclose(got.astype(np.float64), want.numpy(), case["rtol"], case["atol"], equal_nan=True)
                   and got.shape == tuple(want.shape) for got, want in zip(gots, wants)):
            return False
    return True


def main() -> None:
    data = json.loads(open(sys.argv[1]).read())
    pipeline = "builtin.module(" + ",".join(data["backend"]["llvm_lowering_passes"]) + ")"
    backend = {**data["backend"], "llvm_lowering_passes": pipeline}
    failed = 0
    for case in data["cases"]:
        try:
            failed += not passes(case, ConvolutionBackward(case), backend)
        except Exception:  # noqa: BLE001 - a compile error is a case that did not pass, as in the harness
            failed += 1
    print(json.dumps({"cases": len(data["cases"]), "failed": failed}))


if __name__ == "__main__":
    main()
