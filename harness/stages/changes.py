"""What a compiler change changed in one result: the first stage, in its backend's stage order, whose
fingerprint differs between two results of the same (case, backend). The report diff and the run
history both ask it; a result with no stage fingerprinted on one side (a report older than
fingerprints, a failure before the first stage) cannot be compared, and is not "changed".
"""
from __future__ import annotations

from typing import Iterable, Mapping

from harness.stages.fingerprinting import (
    INDUCTOR_STAGES,
    IREE_STAGES,
    MLIR_ONNX_STAGES,
    MLIR_STAGES,
    ONNXRUNTIME_STAGES,
)

# Every built-in backend's stages in one order that keeps each backend's own (a backend uses a few
# of them): a record's `fingerprints` keep the order they were taken in, which is not always the
# stages' (Inductor fingerprints its AOT graph inside the callback of the graph it captured).
STAGE_ORDER = ("captured", "aot_graph", "inductor_code", "onnx", "exported", "decomposed", "torch_ir",
               "torch_backend_ir", "input_ir", "linalg_ir", "llvm_ir", "vmfb")
BACKEND_STAGES = (MLIR_STAGES, MLIR_ONNX_STAGES, IREE_STAGES, INDUCTOR_STAGES, ONNXRUNTIME_STAGES)


def in_stage_order(stages: Iterable[str]) -> list[str]:
    """Stages in STAGE_ORDER; a stage it does not know (another project's backend) after those,
    in the order given."""
    stages = list(stages)
    known = [s for s in STAGE_ORDER if s in stages]
    return known + [s for s in stages if s not in STAGE_ORDER]


def comparable(old: Mapping[str, str], new: Mapping[str, str]) -> bool:
    """Whether the two results fingerprinted any stage in common."""
    return not old.keys().isdisjoint(new.keys())


def first_changed_stage(old: Mapping[str, str], new: Mapping[str, str]) -> str | None:
    """The first stage both fingerprinted whose fingerprints differ; None when none does (a stage
    one side did not reach is not a change: its outcome change says more)."""
    for stage in in_stage_order(new):
        if stage in old and old[stage] != new[stage]:
            return stage
    return None
