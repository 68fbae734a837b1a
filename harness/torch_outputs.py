"""A module's outputs as the flat tuple backends return: the leaves of its (nested) result, and their names."""
from __future__ import annotations

import copy
from typing import Any

import torch
from torch.utils import _pytree as pytree


def output_leaves(output: Any) -> tuple:
    """Tensors and Python scalars of a result that may nest tuples, lists and dicts."""
    return tuple(pytree.tree_leaves(output))


def output_names(output: Any) -> list[str]:
    """Names of the output leaves: a named tuple's fields (values, indices), else their paths
    (`output` for a lone leaf, `output0`, `logits`, `hidden.1`)."""
    fields = getattr(output, "_fields", None) or getattr(type(output), "__match_args__", None)  # structseq
    if isinstance(output, tuple) and fields and len(pytree.tree_leaves(output)) == len(fields):   # not a dataclass's
        return list(fields)
    paths = [path for path, _ in pytree.tree_flatten_with_path(output)[0]]
    if paths == [()]:
        return ["output"]
    names = [".".join(str(_key_part(key)) for key in path) for path in paths]
    return [name if name and not name[0].isdigit() else f"output{name}" for name in names]


def _key_part(key: Any) -> Any:
    """A pytree key's own name: a mapping's key, a sequence's index, an attribute's name."""
    for attribute in ("key", "idx", "name"):
        if hasattr(key, attribute):
            return getattr(key, attribute)
    return key


def float64_outputs(module: torch.nn.Module, input_sets: list[tuple]) -> list[tuple]:
    """A float64 copy of the module on the inputs upcast, per input set: the golden of a module with
    weights (upcasting the inputs alone cannot give it). TypeError when its outputs are not float64."""
    wide = copy.deepcopy(module).to(torch.float64)
    with torch.no_grad():
        goldens = [wide(*(t.to(torch.float64) if t.is_floating_point() else t.clone() for t in inputs))
                   for inputs in input_sets]
    narrow = [str(o.dtype) for o in goldens[0] if isinstance(o, torch.Tensor) and o.is_floating_point()
              and o.dtype != torch.float64]
    if narrow:   # forward fixes a dtype itself: these values are no float64 golden
        raise TypeError(f"its outputs came out as {', '.join(narrow)}")
    return goldens
