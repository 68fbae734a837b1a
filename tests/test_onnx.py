"""ONNX models as programs: the onnx_node family on the real onnx package, onnxruntime and
torch-mlir's ONNX importer; program kinds decide which (case, backend) pairs are collected."""
from __future__ import annotations

import json
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
from e2e_support import REPO

pytest.importorskip("onnx", reason="the onnx extra is not installed: pip install -e '.[onnx]'")

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


def test_node_tests_of_every_output_kind_pass_on_onnxruntime_and_are_not_collected_for_eager(tmp_path):
    done, results = run_pytest(tmp_path, "--backend=eager,onnxruntime", *node_ids(KINDS, "onnxruntime"))
    assert done.returncode == 0, done.stdout[-3000:]
    chosen = {r["case"].split("/", 1)[1]: r for r in results}
    assert sorted(chosen) == sorted(KINDS)
    assert all(chosen[name]["outcome"] == "passed" for name in KINDS), {n: chosen[n]["message"] for n in KINDS}
    assert chosen["test_abs"]["subject"] == "Abs" and "opset13" in chosen["test_abs"]["tags"]
    # Said once for the whole family, not as a skip per case
    assert "1,884 onnx_node cases not collected for eager: it takes PyTorch programs only" in done.stdout
    assert "skipped" not in done.stdout.splitlines()[-1]


def test_a_node_test_runs_through_torch_mlirs_onnx_importer(tmp_path):
    done, results = run_pytest(tmp_path, "--backend=linalg-on-tensors", *node_ids(["test_add_uint16",
                                                                                  "test_matmul_2d"],
                                                                                 "linalg-on-tensors"))
    assert done.returncode == 0, done.stdout[-3000:]
    assert [(r["outcome"], r["phase_durations"].keys() >= {"import", "lower"}) for r in results] == [
        ("passed", True)] * 2


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
