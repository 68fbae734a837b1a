"""Torch-side builders of the convolution families (imported in worker processes only).

`build_backward(case)` and `build_forward(case)` turn a validated Case into a `Built`: the
`Program` a backend compiles and the input sets it is run on. The modules hold no parameters or
buffers (the convolution settings are plain Python attributes), so the same module runs at any
dtype: the golden values come from calling it on inputs upcast to float64.

Inputs are deterministic: each input set is drawn with `torch.testing.make_tensor` in [-1, 1]
(moderate, so float16/bfloat16 sums stay far from overflow) under a seed derived from the case id
and the set's index, inside `torch.random.fork_rng` so the global RNG state is left as it was.
A case with a dynamic batch gets a second input set at batch N + 1.
"""
from __future__ import annotations

import zlib
from typing import Any

import torch

from harness.backend_interface import Program
from harness.case_data import Case
from harness.families.conv import params as conv_params
from harness.families.interface import Built

DTYPES = {"float32": torch.float32, "float64": torch.float64,
          "float16": torch.float16, "bfloat16": torch.bfloat16}


class _Convolution(torch.nn.Module):
    """The geometry shared by the forward and backward modules (no parameters: any dtype works)."""

    def __init__(self, stride, padding, dilation, transposed, output_padding, groups):
        super().__init__()
        self.geometry = (list(stride), list(padding), list(dilation), bool(transposed),
                         list(output_padding), int(groups))

    def geometry_source(self) -> str:
        return ", ".join(repr(g) for g in self.geometry)


class ConvolutionBackward(_Convolution):
    """forward(grad_output, input, weight) -> the gradients selected by output_mask, as a tuple."""

    def __init__(self, bias_sizes, stride, padding, dilation, transposed, output_padding, groups,
                 output_mask):
        super().__init__(stride, padding, dilation, transposed, output_padding, groups)
        self.bias_sizes = None if bias_sizes is None else list(bias_sizes)
        self.output_mask = [bool(m) for m in output_mask]

    def forward(self, grad_output, input, weight):
        grads = torch.ops.aten.convolution_backward(grad_output, input, weight, self.bias_sizes,
                                                    *self.geometry, self.output_mask)
        # Unselected gradients come back as None, which no backend can return: drop them.
        return tuple(g for g, keep in zip(grads, self.output_mask) if keep)

    def repro_source(self) -> str:
        """This module as a standalone class `Model`, for a repro script."""
        return (f"class Model(torch.nn.Module):\n"
                f"    def forward(self, grad_output, input, weight):\n"
                f"        grads = torch.ops.aten.convolution_backward(\n"
                f"            grad_output, input, weight, {self.bias_sizes!r}, {self.geometry_source()},\n"
                f"            {self.output_mask!r})\n"
                f"        return tuple(g for g, keep in zip(grads, {self.output_mask!r}) if keep)\n")


class ConvolutionForward(_Convolution):
    """forward(input, weight, bias) -> (output,)."""

    def forward(self, input, weight, bias):
        return (torch.ops.aten.convolution(input, weight, bias, *self.geometry),)

    def repro_source(self) -> str:
        return (f"class Model(torch.nn.Module):\n"
                f"    def forward(self, input, weight, bias):\n"
                f"        return (torch.ops.aten.convolution(input, weight, bias, {self.geometry_source()}),)\n")


class ConvolutionForwardNoBias(_Convolution):
    """forward(input, weight) -> (output,), with no bias."""

    def forward(self, input, weight):
        return (torch.ops.aten.convolution(input, weight, None, *self.geometry),)

    def repro_source(self) -> str:
        return (f"class Model(torch.nn.Module):\n"
                f"    def forward(self, input, weight):\n"
                f"        return (torch.ops.aten.convolution(input, weight, None, {self.geometry_source()}),)\n")


def case_seed(case_id: str, index: int = 0) -> int:
    """The seed of input set `index` of a case: stable across runs, processes and machines."""
    return zlib.crc32(f"{case_id}#{index}".encode())


def make_inputs(shapes: list[list[int]], dtype: torch.dtype, seed: int) -> tuple:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return tuple(torch.testing.make_tensor(tuple(s), dtype=dtype, device="cpu", low=-1.0, high=1.0)
                     for s in shapes)


def _with_batch(params: dict[str, Any], batch: int) -> dict[str, Any]:
    return {**params, "input_shape": [batch, *params["input_shape"][1:]]}


def _batch_sizes(params: dict[str, Any]) -> list[int]:
    n = params["input_shape"][0]
    return [n, n + 1] if params["dynamic_dims"] else [n]


def build_backward(case: Case) -> Built:
    p = conv_params.validate_backward(case.params)
    dtype = DTYPES[p["dtype"]]
    bias_sizes = [conv_params.out_channels(p)] if p["bias"] else None
    module = ConvolutionBackward(bias_sizes, p["stride"], p["padding"], p["dilation"], p["transposed"],
                                 p["output_padding"], p["groups"], p["output_mask"])
    input_sets = []
    for index, batch in enumerate(_batch_sizes(p)):
        s = conv_params.shapes(_with_batch(p, batch))
        input_sets.append(make_inputs([s["output"], s["input"], s["weight"]], dtype, case_seed(case.id, index)))
    dynamic_shapes = None
    if p["dynamic_dims"]:
        batch_dim = torch.export.Dim("batch")
        dynamic_shapes = ({0: batch_dim}, {0: batch_dim}, None)
    program = Program(name=case.id, module=module, example_inputs=input_sets[0],
                      dynamic_shapes=dynamic_shapes, output_names=conv_params.backward_output_names(p))
    return Built(program=program, input_sets=input_sets)


def build_forward(case: Case) -> Built:
    p = conv_params.validate_forward(case.params)
    dtype = DTYPES[p["dtype"]]
    cls = ConvolutionForward if p["bias"] else ConvolutionForwardNoBias
    module = cls(p["stride"], p["padding"], p["dilation"], p["transposed"], p["output_padding"], p["groups"])
    input_sets = []
    for index, batch in enumerate(_batch_sizes(p)):
        s = conv_params.shapes(_with_batch(p, batch))
        wanted = [s["input"], s["weight"]] + ([s["bias"]] if s["bias"] else [])   # a bias shape: p["bias"]
        input_sets.append(make_inputs(wanted, dtype, case_seed(case.id, index)))
    dynamic_shapes = None
    if p["dynamic_dims"]:
        batch_dim = torch.export.Dim("batch")
        dynamic_shapes = ({0: batch_dim}, None, None) if p["bias"] else ({0: batch_dim}, None)
    program = Program(name=case.id, module=module, example_inputs=input_sets[0],
                      dynamic_shapes=dynamic_shapes, output_names=conv_params.forward_output_names(p))
    return Built(program=program, input_sets=input_sets)
