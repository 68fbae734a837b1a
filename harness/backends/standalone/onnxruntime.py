"""onnxruntime: the model in an InferenceSession on the CPU execution provider.

constants: graph_optimization (the session's level, as the harness's backend sets it),
intra_op_threads.
"""
import onnxruntime as ort


def run_onnx(model, input_sets, constants):
    options = ort.SessionOptions()
    options.intra_op_num_threads = constants.get("intra_op_threads", 1)
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel,
                                               constants.get("graph_optimization", "ORT_ENABLE_ALL"))
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return [session.run(None, dict(zip(names, inputs))) for inputs in input_sets]
