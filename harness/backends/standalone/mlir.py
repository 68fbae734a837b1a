"""torch-mlir: the same pipelines as the harness's MLIR backend, then the MLIR ExecutionEngine, with
torch-mlir's own runtime helpers for the RefBackend-style calling convention (results arrive
through a consume callback).

compile_and_run takes a PyTorch program (torch.export, the FX importer); run_onnx an ONNX model
(torch-mlir's ONNX importer). constants: func_name, pipelines (to the Torch backend contract, to
Linalg..., LLVM), opt_level, strict_export, import_symbolic_shape_expressions. A scalar result (a
Python number) arrives by value.
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
    return _lower_and_run(module, func_name, [[t.contiguous().numpy() for t in inputs] for inputs in input_sets],
                          constants)


def run_onnx(model, input_sets, constants):
    """An ONNX model: shapes inferred with data propagation, torch-mlir's ONNX importer, then the
    pipelines (the first one from Torch ONNX IR to the Torch backend contract)."""
    import onnx
    from torch_mlir import ir
    from torch_mlir.dialects import torch as torch_dialect
    from torch_mlir.extras import onnx_importer

    context = ir.Context()
    torch_dialect.register_dialect(context)
    info = onnx_importer.ModelInfo(onnx.shape_inference.infer_shapes(model, data_prop=True))
    module = info.create_module(context=context)
    onnx_importer.NodeImporter.define_function(info.main_graph, module.operation).import_all()
    func_name = ir.StringAttr(module.body.operations[0].attributes["sym_name"]).value
    return _lower_and_run(module, func_name, input_sets, constants)


def _lower_and_run(module, func_name, input_sets, constants):
    """The pipelines on the module, then each input set (numpy arrays) through the ExecutionEngine."""
    for index, pipeline in enumerate(constants["pipelines"], 1):
        run_pipeline_with_repro_report(module, f"builtin.module({pipeline})", f"stage {index}")
        if index == 1:   # Torch backend IR still says which results are unsigned (signless from here on)
            unsigned = _unsigned_results(str(module), func_name)
    consume = re.search(r"refbackend_consume_func_return_(\w+)", str(module))
    if consume is None:
        raise RuntimeError("the lowered module returns nothing through refbackend_consume_func_return_*")
    tokens = consume.group(1).split("_")
    engine = ExecutionEngine(module, opt_level=constants["opt_level"])
    results = []

    def on_results(*values):
        arrays = [v if t in SCALARS else unranked_memref_to_numpy(v, CARRIERS[t]).copy()
                  for v, t in zip(values, tokens)]
        results.append([a.view(unsigned[i]) if i in unsigned else a for i, a in enumerate(arrays)])

    arg_types: list = [SCALARS.get(t) or ctypes.POINTER(UnrankedMemRefDescriptor) for t in tokens]
    callback = ctypes.CFUNCTYPE(None, *arg_types)(on_results)
    engine.register_runtime(consume.group(0), callback)
    for arrays in input_sets:
        engine.invoke(func_name, *[ctypes.pointer(ctypes.pointer(get_unranked_memref_descriptor(_c_order(a))))
                                   for a in arrays])
    return results


def _c_order(value):
    return np.require(np.asarray(value), requirements="C")   # ascontiguousarray makes a 0-d array 1-d


def _unsigned_results(torch_backend_ir, func_name):
    """The entry function's unsigned results: position -> numpy dtype."""
    match = re.search(rf"func\.func @{re.escape(func_name)}\(.*\)\s*->\s*\(?(.*?)\)?\s*\{{", torch_backend_ir)
    types = re.findall(r"!torch\.vtensor<[^>]*>|!torch\.\w+", match.group(1)) if match else []
    widths = {i: re.search(r",ui(8|16|32|64)>$", t) for i, t in enumerate(types)}
    return {i: np.dtype(f"uint{w.group(1)}") for i, w in widths.items() if w}
