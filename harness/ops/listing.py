"""The ops of a case's program, listed by the harness in the worker for a backend that asks it to
(Backend.LISTS_OPS False): torch.export of a PyTorch program (a training step's joint graph); the
nodes of an ONNX model, for every backend."""
from __future__ import annotations

from typing import Any

from harness.ops.names import graph_op_counts, onnx_op_counts

NOT_LISTED_NOTE = "ops_not_listed"   # a note: why a record has no ops (its program did not export)


def harness_lists_ops(backend: Any, program: Any) -> bool:
    """Whether the harness lists the program's ops for the backend: an ONNX model's always (reading
    its nodes costs nothing), a PyTorch program's when the backend's LISTS_OPS is False (it asks;
    True: it lists them itself; None, the default: nobody does)."""
    from harness.backend_interface import OnnxProgram

    return isinstance(program, OnnxProgram) or getattr(backend, "LISTS_OPS", None) is False


def program_ops(program: Any, notes: dict) -> dict[str, int]:
    """{op: count} of the program as torch.export gives it (non-strict, its dynamic shapes), or of
    an ONNX model; {} with a note when it does not export (its backend's own export will say why)."""
    from harness.backend_interface import OnnxProgram, export_program

    if isinstance(program, OnnxProgram):
        return onnx_op_counts(program.model)
    try:
        return graph_op_counts(export_program(program).graph)
    except Exception as e:  # noqa: BLE001 - the listing must not fail a case its backend may pass
        notes[NOT_LISTED_NOTE] = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
        return {}
