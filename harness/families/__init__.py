"""The case families, by name: how a case's JSON params become a module and inputs.

The interface a family implements is harness.families.interface; this module only lists them.
Everything imported here is pure Python (the pytest process never imports torch).
"""
from __future__ import annotations

from harness.families import conv_params, module_params, opinfo_params, torch_mlir_params
from harness.families.interface import Family, no_reductions

FAMILIES: dict[str, Family] = {}


def register(family: Family) -> Family:
    """Make a family known by its name (a second family of the same name is a mistake)."""
    if family.name in FAMILIES:
        raise ValueError(f"case family {family.name!r} is registered twice")
    FAMILIES[family.name] = family
    return family


register(Family(
    name="conv_backward",
    validate=conv_params.validate_backward,
    builder="harness.families.conv_torch:build_backward",
    reduction_sizes=conv_params.backward_reduction_sizes,
    derive_tags=conv_params.derive_tags,
))
register(Family(
    name="conv_forward",
    validate=conv_params.validate_forward,
    builder="harness.families.conv_torch:build_forward",
    reduction_sizes=conv_params.forward_reduction_sizes,
    derive_tags=conv_params.derive_tags,
))
register(Family(
    name="opinfo",
    validate=opinfo_params.validate,
    builder="harness.families.opinfo_torch:build_forward",
    reduction_sizes=no_reductions,
    derive_tags=opinfo_params.derive_tags,
    markers=("opinfo", "random", "inplace"),
))
register(Family(
    name="opinfo_grad",
    validate=opinfo_params.validate,
    builder="harness.families.opinfo_torch:build_gradient",
    reduction_sizes=no_reductions,
    derive_tags=opinfo_params.derive_grad_tags,
    markers=("opinfo", "grad", "random", "inplace"),
))
register(Family(
    name="module",
    validate=module_params.validate,
    builder="harness.families.module_torch:build",
    reduction_sizes=no_reductions,
    derive_tags=module_params.derive_tags,
))
register(Family(
    name=torch_mlir_params.FAMILY,   # torch-mlir's own e2e suite, from a checkout (--torch-mlir-suite)
    validate=torch_mlir_params.validate,
    builder="harness.families.torch_mlir_torch:build",
    reduction_sizes=no_reductions,
    derive_tags=torch_mlir_params.derive_tags,
    markers=("torch_mlir",),
))
