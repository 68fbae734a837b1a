"""Forward-convolution cases: `aten.convolution(input, weight, bias, ...)`.

Data only: (name, params) rows over a per-rank base, params in the conv_forward schema of
harness.families.conv.params. Ids read `conv_forward/<rank>d/<name>`; structural tags are derived
from the params. A backend that fails a conv_backward case but passes the matching forward case
points at the backward lowering rather than at convolution itself.
"""
from typing import Any

from harness.families.conv import conv_forward_case

F, T = False, True

BASE: dict[int, dict[str, Any]] = {
    1: dict(input_shape=[2, 3, 16], weight_shape=[4, 3, 3]),
    2: dict(input_shape=[2, 4, 8, 8], weight_shape=[6, 4, 3, 3]),
    3: dict(input_shape=[2, 2, 6, 6, 6], weight_shape=[3, 2, 3, 3, 3]),
}
TRANSPOSED_2D = dict(input_shape=[2, 4, 6, 6], weight_shape=[4, 3, 3, 3], transposed=T)

ROWS: list[tuple[int, str, dict[str, Any]]] = [
    # rank, name, params
    (1, "basic",                   {}),
    (1, "stride2_pad1",            dict(stride=2, padding=1)),
    (1, "dil2_no_bias",            dict(dilation=2, bias=F)),
    (1, "transposed_stride2_outpad1", dict(input_shape=[2, 3, 8], weight_shape=[3, 4, 3], transposed=T,
                                           stride=2, output_padding=1)),
    (2, "basic",                   {}),
    (2, "stride2",                 dict(stride=2)),
    (2, "stride1x2_pad1x0",        dict(stride=[1, 2], padding=[1, 0])),
    (2, "dil2_pad2",               dict(dilation=2, padding=2)),
    (2, "stride2_pad1_dil2",       dict(stride=2, padding=1, dilation=2)),
    (2, "groups2",                 dict(weight_shape=[6, 2, 3, 3], groups=2)),
    (2, "depthwise",               dict(weight_shape=[4, 1, 3, 3], groups=4)),
    (2, "depthwise_mult2_stride2", dict(weight_shape=[8, 1, 3, 3], groups=4, stride=2, padding=1)),
    (2, "kernel1x1",               dict(weight_shape=[6, 4, 1, 1])),
    (2, "kernel_eq_input",         dict(input_shape=[2, 4, 5, 5], weight_shape=[6, 4, 5, 5], tags=["edge"])),
    (2, "non_square",              dict(input_shape=[1, 4, 7, 12], weight_shape=[6, 4, 3, 5], tags=["edge"])),
    (2, "no_bias",                 dict(bias=F)),
    (2, "transposed",              dict(TRANSPOSED_2D)),
    (2, "transposed_stride2_pad1_outpad1", dict(TRANSPOSED_2D, stride=2, padding=1, output_padding=1)),
    (2, "transposed_groups2",      dict(TRANSPOSED_2D, weight_shape=[4, 2, 3, 3], groups=2, stride=2)),
    (2, "transposed_no_bias",      dict(TRANSPOSED_2D, stride=2, bias=F)),
    (2, "float64",                 dict(dtype="float64")),
    (2, "float16",                 dict(dtype="float16", padding=1)),
    (2, "bfloat16",                dict(dtype="bfloat16", padding=1)),
    (2, "dynamic_batch",           dict(dynamic_dims=[0])),
    (2, "dynamic_batch_no_bias",   dict(dynamic_dims=[0], bias=F, stride=2)),
    (2, "dynamic_batch_transposed_stride2", dict(TRANSPOSED_2D, dynamic_dims=[0], stride=2)),
    (3, "basic",                   {}),
    (3, "stride2_pad1",            dict(stride=2, padding=1)),
    (3, "groups2",                 dict(input_shape=[2, 4, 6, 6, 6], weight_shape=[4, 2, 3, 3, 3], groups=2)),
    (3, "transposed_stride2_outpad1", dict(input_shape=[2, 2, 4, 4, 4], weight_shape=[2, 3, 3, 3, 3],
                                           transposed=T, stride=2, output_padding=1)),
    (3, "dynamic_batch",           dict(dynamic_dims=[0])),
]

CASES = [conv_forward_case(name, **{**BASE[rank], **row}) for rank, name, row in ROWS]
