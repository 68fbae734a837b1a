"""Tensor inputs described as data: the schema the module and model families share (pure Python).

One input is a mapping (every key but `shape` optional):

    shape   [2, 3]
    dtype   float32 (default), float64, float16, bfloat16, int64, int32, int16, int8, uint8, bool
    values  uniform [low, high) (floats' default, 0 to 1), normal (mean 0, std 1),
            integers [low, high) (integer dtypes' default, 0 to 10), bool (p: chance of True, 0.5)
    nan, inf, -inf   where to put them: a list of indices ([[0, 1], [1, 2]]) or a fraction of the elements
    dynamic dims that are dynamic, e.g. [0]: exported with torch.export.Dim.DYNAMIC

`input_sets` gives more shapes to run on: per set, one shape per input, differing in dynamic dims
only. harness.draw_tensors draws the tensors, in a worker.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, TypeGuard

from harness.case_data import DTYPES, check_keys

FLOAT_DTYPES = DTYPES
INT_DTYPES = ("int64", "int32", "int16", "int8", "uint8")
INPUT_DTYPES = FLOAT_DTYPES + INT_DTYPES + ("bool",)
DISTRIBUTIONS: dict[str, dict[str, float]] = {   # values -> its keys and their defaults
    "uniform": {"low": 0.0, "high": 1.0},
    "normal": {"mean": 0.0, "std": 1.0},
    "integers": {"low": 0, "high": 10},
    "bool": {"p": 0.5},
}
SPECIALS = ("nan", "inf", "-inf")
INPUT_KEYS = {"shape", "dtype", "values", "dynamic", *SPECIALS, *(k for d in DISTRIBUTIONS.values() for k in d)}


def input_spec(at: str, spec: Any) -> dict:
    """One input's complete description (defaults filled); ValueError says where (`at`) and what."""
    if not isinstance(spec, dict):
        raise ValueError(f"{at} must be a mapping like {{shape: [2, 3], dtype: float32}}, not {spec!r}")
    check_keys(spec, INPUT_KEYS, at)
    shape = spec.get("shape")
    if not isinstance(shape, list) or not all(is_int(d) and d >= 0 for d in shape):
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


def input_at_dtype(spec: dict, own: str, dtype: str) -> dict:
    """An input of a case at `own` dtype, for the case at `dtype` (--dtypes): a floating input at the
    case's own dtype takes the new one; others (ids, masks, an input pinned to float64) stay."""
    return {**spec, "dtype": dtype} if spec["dtype"] == own else spec


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
    if not isinstance(dims, list) or not all(is_int(d) and -rank <= d < rank for d in dims):
        raise ValueError(f"{at}: dynamic must be a list of dims of its {rank}-d shape, like [0], not {dims!r}")
    return sorted({d % rank for d in dims})


def _placement(at: str, where: Any, shape: list[int]) -> list | float:
    """A fraction of the elements in (0, 1], or a list of in-range indices."""
    if isinstance(where, (int, float)) and not isinstance(where, bool) and 0 < where <= 1:
        return float(where)
    if isinstance(where, list) and all(isinstance(i, list) and len(i) == len(shape)
                                       and all(is_int(x) and 0 <= x < n for x, n in zip(i, shape)) for i in where):
        return [list(i) for i in where]
    raise ValueError(f"{at}: give a fraction in (0, 1] or a list of indices within {shape}, like [[0, 1]]")


def input_sets(sets: Any, inputs: list[dict]) -> list[list[list[int]]]:
    """More shapes to run on: one list of shapes per set, differing from `inputs` in dynamic dims only."""
    if not isinstance(sets, list):
        raise ValueError(f"input_sets must be a list of sets, each a list of one shape per input, not {sets!r}")
    for k, shapes in enumerate(sets):
        at = f"input_sets[{k}]"
        if not isinstance(shapes, list) or len(shapes) != len(inputs):
            raise ValueError(f"{at} must list {len(inputs)} shape(s), one per input")
        for i, (shape, spec) in enumerate(zip(shapes, inputs)):
            if not isinstance(shape, list) or len(shape) != len(spec["shape"]) \
                    or not all(is_int(d) and d >= 0 for d in shape):
                raise ValueError(f"{at}[{i}]: {shape!r} is not a {len(spec['shape'])}-d shape")
            fixed = [d for d, (a, b) in enumerate(zip(shape, spec["shape"])) if a != b and d not in spec["dynamic"]]
            if fixed:
                raise ValueError(f"{at}[{i}]: dim(s) {fixed} differ from inputs[{i}].shape {spec['shape']} but "
                                 f"are not dynamic; add them to inputs[{i}].dynamic")
            for special in SPECIALS:
                if isinstance(spec.get(special), list):
                    _placement(f"{at}[{i}] ({special})", spec[special], shape)
    return [[list(s) for s in shapes] for shapes in sets]


def tolerance(value: Any) -> dict | None:
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) != {"rtol", "atol"} or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
            for v in value.values()):
        raise ValueError(f"tolerance must be {{rtol: R, atol: A}} with non-negative numbers, not {value!r}")
    return {"rtol": float(value["rtol"]), "atol": float(value["atol"])}


def _number(at: str, key: str, value: Any, integer: bool) -> float | int:
    ok = is_int(value) if integer else isinstance(value, (int, float)) and not isinstance(value, bool)
    if not ok or not math.isfinite(value):
        raise ValueError(f"{at}: {key} must be a finite {'int' if integer else 'number'}, not {value!r}")
    return value if integer else float(value)


def flag(params: Mapping[str, Any], key: str) -> bool:
    value = params.get(key, False)
    if not isinstance(value, bool):
        raise ValueError(f"{key} must be true or false, not {value!r}")
    return value


def is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def seed_of(params: Mapping[str, Any]) -> int:
    """A case's `seed` (default 0), an int."""
    seed = params.get("seed", 0)
    if not is_int(seed):
        raise ValueError(f"seed must be an int, not {seed!r}")
    return seed


def keyword_mapping(params: Mapping[str, Any], key: str, what: str) -> dict:
    """A copy of params[key] (default {}): keyword arguments for a constructor, by name."""
    value = params.get(key, {})
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise ValueError(f"{key} must be a mapping of {what}, not {value!r}")
    return dict(value)
