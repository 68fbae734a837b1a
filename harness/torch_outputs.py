"""A module's outputs as the flat tuple backends return: the leaves of its (nested) result, and their names."""
from __future__ import annotations

from typing import Any

from torch.utils import _pytree as pytree


def output_leaves(output: Any) -> tuple:
    """Tensors and Python scalars of a result that may nest tuples, lists and dicts."""
    return tuple(pytree.tree_leaves(output))


def output_names(output: Any) -> list[str]:
    """Names of the output leaves: a named tuple's fields (values, indices), else their paths
    (`output` for a lone leaf, `output0`, `logits`, `hidden.1`)."""
    fields = getattr(output, "_fields", None) or getattr(type(output), "__match_args__", None)  # structseq
    if fields and len(pytree.tree_leaves(output)) == len(fields):
        return list(fields)
    paths = [pytree.keystr(path) for path, _ in pytree.tree_flatten_with_path(output)[0]]
    if paths == [""]:
        return ["output"]
    names = [path.strip("[].").replace("][", ".").replace("'", "") for path in paths]
    return [name if name and not name[0].isdigit() else f"output{name}" for name in names]
