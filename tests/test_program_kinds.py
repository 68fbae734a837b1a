"""harness.program_kinds: each kind of program named once, with what the configs, the families'
seam, the run's summary, `reduce` and `isolate` need of it, as names that resolve."""
from __future__ import annotations

import importlib.util

import pytest

from harness.backend_interface import OnnxProgram, Program, load_object
from harness.controller.runner import _uncollected_line
from harness.families.loader import entry_point_families
from harness.program_kinds import ONNX, PROGRAM_KINDS, TORCH, TRAIN_STEP, default_programs


@pytest.mark.parametrize("kind", list(PROGRAM_KINDS.values()), ids=list(PROGRAM_KINDS))
def test_every_name_a_kind_gives_resolves(kind):
    assert load_object(kind.program_class) in (Program, OnnxProgram)   # harness.backend_interface imports no torch
    for path in filter(None, [kind.graph and kind.graph.partition(":")[0], kind.reference_process]):
        assert importlib.util.find_spec(path) is not None, path   # found, not imported: they import torch
    assert kind.variant_of is None or kind.variant_of in PROGRAM_KINDS


def test_the_kinds_are_what_families_and_configs_named():
    assert {TORCH: PROGRAM_KINDS[TORCH].pytorch, ONNX: PROGRAM_KINDS[ONNX].pytorch} == {TORCH: True, ONNX: False}
    assert PROGRAM_KINDS[TRAIN_STEP].pytorch and PROGRAM_KINDS[TRAIN_STEP].variant_of == TORCH
    assert default_programs() == {TORCH: "the backend's own", TRAIN_STEP: "export_program's joint graph"}
    for family in entry_point_families().values():
        assert {family.program, family.reruns or TORCH, family.isolates or TORCH} <= set(PROGRAM_KINDS)
        if family.graph is None:
            assert family.graph_cutter() == PROGRAM_KINDS[family.program].graph


def test_a_form_of_a_kind_the_backend_takes_says_which_form_it_does_not():
    assert _uncollected_line(1, "onnx_model", ONNX, "eager", "PyTorch programs only") == \
        "1 onnx_model case not collected for eager: it takes PyTorch programs only"
    assert _uncollected_line(3, "module", TRAIN_STEP, "onnxruntime", "PyTorch programs and ONNX models") == \
        ("3 module cases not collected for onnxruntime: it takes PyTorch programs and ONNX models, "
         "not PyTorch training steps")
