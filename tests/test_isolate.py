"""`python -m harness isolate`: a backend that runs the exported graph exactly except one aten op,
whose results it makes 1% off (tests/isolate_backends.py), gets that op named first, with the
module it came from, on the built-in module cases (base CI) and a tiny transformers model (the
models extra); a wrong fusion that no op shows alone is cut at the first divergent prefix; a
culprit's repro bundle runs; bad input is one line."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from e2e_support import python_path_env
from extras import needs

TESTS = Path(__file__).parent


MIXED = """
import torch
import torch.nn.functional as F


class Mixed(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        noisy = F.dropout(self.lin(x), 0.5, training=True)
        return torch.tanh(x).to(torch.float16).to(torch.float32) + noisy.mean()
"""


def test_the_reference_runs_at_float64_throughout_and_leaves_random_ops_out(tmp_path, monkeypatch):
    import torch

    from harness.families.module import MODULE, module_case
    from harness.isolate.reference import ExportedRuns, write_ops

    (tmp_path / "mixed.py").write_text(MIXED)
    monkeypatch.syspath_prepend(str(tmp_path))
    case = module_case("mixed", "mixed:Mixed", [{"shape": [4, 8]}])
    request = MODULE.worker_request(case.params)
    runs = ExportedRuns(case, request)
    floating = [v for v in runs.at_float64.values() if isinstance(v, torch.Tensor) and v.is_floating_point()]
    assert floating and all(v.dtype == torch.float64 for v in floating)   # the float16 round trip widened too
    written = write_ops(case, request, tmp_path / "out")
    ops = [op["op"] for op in written["ops"]]
    assert "aten.linear.default" in ops and "aten.tanh.default" in ops
    assert not any("dropout" in op for op in ops)   # random: eager run twice does not repeat it
    tanh = next(op for op in written["ops"] if op["op"] == "aten.tanh.default")
    assert (tanh["shapes"], tanh["dtypes"], tanh["module"]) == ([[4, 8]], ["float32"], "Mixed")
    references = torch.load(Path(tanh["folder"]) / "references.pt")
    assert references["want"][0].dtype == torch.float64 and references["eager"][0].dtype == torch.float32
    assert written["ratio"] is None and written["tolerance"] is None   # the module family's default rule


CONV_BACKWARD, ATTENTION_BACKWARD = "convolution_backward", "_scaled_dot_product_flash_attention_for_cpu_backward"
BACKWARD = (CONV_BACKWARD, ATTENTION_BACKWARD)   # ops of training steps' joint graphs


def perturbing(name: str, **options) -> str:
    """A PerturbingBackend config (JSON is YAML)."""
    return json.dumps({"name": name, "class": "isolate_backends:PerturbingBackend", "options": options,
                       "timeout": 120})


@pytest.fixture
def project(tmp_path) -> Path:
    """The built-in cases and configs, plus configs/ of perturbing backends (the worker imports the
    backend from the project's folder)."""
    shutil.copy(TESTS / "isolate_backends.py", tmp_path / "isolate_backends.py")
    configs = tmp_path / "configs"
    configs.mkdir()
    for op in ("gelu", "layer_norm", "scaled_dot_product_attention", "conv2d", "batch_norm", *BACKWARD):
        (configs / f"off-{op}.yaml").write_text(perturbing(f"off-{op}", perturb=f"aten.{op}.default"))
    (configs / "fused.yaml").write_text(perturbing("fused", perturb="aten.gelu.default",
                                                   perturb_after="aten.linear.default"))
    (configs / "crashes.yaml").write_text(perturbing("crashes", perturb="aten.linear.default",
                                                     crash_on_cut="aten.gelu.default"))
    (configs / "whole-only.yaml").write_text(perturbing("whole-only", perturb="aten.gelu.default",
                                                        refuse_cut_programs=True))
    return tmp_path


def isolate(project: Path, case: str, backend: str, *more: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", "isolate", case, f"--backend={backend}",
                           "--configs-dir=configs", "--out=out", *more], cwd=project, capture_output=True,
                          text=True, timeout=600, env={"PYTHONPATH": python_path_env(), "PATH": "/usr/bin:/bin"})


def culprits(run: subprocess.CompletedProcess) -> dict:
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


@pytest.mark.e2e
# CI time: CI names a convolution's and an attention's module; the nightly the three others too.
@pytest.mark.parametrize("case, op, module", [
    pytest.param("module/mlp", "aten.gelu.default", "MLP", marks=pytest.mark.nightly),
    pytest.param("module/residual_layer_norm", "aten.layer_norm.default", "norm (LayerNorm)",
                 marks=pytest.mark.nightly),
    ("module/self_attention", "aten.scaled_dot_product_attention.default", "SelfAttention"),
    ("module/conv_bn_relu", "aten.conv2d.default", "conv (Conv2d)"),
    pytest.param("module/conv_bn_relu", "aten.batch_norm.default", "bn (BatchNorm2d)", marks=pytest.mark.nightly),
])
def test_the_perturbed_op_is_named_first_with_its_module(project, case, op, module):
    result = culprits(isolate(project, case, f"off-{op.split('.')[1]}", "--format=json"))
    first = result["culprits"][0]
    assert (result["case"], first["op"], first["module"]) == (case, op, module), result
    assert first["error"] > 1000 * first["eager_error"] and first["shapes"] and first["dtypes"][0] == "float32"
    assert set(first) >= {"op", "node", "module", "error", "eager_error", "shapes", "dtypes", "bundle"}
    assert result["seconds"] > 0 and not result["failed_ops"]


@pytest.mark.e2e
@pytest.mark.parametrize("case, op, module", [
    ("module/train_step_conv_bn_relu", CONV_BACKWARD, "conv (Conv2d), backward"),
    pytest.param("module/train_step_self_attention", ATTENTION_BACKWARD, "SelfAttention, backward",
                 marks=pytest.mark.nightly),   # CI time: CI names the convolution's backward
])
def test_a_training_steps_backward_op_is_named_with_the_module_it_differentiates(project, case, op, module):
    result = culprits(isolate(project, case, f"off-{op}", "--format=json"))
    first = result["culprits"][0]
    assert (first["op"], first["module"]) == (f"aten.{op}.default", module), result
    assert "blocks.py" in first["source"]   # the forward code's line, not the joint graph's


@pytest.mark.e2e
@needs("models")
@pytest.mark.parametrize("case, op, gradient, module", [
    ("model/resnet/tiny/train_step", CONV_BACKWARD, "grad/embedder.embedder.convolution.weight",
     "embedder.embedder.convolution (Conv2d), backward"),
    pytest.param("model/bert/tiny/train_step", ATTENTION_BACKWARD, "grad/encoder.layer.0.attention.self.query.weight",
                 "encoder.layer.0.attention.self (BertSelfAttention), backward",
                 marks=pytest.mark.nightly),   # CI time: CI isolates the ResNet's step
])
def test_a_models_training_step_mismatches_by_gradient_and_isolates_to_the_backward_op(project, case, op, gradient,
                                                                                      module):
    run = isolate(project, case, f"off-{op}", "--format=json")
    mismatch = next(line for line in run.stderr.splitlines() if " mismatches on " in line)
    assert " outputs differ: " in mismatch and gradient in mismatch   # counted, each gradient named
    result = culprits(run)
    assert {c["op"] for c in result["culprits"]} == {f"aten.{op}.default"}, result   # one per layer
    assert module in {c["module"] for c in result["culprits"]}
    assert not result["failed_ops"] and result["compiles"] <= 4


@pytest.mark.e2e
@needs("models")
def test_a_tiny_transformer_gets_its_gelu_named_with_the_module_path(project):
    result = culprits(isolate(project, "model/bert/tiny", "off-gelu", "--format=json"))
    assert [c["op"] for c in result["culprits"]] == ["aten.gelu.default"] * 2   # one per layer
    assert {c["module"] for c in result["culprits"]} == {
        f"encoder.layer.{i}.intermediate.intermediate_act_fn (GELUActivation)" for i in (0, 1)}
    assert result["compiles"] <= 4 and result["seconds"] < 180


@pytest.mark.e2e
def test_the_text_names_the_culprit_and_its_bundle_reproduces_it(project):
    run = isolate(project, "module/mlp", "off-gelu")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("module/mlp on off-gelu: 1 culprit op of 3")
    assert lines[1].startswith("1. aten.gelu.default (node gelu): error ") and "x eager's" in lines[1]
    assert "blocks.py" in lines[3] and "F.gelu(self.up(x))" in lines[3]   # the source line
    assert lines[4] == "   inputs: [4, 32] float32"
    bundle = project / "out" / "bundles" / "off-gelu" / "gelu"
    assert lines[5].startswith("   bundle: ") and (bundle / "repro.py").is_file()
    assert "-m harness isolate module/mlp --backend=off-gelu" in (bundle / "README.md").read_text()   # python3 too
    assert "torch.ops.aten.gelu.default" in (bundle / "model.py").read_text()
    assert sorted(p.name for p in (bundle / "inputs").iterdir()) == ["set0_linear.npy"]   # its reference input
    repro = subprocess.run([sys.executable, "repro.py"], cwd=bundle, capture_output=True, text=True, timeout=120)
    assert "-m harness isolate module/mlp --backend=off-gelu" in repro.stdout + repro.stderr   # no standalone


@pytest.mark.e2e
def test_a_wrong_fusion_no_op_shows_alone_is_cut_at_the_first_divergent_prefix(project):
    result = culprits(isolate(project, "module/mlp", "fused", "--format=json"))
    assert result["culprits"] == [] and result["cut"]["op"] == "aten.gelu.default", result
    assert result["cut"]["node"] == "gelu" and result["cut"]["prefixes_run"] <= 3


@pytest.mark.e2e
def test_an_op_the_backend_crashes_on_is_that_ops_failure_and_the_others_are_still_judged(project):
    result = culprits(isolate(project, "module/mlp", "crashes", "--format=json"))
    assert [c["op"] for c in result["culprits"]] == ["aten.linear.default"] * 2
    [failed] = result["failed_ops"]
    assert failed["op"] == "aten.gelu.default" and failed["failure"].startswith("crashed in phase compile: ")


@pytest.mark.e2e
@pytest.mark.parametrize("case, backend, message", [
    ("module/nope", "off-gelu", "error: module/nope: no such case in "),
    ("module/mlp", "off-conv2d", "error: module/mlp: passes on off-conv2d: nothing to isolate"),
    ("module/mlp", "whole-only", "error: module/mlp: not isolatable on whole-only: it cannot run a one-op program "
                                 "(aten.linear.default: compile error in phase compile: RuntimeError: "),
    pytest.param("onnx_node/test_abs", "off-gelu", "error: onnx_node/test_abs: off-gelu takes PyTorch programs only, "
                 "not this case's program (family onnx_node); isolate it on a backend that does",
                 marks=pytest.mark.extra("onnx")),
])
def test_bad_input_is_one_line(project, case, backend, message):
    run = isolate(project, case, backend)
    assert run.returncode == 2 and run.stderr.splitlines()[-1].startswith(message), run.stderr
    assert "Traceback" not in run.stderr and not run.stdout


@pytest.mark.e2e
def test_a_case_failing_before_the_comparison_names_its_phase(project):
    shutil.copy(TESTS / "fake_backends.py", project / "fake_backends.py")
    (project / "configs" / "raises.yaml").write_text(json.dumps({
        "name": "raises", "class": "fake_backends:FaultyBackend", "options": {"fault": "raise", "phase": "lower"}}))
    run = isolate(project, "module/mlp", "raises")
    assert run.returncode == 2 and run.stderr.splitlines()[-1] == (
        "error: module/mlp: fails on raises as compile error in phase lower, not as a mismatch: isolate finds wrong "
        "numbers; python -m harness reduce finds where it fails"), run.stderr
