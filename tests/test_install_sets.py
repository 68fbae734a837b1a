"""The harness as other projects install it: the wheel, built once, installed with each install set
(the base install and each extra) and nothing else into a fresh venv outside the repository, then
used from a project folder of its own, with the network cut: `python -m harness check`, a small
cases file (a module case, a convolution case, an ONNX node test where onnx is there, a transformers
model where the models extra is) on every backend the base install enables and, for each extra,
on the backends it adds and the default one, `pytest --collect-only`;
and a backend of an extra the set lacks is one error line naming the extra. A module the harness
imports that no dependency list declares fails here (it did: ml_dtypes came only with onnx).

The venvs are made by uv (a dependency of the dev extra) with pip's own index settings: after the
first, a venv installs from uv's cache in seconds, where pip copies torch again each time."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from e2e_support import DISTILBERT_CASE, NO_NETWORK, REPO
from venvs import SYSTEM_PATH, harness_wheel, unactivated_env

from harness.outcomes import Verdict

pytestmark = pytest.mark.e2e   # fresh venvs that run pytest and `python -m harness`

BASE = ("eager", "linalg-on-tensors", "linalg-on-tensors-direct", "tosa", "stablehlo", "inductor")
SETS = {   # install set -> the backends its cases run on (each must run them green)
    "": BASE,                                                      # every backend the base install enables
    "dev": ("linalg-on-tensors",),                                 # no backend of its own: the README's default
    # the backend it adds, and the default; with the suite's one package (a venv of its own cost CI 70 s)
    "iree,torch-mlir-suite": ("linalg-on-tensors", "iree-llvm-cpu"),
    "onnx": ("linalg-on-tensors", "onnxruntime", "onnx-linalg-on-tensors"),
    # a transformers model from a cases file, with the network cut (issue 33), and an int8 program
    "models,onnx,quant": ("linalg-on-tensors", "tosa", "onnxruntime"),
}
ONNX_TAKERS = ("linalg-on-tensors", "tosa", "stablehlo", "onnxruntime", "iree-llvm-cpu")   # programs: onnx

LINEAR = """\
- family: module
  name: linear{suffix}
  module: torch.nn:Linear
  init: {{in_features: 8, out_features: 4}}
  inputs: [{{shape: [3, 8]}}]
"""
CASES = LINEAR.format(suffix="") + """\
- family: conv_backward
  name: basic
  input_shape: [2, 4, 8, 8]
  weight_shape: [6, 4, 3, 3]
"""
INT8_CASE = LINEAR.format(suffix="_int8") + "  quantize: int8\n"   # the same module, its int8 program
NODE_CASE = """\
- family: onnx_node
  name: abs
  test: test_abs
"""
# Measured on the pinned versions: torch.onnx has no ONNX function for aten.convolution_backward.
NO_ONNX_EXPORT = ("- id: conv_backward/cases_file/basic\n  phase: export\n"
                  "  reason: torch.onnx has no ONNX function for aten.convolution_backward\n")
PROJECT_XFAIL = {"onnx-linalg-on-tensors": NO_ONNX_EXPORT, "onnxruntime": NO_ONNX_EXPORT}
# Measured on the pinned versions (as xfail/ says of model/distilbert/tiny): llvm/torch-mlir#4744.
NO_BUFFER_STATE = ("- id: model/cases_file/distilbert_tiny\n  phase: import\n"
                   "  reason: torch-mlir's FX importer finds no state for a non-persistent buffer\n")
MODEL_XFAIL = {"linalg-on-tensors": NO_BUFFER_STATE, "tosa": NO_BUFFER_STATE}
# Measured on the pinned versions (as xfail/tosa.yaml says of the int8 cases).
INT8_XFAIL = {"tosa": ("- id: module/cases_file/linear_int8\n  phase: lower\n  reason: TorchToTosa has no pattern "
                       "for the int8 program's per-channel dequantize\n")}
# Without onnx, an entry for ONNX's node tests does not apply (kept by --update-expectations).
NODE_ENTRY = "- id: onnx_node/test_abs\n  reason: an entry for a family this install lacks\n"


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    return harness_wheel(tmp_path_factory.mktemp("install-sets"), REPO)


def uv() -> str:
    found = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    if found is None:
        pytest.skip('uv is not installed (it comes with the dev extra: pip install -e ".[dev]")')
    return found


def pip_settings() -> list[str]:
    """pip's find-links and extra indexes on this machine (its config), for uv: the same packages."""
    args = []
    for key, flag in (("find-links", "--find-links"), ("extra-index-url", "--extra-index-url"),
                      ("index-url", "--index-url")):
        found = subprocess.run([sys.executable, "-m", "pip", "config", "get", f"global.{key}"],
                               capture_output=True, text=True)
        args += [a for value in found.stdout.split() if found.returncode == 0 for a in (flag, value)]
    return args + ["--index-strategy", "unsafe-best-match"]   # pip's rule: the best version of every index


def fresh_venv(dest: Path, wheel: Path, extra: str) -> Path:
    """A venv at dest with the wheel and the install set's dependencies only; its python."""
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([uv(), "venv", "-q", "-p", base, str(dest)], check=True)
    python = dest / "bin" / "python"
    spec = f"{wheel}[{extra}]" if extra else str(wheel)
    installed = subprocess.run([uv(), "pip", "install", "-q", "--python", str(python), *pip_settings(), spec],
                               capture_output=True, text=True)
    assert installed.returncode == 0, installed.stderr[-3000:]
    return python


def project(dest: Path, with_onnx: bool, with_models: bool) -> Path:
    dest.mkdir()
    (dest / "pytest.ini").write_text("[pytest]\n")   # the rootdir: the project, not a checkout above it
    cases = CASES + INT8_CASE + (NODE_CASE if with_onnx else "") + (DISTILBERT_CASE if with_models else "")
    (dest / "cases.yaml").write_text(cases)
    (dest / "xfail").mkdir()
    files = {**PROJECT_XFAIL, "linalg-on-tensors": "" if with_onnx else NODE_ENTRY}
    for backend, text in [*(MODEL_XFAIL if with_models else {}).items(), *INT8_XFAIL.items()]:
        files[backend] = files.get(backend, "") + text
    for backend, text in files.items():
        if text:
            (dest / "xfail" / f"{backend}.yaml").write_text(text)
    (dest / "offline").mkdir()
    (dest / "offline" / "sitecustomize.py").write_text(NO_NETWORK)
    return dest


def run(python: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """The install's python in the project, as from an unactivated shell, with the network cut."""
    env = unactivated_env(PATH=f"{python.parent}{os.pathsep}{SYSTEM_PATH}", PYTHONPATH=str(cwd / "offline"),
                          HF_HOME=str(cwd / "hf-home"))   # activated: its own tools first; an empty hub cache
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run([str(python), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=1200)


# The base set in every CI run; the extras' sets (about 110 s each) in the nightly's self-tests job.
@pytest.mark.parametrize("extra", [e if not e else pytest.param(e, marks=pytest.mark.nightly) for e in SETS],
                         ids=lambda e: e or "base")
def test_an_install_set_runs_its_backends_from_another_project(extra, wheel, tmp_path):
    python = fresh_venv(tmp_path / "venv", wheel, extra)
    with_onnx, with_models, with_quant = ("onnx" in extra.split(","), "models" in extra.split(","),
                                          "quant" in extra.split(","))
    where = project(tmp_path / "my-project", with_onnx, with_models)   # the int8 case and its entry in each

    check = run(python, where, "-m", "harness", "check", "--cases-file=cases.yaml")
    assert check.returncode == 0, check.stdout + check.stderr

    backends = SETS[extra]
    report = where / "report.json"
    result = run(python, where, "-m", "pytest", "--cases-file=cases.yaml", f"--backend={','.join(backends)}",
                 "-n", "0", f"--report-json={report}", "--update-expectations")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    records = json.loads(report.read_text())["results"]
    ran = {(r["backend"], r["case"].split("/")[0]) for r in records}
    for backend in backends:
        assert {(backend, "module"), (backend, "conv_backward")} <= ran, backend
        if with_onnx and backend in ONNX_TAKERS:
            assert (backend, "onnx_node") in ran, backend
        if with_models:
            assert (backend, "model") in ran, backend
        assert any(r["case"] == "module/cases_file/linear_int8" and r["backend"] == backend for r in records) \
            is with_quant, backend
    assert {r["verdict"] for r in records} == {Verdict.OK.value}
    if not with_quant:
        line = ('module: 1 int8 case (quantize: int8) not collected: torchao is not installed '
                '(pip install "torch-backend-e2e[quant]")')
        assert line in result.stdout, result.stdout[-3000:]
    if not with_onnx:
        why = 'the onnx package is not installed (pip install "torch-backend-e2e[onnx]")'
        for line in (f"ONNX's node tests are not collected: {why}",
                     f"xfail/linalg-on-tensors.yaml: 1 entry for onnx_node does not apply: {why}",
                     f"--update-expectations: the entries for onnx_node stay as they are: {why}"):
            assert line in result.stdout, (line, result.stdout[-3000:])
        assert (where / "xfail" / "linalg-on-tensors.yaml").read_text() == NODE_ENTRY

    collected = run(python, where, "-m", "pytest", "--collect-only", "-q", "--cases-file=cases.yaml")
    assert collected.returncode == 0, collected.stdout[-3000:] + collected.stderr[-2000:]
    assert "module/cases_file/linear" in collected.stdout

    lacking = {"iree,torch-mlir-suite": ("onnxruntime",), "onnx": ("iree-llvm-cpu",),
               "models,onnx,quant": ("iree-llvm-cpu",)}
    for backend in lacking.get(extra, ("iree-llvm-cpu", "onnxruntime")):
        # a backend of an extra this install lacks
        refused = run(python, where, "-m", "pytest", "--cases-file=cases.yaml", f"--backend={backend}", "-n", "0")
        extra_needed = "iree" if backend == "iree-llvm-cpu" else "onnx"
        assert refused.returncode == 4, refused.stdout[-2000:]
        assert f"ERROR: --backend={backend}: needs the package" in refused.stderr, refused.stderr[-2000:]
        assert f'install it with: pip install "torch-backend-e2e[{extra_needed}]"' in refused.stderr
        assert "Traceback" not in refused.stderr
