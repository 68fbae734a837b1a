"""For a backend with no standalone reproduction: say so, and how to rerun the case instead.

constants: backend, rerun.
"""


def compile_and_run(model, example_inputs, dynamic_shapes, input_sets, constants):
    raise SystemExit(f"backend {constants['backend']}: no standalone reproduction yet; rerun it through the "
                     f"harness:\n  {constants['rerun']}")


def run_onnx(model, input_sets, constants):
    compile_and_run(model, None, None, input_sets, constants)
