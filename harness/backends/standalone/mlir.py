"""torch-mlir: the same pipelines as the harness's MLIR backend, then the MLIR ExecutionEngine, with
torch-mlir's own runtime helpers for the RefBackend-style calling convention (results arrive
through a consume callback).

constants: func_name, pipelines (Torch backend, to Linalg..., LLVM), opt_level.
"""
import ctypes
import inspect
import re

import numpy as np
import torch
import torch_mlir.fx
from torch_mlir.compiler_utils import run_pipeline_with_repro_report
from torch_mlir.execution_engine import ExecutionEngine
from torch_mlir.runtime import UnrankedMemRefDescriptor, get_unranked_memref_descriptor, unranked_memref_to_numpy

CARRIERS = {"mrf32": np.float32, "mrf64": np.float64, "mrf16": np.float16, "mri64": np.int64,
            "mri32": np.int32, "mri1": np.bool_}


def compile_and_run(model, example_inputs, dynamic_shapes, input_sets, constants):
    func_name = constants["func_name"]
    kinds = [p.kind for p in inspect.signature(model.forward).parameters.values()]
    if dynamic_shapes is not None and kinds == [inspect.Parameter.VAR_POSITIONAL]:
        dynamic_shapes = (tuple(dynamic_shapes),)   # forward(*inputs): torch.export sees one tuple parameter
    exported = torch.export.export(model, example_inputs, dynamic_shapes=dynamic_shapes)
    module = torch_mlir.fx.export_and_import(exported, output_type="raw", func_name=func_name)
    for index, pipeline in enumerate(constants["pipelines"], 1):
        run_pipeline_with_repro_report(module, f"builtin.module({pipeline})", f"stage {index}")
    consume = re.search(r"refbackend_consume_func_return_(\w+)", str(module))
    carriers = [CARRIERS[token] for token in consume.group(1).split("_")]
    engine = ExecutionEngine(module, opt_level=constants["opt_level"])
    results = []

    def on_results(*memrefs):
        results.append([unranked_memref_to_numpy(m, c).copy() for m, c in zip(memrefs, carriers)])

    callback = ctypes.CFUNCTYPE(None, *[ctypes.POINTER(UnrankedMemRefDescriptor)] * len(carriers))(on_results)
    engine.register_runtime(consume.group(0), callback)
    for inputs in input_sets:
        arrays = [t.contiguous().numpy() for t in inputs]
        engine.invoke(func_name, *[ctypes.pointer(ctypes.pointer(get_unranked_memref_descriptor(a)))
                                   for a in arrays])
    return results
