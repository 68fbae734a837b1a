"""Tensor inputs drawn as harness.families.tensor_inputs describes them (a builders' helper: imports torch)."""
from __future__ import annotations

import torch

SPECIAL_VALUES = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}


def draw_sets(specs: list[dict], more_shapes: list[list[list[int]]], seed: int) -> list[tuple]:
    """Every input set: the specs' own shapes first, then each of `more_shapes`, drawn in turn from
    one generator seeded with `seed` (so a case reproduces anywhere)."""
    generator = torch.Generator().manual_seed(seed)
    shapes = [[spec["shape"] for spec in specs]] + more_shapes
    return [tuple(draw(spec, shape, generator) for spec, shape in zip(specs, set_shapes)) for set_shapes in shapes]


def draw(spec: dict, shape: list[int], generator: torch.Generator) -> torch.Tensor:
    """One input as its description says, drawn in float64 (the same values at every float dtype)."""
    dtype = getattr(torch, spec["dtype"])
    values = spec["values"]
    if values == "integers":
        return torch.randint(spec["low"], spec["high"], shape, generator=generator, dtype=dtype)
    if values == "bool":
        return torch.rand(shape, generator=generator, dtype=torch.float64) < spec["p"]
    if values == "normal":
        tensor = torch.randn(shape, generator=generator, dtype=torch.float64) * spec["std"] + spec["mean"]
    else:
        span = spec["high"] - spec["low"]
        tensor = torch.rand(shape, generator=generator, dtype=torch.float64) * span + spec["low"]
    for name, value in SPECIAL_VALUES.items():
        where = spec.get(name)
        if isinstance(where, float):
            tensor[torch.rand(shape, generator=generator) < where] = value
        elif where:
            for index in where:   # validated against every input set's shape
                tensor[tuple(index)] = value
    return tensor.to(dtype)
