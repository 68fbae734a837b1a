"""Deterministic size figures of a case's stages, for CaseContext.sizes: noise-free where times are
not (the idea of IREE's compilation statistics)."""
from __future__ import annotations

from typing import Any


def mlir_ops(module: Any, ir: Any) -> int:
    """The operations in an MLIR module, nested ones included, the module itself not (`ir`: the
    binding that made it, torch-mlir's or IREE's)."""
    advance = ir.WalkResult.ADVANCE
    count = [0]

    def visit(_operation: Any) -> Any:
        count[0] += 1
        return advance

    module.operation.walk(visit)
    return count[0] - 1
