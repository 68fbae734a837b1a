"""`python -m harness reduce` on a mismatch: the cut programs are judged by the case family's own
rule (a model's ratio to eager's error carried into the `reduced` family's candidates), so a model
whose one op is 1% off (tests/isolate_backends.py) reduces to that op keeping its signature, as a
module case does under the tolerance; and reduce points at `isolate`, often the better tool."""
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


def test_a_ratio_rule_is_carried_into_the_candidates_and_judges_them(tmp_path):
    import torch

    from harness.backend_interface import Program
    from harness.families.built import Built, GivenGolden, RatioGolden
    from harness.families.reduced import REDUCED
    from harness.families.reduced.build import build
    from harness.reduce.torch_graph import TorchGraph

    model, x = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.GELU()), torch.randn(2, 4)
    program = Program("t", model, (x,), output_names=["y"])
    with torch.no_grad():
        eager = [tuple([model(x)])]
    ratio = Built(program, [(x,)], reference=eager, golden=RatioGolden(eager, 3.0, 1e-5))
    params = TorchGraph(ratio, {"dtype": "float32"}).write(frozenset([1]), tmp_path / "gelu")   # the gelu alone
    case = REDUCED.case("t", params)
    assert case.params["ratio"] == [3.0, 1e-5, False] and case.params["tolerance"] is None
    golden = build(case).golden
    assert isinstance(golden, RatioGolden) and golden.rule == (3.0, 1e-5, False)   # against eager at the case's dtype

    default = Built(program, [(x,)])   # the module family's default: the tolerance, as before
    params = TorchGraph(default, {"dtype": "float32"}).write(frozenset([1]), tmp_path / "plain")
    assert params["ratio"] is None and type(build(REDUCED.case("t", params)).golden) is GivenGolden


def test_a_ratio_mismatch_has_one_signature_whatever_the_ratio():
    from harness.controller.signature import signature

    def mismatch(name: str, error: str, times: str) -> str:
        return signature("mismatch", "compare", f"{name}: RMS error {error} against the float64 model ({times}x "
                         "eager's 1.01e-07) exceeds 3 x eager's + 1e-05 x max(1, rms 0.7) = 1e-05")

    assert mismatch("y", "0.000246", "2.43e+03") == mismatch("y", "0.0031", "512")
    assert "Nx eager's" in mismatch("y", "1", "7")


@pytest.fixture
def project(tmp_path) -> Path:
    """The built-in cases, and a backend whose gelu comes out 1% off (the worker imports it from here)."""
    shutil.copy(TESTS / "isolate_backends.py", tmp_path / "isolate_backends.py")
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "off-gelu.yaml").write_text(json.dumps({
        "name": "off-gelu", "class": "isolate_backends:PerturbingBackend",
        "options": {"perturb": "aten.gelu.default"}, "timeout": 120}))
    return tmp_path


def reduce(project: Path, case: str) -> tuple[dict, str]:
    run = subprocess.run([sys.executable, "-m", "harness", "reduce", case, "--backend=off-gelu",
                          "--configs-dir=configs", "--out=out", "-n", "2"], cwd=project, capture_output=True,
                         text=True, timeout=600, env={"PYTHONPATH": python_path_env(), "PATH": "/usr/bin:/bin"})
    assert run.returncode == 0, run.stderr
    return json.loads((project / "out" / "reduce.json").read_text()), run.stderr


def kept_signature(result: dict) -> None:
    assert result["ops"] == ["aten.gelu.default"] and result["phase"] == "compare"
    original, reduced = (result[k].partition(": ")[2].partition(": ")[2] for k in ("signature", "reduced_signature"))
    assert original == reduced, result   # the same, the output's name aside


@pytest.mark.e2e
def test_a_module_mismatch_reduces_to_its_op_and_names_isolate(project):
    result, log = reduce(project, "module/mlp")
    kept_signature(result)
    assert "elements differ" in result["signature"]   # the module family's rule: the tolerance
    assert "python -m harness isolate module/mlp --backend off-gelu" in log


@pytest.mark.e2e
@needs("models")
@pytest.mark.nightly   # CI time: CI reduces a module's mismatch (above) and a failing model (tests/test_model_cases.py)
def test_a_model_mismatch_reduces_to_its_op_keeping_the_ratio_signature(project):
    result, log = reduce(project, "model/bert/tiny")
    kept_signature(result)
    assert "x eager's" in result["signature"] and result["original_ops"] > 50   # the model family's rule: the ratio
    assert result["seconds"] < 180 and "python -m harness isolate model/bert/tiny --backend off-gelu" in log
