"""Convolution case parameters: validation, normalisation and shape inference (pure Python).

Runs in the pytest process, which never imports torch. The same schema is shown in the JSON
report and accepted from a user's `--cases-file`:

    input_shape     [N, C_in, *spatial]                    1 to 3 spatial dims
    weight_shape    [C_out, C_in/groups, *kernel]          (transposed: [C_in, C_out/groups, *kernel])
    stride          int or list, one per spatial dim      default 1
    padding         int or list, one per spatial dim      default 0 (symmetric within each dim)
    dilation        int or list, one per spatial dim      default 1
    output_padding  int or list, one per spatial dim      default 0 (transposed only)
    transposed      bool                                  default false
    groups          int                                   default 1
    output_mask     [grad_input, grad_weight, grad_bias]  default all true (backward only)
    bias            bool                                  default true
    unsized_grad_bias bool                                default false (backward only, see below)
    dtype           float32 | float64 | float16 | bfloat16   default float32
    dynamic_dims    dims of the input that are dynamic    default []; only [0] (the batch) is supported

`bias` decides `bias_sizes` in the backward call: true gives [C_out], false gives None. A false
`bias` normally forbids asking for grad_bias. `unsized_grad_bias: true` (with `bias: false`) asks
for grad_bias anyway with bias_sizes=None, as torch-mlir's own ConvolutionBackwardModule2D and
...2DPadded tests do: eager torch accepts that call, torch.export's meta function rejects it.

`validate_*` return a complete, explicit dict (every key present, every per-dimension value a
list), so validating twice gives the same dict. Bad params raise ValueError with one sentence
that names the key and says how to fix it.
"""
from __future__ import annotations

from math import prod
from typing import Any, Iterable, Mapping, TypedDict

from harness.case_data import DTYPES, check_keys

BACKWARD_OUTPUTS = ("grad_input", "grad_weight", "grad_bias")
FORWARD_OUTPUTS = ("output",)

_COMMON_KEYS = ("input_shape", "weight_shape", "stride", "padding", "dilation", "output_padding",
                "transposed", "groups", "bias", "dtype", "dynamic_dims")
FORWARD_KEYS = _COMMON_KEYS
BACKWARD_KEYS = _COMMON_KEYS[:8] + ("output_mask", "bias", "unsized_grad_bias", "dtype", "dynamic_dims")


# --------------------------------------------------------------------------- small checkers

def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _shape(params: Mapping[str, Any], key: str) -> list[int]:
    if key not in params:
        raise ValueError(f"{key} is missing: give it as a list of positive ints "
                         f"({'N, C_in, *spatial' if key == 'input_shape' else 'PyTorch weight layout'}).")
    v = params[key]
    if not isinstance(v, (list, tuple)) or not all(_is_int(d) for d in v):
        raise ValueError(f"{key} must be a list of ints, got {v!r}: write it like [2, 3, 8, 8].")
    if not 3 <= len(v) <= 5:
        raise ValueError(f"{key} has {len(v)} dims ({list(v)}): give 3 to 5 dims "
                         f"(batch/channel dims plus 1 to 3 spatial dims).")
    if any(d < 1 for d in v):
        raise ValueError(f"{key} {list(v)} has a dim smaller than 1: every dim must be >= 1.")
    return list(v)


def _per_dim(params: Mapping[str, Any], key: str, rank: int, default: int, minimum: int) -> list[int]:
    v = params.get(key, default)
    if _is_int(v):
        v = [v] * rank
    if not isinstance(v, (list, tuple)) or not all(_is_int(d) for d in v):
        raise ValueError(f"{key} must be an int or a list of {rank} ints (one per spatial dim), got {v!r}.")
    if len(v) == 1 and rank > 1:
        v = list(v) * rank  # PyTorch broadcasts a one-element list, as torch-mlir's output_padding=[0] relies on
    if len(v) != rank:
        raise ValueError(f"{key} {list(v)} has {len(v)} values but the convolution has {rank} spatial dims: "
                         f"give one value per spatial dim.")
    if any(d < minimum for d in v):
        raise ValueError(f"{key} {list(v)} has a value below {minimum}: every {key} value must be >= {minimum}.")
    return list(v)


def _bool(params: Mapping[str, Any], key: str, default: bool) -> bool:
    v = params.get(key, default)
    if not isinstance(v, bool):
        raise ValueError(f"{key} must be true or false, got {v!r}.")
    return v


# --------------------------------------------------------------------------- shape inference

def conv_output_size(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    """Output length of one spatial dim of a (non-transposed) convolution; may be < 1."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def conv_transpose_output_size(size: int, kernel: int, stride: int, padding: int, dilation: int,
                               output_padding: int) -> int:
    """Output length of one spatial dim of a transposed convolution; may be < 1."""
    return (size - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1


def output_spatial(params: Mapping[str, Any]) -> list[int]:
    """Spatial sizes of the forward output, for normalised params (no checks)."""
    spatial = params["input_shape"][2:]
    kernel = params["weight_shape"][2:]
    if params["transposed"]:
        return [conv_transpose_output_size(*a) for a in zip(spatial, kernel, params["stride"], params["padding"],
                                                             params["dilation"], params["output_padding"])]
    return [conv_output_size(*a) for a in zip(spatial, kernel, params["stride"], params["padding"],
                                               params["dilation"])]


def out_channels(params: Mapping[str, Any]) -> int:
    w = params["weight_shape"]
    return w[1] * params["groups"] if params["transposed"] else w[0]


class Shapes(TypedDict):
    input: list[int]
    weight: list[int]
    bias: list[int] | None
    output: list[int]


def shapes(params: Mapping[str, Any]) -> Shapes:
    """Tensor shapes of a normalised case: input, weight, bias (None without bias), output.

    `output` is the forward output, which is also the shape of grad_output in a backward case.
    """
    n = params["input_shape"][0]
    c_out = out_channels(params)
    return {"input": list(params["input_shape"]), "weight": list(params["weight_shape"]),
            "bias": [c_out] if params["bias"] else None,
            "output": [n, c_out, *output_spatial(params)]}


# --------------------------------------------------------------------------- validation

def _unknown_keys(params: Mapping[str, Any], known: Iterable[str], family: str) -> None:
    if not isinstance(params, Mapping):
        raise ValueError(f"params must be a mapping of keys to values, got {type(params).__name__}.")
    hint = "(output_mask is for conv_backward only)" if "output_mask" in params and family == "conv_forward" else ""
    check_keys(params, known, hint=hint)


def _validate_common(params: Mapping[str, Any]) -> dict[str, Any]:
    inp = _shape(params, "input_shape")
    wgt = _shape(params, "weight_shape")
    rank = len(inp) - 2
    if len(wgt) != len(inp):
        raise ValueError(f"weight_shape {wgt} has {len(wgt)} dims but input_shape {inp} has {len(inp)}: "
                         f"give the weight 2 + {rank} dims ([C_out, C_in/groups, *kernel]).")
    stride = _per_dim(params, "stride", rank, 1, 1)
    padding = _per_dim(params, "padding", rank, 0, 0)
    dilation = _per_dim(params, "dilation", rank, 1, 1)
    output_padding = _per_dim(params, "output_padding", rank, 0, 0)
    transposed = _bool(params, "transposed", False)
    groups = params.get("groups", 1)
    if not _is_int(groups) or groups < 1:
        raise ValueError(f"groups must be a positive int, got {groups!r}.")
    bias = _bool(params, "bias", True)

    dtype = params.get("dtype", "float32")
    if dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r} is not supported: use one of {list(DTYPES)}.")

    dyn = params.get("dynamic_dims", [])
    if not isinstance(dyn, (list, tuple)) or not all(_is_int(d) for d in dyn):
        raise ValueError(f"dynamic_dims must be a list of input dim indices, got {dyn!r}: use [0] or [].")
    dyn = sorted(set(dyn))
    if dyn not in ([], [0]):
        raise ValueError(f"dynamic_dims {dyn}: only dim 0 (the batch) can be dynamic in the convolution "
                         f"families, so use [0] or [].")
    if dyn and inp[0] < 2:
        raise ValueError(f"input_shape batch is {inp[0]} but dynamic_dims makes it dynamic: torch.export "
                         f"specialises size-1 dims, so use a batch of at least 2.")

    c_in = inp[1]
    if c_in % groups:
        raise ValueError(f"groups={groups} does not divide the {c_in} input channels of input_shape {inp}: "
                         f"pick groups that divides C_in.")
    if transposed:
        if wgt[0] != c_in:
            raise ValueError(f"weight_shape {wgt}: a transposed weight is [C_in, C_out/groups, *kernel], so "
                             f"its dim 0 must equal the {c_in} input channels.")
    else:
        if wgt[1] * groups != c_in:
            raise ValueError(f"weight_shape {wgt}: dim 1 must be C_in/groups = {c_in // groups} for "
                             f"input_shape {inp} and groups={groups} ([C_out, C_in/groups, *kernel]).")
        if wgt[0] % groups:
            raise ValueError(f"weight_shape {wgt}: its {wgt[0]} output channels (dim 0) must be divisible "
                             f"by groups={groups}.")

    if transposed:
        for i, (op, s, d) in enumerate(zip(output_padding, stride, dilation)):
            if op >= s and op >= d:
                raise ValueError(f"output_padding {output_padding}: value {op} in spatial dim {i} must be "
                                 f"smaller than the stride ({s}) or the dilation ({d}), as PyTorch requires.")
    elif any(output_padding):
        raise ValueError(f"output_padding {output_padding} is only meaningful for transposed convolutions: "
                         f"set it to 0 or set transposed to true.")

    normal = {"input_shape": inp, "weight_shape": wgt, "stride": stride, "padding": padding,
              "dilation": dilation, "output_padding": output_padding, "transposed": transposed,
              "groups": groups, "bias": bias, "dtype": dtype, "dynamic_dims": dyn}
    out = output_spatial(normal)
    if any(o < 1 for o in out):
        what = ("padding is too large for this input, kernel and stride" if transposed else
                "the dilated kernel does not fit in the padded input")
        raise ValueError(f"input_shape {inp} with kernel {wgt[2:]}, stride {stride}, padding {padding}, "
                         f"dilation {dilation} gives output spatial size {out}: {what}, so change them so "
                         f"every output size is >= 1.")
    return normal


def validate_forward(params: Mapping[str, Any]) -> dict[str, Any]:
    """Normalise and check conv_forward params; raise ValueError on bad params."""
    _unknown_keys(params, FORWARD_KEYS, "conv_forward")
    common = _validate_common(params)
    return {k: common[k] for k in FORWARD_KEYS}


def validate_backward(params: Mapping[str, Any]) -> dict[str, Any]:
    """Normalise and check conv_backward params; raise ValueError on bad params."""
    _unknown_keys(params, BACKWARD_KEYS, "conv_backward")
    common = _validate_common(params)
    mask = params.get("output_mask", [True, True, True])
    if not isinstance(mask, (list, tuple)) or len(mask) != 3 or not all(isinstance(m, bool) for m in mask):
        raise ValueError(f"output_mask must be a list of 3 bools [grad_input, grad_weight, grad_bias], "
                         f"got {mask!r}.")
    mask = list(mask)
    if not any(mask):
        raise ValueError("output_mask is all false, so the case computes nothing: set at least one entry true.")
    unsized = _bool(params, "unsized_grad_bias", False)
    if unsized:
        if common["bias"] or not mask[2]:
            raise ValueError("unsized_grad_bias asks for grad_bias with bias_sizes=None, so it needs bias false "
                             "and output_mask[2] true: set those or drop unsized_grad_bias.")
    elif mask[2] and not common["bias"]:
        raise ValueError("output_mask[2] (grad_bias) is true but bias is false: set output_mask[2] to false "
                         "or bias to true (or unsized_grad_bias to true to request it with bias_sizes=None).")
    common["output_mask"] = mask
    common["unsized_grad_bias"] = unsized
    return {k: common[k] for k in BACKWARD_KEYS}


# --------------------------------------------------------------------------- outputs, tolerances, tags

def backward_output_names(params: Mapping[str, Any]) -> list[str]:
    p = validate_backward(params)
    return [name for name, keep in zip(BACKWARD_OUTPUTS, p["output_mask"]) if keep]


def forward_output_names(params: Mapping[str, Any]) -> list[str]:
    validate_forward(params)
    return list(FORWARD_OUTPUTS)


def backward_reduction_sizes(params: Mapping[str, Any]) -> dict[str, int]:
    """Number of products summed into one element of each selected gradient (an upper bound)."""
    p = validate_backward(params)
    k = prod(p["weight_shape"][2:])
    n = p["input_shape"][0]
    groups = p["groups"]
    sizes = {
        # grad_input sums over the output channels of its group and the kernel window.
        "grad_input": out_channels(p) // groups * k,
        # grad_weight sums over batch and the positions of the non-transposed "output" side:
        # the forward output for a convolution, the input for a transposed convolution.
        "grad_weight": n * prod(p["input_shape"][2:] if p["transposed"] else output_spatial(p)),
        "grad_bias": n * prod(output_spatial(p)),
    }
    return {name: max(1, sizes[name]) for name in backward_output_names(p)}


def forward_reduction_sizes(params: Mapping[str, Any]) -> dict[str, int]:
    p = validate_forward(params)
    return {"output": max(1, p["input_shape"][1] // p["groups"] * prod(p["weight_shape"][2:]))}


def derive_tags(params: Mapping[str, Any], family: str) -> list[str]:
    """The family's name (a pytest marker: -m conv_backward), then structural tags read off
    normalised params (forward or backward)."""
    p = params
    rank = len(p["input_shape"]) - 2
    tags = [family, f"rank{rank}"]
    if p["transposed"]:
        tags.append("transposed")
        if any(p["output_padding"]):
            tags.append("output_padding")
    if any(s != 1 for s in p["stride"]):
        tags.append("strided")
    if any(p["padding"]):
        tags.append("padded")
    if any(d != 1 for d in p["dilation"]):
        tags.append("dilated")
    if p["groups"] > 1:
        tags.append("depthwise" if p["groups"] == p["input_shape"][1] else "grouped")
    if not p["bias"]:
        tags.append("no_bias")
    if p.get("unsized_grad_bias"):
        tags.append("unsized_grad_bias")
    if "output_mask" in p and not all(p["output_mask"]):
        tags.append("partial_mask")
    if p["dtype"] != "float32":
        tags.append(p["dtype"])
    tags.append("dynamic" if p["dynamic_dims"] else "static")
    return tags


def at_dtype(params: Mapping[str, Any], dtype: str) -> dict:
    """The case at another floating dtype (--dtypes): every tensor is of the case's dtype."""
    return {**params, "dtype": dtype}
