"""Stage fingerprints (harness.stages.fingerprinting): the canonical forms they hash, the records and
reports that carry them, and, end to end, that two cold runs of the same cases give the same
fingerprint for every stage on each backend while a different case gives a different one."""
from __future__ import annotations

import pytest
from builtin_stages import INDUCTOR_STAGES, IREE_STAGES, MLIR_STAGES, ONNXRUNTIME_STAGES
from e2e_support import TINY_CASES
from extras import needs
from test_markdown_report import record

from harness.backend_interface import CaseContext
from harness.case_findings import Findings
from harness.outcomes import Outcome
from harness.protocol import CaseResult, decode, encode
from harness.record import Record
from harness.stages.fingerprinting import DIGITS, canonical_mlir, digest, fingerprint_of

LOWERED = """\
#loc = loc("/src/model.py":12:0)
#loc3 = loc(fused[#loc, "x(y)"])
module attributes {torch.debug_module_name = "m"} {
  func.func @main(%arg0: tensor<4xf32> loc("/src/model.py":3:9)) -> tensor<4xf32> {
    %0 = arith.addf %arg0, %arg0 : tensor<4xf32> loc(#loc3)
    return %0 : tensor<4xf32> loc(callsite("f"("/a.py":1:2) at #loc))
  } loc(#loc)
} loc(#loc)
"""
WITHOUT_LOCATIONS = """\
module attributes {torch.debug_module_name = "m"} {
  func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = arith.addf %arg0, %arg0 : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
"""


def test_mlir_text_without_its_locations_is_the_text_printed_without_debug_info():
    assert canonical_mlir(LOWERED) == WITHOUT_LOCATIONS
    assert fingerprint_of(LOWERED) == fingerprint_of(WITHOUT_LOCATIONS)
    moved = LOWERED.replace("model.py\":12:0", "other.py\":99:4").replace(":3:9", ":40:1")
    assert fingerprint_of(moved) == fingerprint_of(LOWERED)


def test_a_different_op_or_operand_is_a_different_fingerprint():
    assert fingerprint_of(LOWERED.replace("arith.addf", "arith.mulf")) != fingerprint_of(LOWERED)
    assert fingerprint_of(LOWERED.replace("4xf32", "8xf32")) != fingerprint_of(LOWERED)
    assert len(fingerprint_of(LOWERED)) == DIGITS and int(fingerprint_of(LOWERED), 16) >= 0


def test_a_name_ending_in_loc_is_not_a_location():
    text = 'llvm.func @malloc(i64) -> !llvm.ptr\nfunc.func @f() attributes {note = "alloc(3)"} {\n  return\n}\n'
    assert canonical_mlir(text) == text


def test_the_parts_of_a_digest_keep_their_boundaries():
    assert digest("ab", "c") != digest("a", "bc")
    assert digest(b"x") == fingerprint_of(b"x") == digest("x")


def test_an_fx_graph_is_fingerprinted_by_its_ops_and_shapes_not_its_generated_names():
    torch = pytest.importorskip("torch")

    class Scale(torch.nn.Module):
        def __init__(self, factor: float):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.full((4,), factor))

        def forward(self, x):
            return torch.relu(x * self.weight)

    def exported(factor=2.0, shape=(3, 4)):
        return torch.export.export(Scale(factor), (torch.ones(shape),))

    first = exported()
    renamed = exported()
    for node in renamed.graph.nodes:   # a generated name differs; the program does not
        if node.op == "call_function":
            node.name = node.name + "_7"
    assert fingerprint_of(first) == fingerprint_of(renamed) == fingerprint_of(exported())
    assert fingerprint_of(exported(factor=3.0)) != fingerprint_of(first)   # a weight's value
    assert fingerprint_of(exported(shape=(5, 4))) != fingerprint_of(first)   # an input's shape
    assert fingerprint_of(first.graph_module) == fingerprint_of(first.graph)


def test_an_unknown_output_is_refused_with_what_to_give():
    with pytest.raises(TypeError, match="give its text or bytes"):
        fingerprint_of(3.5)


def test_the_context_records_fingerprints_by_stage():
    context = CaseContext(lambda phase: None)
    context.fingerprint("linalg_ir", WITHOUT_LOCATIONS)
    assert context.fingerprints == {"linalg_ir": fingerprint_of(WITHOUT_LOCATIONS)}


def test_fingerprints_travel_in_the_result_and_the_record_and_an_older_report_loads():
    result = CaseResult(Outcome.PASSED, None, "", Findings(fingerprints={"exported": "0123456789abcdef"}))
    assert decode(encode(result)).findings.fingerprints == {"exported": "0123456789abcdef"}
    data = record("a")
    assert "fingerprints" not in data
    assert Record.from_json(data).findings.fingerprints == {}
    data["fingerprints"] = {"llvm_ir": "fedcba9876543210"}
    assert Record.from_json(data).to_json()["fingerprints"] == {"llvm_ir": "fedcba9876543210"}


# The tiny project's two conv_backward cases and a module case with weights.
MODULE_CASES = ("    module_case('mlp', 'harness.cases.models.blocks:MLP', [{'shape': [4, 16]}]),\n"
                "    module_case('mlp_batch8', 'harness.cases.models.blocks:MLP', [{'shape': [8, 16]}]),\n]\n")
CASES = "from harness.families.module import module_case\n" + TINY_CASES.replace("]\n", MODULE_CASES)
# Two cases every backend compiles (onnxruntime takes no convolution_backward: torch.onnx cannot export it)
FIRST_CASE, OTHER_CASE = "module/mlp", "module/mlp_batch8"
NIGHTLY = pytest.mark.nightly
BACKENDS = [pytest.param("linalg-on-tensors", MLIR_STAGES, id="linalg-on-tensors"),
            # CI time: CI runs linalg-on-tensors's; the nightly the others too
            pytest.param("inductor", INDUCTOR_STAGES, id="inductor", marks=NIGHTLY),
            pytest.param("onnxruntime", ONNXRUNTIME_STAGES, id="onnxruntime", marks=[needs("onnx"), NIGHTLY]),
            pytest.param("iree-llvm-cpu", IREE_STAGES, id="iree-llvm-cpu", marks=[needs("iree"), NIGHTLY])]


@pytest.mark.parametrize(("backend", "stages"), BACKENDS)
def test_two_cold_runs_give_the_same_fingerprints_and_another_case_another(e2e_project, backend, stages):
    pytest.importorskip("torch_mlir")
    project = e2e_project
    project.write("cases/tiny.py", CASES)
    runs = []
    for run in ("first", "second"):   # each a fresh pytest process with fresh workers and its own empty stage cache
        result = project.run(f"--backend={backend}", "-k", "conv_backward or module", f"--cache-dir={run}-stages")
        assert result.results, result.output
        assert not [r["case"] for r in result.results if "hit" in r["cache"].values()], "a stage was read, not computed"
        runs.append({r["case"]: r for r in result.results})
    first, second = runs
    assert set(first) == {"conv_backward/2d/tiny", "conv_backward/2d/tiny_stride2", FIRST_CASE, OTHER_CASE}
    for case, data in first.items():
        if data["outcome"] == "passed":
            assert tuple(data["fingerprints"]) == stages, (case, data["fingerprints"])
    assert first[FIRST_CASE]["outcome"] == first[OTHER_CASE]["outcome"] == "passed"
    stage = stages[0]
    assert first[FIRST_CASE]["fingerprints"][stage] != first[OTHER_CASE]["fingerprints"][stage]
    changed = {(case, stage) for case, data in first.items() for stage, value in data["fingerprints"].items()
               if second[case]["fingerprints"].get(stage) != value}
    assert not changed, sorted(changed)


def test_a_process_wide_message_counter_does_not_count():
    """MLIR's runtime verification numbers its messages per process: the same case's LLVM text
    after other cases in its worker must fingerprint as when it runs first."""
    from harness.stages.fingerprinting import fingerprint_of

    def text(first: int, message: str) -> str:
        return (f'llvm.mlir.global private constant @assert_msg_{first + 1}(dense<"0x{message}">)\n'
                f'llvm.mlir.global private constant @assert_msg_{first}(dense<"0x4142">)\n'
                f"llvm.call @puts(@assert_msg_{first + 1})\nllvm.call @puts(@assert_msg_{first})\n")

    assert fingerprint_of(text(0, "4343")) == fingerprint_of(text(46, "4343"))
    assert fingerprint_of(text(0, "4343")) != fingerprint_of(text(0, "4444"))


def test_a_runtime_message_fingerprints_without_its_location():
    """A runtime-verification message names the files that traced the program (absolute paths): one
    build run from two folders, or from a stage cache entry another folder wrote, must fingerprint
    alike; the message's op and check still count."""
    from harness.stages.fingerprinting import fingerprint_of

    def text(check: str, folder: str) -> str:
        message = f'ERROR: Runtime op verification failed\n{check}\nLocation: loc("{folder}/build.py":51:0)\0'
        data = message.encode()
        return (f'llvm.mlir.global private constant @assert_msg(dense<"0x{data.hex().upper()}"> : '
                f'tensor<{len(data)}xi8>) {{addr_space = 0 : i32}} : !llvm.array<{len(data)} x i8>\n')

    assert fingerprint_of(text("out-of-bounds", "/work/main")) == fingerprint_of(text("out-of-bounds", "/tmp/ci"))
    assert fingerprint_of(text("out-of-bounds", "/work/main")) != fingerprint_of(text("overflow", "/work/main"))
