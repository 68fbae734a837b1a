"""Eager PyTorch: the model itself, no compiler."""
import torch


def compile_and_run(model, example_inputs, dynamic_shapes, input_sets, constants):
    with torch.no_grad():
        return [model(*inputs) for inputs in input_sets]
