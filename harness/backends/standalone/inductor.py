"""torch.compile with TorchInductor, the dynamic dims marked as the harness marks them."""
import torch


def compile_and_run(model, example_inputs, dynamic_shapes, input_sets, constants):
    for tensor, dims in zip(example_inputs, dynamic_shapes or ()):
        for dim in dims or {}:
            torch._dynamo.mark_dynamic(tensor, dim)
    compiled = torch.compile(model, backend="inductor", fullgraph=True)
    with torch.no_grad():
        return [compiled(*inputs) for inputs in input_sets]
