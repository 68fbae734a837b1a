"""Case families: how a case's JSON params become a module and inputs.

`FAMILIES` maps a family name to a `Family` record. Everything here is pure Python and runs in
the pytest process (which never imports torch): `validate` normalises and checks params,
`reduction_sizes` describes the outputs and `derive_tags` tags a case. The torch-side builder is named by a
dotted path ("module:function") and imported only in a worker, with `load_builder()`.

A builder takes a `harness.spec.Case` and returns an object with `program`
(a `harness.backend.Program`) and `input_sets` (a list of input tuples, the first being the
program's example inputs). Every family module returns a tuple of tensors, one per output name.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping

from harness.backend import load_object
from harness.families import conv_params


@dataclasses.dataclass(frozen=True)
class Family:
    name: str
    validate: Callable[[Mapping[str, Any]], dict]              # raises ValueError on bad params
    builder: str                                               # "package.module:function", worker-only
    reduction_sizes: Callable[[Mapping[str, Any]], dict]       # output name -> terms summed per element
    derive_tags: Callable[[Mapping[str, Any]], list]           # structural tags of normalised params

    def load_builder(self) -> Callable[[Any], Any]:
        """Import and return the builder (imports torch: call it in a worker only)."""
        return load_object(self.builder)


FAMILIES: dict[str, Family] = {
    "conv_backward": Family(
        name="conv_backward",
        validate=conv_params.validate_backward,
        builder="harness.families.conv_torch:build_backward",
        reduction_sizes=conv_params.backward_reduction_sizes,
        derive_tags=conv_params.derive_tags,
    ),
    "conv_forward": Family(
        name="conv_forward",
        validate=conv_params.validate_forward,
        builder="harness.families.conv_torch:build_forward",
        reduction_sizes=conv_params.forward_reduction_sizes,
        derive_tags=conv_params.derive_tags,
    ),
}

