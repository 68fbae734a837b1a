"""Each backend names its stages in order (Backend.STAGES) and a record lists its fingerprints so,
whatever order they were taken in: the controller, which imports no backend, reads the first
changed stage of a compiler change in the newer record's order (harness.stages.changes)."""
from __future__ import annotations

import importlib

import pytest
from builtin_stages import INDUCTOR_STAGES, IREE_STAGES, MLIR_ONNX_STAGES, MLIR_STAGES, ONNXRUNTIME_STAGES

from harness.backend_interface import Backend
from harness.outcomes import Outcome
from harness.protocol import RunRequest
from harness.stages.changes import first_changed_stage, in_stage_order
from harness.worker.session import Session


class Reversed(Backend):
    STAGES = ("parsed_ir", "lowered_ir")


def test_fingerprints_follow_the_backends_order_and_a_stage_it_does_not_name_follows_them():
    taken = {"mine": "3", "lowered_ir": "2", "parsed_ir": "1"}
    assert list(in_stage_order(taken, Reversed.STAGES)) == ["parsed_ir", "lowered_ir", "mine"]
    assert in_stage_order(taken, ()) == taken


def test_the_first_changed_stage_is_the_first_in_the_newer_records_order():
    old = {"parsed_ir": "1", "lowered_ir": "2", "mine": "3"}
    assert first_changed_stage(old, {"parsed_ir": "9", "lowered_ir": "8", "mine": "3"}) == "parsed_ir"
    assert first_changed_stage(old, {"lowered_ir": "8", "parsed_ir": "9"}) == "lowered_ir"
    assert first_changed_stage(old, {"parsed_ir": "1"}) is None


def test_a_workers_result_lists_the_fingerprints_in_its_backends_order():
    def execute(case, family, spec, backend, context, rerun, perf):
        context.fingerprints.update({"lowered_ir": "b", "parsed_ir": "a"})
        return Outcome.PASSED, "", None

    session = Session(lambda message: None, execute)
    case = {"id": "fam/one", "family": "fam", "params": {}}
    result = session.run(RunRequest(case, {"name": "be", "class": f"{__name__}:Reversed"}))
    assert list(result.findings.fingerprints) == ["parsed_ir", "lowered_ir"]


@pytest.mark.parametrize(("module", "cls", "expected"), [
    ("harness.backends.mlir", "MlirBackend", (MLIR_STAGES, MLIR_ONNX_STAGES)),
    ("harness.backends.iree", "IreeBackend", (IREE_STAGES,)),
    ("harness.backends.inductor", "InductorBackend", (INDUCTOR_STAGES,)),
    ("harness.backends.onnxruntime", "OnnxRuntimeBackend", (ONNXRUNTIME_STAGES,))])
def test_each_built_in_backend_names_the_stages_its_records_hold_in_their_order(module, cls, expected):
    try:
        stages = getattr(importlib.import_module(module), cls).STAGES
    except ImportError as e:   # an extra this venv lacks
        pytest.skip(str(e))
    for held in expected:
        assert [s for s in stages if s in held] == list(held)
