"""The module family's pure half: a case is an `nn.Module` named by import path plus its inputs as data.

Runs in the pytest process, which never imports torch; harness.families.module.build builds the
module and the inputs in a worker. The params, all JSON-able (a case module's `module_case(...)`
and a `--cases-file` entry with `family: module` take the same keys):

    module      "package.module:attr": an nn.Module class or a function returning a module,
                importable in the worker (the rootdir is on its path)
    init        keyword arguments for it                                       default {}
    train       call it in training mode (dropout on)                          default false
    seed        seeds torch before the module is built and the inputs drawn    default 0
    inputs      a list, one per forward() argument, each a tensor input as harness.families.tensor_inputs
                describes it (shape, dtype, values and their range, nan/inf/-inf, dynamic)
    input_sets  more sets to run the compiled program on: per set, one shape per input; only dynamic
                dims may differ from `inputs`                                  default []
    tolerance   {rtol, atol} in place of the backend's for this case           default none
    dtype       the case's dtype: its first floating input's (derived, checked when given), else
                as given (default float32); the module's floating parameters and buffers are cast to it
    train_step  one training step instead of the forward pass (harness.training.params: with
                optimizer and lr): in training mode, dropout at 0, the loss the mean square error
                of its first floating output against a seeded target, compared with float64
                autograd by the ratio of its error to eager's (harness.families.built.RatioGolden;
                `tolerance` instead when given)

Outputs may be tensors, Python scalars, or tuples, lists and dicts of them; each leaf is one
output, named by its path (`output`, `output0`, `logits`, `hidden.1`). Ids read `module/<name>`.
"""
from __future__ import annotations

from typing import Any, Mapping

from harness import quantization
from harness.case_data import check_keys
from harness.families.tensor_inputs import (
    FLOAT_DTYPES,
    SPECIALS,
    flag,
    input_at_dtype,
    input_sets,
    input_spec,
    keyword_mapping,
    seed_of,
    tolerance,
)
from harness.training import params as training

PARAM_KEYS = ("module", "init", "train", "seed", "inputs", "input_sets", "tolerance", "dtype", *training.KEYS,
              quantization.KEY)


def validate(params: Mapping[str, Any]) -> dict:
    """The complete params (every key present); ValueError naming the key and the fix."""
    check_keys(params, PARAM_KEYS)
    module = params.get("module")
    if not (isinstance(module, str) and _is_import_path(module)):
        raise ValueError(f"module must be 'package.module:attr' (an nn.Module class or a function that "
                         f"returns one), not {module!r}")
    init, seed = keyword_mapping(params, "init", "keyword arguments"), seed_of(params)
    raw_inputs = params.get("inputs")
    if not isinstance(raw_inputs, list) or not raw_inputs:
        raise ValueError("inputs must be a non-empty list: one {shape, dtype, ...} per forward() argument")
    inputs = [input_spec(f"inputs[{i}]", spec) for i, spec in enumerate(raw_inputs)]
    normalised = {
        "module": module, "init": init, "train": flag(params, "train"), "seed": seed, "inputs": inputs,
        "input_sets": input_sets(params.get("input_sets", []), inputs),
        "tolerance": tolerance(params.get("tolerance")),
        "dtype": _dtype(params, inputs),
        **training.validate(params),
        **quantization.validate(params),
    }
    if params.get("dtype", normalised["dtype"]) != normalised["dtype"]:
        raise ValueError(f"dtype {params['dtype']!r} is not the first floating input's ({normalised['dtype']}): "
                         "set the inputs' dtypes, or leave dtype out")
    return normalised


def _dtype(params: Mapping[str, Any], inputs: list[dict]) -> str:
    """The first floating input's dtype; without one, the module's own (its parameters'), float32 by default."""
    dtype = next((i["dtype"] for i in inputs if i["dtype"] in FLOAT_DTYPES), params.get("dtype", "float32"))
    if dtype not in FLOAT_DTYPES:
        raise ValueError(f"dtype {dtype!r} is not one of {', '.join(FLOAT_DTYPES)}")
    return dtype


def at_dtype(params: Mapping[str, Any], dtype: str) -> dict:
    """The case at another floating dtype (--dtypes): its floating inputs at the case's dtype take it."""
    if params["quantize"]:
        raise ValueError(f"an {params['quantize']} program is quantized from its float32 one")
    return {**params, "inputs": [input_at_dtype(i, params["dtype"], dtype) for i in params["inputs"]],
            "dtype": dtype}


def _is_import_path(text: str) -> bool:
    module, colon, attr = text.partition(":")
    return bool(colon) and all(p.isidentifier() for p in module.split(".")) and attr.isidentifier()


def derive_tags(params: Mapping[str, Any]) -> list[str]:
    tags = [params["module"].rpartition(":")[2], params["dtype"]]
    if any(i["dynamic"] for i in params["inputs"]):
        tags.append("dynamic")
    if any(s in i for i in params["inputs"] for s in SPECIALS):
        tags.append("nonfinite")
    if params["train_step"]:
        tags.append("train_step")
    return tags + quantization.tags(params)
