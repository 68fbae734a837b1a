"""int8 programs (harness.quantization, harness.families.quantized): the params, the PT2E flow's
graph, the golden in quantization steps, and a case whose quantizer quantizes nothing."""
from __future__ import annotations

import pytest
import torch

from harness import quantization as params
from harness.families.module import module_case

BLOCKS = "cases.models.blocks"


def test_quantize_is_int8_or_nothing_and_never_a_training_step():
    assert params.validate({}) == {"quantize": None}
    assert params.validate({"quantize": "int8"}) == {"quantize": "int8"}
    with pytest.raises(ValueError, match="^quantize 'int4' is not one of int8 \\(or leave it out\\)$"):
        params.validate({"quantize": "int4"})
    with pytest.raises(ValueError, match="^quantize applies to the forward pass"):
        params.validate({"quantize": "int8", "train_step": True})
    case = module_case("mlp/int8", f"{BLOCKS}:MLP", [{"shape": [4, 16]}], quantize="int8")
    assert "int8" in case.tags and case.params["quantize"] == "int8"


def test_without_torchao_the_int8_cases_are_left_out_with_one_line(monkeypatch):
    monkeypatch.setattr(params, "installed", lambda: False)
    plain = module_case("mlp", f"{BLOCKS}:MLP", [{"shape": [4, 16]}])
    int8 = [module_case(f"{n}/int8", f"{BLOCKS}:MLP", [{"shape": [4, 16]}], quantize="int8") for n in ("a", "b")]
    kept, notices = params.collectable([plain, *int8], lambda case: True)
    assert kept == [plain]
    assert notices == {"module": ["module: 2 int8 cases (quantize: int8) not collected: torchao is not installed "
                                  f"({params.install_command(['quant'])})"]}


@pytest.mark.extra("quant")
def test_the_pt2e_flow_quantizes_linear_layers_and_the_golden_is_the_quantized_program():
    from harness.families.module.build import build

    built = build(module_case("mlp/int8", f"{BLOCKS}:MLP", [{"shape": [4, 16]}], quantize="int8"))
    assert built.golden.kind == "quantized"
    assert {"quantize_per_tensor x2", "dequantize_per_channel x2"} <= set(built.notes["quantized"].split(", "))
    with torch.no_grad():
        again = built.program.module(*built.input_sets[0])
    assert torch.equal(again[0], built.reference[0][0])   # the golden is the quantized program itself


class Notes:
    def __init__(self):
        self.notes, self.margins = {}, {}

    def note_margin(self, output, margin):
        self.margins[output] = margin


@pytest.mark.extra("quant")
def test_an_output_is_judged_in_quantization_steps_of_its_range():
    from harness.families.quantized.golden import LEVELS, QuantizedGolden

    want = torch.linspace(-1.0, 1.0, 256)
    step = 2.0 / LEVELS
    golden, context = QuantizedGolden(("y",), steps=2.0), Notes()
    assert golden.judge((want + 1.5 * step,), (want,), 0, context) is None
    assert context.margins["y"] == pytest.approx(0.75, rel=1e-4)
    problem = golden.judge((want + 3 * step,), (want,), 1, context)
    assert problem.startswith("y: 256 of 256 elements differ by more than 2 quantization steps (step 0.00784: "
                              "the output's range / 255); max error 0.0235 = 3 steps")
    assert problem.endswith("(input set 2)")
    assert golden.judge((want[:3],), (want,), 0, context) == "y: shape [3] differs from expected [256]"


@pytest.mark.extra("quant")
def test_a_program_the_quantizer_leaves_alone_is_refused():
    from harness.families.quantized.pt2e import NotQuantized, quantize_int8

    with pytest.raises(NotQuantized, match="left no quantize or dequantize op in the graph"):
        quantize_int8(torch.nn.Softmax(dim=-1), [(torch.randn(2, 3),)])


SOFTMAX_INT8 = """\
- family: module
  name: softmax_int8
  module: torch.nn:Softmax
  init: {dim: -1}
  inputs: [{shape: [2, 8]}]
  quantize: int8
"""


@pytest.mark.e2e
@pytest.mark.extra("quant")
def test_a_case_whose_quantizer_left_no_quantize_op_fails_in_setup_in_one_line(e2e_project):
    e2e_project.write("cases.yaml", SOFTMAX_INT8)
    result = e2e_project.run("--backend=eager", "--cases-file=cases.yaml", "-k", "softmax")
    assert result.ret == 1, result.output[-3000:]
    record = result.record("eager", "module/cases_file/softmax_int8")
    assert (record["outcome"], record["phase"]) == ("compile_error", "setup")
    assert record["message"].startswith("NotQuantized: torchao's X86InductorQuantizer left no quantize or dequantize "
                                        "op in the graph: no op of this program has a quantization pattern, so its "
                                        "int8 variant would test float code; leave quantize out for this case (at ")
    assert "\n" not in record["message"]
