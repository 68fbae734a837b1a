"""torch-mlir: the same pipelines as the harness's MLIR backend, then the MLIR ExecutionEngine, with
torch-mlir's own runtime helpers for the RefBackend-style calling convention (results arrive
through a consume callback).

constants: func_name, pipelines (Torch backend, to Linalg..., LLVM), opt_level, strict_export,
import_symbolic_shape_expressions. A scalar result (a Python number) arrives by value.
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
            "mri32": np.int32, "mri16": np.int16, "mri8": np.int8, "mri1": np.bool_,
            "mrc32": np.complex64, "mrc64": np.complex128}
SCALARS = {"f64": ctypes.c_double, "f32": ctypes.c_float, "i64": ctypes.c_int64, "i32": ctypes.c_int32,
           "i1": ctypes.c_bool}


def compile_and_run(model, example_inputs, dynamic_shapes, input_sets, constants):
    func_name = constants["func_name"]
    kinds = [p.kind for p in inspect.signature(model.forward).parameters.values()]
    if dynamic_shapes is not None and kinds == [inspect.Parameter.VAR_POSITIONAL]:
        dynamic_shapes = (tuple(dynamic_shapes),)   # forward(*inputs): torch.export sees one tuple parameter
    exported = torch.export.export(model, example_inputs, dynamic_shapes=dynamic_shapes,
                                   strict=constants.get("strict_export", False))
    module = torch_mlir.fx.export_and_import(
        exported, output_type="raw", func_name=func_name,
        import_symbolic_shape_expressions=constants.get("import_symbolic_shape_expressions", False))
    for index, pipeline in enumerate(constants["pipelines"], 1):
        run_pipeline_with_repro_report(module, f"builtin.module({pipeline})", f"stage {index}")
        if index == 1:   # Torch backend IR still says which results are ui8 (signless i8 from here on)
            unsigned = _unsigned_results(str(module), func_name)
    consume = re.search(r"refbackend_consume_func_return_(\w+)", str(module))
    tokens = consume.group(1).split("_")
    engine = ExecutionEngine(module, opt_level=constants["opt_level"])
    results = []

    def on_results(*values):
        arrays = [v if t in SCALARS else unranked_memref_to_numpy(v, CARRIERS[t]).copy()
                  for v, t in zip(values, tokens)]
        results.append([a.view(np.uint8) if i in unsigned else a for i, a in enumerate(arrays)])

    arg_types = [SCALARS.get(t) or ctypes.POINTER(UnrankedMemRefDescriptor) for t in tokens]
    callback = ctypes.CFUNCTYPE(None, *arg_types)(on_results)
    engine.register_runtime(consume.group(0), callback)
    for inputs in input_sets:
        arrays = [t.contiguous().numpy() for t in inputs]
        engine.invoke(func_name, *[ctypes.pointer(ctypes.pointer(get_unranked_memref_descriptor(a)))
                                   for a in arrays])
    return results


def _unsigned_results(torch_backend_ir, func_name):
    """Positions of the entry function's ui8 results."""
    match = re.search(rf"func\.func @{re.escape(func_name)}\(.*\)\s*->\s*\(?(.*?)\)?\s*\{{", torch_backend_ir)
    types = re.findall(r"!torch\.vtensor<[^>]*>|!torch\.\w+", match.group(1)) if match else []
    return [i for i, t in enumerate(types) if t.endswith(",ui8>")]
