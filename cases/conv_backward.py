"""Convolution-backward cases: `aten.convolution_backward(grad_output, input, weight, ...)`.

Data only. Each row is (name, params); the params are the conv_backward schema of
harness.families.conv.params, applied over a per-rank base (shapes N, C, *spatial). Ids read
`conv_backward/<rank>d/<name>`, and `conv_backward/parity/<upstream name>` for the seven tests of
torch-mlir's own suite (projects/pt1/python/torch_mlir_e2e_test/test_suite/backprop.py), kept
with their exact upstream shapes. Structural tags (rank2, transposed, grouped, dynamic, ...) are
derived from the params; the rows add only the tags that are not (parity, edge, slow, ...).
"""
from typing import Any

from harness.families.conv import conv_backward_case

F, T = False, True

# ---------------------------------------------------------------------------- 1-D
BASE_1D: dict[str, Any] = dict(input_shape=[2, 3, 16], weight_shape=[4, 3, 3])
ROWS_1D: list[tuple[str, dict[str, Any]]] = [
    ("basic",                 {}),
    ("stride2",               dict(stride=2)),
    ("pad1",                  dict(padding=1)),
    ("dil2",                  dict(dilation=2)),
    ("stride2_pad2_dil3",     dict(stride=2, padding=2, dilation=3)),
    ("depthwise_mult2",       dict(weight_shape=[6, 1, 3], groups=3)),
    ("kernel1",               dict(weight_shape=[4, 3, 1])),
    ("kernel_eq_input",       dict(input_shape=[2, 3, 5], weight_shape=[4, 3, 5], tags=["edge"])),
    ("transposed_stride2",    dict(input_shape=[2, 3, 8], weight_shape=[3, 4, 3], transposed=T, stride=2)),
    ("transposed_stride2_outpad1", dict(input_shape=[2, 3, 8], weight_shape=[3, 4, 3], transposed=T,
                                        stride=2, output_padding=1)),
    ("no_bias",               dict(bias=F, output_mask=[T, T, F])),
    ("float64",               dict(dtype="float64")),
    ("dynamic_batch",         dict(dynamic_dims=[0])),
]

# ---------------------------------------------------------------------------- 2-D
BASE_2D: dict[str, Any] = dict(input_shape=[2, 4, 8, 8], weight_shape=[6, 4, 3, 3])
TRANSPOSED_2D = dict(input_shape=[2, 4, 6, 6], weight_shape=[4, 3, 3, 3], transposed=T)
ROWS_2D: list[tuple[str, dict[str, Any]]] = [
    # stride, padding, dilation
    ("basic",                 {}),
    ("stride2",               dict(stride=2)),
    ("stride2_pad1",          dict(stride=2, padding=1)),
    ("stride1x2",             dict(stride=[1, 2])),
    ("stride3x2_pad1x0",      dict(stride=[3, 2], padding=[1, 0])),
    ("pad1",                  dict(padding=1)),
    ("pad2",                  dict(padding=2)),
    ("pad1x0",                dict(padding=[1, 0])),
    ("pad0x2",                dict(padding=[0, 2])),
    ("dil2",                  dict(dilation=2)),
    ("dil3_pad3",             dict(dilation=3, padding=3)),
    ("dil1x2",                dict(dilation=[1, 2])),
    ("stride2_pad1_dil2",     dict(stride=2, padding=1, dilation=2)),
    # groups
    ("groups2",               dict(weight_shape=[6, 2, 3, 3], groups=2)),
    ("groups2_out8",          dict(weight_shape=[8, 2, 3, 3], groups=2)),
    ("groups4_out8",          dict(weight_shape=[8, 1, 3, 3], groups=4)),
    ("depthwise",             dict(weight_shape=[4, 1, 3, 3], groups=4)),
    ("depthwise_stride2_pad1", dict(weight_shape=[4, 1, 3, 3], groups=4, stride=2, padding=1)),
    ("groups2_stride2_pad2_dil2", dict(input_shape=[2, 8, 12, 12], weight_shape=[4, 4, 2, 2], groups=2,
                                       stride=2, padding=2, dilation=2)),
    # found by `python -m harness fuzz` (seed 0), grown back to the base shapes
    ("groups2_stride1x2",     dict(weight_shape=[6, 2, 3, 3], groups=2, stride=[1, 2], tags=["fuzz"])),
    # edge shapes
    ("kernel1x1",             dict(weight_shape=[6, 4, 1, 1])),
    ("kernel1x1_stride2",     dict(weight_shape=[6, 4, 1, 1], stride=2)),
    # found by the fuzzer as it shrank it (at the base shapes it passes)
    ("tiny_stride1x3_pad0x1", dict(input_shape=[1, 1, 1, 4], weight_shape=[1, 1, 1, 1], stride=[1, 3],
                                   padding=[0, 1], tags=["edge", "fuzz"])),
    ("kernel_eq_input",       dict(input_shape=[2, 4, 5, 5], weight_shape=[6, 4, 5, 5], tags=["edge"])),
    ("kernel_eq_input_pad1",  dict(input_shape=[2, 4, 5, 5], weight_shape=[6, 4, 5, 5], padding=1, tags=["edge"])),
    ("non_square_input",      dict(input_shape=[2, 4, 7, 12], weight_shape=[6, 4, 3, 5], tags=["edge"])),
    ("kernel1x3",             dict(weight_shape=[6, 4, 1, 3], padding=[0, 1], tags=["edge"])),
    ("batch1",                dict(input_shape=[1, 4, 8, 8], tags=["edge"])),
    ("one_channel",           dict(input_shape=[2, 1, 8, 8], weight_shape=[1, 1, 3, 3], tags=["edge"])),
    ("in1_out8",              dict(input_shape=[2, 1, 8, 8], weight_shape=[8, 1, 3, 3], tags=["edge"])),
    ("in8_out1_stride2",      dict(input_shape=[2, 8, 9, 9], weight_shape=[1, 8, 3, 3], stride=2, tags=["edge"])),
    ("stride4_output1x1",     dict(input_shape=[2, 4, 6, 6], stride=4, tags=["edge"])),
    # transposed
    ("transposed",            dict(TRANSPOSED_2D)),
    ("transposed_stride2",    dict(TRANSPOSED_2D, stride=2)),
    ("transposed_stride2_outpad1", dict(TRANSPOSED_2D, stride=2, output_padding=1)),
    ("transposed_stride2_pad1_outpad1", dict(TRANSPOSED_2D, stride=2, padding=1, output_padding=1)),
    ("transposed_dil2_outpad1", dict(TRANSPOSED_2D, dilation=2, output_padding=1)),
    ("transposed_stride1x2_pad0x1_outpad0x1", dict(TRANSPOSED_2D, stride=[1, 2], padding=[0, 1],
                                                   output_padding=[0, 1])),
    ("transposed_groups2",    dict(TRANSPOSED_2D, weight_shape=[4, 2, 3, 3], groups=2, stride=2)),
    ("transposed_depthwise",  dict(TRANSPOSED_2D, weight_shape=[4, 1, 3, 3], groups=4)),
    ("transposed_kernel1x1_stride2", dict(TRANSPOSED_2D, weight_shape=[4, 3, 1, 1], stride=2)),
    ("transposed_no_bias",    dict(TRANSPOSED_2D, stride=2, bias=F, output_mask=[T, T, F])),
    # bias off: bias_sizes=None. With grad_bias requested too (unsized_grad_bias) eager accepts the
    # call and torch.export rejects it; that frontend failure is recorded, not hidden.
    ("no_bias",               dict(bias=F, output_mask=[T, T, F])),
    ("no_bias_input_only",    dict(bias=F, output_mask=[T, F, F])),
    ("no_bias_weight_only",   dict(bias=F, output_mask=[F, T, F], stride=2, padding=1)),
    ("no_bias_unsized_grad_bias", dict(bias=F, unsized_grad_bias=T)),
    # dtypes
    ("float64",               dict(dtype="float64")),
    ("float64_stride2_pad1_dil2", dict(dtype="float64", stride=2, padding=1, dilation=2)),
    ("float16",               dict(dtype="float16")),
    ("float16_stride2_pad1",  dict(dtype="float16", stride=2, padding=1)),
    ("bfloat16",              dict(dtype="bfloat16")),
    ("bfloat16_depthwise",    dict(dtype="bfloat16", weight_shape=[4, 1, 3, 3], groups=4)),
    ("float16_transposed_stride2", dict(TRANSPOSED_2D, dtype="float16", stride=2)),
    # dynamic batch: compiled once, run at batch 2 and 3
    ("dynamic_batch",         dict(dynamic_dims=[0])),
    ("dynamic_batch_stride2_pad1", dict(dynamic_dims=[0], stride=2, padding=1)),
    ("dynamic_batch_groups2", dict(dynamic_dims=[0], weight_shape=[6, 2, 3, 3], groups=2)),
    ("dynamic_batch_transposed_stride2", dict(TRANSPOSED_2D, dynamic_dims=[0], stride=2)),
    ("dynamic_batch_no_bias", dict(dynamic_dims=[0], bias=F, output_mask=[T, T, F])),
    ("dynamic_batch_float64", dict(dynamic_dims=[0], dtype="float64", dilation=2)),
]

# Every non-empty output_mask pattern, on a strided and padded 2-D case.
MASK_BASE_2D: dict[str, Any] = dict(BASE_2D, stride=2, padding=1)
MASKS = {
    "mask_input":             [T, F, F],
    "mask_weight":            [F, T, F],
    "mask_bias":              [F, F, T],
    "mask_input_weight":      [T, T, F],
    "mask_input_bias":        [T, F, T],
    "mask_weight_bias":       [F, T, T],
    "mask_all":               [T, T, T],
}

# ---------------------------------------------------------------------------- 3-D
BASE_3D: dict[str, Any] = dict(input_shape=[2, 2, 6, 6, 6], weight_shape=[3, 2, 3, 3, 3])
ROWS_3D: list[tuple[str, dict[str, Any]]] = [
    ("basic",                 {}),
    ("stride2",               dict(stride=2)),
    ("pad1",                  dict(padding=1)),
    ("pad1x0x2",              dict(padding=[1, 0, 2])),
    ("stride1x2x1",           dict(stride=[1, 2, 1])),
    ("dil2",                  dict(dilation=2, padding=1)),
    ("kernel3x1x3_pad1x0x1",  dict(weight_shape=[3, 2, 3, 1, 3], padding=[1, 0, 1])),
    ("kernel1",               dict(weight_shape=[3, 2, 1, 1, 1])),
    ("groups2",               dict(input_shape=[2, 4, 6, 6, 6], weight_shape=[4, 2, 3, 3, 3], groups=2)),
    ("depthwise",             dict(weight_shape=[2, 1, 3, 3, 3], groups=2)),
    ("transposed_stride2_outpad1", dict(input_shape=[2, 2, 4, 4, 4], weight_shape=[2, 3, 3, 3, 3],
                                        transposed=T, stride=2, output_padding=1)),
    ("mask_weight",           dict(output_mask=[F, T, F])),
    ("float64",               dict(dtype="float64")),
    ("dynamic_batch",         dict(dynamic_dims=[0])),
]

# ---------------------------------------------------------------------------- torch-mlir parity
# Exact upstream shapes, grad_output first. Upstream's 2D and 2DPadded annotate every dim dynamic
# and pass bias_sizes=None with the full output_mask (and output_padding=[0], which PyTorch
# broadcasts): here the batch is dynamic (the only dynamic dim this family supports).
PARITY: list[tuple[str, dict[str, Any], list[str], float | None]] = [
    # name, params, extra tags, timeout
    ("ConvolutionBackwardModule2D",
     dict(input_shape=[2, 2, 6, 6], weight_shape=[2, 2, 2, 2], bias=F, unsized_grad_bias=T,
          dynamic_dims=[0]), [], None),
    ("ConvolutionBackwardModule2DStatic",
     dict(input_shape=[1, 320, 64, 64], weight_shape=[4, 320, 3, 3], padding=1), ["slow"], 300),
    ("ConvolutionBackwardModule3DStatic",
     dict(input_shape=[1, 32, 64, 64, 64], weight_shape=[4, 32, 3, 1, 3], padding=[1, 0, 1]), ["slow"], 300),
    ("ConvolutionBackwardModule2DPadded",
     dict(input_shape=[2, 2, 6, 6], weight_shape=[2, 2, 3, 3], padding=2, bias=F, unsized_grad_bias=T,
          dynamic_dims=[0]), [], None),
    ("ConvolutionBackwardModule2DStrided",
     dict(input_shape=[1, 2, 8, 8], weight_shape=[2, 2, 3, 3], stride=2, padding=1), [], None),
    ("ConvolutionBackwardModule2DDilated",
     dict(input_shape=[1, 4, 8, 8], weight_shape=[2, 4, 3, 3], padding=1, dilation=2), [], None),
    ("ConvolutionBackwardModule2DStridedPaddedDilatedGrouped",
     dict(input_shape=[2, 128, 64, 64], weight_shape=[16, 32, 2, 2], stride=2, padding=2, dilation=4,
          groups=4), ["large"], 120),
]

CASES = (
    [conv_backward_case(name, **{**BASE_1D, **row}) for name, row in ROWS_1D]
    + [conv_backward_case(name, **{**BASE_2D, **row}) for name, row in ROWS_2D]
    + [conv_backward_case(name, output_mask=mask, **MASK_BASE_2D) for name, mask in MASKS.items()]
    + [conv_backward_case(name, **{**BASE_3D, **row}) for name, row in ROWS_3D]
    + [conv_backward_case(name, section="parity", tags=["parity", *tags], timeout=timeout, **params)
       for name, params, tags, timeout in PARITY]
)
