"""ONNX models as programs: the onnx_node and onnx_model families on the real onnx package,
onnxruntime, torch-mlir's and IREE's ONNX importers; PyTorch programs exported by torch.onnx;
program kinds decide which (case, backend) pairs are collected."""
from __future__ import annotations

import inspect
import json
import re
import runpy
import subprocess
import sys
import types
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from e2e_support import REPO
from extras import missing, needs
from venvs import linked_venv, unactivated_env

pytestmark = needs("onnx")
pytest.importorskip("onnx", reason=missing(["onnx"]))   # the module imports from it

from harness.families.onnx.values import compare_values  # noqa: E402 - needs onnx

# One node test of each output kind: tensor, sequence, bfloat16, float8, uint16, strings, bool.
KINDS = ["test_abs", "test_sequence_insert_at_back", "test_cast_FLOAT_to_BFLOAT16", "test_cast_FLOAT_to_FLOAT8E4M3FN",
         "test_add_uint16", "test_string_concat", "test_equal"]


def run_pytest(tmp_path, *args: str) -> tuple[subprocess.CompletedProcess, list[dict]]:
    report = tmp_path / "report.json"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", "-rA",
                           f"--report-json={report}", *args], cwd=REPO, capture_output=True, text=True, timeout=900)
    results = json.loads(report.read_text())["results"] if report.exists() else []
    return done, results


def node_ids(names, backend: str) -> list[str]:
    return [f"cases/onnx_node.py::onnx_node/{name}[{backend}]" for name in names]


def repro(bundles: Path, backend: str, test: str) -> subprocess.CompletedProcess:
    """A node test's bundle's repro.py, run alone: from another directory, PATH cut to the system's."""
    bundle, = (bundles / backend).glob(f"onnx_node_{test}-*")
    return subprocess.run([sys.executable, str(bundle / "repro.py")], cwd=bundles.parent, capture_output=True,
                          text=True, timeout=300, env=unactivated_env())


@pytest.mark.e2e
def test_node_tests_of_every_output_kind_pass_on_onnxruntime_and_are_not_collected_for_eager(tmp_path):
    done, results = run_pytest(tmp_path, "--backend=eager,onnxruntime", f"--artifacts-dir={tmp_path / 'bundles'}",
                               "--artifacts=all", *node_ids(KINDS, "onnxruntime"))
    assert done.returncode == 0, done.stdout[-3000:]
    chosen = {r["case"].split("/", 1)[1]: r for r in results}
    assert sorted(chosen) == sorted(KINDS)
    assert all(chosen[name]["outcome"] == "passed" for name in KINDS), {n: chosen[n]["message"] for n in KINDS}
    assert chosen["test_abs"]["subject"] == "Abs" and "opset13" in chosen["test_abs"]["tags"]
    # Said once for the whole family, not as a skip per case
    assert "1,884 onnx_node cases not collected for eager: it takes PyTorch programs only" in done.stdout
    assert "skipped" not in done.stdout.splitlines()[-1]
    # float8: onnxruntime returns it as uint8, which repro.py reads as the harness does
    for name in ("test_string_concat", "test_sequence_insert_at_back", "test_cast_FLOAT_to_FLOAT8E4M3FN"):
        alone = repro(tmp_path / "bundles", "onnxruntime", name)
        assert (alone.returncode, alone.stdout.strip()) == (0, "every output matched on onnxruntime"), alone.stderr


def test_a_bundles_repro_reads_outputs_with_the_harness_own_function_without_the_harness(tmp_path, monkeypatch):
    """repro.py gets the source of harness.backends.onnx_front.as_declared, not a copy that can
    drift: a float8 output given as uint8 reads the same through both."""
    from onnx import TensorProto, helper

    from harness.backends.onnx_front import as_declared
    from harness.worker.repro_onnx import script_text

    text = script_text()
    assert inspect.getsource(as_declared) in text
    assert not re.search(r"^\s*(import|from) harness", text, re.M)
    (tmp_path / "repro.py").write_text(text)
    monkeypatch.setattr(sys, "path", list(sys.path))   # the script puts its folder first
    monkeypatch.setitem(sys.modules, "backend_repro", types.ModuleType("backend_repro"))   # beside it in a bundle
    script = runpy.run_path(str(tmp_path / "repro.py"), run_name="repro")   # its definitions, not its main()
    declared = helper.make_tensor_type_proto(TensorProto.FLOAT8E4M3FN, [3])
    raw = np.array([0x38, 0x40, 0xC8], dtype=np.uint8)   # 1, 2 and -4 in float8e4m3fn's bits
    theirs, ours = script["as_declared"](raw, declared), as_declared(raw, declared)
    assert theirs.dtype == ours.dtype == ml_dtypes.float8_e4m3fn
    assert theirs.astype(np.float32).tolist() == ours.astype(np.float32).tolist() == [1.0, 2.0, -4.0]


# A cast to int4 aborts torch-mlir's lowering (the worker: crashed) and iree-compile (a subprocess).
ABORTS = {"linalg-on-tensors": ("crashed", "-6"), "iree-llvm-cpu": ("compile_error", "Error code: -6")}


@pytest.mark.e2e
@pytest.mark.parametrize("backend", [pytest.param(b, marks=needs("iree") if b.startswith("iree") else [])
                                     for b in sorted(ABORTS)])
def test_a_node_test_runs_through_torch_mlirs_and_irees_onnx_importers(tmp_path, backend):
    """...and their bundles' repro.py reproduce alone, a pass as a pass and an abort as the abort
    (the crash set's case attempted here)."""
    crashing, (outcome, abort) = "test_castlike_FLOAT16_to_INT4", ABORTS[backend]
    done, results = run_pytest(tmp_path, f"--backend={backend}", f"--artifacts-dir={tmp_path / 'bundles'}",
                               "--artifacts=all", "--run-crash-set",
                               *node_ids(["test_add_uint16", "test_matmul_2d", crashing], backend))
    assert done.returncode == 0, done.stdout[-3000:]
    outcomes = {r["case"]: (r["outcome"], r["phase"]) for r in results}
    assert outcomes == {"onnx_node/test_add_uint16": ("passed", None), "onnx_node/test_matmul_2d": ("passed", None),
                        f"onnx_node/{crashing}": (outcome, "lower")}
    assert all(r["phase_durations"].keys() >= {"import", "lower"} for r in results if r["outcome"] == "passed")
    alone = repro(tmp_path / "bundles", backend, "test_add_uint16")
    assert (alone.returncode, alone.stdout.strip()) == (0, f"every output matched on {backend}"), alone.stderr
    alone = repro(tmp_path / "bundles", backend, crashing)
    assert abort in f"{alone.returncode} {alone.stderr}" and alone.returncode != 0, alone.stderr[-2000:]


def write_block(folder: Path, outputs: list | None = None) -> Path:
    """A MatMul-then-Relu ONNX model, its inputs as .npy and .pb, and a cases file naming them."""
    from onnx import TensorProto, helper, numpy_helper, save

    values = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in
              (("x", [2, 3]), ("w", [3, 4]), ("y", [2, 4]))]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["t"]), helper.make_node("Relu", ["t"], ["y"])]
    graph = helper.make_graph(nodes, "block", values[:2], values[2:])
    (folder / "data").mkdir(parents=True)
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), folder / "block.onnx")
    rng = np.random.default_rng(0)
    np.save(folder / "data" / "x.npy", rng.standard_normal((2, 3)).astype(np.float32))
    (folder / "data" / "w.pb").write_bytes(
        numpy_helper.from_array(rng.standard_normal((3, 4)).astype(np.float32)).SerializeToString())
    entry = {"family": "onnx_model", "name": "block", "model": "block.onnx", "inputs": ["data/x.npy", "data/w.pb"]}
    for i, array in enumerate(outputs or []):
        np.save(folder / "data" / f"y{i}.npy", array)
        entry["outputs"] = [f"data/y{j}.npy" for j in range(len(outputs))]
    (folder / "cases.json").write_text(json.dumps([entry]))
    return folder / "cases.json"


@pytest.mark.e2e
@needs("iree")
def test_a_users_onnx_model_runs_on_every_onnx_backend_against_onnxruntimes_outputs(tmp_path):
    cases = write_block(tmp_path / "project")   # read from its own folder, not the working directory's
    done, results = run_pytest(tmp_path, f"--cases-file={cases}", "-m", "onnx_model",
                               "--backend=onnxruntime,linalg-on-tensors,iree-llvm-cpu,eager")
    assert done.returncode == 0, done.stdout[-3000:]
    assert sorted((r["backend"], r["case"], r["outcome"]) for r in results) == [
        (b, "onnx_model/cases_file/block", "passed") for b in ("iree-llvm-cpu", "linalg-on-tensors", "onnxruntime")]
    assert {r["subject"] for r in results} == {"block.onnx"}
    assert "1 onnx_model case not collected for eager: it takes PyTorch programs only" in done.stdout


@pytest.mark.e2e
def test_stored_outputs_are_the_golden_when_given(tmp_path):
    cases = write_block(tmp_path / "project", outputs=[np.zeros((2, 4), np.float32)])   # not what it computes
    done, results = run_pytest(tmp_path, f"--cases-file={cases}", "-m", "onnx_model", "--backend=onnxruntime")
    assert done.returncode == 1
    [result] = results
    assert result["outcome"] == "mismatch" and result["message"].startswith("y: "), result["message"]


@pytest.mark.e2e
def test_torch_programs_exported_by_torch_onnx_run_on_onnx_linalg_on_tensors(tmp_path):
    done, results = run_pytest(tmp_path, "--backend=onnx-linalg-on-tensors",
                               "cases/module.py::module/mlp[onnx-linalg-on-tensors]")
    assert done.returncode == 0, done.stdout[-3000:]
    [result] = results
    assert result["outcome"] == "passed" and {"export", "import", "lower"} <= result["phase_durations"].keys()


@pytest.mark.e2e
def test_without_onnx_an_onnx_backend_or_model_gives_one_line(tmp_path):
    python = linked_venv(tmp_path / "venv", hide=lambda name: name == "onnx" or name.startswith("onnx-"))
    cases = write_block(tmp_path / "project")
    for args, line in [
        (["--backend=onnxruntime"], "ERROR: --backend=onnxruntime: needs the package 'onnx', which is not installed; "
                                    "install it with: pip install -e \".[onnx]\""),
        ([f"--cases-file={cases}", "--backend=linalg-on-tensors"],
         f"ERROR: {cases}: onnx_model cases need the onnx package: the onnx package is not installed "
         "(pip install -e \".[onnx]\")"),
    ]:
        done = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", *args], cwd=REPO,
                              env=unactivated_env(), capture_output=True, text=True, timeout=300)
        assert done.returncode == 4 and "Traceback" not in done.stdout + done.stderr, done.stdout[-3000:]
        assert [x for x in (done.stdout + done.stderr).splitlines() if x.startswith("ERROR")] == [line]


@pytest.mark.parametrize("got, want, problem", [
    ([np.float32([1, 2])], [np.float32([1, 2.001])], None),                     # within rtol 1e-3
    ([np.float32([1, 2])], [np.float32([1, 2.01])], "out: 1 of 2 elements differ beyond tolerance"),
    ([np.float32([np.nan])], [np.float32([np.nan])], None),
    ([np.float64([1])], [np.float32([1])], "out: dtype float64 differs from expected float32"),
    ([[np.int64([1]), np.int64([2])]], [[np.int64([1]), np.int64([3])]], "out: element 1: 1 of 1 elements differ"),
    ([[np.int64([1])]], [[np.int64([1]), np.int64([2])]], "out: a sequence of 2 was expected, got 1 elements"),
    ([None], [None], None),
    ([np.int64([1])], [None], "out: an empty optional was expected, got a value"),
    ([np.array(["a", "b"], dtype=object)], [np.array([b"a", b"b"], dtype=object)], None),   # str against bytes
    ([np.array([1.0, 1.01], dtype=ml_dtypes.bfloat16)], [np.array([1.0, 1.0], dtype=ml_dtypes.bfloat16)], None),
    ([], [np.int64([1])], "expected 1 outputs (out), got 0"),
])
def test_outputs_are_compared_as_onnxs_backend_runner_compares(got, want, problem):
    message = compare_values(got, want, names=["out"], rtol=1e-3, atol=1e-7)
    assert (message is None) if problem is None else message.startswith(problem), message


def test_a_line_about_onnx_node_is_said_only_to_a_run_that_touches_it(e2e_project):
    e2e_project.write("pytest.ini", "[pytest]\ntestpaths = cases\ne2e_backends = eager\n")   # the built-in cases in
    elsewhere = e2e_project.run("-m", "conv_backward")
    assert elsewhere.ret == 0, elsewhere.output[-3000:]
    assert "onnx_node cases not collected" not in elsewhere.output
    asked = e2e_project.run("--pyargs", "harness.cases", "-m", "onnx_node", "--collect-only", "-q", report=None)
    assert "1,884 onnx_node cases not collected for eager: it takes PyTorch programs only" in asked.output


@pytest.mark.e2e
@needs("iree")
def test_a_users_onnx_model_at_int8_is_its_qdq_model_judged_against_onnxruntimes_run_of_it(tmp_path):
    """quantize: int8 on an ONNX model: onnxruntime's QDQ quantizer makes its int8 model, and each
    ONNX backend is judged against onnxruntime's run of that model in quantization steps."""
    cases = write_block(tmp_path / "project")
    entry = json.loads(cases.read_text())[0]
    cases.write_text(json.dumps([{**entry, "name": "block_int8", "quantize": "int8"}]))
    done, results = run_pytest(tmp_path, f"--cases-file={cases}", "-m", "onnx_model",
                               "--backend=onnxruntime,linalg-on-tensors,iree-llvm-cpu")
    by_backend = {r["backend"]: r for r in results}
    assert done.returncode == 0, done.stdout[-3000:]
    assert {b: r["outcome"] for b, r in by_backend.items()} == dict.fromkeys(
        ("onnxruntime", "linalg-on-tensors", "iree-llvm-cpu"), "passed")
    onnxruntime = by_backend["onnxruntime"]
    assert onnxruntime["margins"] == {"y": 0.0}   # the golden is its own run
    assert "QuantizeLinear x" in onnxruntime["notes"]["quantized"] and "int8" in onnxruntime["tags"]
