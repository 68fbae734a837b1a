"""The convolution families' fuzz spaces: the configurations `python -m harness fuzz` generates
(harness.fuzz), and the defaults their shortest cases-file entries leave out.

`conv_configs(family)` is a Hypothesis strategy that builds only configurations PyTorch's eager
convolution accepts: channels are drawn per group, every output size is at least 1 because each
spatial size is drawn above the smallest size that gives one, output_padding stays below the
stride or the dilation, grad_bias is only asked for with a bias. Sizes are small (at most 8
channels and 8 per spatial dim, kernels up to 3), so an example compiles and runs in about a
second. Every value shrinks towards the parameter defaults and the smallest sizes, so a minimal
example is also the shortest cases-file entry.
"""
from __future__ import annotations

import functools
import math
from typing import Any, Mapping

from harness.families.conv import CONV_BACKWARD, CONV_FORWARD
from harness.families.interface import FuzzSpace

FUZZ_FAMILIES = {family.name: family for family in (CONV_BACKWARD, CONV_FORWARD)}

# Strategy bounds: small enough for about a second per example on an MLIR backend.
MAX_BATCH = 2

MAX_CHANNELS = 8            # input and output channels (so groups <= 8)

MAX_SPATIAL = 8             # per spatial dim of the input

# Choices are drawn with sampled_from, which shrinks to the first element; repeating a value
# raises its share of the draws, so the defaults (stride 1, no padding, ...) stay common and
# a search meets configurations that differ from them in one or two places.
RANK_CHOICES = (1, 2, 2, 3)

GROUP_CHOICES = (1, 1, 1, 2, 3, 4, 8)

KERNEL_CHOICES = (1, 2, 3, 3)

STRIDE_CHOICES = (1, 1, 2, 3)

PADDING_CHOICES = (0, 0, 1, 2)

DILATION_CHOICES = (1, 1, 1, 2)

TRANSPOSED_CHOICES = (False, False, True)

DTYPE_CHOICES = ("float32",) * 5 + ("float64", "float16", "bfloat16")

MASKS_WITH_BIAS = ([True, True, True], [True, True, False], [True, False, False], [False, True, False],
                   [False, False, True], [True, False, True], [False, True, True])

MASKS_WITHOUT_BIAS = ([True, True, False], [True, False, False], [False, True, False])

# Values a cases-file entry may leave out (conv_params' defaults); per-dim values compare as one int.
DEFAULTS = {"stride": 1, "padding": 0, "dilation": 1, "output_padding": 0, "transposed": False, "groups": 1,
            "bias": True, "output_mask": [True, True, True], "unsized_grad_bias": False, "dtype": "float32",
            "dynamic_dims": []}

PER_DIM = ("stride", "padding", "dilation", "output_padding")

def conv_configs(family: str = "conv_backward"):
    """A Hypothesis strategy of normalised `family` params (conv_params' schema) that PyTorch accepts."""
    from hypothesis import strategies as st

    if family not in FUZZ_FAMILIES:
        raise ValueError(f"no fuzz strategy for family {family!r}: use one of {', '.join(FUZZ_FAMILIES)}")

    @st.composite
    def configs(draw) -> dict[str, Any]:
        # Hypothesis shrinks to the shortlex-smallest choice sequence, so what is drawn first is
        # minimised first: the channels and the per-dim geometry go before the transposition, and
        # a bug that shows with either padding or transposition shrinks to the unpadded transposed
        # configuration, the one that names the variant. Every choice is drawn whatever the earlier
        # ones were (output_padding too), so the sequences of different variants are equally long.
        rank = draw(st.sampled_from(RANK_CHOICES))
        groups = draw(st.sampled_from(GROUP_CHOICES))
        c_in = groups * draw(st.integers(1, MAX_CHANNELS // groups))
        c_out = groups * draw(st.integers(1, MAX_CHANNELS // groups))
        batch = draw(st.integers(1, MAX_BATCH))
        kernel, stride, padding, dilation = ([draw(st.sampled_from(c)) for _ in range(rank)] for c in
                                             (KERNEL_CHOICES, STRIDE_CHOICES, PADDING_CHOICES, DILATION_CHOICES))
        transposed = draw(st.sampled_from(TRANSPOSED_CHOICES))
        output_padding, spatial = [], []
        for k, s, p, d in zip(kernel, stride, padding, dilation):
            op = draw(st.integers(0, max(s, d) - 1))  # PyTorch: smaller than the stride or the dilation
            if transposed:  # output (n-1)*s - 2p + d(k-1) + op + 1 >= 1
                smallest = 1 + max(0, -(-(2 * p - d * (k - 1) - op) // s))
            else:           # output (n + 2p - d(k-1) - 1) // s + 1 >= 1; no output_padding
                op, smallest = 0, max(1, d * (k - 1) + 1 - 2 * p)
            output_padding.append(op)
            spatial.append(smallest + draw(st.integers(0, MAX_SPATIAL - smallest)))
        weight = [c_in, c_out // groups, *kernel] if transposed else [c_out, c_in // groups, *kernel]
        params = {"input_shape": [batch, c_in, *spatial], "weight_shape": weight, "stride": stride,
                  "padding": padding, "dilation": dilation, "output_padding": output_padding,
                  "transposed": transposed, "groups": groups,
                  "bias": not draw(st.booleans())}  # shrinks to the default, a bias
        if family == "conv_backward":
            params["output_mask"] = draw(st.sampled_from(MASKS_WITH_BIAS if params["bias"] else MASKS_WITHOUT_BIAS))
        params["dtype"] = draw(st.sampled_from(DTYPE_CHOICES))
        return FUZZ_FAMILIES[family].validate(params)

    return configs()

def _elements(params: Mapping[str, Any]) -> int:
    return math.prod(params["input_shape"]) + math.prod(params["weight_shape"])


BACKWARD_SPACE, FORWARD_SPACE = (FuzzSpace(strategy=functools.partial(conv_configs, name), defaults=DEFAULTS,
                                           per_dim=PER_DIM, size=_elements) for name in FUZZ_FAMILIES)
