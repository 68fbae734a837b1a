"""The module family's pure half: a case is an `nn.Module` named by import path plus its inputs as data.

Runs in the pytest process, which never imports torch; harness.families.module.build builds the
module and the inputs in a worker. The params, all JSON-able (a case module's `module_case(...)`
and a `--cases-file` entry with `family: module` take the same keys):

    module      "package.module:attr": an nn.Module class or a function returning a module,
                importable in the worker (the rootdir is on its path)
    init        keyword arguments for it                                       default {}
    train       call it in training mode (dropout on)                          default false
    seed        seeds torch before the module is built and the inputs drawn    default 0
    inputs      a list, one per forward() argument:
        shape   [2, 3]
        dtype   float32 (default), float64, float16, bfloat16, int64, int32, int16, int8, uint8, bool
        values  uniform [low, high) (floats' default, 0 to 1), normal (mean 0, std 1),
                integers [low, high) (integer dtypes' default, 0 to 10), bool (p: chance of True, 0.5)
        nan, inf, -inf   where to put them: a list of indices ([[0, 1], [1, 2]]) or a fraction of the elements
        dynamic dims that are dynamic, e.g. [0]: exported with torch.export.Dim.DYNAMIC
    input_sets  more sets to run the compiled program on: per set, one shape per input; only dynamic
                dims may differ from `inputs`                                  default []
    tolerance   {rtol, atol} in place of the backend's for this case           default none
    dtype       the case's dtype: its first floating input's (derived, checked when given); the
                module's floating parameters and buffers are cast to it

Outputs may be tensors, Python scalars, or tuples, lists and dicts of them; each leaf is one
output, named by its path (`output`, `output0`, `logits`, `hidden.1`). Ids read `module/<name>`.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

from harness.spec import DTYPES, check_keys

FLOAT_DTYPES = DTYPES
INT_DTYPES = ("int64", "int32", "int16", "int8", "uint8")
INPUT_DTYPES = FLOAT_DTYPES + INT_DTYPES + ("bool",)
DISTRIBUTIONS = {   # values -> its keys and their defaults
    "uniform": {"low": 0.0, "high": 1.0},
    "normal": {"mean": 0.0, "std": 1.0},
    "integers": {"low": 0, "high": 10},
    "bool": {"p": 0.5},
}
SPECIALS = ("nan", "inf", "-inf")
PARAM_KEYS = ("module", "init", "train", "seed", "inputs", "input_sets", "tolerance", "dtype")
INPUT_KEYS = {"shape", "dtype", "values", "dynamic", *SPECIALS, *(k for d in DISTRIBUTIONS.values() for k in d)}


def validate(params: Mapping[str, Any]) -> dict:
    """The complete params (every key present); ValueError naming the key and the fix."""
    check_keys(params, PARAM_KEYS)
    module = params.get("module")
    if not (isinstance(module, str) and _is_import_path(module)):
        raise ValueError(f"module must be 'package.module:attr' (an nn.Module class or a function that "
                         f"returns one), not {module!r}")
    init = params.get("init", {})
    if not isinstance(init, dict) or not all(isinstance(k, str) for k in init):
        raise ValueError(f"init must be a mapping of keyword arguments, not {init!r}")
    seed = params.get("seed", 0)
    if not _is_int(seed):
        raise ValueError(f"seed must be an int, not {seed!r}")
    raw_inputs = params.get("inputs")
    if not isinstance(raw_inputs, list) or not raw_inputs:
        raise ValueError("inputs must be a non-empty list: one {shape, dtype, ...} per forward() argument")
    inputs = [_input(i, spec) for i, spec in enumerate(raw_inputs)]
    normalised = {
        "module": module, "init": dict(init), "train": _bool(params, "train"), "seed": seed, "inputs": inputs,
        "input_sets": _input_sets(params.get("input_sets", []), inputs),
        "tolerance": _tolerance(params.get("tolerance")),
        "dtype": next((i["dtype"] for i in inputs if i["dtype"] in FLOAT_DTYPES), "float32"),
    }
    if params.get("dtype", normalised["dtype"]) != normalised["dtype"]:
        raise ValueError(f"dtype {params['dtype']!r} is not the first floating input's ({normalised['dtype']}): "
                         "set the inputs' dtypes, or leave dtype out")
    return normalised


def _input(index: int, spec: Any) -> dict:
    at = f"inputs[{index}]"
    if not isinstance(spec, dict):
        raise ValueError(f"{at} must be a mapping like {{shape: [2, 3], dtype: float32}}, not {spec!r}")
    check_keys(spec, INPUT_KEYS, at)
    shape = spec.get("shape")
    if not isinstance(shape, list) or not all(_is_int(d) and d >= 0 for d in shape):
        raise ValueError(f"{at}: shape must be a list of non-negative ints like [2, 3], not {shape!r}")
    dtype = spec.get("dtype", "float32")
    if dtype not in INPUT_DTYPES:
        raise ValueError(f"{at}: dtype {dtype!r} is not one of {', '.join(INPUT_DTYPES)}")
    values = spec.get("values", _default_values(dtype))
    if values not in DISTRIBUTIONS:
        raise ValueError(f"{at}: values {values!r} is not one of {', '.join(DISTRIBUTIONS)}")
    if values not in _fills(dtype):
        raise ValueError(f"{at}: values {values!r} cannot fill a {dtype} tensor; use {_default_values(dtype)!r}")
    others = sorted({k for keys in DISTRIBUTIONS.values() for k in keys} & set(spec) - set(DISTRIBUTIONS[values]))
    if others:
        raise ValueError(f"{at}: {', '.join(others)} do not apply to values {values!r} "
                         f"(it takes {', '.join(DISTRIBUTIONS[values])})")
    result = {"shape": list(shape), "dtype": dtype, "values": values}
    for key, default in DISTRIBUTIONS[values].items():
        result[key] = _number(at, key, spec.get(key, default), integer=values == "integers")
    _check_range(at, result)
    result["dynamic"] = _dims(at, spec.get("dynamic", []), len(shape))
    for special in SPECIALS:
        if special in spec:
            if dtype not in FLOAT_DTYPES:
                raise ValueError(f"{at}: {special} needs a floating dtype, not {dtype}")
            result[special] = _placement(f"{at}.{special}", spec[special], shape)
    return result


def _fills(dtype: str) -> tuple[str, ...]:
    """The distributions that can fill a tensor of this dtype, the default first."""
    return ("bool",) if dtype == "bool" else ("integers",) if dtype in INT_DTYPES else ("uniform", "normal")


def _default_values(dtype: str) -> str:
    return _fills(dtype)[0]


def _check_range(at: str, spec: dict) -> None:
    values = spec["values"]
    if values in ("uniform", "integers") and not spec["low"] < spec["high"]:
        raise ValueError(f"{at}: low ({spec['low']}) must be below high ({spec['high']})")
    if values == "normal" and not spec["std"] > 0:
        raise ValueError(f"{at}: std must be positive, not {spec['std']}")
    if values == "bool" and not 0 <= spec["p"] <= 1:
        raise ValueError(f"{at}: p must be between 0 and 1, not {spec['p']}")


def _dims(at: str, dims: Any, rank: int) -> list[int]:
    if not isinstance(dims, list) or not all(_is_int(d) and -rank <= d < rank for d in dims):
        raise ValueError(f"{at}: dynamic must be a list of dims of its {rank}-d shape, like [0], not {dims!r}")
    return sorted({d % rank for d in dims})


def _placement(at: str, where: Any, shape: list[int]) -> list | float:
    """A fraction of the elements in (0, 1], or a list of in-range indices."""
    if isinstance(where, (int, float)) and not isinstance(where, bool) and 0 < where <= 1:
        return float(where)
    if isinstance(where, list) and all(isinstance(i, list) and len(i) == len(shape)
                                       and all(_is_int(x) and 0 <= x < n for x, n in zip(i, shape)) for i in where):
        return [list(i) for i in where]
    raise ValueError(f"{at}: give a fraction in (0, 1] or a list of indices within {shape}, like [[0, 1]]")


def _input_sets(sets: Any, inputs: list[dict]) -> list[list[list[int]]]:
    """More shapes to run on: one list of shapes per set, differing from `inputs` in dynamic dims only."""
    if not isinstance(sets, list):
        raise ValueError(f"input_sets must be a list of sets, each a list of one shape per input, not {sets!r}")
    for k, shapes in enumerate(sets):
        at = f"input_sets[{k}]"
        if not isinstance(shapes, list) or len(shapes) != len(inputs):
            raise ValueError(f"{at} must list {len(inputs)} shape(s), one per input")
        for i, (shape, spec) in enumerate(zip(shapes, inputs)):
            if not isinstance(shape, list) or len(shape) != len(spec["shape"]) \
                    or not all(_is_int(d) and d >= 0 for d in shape):
                raise ValueError(f"{at}[{i}]: {shape!r} is not a {len(spec['shape'])}-d shape")
            fixed = [d for d, (a, b) in enumerate(zip(shape, spec["shape"])) if a != b and d not in spec["dynamic"]]
            if fixed:
                raise ValueError(f"{at}[{i}]: dim(s) {fixed} differ from inputs[{i}].shape {spec['shape']} but "
                                 f"are not dynamic; add them to inputs[{i}].dynamic")
            for special in SPECIALS:
                if isinstance(spec.get(special), list):
                    _placement(f"{at}[{i}] ({special})", spec[special], shape)
    return [[list(s) for s in shapes] for shapes in sets]


def _tolerance(tolerance: Any) -> dict | None:
    if tolerance is None:
        return None
    if not isinstance(tolerance, dict) or set(tolerance) != {"rtol", "atol"} or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
            for v in tolerance.values()):
        raise ValueError(f"tolerance must be {{rtol: R, atol: A}} with non-negative numbers, not {tolerance!r}")
    return {"rtol": float(tolerance["rtol"]), "atol": float(tolerance["atol"])}


def _number(at: str, key: str, value: Any, integer: bool) -> float | int:
    ok = _is_int(value) if integer else isinstance(value, (int, float)) and not isinstance(value, bool)
    if not ok or not math.isfinite(value):
        raise ValueError(f"{at}: {key} must be a finite {'int' if integer else 'number'}, not {value!r}")
    return value if integer else float(value)


def _bool(params: Mapping[str, Any], key: str) -> bool:
    value = params.get(key, False)
    if not isinstance(value, bool):
        raise ValueError(f"{key} must be true or false, not {value!r}")
    return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_import_path(text: str) -> bool:
    module, colon, attr = text.partition(":")
    return bool(colon) and all(p.isidentifier() for p in module.split(".")) and attr.isidentifier()



def derive_tags(params: Mapping[str, Any]) -> list[str]:
    tags = [params["module"].rpartition(":")[2], params["dtype"]]
    if any(i["dynamic"] for i in params["inputs"]):
        tags.append("dynamic")
    if any(s in i for i in params["inputs"] for s in SPECIALS):
        tags.append("nonfinite")
    return tags
