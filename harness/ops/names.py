"""One name per op, whichever layer saw it: `aten.<packet>` (the overload dropped: a test of
`aten.add.Tensor` covers `aten.add` as a table reads it) for an ATen op of an FX graph or a
`torch.aten.*` op of torch-mlir's Torch IR, `onnx.<OpType>` (or `<domain>.<OpType>`) for an ONNX
node."""
from __future__ import annotations

import collections
import re
from typing import Any, Iterable

# A torch-mlir Torch IR op of a namespace an FX graph's ops have, as printed:
# `torch.aten.convolution_backward`, `torch.aten.add.Tensor`, `torch.quantized_decomposed.quantize_per_tensor`.
OP_NAMESPACES = ("aten", "prims", "quantized_decomposed")
TORCH_IR_OP = re.compile(rf"\btorch\.({'|'.join(OP_NAMESPACES)})\.(\w+)")


def fx_op_name(target: Any) -> str | None:
    """An FX node's target as `aten.<packet>`; None for what is not an ATen op (operator.getitem,
    a higher-order op, a custom namespace's op is named by its namespace)."""
    name = getattr(target, "name", None)
    if not callable(name):
        return None
    qualified = name()                                  # "aten::add.Tensor"
    namespace, _, rest = qualified.partition("::")
    if not rest:
        return None
    return f"{namespace}.{rest.split('.')[0]}"


def graph_op_counts(graph: Any) -> dict[str, int]:
    """The ops an FX graph calls, each with its count, sorted by name."""
    names = (fx_op_name(node.target) for node in graph.nodes if node.op == "call_function")
    return counted(n for n in names if n)


def torch_ir_op_counts(text: str) -> dict[str, int]:
    """The ops of torch-mlir Torch IR text (its `torch.aten.*` operations, and the other namespaces')."""
    return counted(f"{namespace}.{packet}" for namespace, packet in TORCH_IR_OP.findall(text))


def named_in(text: str, ops: set[str]) -> set[str]:
    """Those of `ops` the text names, as Torch IR, FX or a C++ schema spells them (`torch.aten.topk`,
    `aten.topk.default`, `aten::topk`)."""
    return {op for op in ops if re.search(_spelled(op), text)}


def _spelled(op: str) -> str:
    namespace, _, name = op.partition(".")
    return rf"\b{re.escape(namespace)}(?:\.|::){re.escape(name)}\b"


def onnx_op_counts(model: Any) -> dict[str, int]:
    """An ONNX model's main-graph nodes by op type, `onnx.` for the default domain."""
    return counted(f"{node.domain or 'onnx'}.{node.op_type}" for node in model.graph.node)


def counted(names: Iterable[str]) -> dict[str, int]:
    return dict(sorted(collections.Counter(names).items()))
