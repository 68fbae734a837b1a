"""IREE: an ONNX model through IREE's ONNX front-end, as the harness's iree-llvm-cpu backend runs it:
the opset upgraded (when older), shapes inferred with data propagation, IREE's ONNX importer,
iree-compile to its input dialects and then to a VM module, run by the IREE runtime.

constants: onnx_opset, target_backends, flags (iree-compile's, for both steps), driver.
"""
import onnx
from iree import runtime as rt
from iree.compiler import compile_str, ir
from iree.compiler.extras import onnx_importer


def run_onnx(model, input_sets, constants):
    opset = constants["onnx_opset"]
    default = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if model.opset_import and opset > default:
        model = onnx.version_converter.convert_version(model, opset)
    info = onnx_importer.ModelInfo(onnx.shape_inference.infer_shapes(model, data_prop=True))
    module = info.create_module(context=ir.Context())
    onnx_importer.NodeImporter.define_function(info.main_graph, module.operation).import_all()
    func_name = ir.StringAttr(module.body.operations[0].attributes["sym_name"]).value
    targets, flags = constants["target_backends"], constants["flags"]
    input_ir = compile_str(str(module), input_type="onnx", target_backends=targets,
                           extra_args=["--compile-to=input", *flags])
    vmfb = compile_str(input_ir, target_backends=targets, extra_args=["--compile-from=input", *flags])
    context = rt.SystemContext(config=rt.Config(constants["driver"]))
    context.add_vm_module(rt.VmModule.copy_buffer(context.instance, vmfb))
    function = context.modules.module[func_name]
    return [_as_list(function(*inputs)) for inputs in input_sets]


def _as_list(results):
    if results is None:
        return []
    results = results if isinstance(results, (tuple, list)) else (results,)
    return [r.to_host().copy() if hasattr(r, "to_host") else r for r in results]
