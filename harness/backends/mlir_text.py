"""What the MLIR backends read from a module's text: its results' unsigned types, its Linalg ops,
and the generic form they are read from (harness.backends.mlir)."""
from __future__ import annotations

import re
from collections import Counter
from typing import Any


def unsigned_results(torch_backend_ir: str, func_name: str) -> dict[int, str]:
    """The entry function's unsigned results in Torch backend IR: position -> numpy dtype name."""
    match = re.search(rf"func\.func @{re.escape(func_name)}\(.*\)\s*->\s*\(?(.*?)\)?\s*\{{", torch_backend_ir)
    types = re.findall(r"!torch\.vtensor<[^>]*>|!torch\.\w+", match.group(1)) if match else []
    return {i: f"uint{width}" for i, t in enumerate(types) if (width := _unsigned_width(t))}


def _unsigned_width(torch_type: str) -> str | None:
    found = re.search(r",ui(8|16|32|64)>$", torch_type)
    return found and found.group(1)


def generic_asm(module: Any) -> str:
    """The module in generic form, where every op prints as "dialect.op"; constants elided."""
    return module.operation.get_asm(print_generic_op_form=True, large_elements_limit=16)


def note_linalg_ops(notes: dict, linalg_ir: str) -> None:
    """How many linalg.generic and named convolution ops the Linalg IR (in generic form) has."""
    names = Counter(re.findall(r'"(linalg\.[\w.]+)"', linalg_ir))
    notes["linalg.generic"] = names["linalg.generic"]
    notes["linalg named convolutions"] = sum(n for op, n in names.items() if "conv" in op)
