"""The `reductions` family: one torch reduction over some dims of a seeded random tensor.

This module is the family's pure half, loaded in the pytest process (which imports no torch):
params validation, tags, and how many terms each output element sums (the comparison's
tolerance grows with it). The builder, `e2e_example.reductions_torch:build`, runs in a worker.

    op       sum, mean, amax, amin, prod, logsumexp or var
    shape    the input's shape                      e.g. [4, 8]
    dims     the dims reduced                       default: all (prod: exactly one)
    keepdim  keep the reduced dims with size 1      default false
    dtype    float32, float64, float16 or bfloat16  default float32
"""
from __future__ import annotations

from math import prod
from typing import Any, Mapping

from harness.api import DTYPES, Case, Family, check_keys

OPS = ("sum", "mean", "amax", "amin", "prod", "logsumexp", "var")
KEYS = ("op", "shape", "dims", "keepdim", "dtype")


def validate(params: Mapping[str, Any]) -> dict:
    check_keys(params, KEYS, "a reduction")
    op, shape = params.get("op"), params.get("shape")
    if op not in OPS:
        raise ValueError(f"op {op!r} is not one of {', '.join(OPS)}")
    if not isinstance(shape, list) or not shape or not all(isinstance(d, int) and d > 0 for d in shape):
        raise ValueError(f"shape must be a non-empty list of positive ints, not {shape!r}")
    dims = params.get("dims", list(range(len(shape))))
    if not isinstance(dims, list) or not dims or not all(isinstance(d, int) and -len(shape) <= d < len(shape)
                                                         for d in dims):
        raise ValueError(f"dims must be a non-empty list of dims of the {len(shape)}-d shape, not {dims!r}")
    dims = sorted({d % len(shape) for d in dims})
    if op == "prod" and len(dims) != 1:
        raise ValueError(f"prod reduces exactly one dim (torch.prod takes one), not {dims}")
    dtype = params.get("dtype", "float32")
    if dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r} is not one of {', '.join(DTYPES)}")
    return {"op": op, "shape": list(shape), "dims": dims, "keepdim": bool(params.get("keepdim", False)),
            "dtype": dtype}


def reduction_sizes(params: Mapping[str, Any]) -> dict:
    return {"output": prod(params["shape"][d] for d in params["dims"])}


def derive_tags(params: Mapping[str, Any]) -> list[str]:
    return [params["op"], params["dtype"]] + (["keepdim"] if params["keepdim"] else [])


def reduction_case(name: str, **params: Any) -> Case:
    """A validated case with id `reductions/<op>/<name>`."""
    return REDUCTIONS.case(f"{params.get('op')}/{name}", params)


REDUCTIONS = Family(name="reductions", validate=validate, builder="e2e_example.reductions_torch:build",
                    reduction_sizes=reduction_sizes, derive_tags=derive_tags)
FAMILIES = [REDUCTIONS]
