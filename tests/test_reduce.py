"""`python -m harness reduce`: the search alone, the cut graph in eager PyTorch, and two modules of
a dozen ops with one failing op buried in them, reduced on the real tosa backend: a lowering that
fails (math.erf in float64 does not legalize) and a segfault (nonzero of a 0-d tensor crashes
torch-mlir's decomposition); then an ONNX model cut node by node. The modules are written here,
run as a user's project would."""
from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path

import pytest
from e2e_support import python_path_env
from extras import needs

from harness.reduce.search import DeltaDebugger

BURIED = '''\
import torch


class Trunk(torch.nn.Module):
    """A dozen ops around one `culprit(c)`."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        a = self.lin(x).relu()
        b = a * 2 + 1
        c = torch.tanh(b) - a
        d = self.culprit(c)
        e = c.sigmoid() * b + d
        f = e.sum(dim=1, keepdim=True)
        g = (e / (f + 1)).abs()
        return g.exp() - g, c.neg()


class BuriedErf(Trunk):
    def culprit(self, c):
        return torch.erf(c)


class BuriedNonzero(Trunk):
    def culprit(self, c):
        return torch.nonzero(c.mean()).to(c.dtype).sum()
'''
CASES = '''\
- {family: module, name: buried_erf, module: "buried:BuriedErf", inputs: [{shape: [4, 8], dtype: float64}]}
- {family: module, name: buried_nonzero, module: "buried:BuriedNonzero", inputs: [{shape: [4, 8]}]}
'''


@pytest.fixture
def project(tmp_path) -> Path:
    (tmp_path / "buried.py").write_text(BURIED)
    (tmp_path / "cases.yaml").write_text(CASES)
    return tmp_path


def harness(cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={"PYTHONPATH": python_path_env(), "PATH": "/usr/bin:/bin"})


# --------------------------------------------------------------------------- the search

@pytest.mark.parametrize("parallel", [1, 3])
def test_delta_debugging_finds_the_two_units_the_failure_needs_whatever_the_parallelism(parallel):
    batches = []

    def test(candidates):
        batches.append(len(candidates))
        return [{3, 7} <= set(kept) for kept in candidates]

    search = DeltaDebugger(12, test, parallel)
    assert search.reduce() == {3, 7}
    assert max(batches) <= parallel
    assert search.candidates_run == sum(batches) and search.steps[-1].nodes == 2


def test_a_failure_that_comes_and_goes_is_asked_twice_before_the_search_ends():
    """The single removals that lost the failure are run again once: a crash that depends on the
    worker's memory (torch-mlir's ONNX conversion) cost one run of a 3-unit candidate."""
    answers = {frozenset({3}): [False, True]}   # unit 7's removal loses the failure the first time only

    def test(candidates):
        return [answers[kept].pop(0) if kept in answers else {3, 7} <= set(kept) for kept in candidates]

    assert DeltaDebugger(12, test).reduce() == {3}


def test_a_candidate_that_is_no_program_counts_as_passing():
    search = DeltaDebugger(4, lambda candidates: [None if not kept else 0 in kept for kept in candidates])
    assert search.reduce() == {0}


# --------------------------------------------------------------------------- the cut graph, in eager PyTorch

def test_a_whole_program_that_passes_is_one_error_line(tmp_path):
    """The exported program, uncut, passes where the case fails: the error says so (a candidate's
    result is False when it passes, which is not a Failure)."""
    from harness.controller.signature import Failure
    from harness.errors import HarnessInputError
    from harness.reduce.engine import Reduction

    reduction = Reduction.__new__(Reduction)   # no workers: the candidate's run is faked below
    reduction.case, reduction.pools = types.SimpleNamespace(id="module/m"), [None]
    reduction._candidate_failure = lambda pool, params: False
    graph = types.SimpleNamespace(units=[0, 1], write=lambda kept, folder: {"kept": sorted(kept)})
    with pytest.raises(HarnessInputError, match=r"fails otherwise \(it passes; the case: RuntimeError: boom"):
        reduction._check_whole(graph, Failure("run", "RuntimeError: boom"), tmp_path)


def test_the_whole_graph_and_a_cut_of_it_compute_what_the_program_computed(tmp_path):
    import importlib.util

    import torch

    from harness.backend_interface import Program
    from harness.families.interface import Built
    from harness.families.reduced import REDUCED
    from harness.reduce.torch_graph import TorchGraph

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(6, 5)            # 30 weights: saved in constants.pt
            self.register_buffer("scale", torch.tensor([0.5, 2.0, 1.0, 3.0, 1.5]))   # written out

        def forward(self, x):
            values, indices = torch.max(self.lin(x) * self.scale, dim=1)   # a unit with two results
            return values.exp(), indices

    torch.manual_seed(0)
    model, x = Model(), torch.randn(3, 6)
    graph = TorchGraph(Built(Program("t", model, (x,), output_names=["values", "indices"]), [(x,)],
                             tolerance=(1e-3, 1e-4)), {"dtype": "float32"})
    names = [node.name for node in graph.units]
    assert names == ["linear", "mul", "max_1", "getitem", "getitem_1", "exp"]

    def load(kept, folder):
        params = graph.write(frozenset(kept), tmp_path / folder)
        spec = importlib.util.spec_from_file_location(folder, params["module"])
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return params, module.Model()(*module.example_inputs())

    params, outputs = load(range(6), "whole")
    assert params["output_names"] == ["values", "indices"]
    assert REDUCED.case("t", params).params["tolerance"] == {"rtol": 1e-3, "atol": 1e-4}   # the case's own, kept
    torch.testing.assert_close(list(outputs), list(model(x)))
    assert (tmp_path / "whole" / "constants.pt").is_file()
    assert "torch.tensor([0.5, 2.0, 1.0, 3.0, 1.5]" in (tmp_path / "whole" / "model.py").read_text()

    params, outputs = load([1], "cut")   # mul alone: its input is the linear's value, fed in
    assert params["output_names"] == ["mul"]
    torch.testing.assert_close(outputs[0], model.lin(x) * model.scale)
    assert graph.op_names(frozenset([1])) == ["aten.mul.Tensor"]
    assert graph.write(frozenset(), tmp_path / "empty") is None
    params, outputs = load([0, 1, 2, 4], "one_result")   # max without its values: the indices alone
    assert params["output_names"] == ["indices"] and graph.op_names(frozenset([0, 1, 2, 4])) == [
        "aten.linear.default", "aten.mul.Tensor", "aten.max.dim"]
    torch.testing.assert_close(outputs[0], model(x)[1])


# --------------------------------------------------------------------------- real reductions on tosa

def rerun(folder: Path) -> dict:
    """pytest --cases-file=case.yaml from the reduced program's folder: its one record."""
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--cases-file=case.yaml",
                          "--backend=tosa", "--report-json=rerun.json", "-q", "-n", "0"],
                         cwd=folder, capture_output=True, text=True, timeout=300,
                         env={"PYTHONPATH": python_path_env(), "PATH": "/usr/bin:/bin"})
    assert run.returncode == 1, run.stdout + run.stderr
    [record] = json.loads((folder / "rerun.json").read_text())["results"]
    return record


@pytest.mark.e2e
def test_one_case_is_reduced_into_a_program_its_case_file_reruns(project):
    out = project / "out"
    run = harness(project, "reduce", "module/cases_file/buried_erf", "--backend=tosa", "--cases-file=cases.yaml",
                  f"--out={out}", "-n", "2")
    assert run.returncode == 0, run.stderr
    result = json.loads((out / "reduce.json").read_text())
    assert result["signature"] == "failed to legalize operation 'math.erf' that was explicitly marked illegal"
    assert result["phase"] == "compile" and result["reduced_signature"] == result["signature"]
    assert result["original_ops"] >= 12 and result["ops"] == ["aten.erf.default"] and result["reduced_ops"] == 1
    assert result["candidates_run"] >= len(result["steps"]) > 0 and result["seconds"] < 120
    assert {"model.py", "inputs.pt", "case.yaml", "bundle", "reduce.json"} <= {p.name for p in out.iterdir()}
    assert (out / "bundle" / "repro.py").is_file() and any((out / "bundle" / "ir").iterdir())
    assert "nodes kept after" in run.stderr and not run.stdout   # progress goes to stderr
    record = rerun(out)
    assert (record["signature"], record["phase"]) == (result["signature"], result["phase"])
    alone = subprocess.run([sys.executable, "model.py"], cwd=out, capture_output=True, text=True, timeout=120)
    assert alone.returncode == 0 and "tensor(" in alone.stdout, alone.stderr   # the program runs in eager alone


@pytest.mark.e2e
@pytest.mark.nightly   # CI time: reduce's CI test is one PyTorch case's (test_one_case_is_reduced_...)
def test_a_training_steps_joint_graph_is_cut_keeping_its_signature(project):
    """The self-attention step fails on linalg-on-tensors in decompose: its joint graph (55 ops) is
    cut to the CPU flash attention and the permute and views whose strides PyTorch's decomposition
    of it breaks."""
    out = project / "out"
    run = harness(project, "reduce", "module/train_step_self_attention", "--backend=linalg-on-tensors",
                  f"--out={out}", "-n", "2")
    assert run.returncode == 0, run.stderr
    result = json.loads((out / "reduce.json").read_text())
    assert result["phase"] == "decompose" and result["signature"].startswith("ValueError: Cannot view a tensor")
    assert result["reduced_signature"] == result["signature"] and result["original_ops"] > 40
    assert "aten._scaled_dot_product_flash_attention_for_cpu.default" in result["ops"] and result["reduced_ops"] <= 6


@pytest.mark.e2e
@pytest.mark.nightly   # CI time: reduce's CI test is one PyTorch case's (test_one_case_is_reduced_...)
def test_every_signature_group_of_a_report_is_reduced_and_the_triage_reports_link_them(project):
    """The two buried failures (a lowering that fails, a segfault) from a real run's report:
    at most 3 ops each, the culprit kept, the same signature when case.yaml is rerun."""
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--cases-file=cases.yaml",
                          "--backend=tosa", "--report-json=report.json", "-q", "-n", "0"], cwd=project,
                         capture_output=True, text=True, timeout=300,
                         env={"PYTHONPATH": python_path_env(), "PATH": "/usr/bin:/bin"})
    assert run.returncode == 1, run.stdout + run.stderr
    run = harness(project, "reduce", "--all", "report.json", "--out=reduced", "-n", "2", timeout=600)
    assert run.returncode == 0 and run.stdout.strip() == "2 of 2 groups reduced: reduced/reductions.json", run.stderr
    groups = {e["case"]: e for e in json.loads((project / "reduced" / "reductions.json").read_text())["reductions"]}
    for case, culprit, signature in [
            ("buried_erf", "aten.erf.default", "failed to legalize operation 'math.erf'"),
            ("buried_nonzero", "aten.nonzero.default", "SIGSEGV in ")]:
        group = groups[f"module/cases_file/{case}"]
        assert group["status"] == "reduced" and group["signature"].startswith(signature)
        assert group["original_ops"] >= 12 and group["reduced_ops"] <= 3 and culprit in group["ops"]
        folder = project / "reduced" / group["folder"]
        assert json.loads((folder / "reduce.json").read_text())["seconds"] < 120
        assert rerun(folder)["signature"] == group["signature"]

    run = harness(project, "report", "report.json", "--md=triage.md", "--html=triage.html",
                  "--reductions=reduced/reductions.json")
    assert run.returncode == 0, run.stderr
    markdown, page = (project / "triage.md").read_text(), (project / "triage.html").read_text()
    for group in groups.values():
        link = f"reduced/{group['folder']}/model.py"
        assert f"]({link})" in markdown and json.dumps(link) in page


@pytest.mark.e2e
@needs("onnx")
@pytest.mark.nightly   # CI time: reduce's CI test is one PyTorch case's (test_one_case_is_reduced_...)
def test_an_onnx_model_is_cut_node_by_node(project):
    """ONNX's node test of RotaryEmbedding, expanded into 30 nodes, segfaults torch-mlir's ONNX
    conversion on tosa; the reduction is an onnx_model case of at most 3 nodes, Split kept."""
    (project / "onnx.yaml").write_text("- {family: onnx_node, name: rotary, test: test_rotary_embedding_expanded}\n")
    out = project / "onnx_out"
    run = harness(project, "reduce", "onnx_node/cases_file/rotary", "--backend=tosa", "--cases-file=onnx.yaml",
                  f"--out={out}", "-n", "2")
    assert run.returncode == 0, run.stderr
    result = json.loads((out / "reduce.json").read_text())
    assert result["signature"].startswith("SIGSEGV in ") and result["phase"] == "lower"
    assert result["original_ops"] == 30 and result["reduced_ops"] <= 3 and "Split" in result["ops"]
    assert result["program"] == "model.onnx.txt" and "= Split <axis" in (out / "model.onnx.txt").read_text()
    assert "family: onnx_model" in (out / "case.yaml").read_text()
    assert rerun(out)["signature"] == result["signature"]


# --------------------------------------------------------------------------- bad input

@pytest.mark.e2e
def test_a_case_that_passes_has_nothing_to_reduce(project):
    run = harness(project, "reduce", "module/cases_file/buried_erf", "--backend=eager", "--cases-file=cases.yaml",
                  "--out=out")
    assert run.returncode == 0 and run.stdout.strip() == \
        "module/cases_file/buried_erf passes on eager: nothing to reduce", run.stderr
    assert not (project / "out" / "reduce.json").exists()


@pytest.mark.e2e
@pytest.mark.parametrize("args, message", [
    (["module/buried_erf", "--backend=eager", "--cases-file=cases.yaml"],
     "error: module/buried_erf: no such case in cases.yaml (2 cases); did you mean module/cases_file/buried_erf?"),
    (["module/cases_file/buried_erf", "--backend=nope", "--cases-file=cases.yaml"], "error: --backend=nope: unknown"),
    (["module/cases_file/buried_erf", "--cases-file=cases.yaml"], "error: reduce: needs a CASE and --backend"),
    (["module/cases_file/buried_erf", "--backend=eager", "--cases-file=missing.yaml"],
     "error: missing.yaml: cannot read: No such file or directory"),   # as pytest --cases-file says
])
def test_bad_input_is_one_line(project, args, message):
    run = harness(project, "reduce", *args, "--out=out")
    assert run.returncode == 2 and run.stderr.startswith(message) and len(run.stderr.splitlines()) == 1, run.stderr
