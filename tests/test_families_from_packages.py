"""Case families from other packages: through an ini path in a tiny project, and through an entry
point of examples/external_project installed beside the harness wheel in a fresh venv."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from e2e_support import REPO, run_pytest_with
from extras import installed
from venvs import harness_wheel, pip_install, unactivated_env, venv_with_harness

from harness.entry_points import DISTRIBUTION
from harness.errors import HarnessInputError
from harness.families import loader as plugins

SCALED_FAMILY = '''\
"""A family of this project: x * scale. Pure Python; its builder lives in scaled_torch.py."""
from harness.api import Family


def validate(params):
    scale = params.get("scale")
    if not isinstance(scale, (int, float)):
        raise ValueError(f"scale must be a number, not {scale!r}")
    return {"scale": float(scale), "shape": list(params.get("shape", [2, 3])), "dtype": "float32"}


FAMILY = Family("scaled", validate, builder="scaled_torch:build", reduction_sizes=lambda params: {},
                derive_tags=lambda params: ["scaled", "negative" if params["scale"] < 0 else "positive"])
'''
SCALED_TORCH = '''\
import torch

from harness.api import Built, Program


class Scale(torch.nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return (x * self.scale,)

    def repro_source(self):
        return f"class Model(torch.nn.Module):\\n    def forward(self, x):\\n        return (x * {self.scale},)\\n"


def build(case):
    x = torch.randn(case.params["shape"], generator=torch.Generator().manual_seed(0))
    return Built(Program(case.id, Scale(case.params["scale"]), (x,), None, ["output"]), [(x,)])
'''
SCALED_CASES = '''\
from families.scaled import validate
from harness.api import Case

CASES = [Case(id="scaled/double", family="scaled", params=validate({"scale": 2}), tags=("scaled", "positive"))]
'''


def test_a_family_named_by_an_ini_path_runs_in_case_modules_and_cases_files(e2e_project):
    e2e_project.write("pytest.ini", "[pytest]\ntestpaths = cases\ne2e_backends = eager\n"
                      "e2e_families = families/scaled.py:FAMILY\n")
    e2e_project.write("families/scaled.py", SCALED_FAMILY)
    e2e_project.write("scaled_torch.py", SCALED_TORCH)
    e2e_project.write("cases/scaled.py", SCALED_CASES)
    e2e_project.write("more.yaml", "- {family: scaled, name: flip, scale: -1, shape: [4]}\n")
    wrong = e2e_project.add_fake("wrong", "wrong_values", phase="run", only="scaled/double")
    result = e2e_project.run("--cases-file=more.yaml", f"--backend=eager,{wrong}", "-k", "scaled")
    assert result.ret == 1, result.output
    outcomes = {(r["backend"], r["case"]): r["outcome"] for r in result.results}
    assert outcomes == {("eager", "scaled/double"): "passed", ("eager", "scaled/cases_file/flip"): "passed",
                        (wrong, "scaled/double"): "mismatch", (wrong, "scaled/cases_file/flip"): "passed"}
    assert result.record("eager", "scaled/cases_file/flip")["tags"] == ["scaled", "negative", "cases_file"]


@pytest.mark.e2e
def test_the_example_project_installed_with_the_wheel_runs_its_family_module_case_and_config(tmp_path):
    python = venv_with_harness(tmp_path / "venv", harness_wheel(tmp_path, REPO))
    project = tmp_path / "project"
    shutil.copytree(REPO / "examples" / "external_project", project,
                    ignore=shutil.ignore_patterns("*.egg-info", "build", "__pycache__"))
    pip_install(python, project)     # not editable: the entry point comes from the installed metadata
    shutil.rmtree(project / "src")   # and the cases import the installed package, not the source tree
    result = run_pytest_with(python, project, env=unactivated_env())
    assert result.ret == 0, result.output[-3000:]
    outcomes = {(r["backend"], r["case"]): (r["outcome"], r["verdict"]) for r in result.results}
    cases = {case for _, case in outcomes}
    assert cases == {"reductions/sum/rows", "reductions/mean/all", "reductions/amax/rows_keepdim",
                     "reductions/prod/columns", "reductions/logsumexp/rows", "reductions/var/rows_float64",
                     "reductions/sum/rows_bfloat16", "module/temperature_softmax"}
    assert all(outcomes[("eager", case)] == ("passed", "ok") for case in cases)
    assert outcomes.pop(("linalg-O3", "reductions/sum/rows_bfloat16")) == ("compile_error", "ok")   # its xfail
    assert all(outcome == ("passed", "ok") for (backend, _), outcome in outcomes.items() if backend == "linalg-O3")
    assert "1 xfailed" in result.stdout
    backends = result.report["environment"]["backends"]
    assert backends["linalg-O3"]["config"] == "configs/linalg-O3.yaml"
    check = subprocess.run([python, "-m", "harness", "check"], cwd=project, env=unactivated_env(),
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    # its 8 cases and the built-in ones (their number follows torch's OpInfo database and the extras)
    assert re.fullmatch(r"ok: 1 expectation entries of 10 backends match the \d+ cases; the classes of \d+ "
                        r"backends import and take their options( \(\d+ skipped, above\))?", check.stdout.strip()), \
        check.stdout


# A backend author's project: two configs and a backend package, nothing else (README, "for backend authors").
AS_EXPORTED = """\
from harness.api import Backend, Phase, export_program


class AsExported(Backend):
    \"\"\"torch.export's module, run as it is.\"\"\"

    def compile(self, program, case):
        case.enter(Phase.EXPORT)
        exported = export_program(program)
        case.enter(Phase.COMPILE)
        return exported.module()

    def run(self, artifact, inputs, case):
        case.enter(Phase.RUN)
        return artifact(*inputs)


class NoDilation(AsExported):
    \"\"\"Refuses dilated convolutions, seen in the case's params.\"\"\"

    def compile(self, program, case):
        if case.family == "conv_backward" and any(d != 1 for d in case.params["dilation"]):
            raise NotImplementedError("unsupported: dilation")
        return super().compile(program, case)
"""


@pytest.mark.e2e
def test_a_backend_project_runs_the_built_in_cases_from_the_wheel(tmp_path):
    python = venv_with_harness(tmp_path / "venv", harness_wheel(tmp_path, REPO))
    project = tmp_path / "project"
    (project / "configs").mkdir(parents=True)
    (project / "my_backend").mkdir()
    (project / "my_backend" / "__init__.py").write_text(AS_EXPORTED)
    for name, cls in (("mine", "AsExported"), ("mine-nodil", "NoDilation")):
        (project / "configs" / f"{name}.yaml").write_text(f"name: {name}\nclass: my_backend:{cls}\n")
    result = run_pytest_with(python, project, "--pyargs", "harness.cases", "-m", "conv_backward", "-k",
                             "(dil or basic) and not parity and not unsized", "--backend=mine,mine-nodil", "-n", "2",
                             env=unactivated_env())
    assert result.ret == 1, result.output[-3000:]   # the refusals: no expectation file says so
    mine = {r["case"]: r for r in result.results if r["backend"] == "mine"}
    refused = {r["case"]: r for r in result.results if r["backend"] == "mine-nodil" and r["outcome"] != "passed"}
    assert len(mine) >= 12 and all(r["outcome"] == "passed" for r in mine.values())
    assert set(refused) == {case for case, r in mine.items() if any(d != 1 for d in r["params"]["dilation"])}
    signatures = {r["signature"] for r in refused.values()}
    assert len(signatures) == 1 and "unsupported: dilation" in signatures.pop()
    collected = run_pytest_with(python, project, "--pyargs", "harness.cases", "-m", "module", "--collect-only",
                                "-q", "--backend=mine", env=unactivated_env())
    # 11 forward cases and 3 training steps; with torchao (the venv links this one's packages), 5 int8 ones
    count = 14 + 5 * installed("quant")
    assert f"{count}/" in collected.stdout and "tests collected" in collected.stdout, collected.output[-2000:]


def test_without_the_built_in_entry_points_one_line_says_to_reinstall(monkeypatch):
    """A checkout pulled past a new built-in family, its editable install not redone."""
    monkeypatch.setattr(plugins, "_from_entry_points", None)
    monkeypatch.setattr(plugins.importlib.metadata, "entry_points", lambda group: [])
    with pytest.raises(HarnessInputError, match=r"none of torch-backend-e2e's built-in families is installed .*"
                                                r"; pip install -e \. again in the checkout"):
        plugins.entry_point_families()


def test_the_built_in_families_come_from_the_entry_points():
    points = {p.name: p.value for p in plugins.importlib.metadata.entry_points(group=plugins.ENTRY_POINT_GROUP)
              if p.dist and p.dist.name == DISTRIBUTION}
    built_in = ("conv", "isolated", "model", "module", "onnx", "opinfo", "reduced", "torch_mlir")
    assert points == {name: f"harness.families.{name}:FAMILIES" for name in built_in}
    assert sorted(plugins.entry_point_families()) == ["conv_backward", "conv_forward", "isolated", "isolated_onnx",
                                                      "model", "module", "onnx_model", "onnx_node", "opinfo",
                                                      "opinfo_grad", "reduced", "torch_mlir"]
