"""Training steps (harness.training): the params, the program kind that keeps them from the ONNX
backends, the registry's train_step variants, and one step built and exported in this process: its
outputs named, its joint graph's gradients autograd's, a perturbed backward op a mismatch that
names the gradients."""
from __future__ import annotations

import pytest
from extras import needs

from harness.families.module import MODULE, module_case
from harness.training import params

BLOCKS = "harness.cases.models.blocks"


@pytest.mark.parametrize("given, message", [
    ({"train_step": "yes"}, "train_step must be true or false"),
    ({"train_step": True, "optimizer": "adam"}, "optimizer 'adam' is not one of sgd"),
    ({"train_step": True, "lr": 0}, "lr must be a positive number"),
    ({"optimizer": "sgd"}, "optimizer and lr apply to a training step only"),
])
def test_bad_params_are_one_line(given, message):
    with pytest.raises(ValueError, match=message):
        params.validate(given)


def test_a_step_is_a_program_kind_of_its_own():
    case = module_case("mlp_step", f"{BLOCKS}:MLP", [{"shape": [4, 16]}], train_step=True, optimizer="sgd")
    assert case.params["lr"] == 0.01 and "train_step" in case.tags and "train_step" in MODULE.markers   # -m train_step
    assert MODULE.kind(case.params) == "train_step" and MODULE.kind({"train_step": False}) == "torch"
    assert params.output_names(["a.weight"], "sgd") == ["loss", "grad/a.weight", "param/a.weight"]


def test_an_onnx_case_refuses_train_step_in_one_line():
    from harness.families.loader import family

    with pytest.raises(ValueError, match="train_step: onnx_model cases are ONNX models, not PyTorch programs"):
        family("onnx_model").case("m", {"model": "m.onnx", "train_step": True})


def test_the_registry_has_a_step_on_the_tiny_tier_of_at_least_24_architectures():
    from harness.cases.model import REGISTRY
    from harness.families.model import MODEL
    from harness.families.model.registry import registry_cases

    steps = [c for c in registry_cases(MODEL, REGISTRY, ("tiny", "small")) if c.params["train_step"]]
    assert len(steps) >= 24 and all(c.id.endswith("/tiny/train_step") for c in steps)
    assert all(MODEL.kind(c.params) == "train_step" and "train_step" in c.tags for c in steps)


def test_a_step_exports_to_autograds_gradients_in_its_order():
    torch = pytest.importorskip("torch")
    from harness.backend_interface import export_program, user_output_count
    from harness.families.module.build import build

    case = module_case("attention_step", f"{BLOCKS}:SelfAttention", [{"shape": [2, 5, 16], "values": "normal"}],
                       train_step=True, optimizer="sgd")
    built = build(case)
    program = built.program
    assert program.output_names == ["loss", "grad/qkv.weight", "grad/qkv.bias", "grad/out.weight", "grad/out.bias",
                                    "param/qkv.weight", "param/qkv.bias", "param/out.weight", "param/out.bias"]
    for strict in (False, True):   # a strict export orders parameters its own way
        exported = export_program(program, strict=strict)
        assert user_output_count(exported) == len(program.output_names)
        got = exported.module()(*program.example_inputs)
        for name, g, want in zip(program.output_names, got, program.module(*program.example_inputs)):
            assert torch.allclose(g, want, rtol=1e-4, atol=1e-6), name   # PyTorch's attention pair, kept whole


def _replayed(built) -> tuple:
    """The bundle's model.py of the step, run as repro.py runs it: its outputs on the first input set."""
    namespace: dict = {}
    exec("import torch\n\n\n" + built.program.module.repro_source(), namespace)   # noqa: S102 - our own source
    return namespace["Model"]()(*built.input_sets[0])


def test_a_bundle_replays_the_step_by_autograd():
    torch = pytest.importorskip("torch")
    from harness.families.module.build import build

    case = module_case("conv_step", f"{BLOCKS}:ConvBNReLU", [{"shape": [2, 3, 8, 8], "values": "normal"}],
                       train_step=True, optimizer="sgd")
    built = build(case)
    assert built.program.module.input_names == ["x"]
    for name, got, want in zip(built.program.output_names, _replayed(built), built.reference[0]):
        assert torch.equal(got, want), name


@needs("models")
def test_a_bundle_replays_a_language_models_own_loss_with_its_dropout_off():
    torch = pytest.importorskip("torch")
    from harness.families.model import MODEL
    from harness.families.model.build import build

    config = {"vocab_size": 128, "n_embd": 32, "n_layer": 1, "n_head": 2, "n_positions": 64, "use_cache": False}
    case = MODEL.case("gpt2/step", {"transformers": "GPT2LMHeadModel", "config": config,
                                    "attn_implementation": "eager", "inputs": {"input_ids": {"shape": [2, 8]}},
                                    "train_step": True})
    built = build(case)
    assert built.notes["loss"] == "the architecture's own `loss`" and built.program.module.input_names[-1] == "labels"
    for name, got, want in zip(built.program.output_names, _replayed(built), built.reference[0]):
        assert torch.equal(got, want), name


@needs("models")
def test_a_step_whose_joint_graph_does_not_export_is_one_line_with_the_reason():
    """Bloom's tied head: its strict export's joint graph leaves a parameter without a gradient."""
    pytest.importorskip("torch")
    from harness.backend_interface import export_program
    from harness.cases.model import REGISTRY
    from harness.families.model import MODEL
    from harness.families.model.build import build
    from harness.families.model.registry import registry_cases
    from harness.training.joint import JointGraphError

    bloom = next(c for c in registry_cases(MODEL, REGISTRY, ("tiny",)) if c.id == "model/bloom/tiny")
    built = build(MODEL.case("bloom/tiny/train_step", {**bloom.params, "train_step": True}))
    export_program(built.program)   # the non-strict export's joint graph exports
    with pytest.raises(JointGraphError) as raised:   # the strict one's (the torch-mlir backends') does not
        export_program(built.program, strict=True)
    message = str(raised.value)
    assert message.startswith("the joint forward-and-backward graph does not export: AssertionError: ")
    assert "did not receive a gradient" in message and "\n" not in message
