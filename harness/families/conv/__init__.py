"""The convolution families: `conv_backward` (aten.convolution_backward, the flagship) and
`conv_forward`, their case constructors, and their fuzz spaces (.fuzz_space).

Pure Python (the pytest process imports it); the builders live in .build, imported in workers.
"""
from __future__ import annotations

import functools
from typing import Any, Iterable

from harness.case_data import Case
from harness.families.conv import params
from harness.families.interface import Family

CONV_BACKWARD = Family(
    name="conv_backward", validate=params.validate_backward, builder="harness.families.conv.build:build_backward",
    derive_tags=functools.partial(params.derive_tags, family="conv_backward"), markers=("conv_backward",),
    reduction_sizes=params.backward_reduction_sizes, fuzz_space="harness.families.conv.fuzz_space:BACKWARD_SPACE",
    at_dtype=params.at_dtype, default=True)   # a cases-file entry without `family:` is a conv_backward case
CONV_FORWARD = Family(
    name="conv_forward", validate=params.validate_forward, builder="harness.families.conv.build:build_forward",
    derive_tags=functools.partial(params.derive_tags, family="conv_forward"), markers=("conv_forward",),
    reduction_sizes=params.forward_reduction_sizes, fuzz_space="harness.families.conv.fuzz_space:FORWARD_SPACE",
    at_dtype=params.at_dtype)
FAMILIES = [CONV_BACKWARD, CONV_FORWARD]


def conv_backward_case(name: str, *, section: str | None = None, tags: Iterable[str] = (),
                       timeout: float | None = None, **case_params: Any) -> Case:
    """A validated conv_backward Case with id `conv_backward/<section or '<rank>d'>/<name>`."""
    return CONV_BACKWARD.case(f"{section or _rank(case_params)}/{name}", case_params, tags=tags, timeout=timeout)


def conv_forward_case(name: str, *, section: str | None = None, tags: Iterable[str] = (),
                      timeout: float | None = None, **case_params: Any) -> Case:
    """A validated conv_forward Case with id `conv_forward/<section or '<rank>d'>/<name>`."""
    return CONV_FORWARD.case(f"{section or _rank(case_params)}/{name}", case_params, tags=tags, timeout=timeout)


def _rank(case_params: dict) -> str:
    shape = case_params.get("input_shape")
    return f"{len(shape) - 2}d" if isinstance(shape, (list, tuple)) else "?"
