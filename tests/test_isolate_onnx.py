"""`python -m harness isolate` on ONNX models: a backend that runs the model on onnxruntime exactly
except one op type, whose results it makes 1% off (tests/isolate_onnx_backends.py), gets that node
named first, judged against its float64 run relative to onnxruntime's own error; a wrong fusion no
node shows alone is cut at the first divergent prefix; the culprit's repro bundle runs; a case that
passes, or a backend that takes no ONNX model, is one line; onnxruntime itself passes the model."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from e2e_support import python_path_env
from extras import needs

pytestmark = needs("onnx")

TESTS = Path(__file__).parent
CHAIN = ["MatMul", "Add", "Relu", "Softmax"]


def write_chain_model(folder: Path) -> None:
    """y = Softmax(Relu(x @ W + b)), nodes named as torch.onnx's exporter names them, and its input file."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes = [helper.make_node("MatMul", ["x", "W"], ["xw"], name="/proj/MatMul"),
             helper.make_node("Add", ["xw", "b"], ["h"], name="/proj/Add"),
             helper.make_node("Relu", ["h"], ["r"], name="/act/Relu"),
             helper.make_node("Softmax", ["r"], ["y"], name="/head/Softmax", axis=-1)]
    weights = [numpy_helper.from_array(rng.standard_normal((8, 8)).astype(np.float32), "W"),
               numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b")]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])], initializer=weights)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), folder / "chain.onnx")
    np.save(folder / "x.npy", rng.standard_normal((4, 8)).astype(np.float32))


def chain_case(folder: Path):
    """The chain model as an onnx_model case and its family's worker request, without a cases file."""
    from harness.case_data import Case

    write_chain_model(folder)
    params = {"model": str(folder / "chain.onnx"), "inputs": [str(folder / "x.npy")], "outputs": None,
              "rtol": 1e-3, "atol": 1e-7, "dtype": "float32"}
    return (Case("onnx_model/chain", "onnx_model", params),
            {"builder": "harness.families.onnx.build:build_model", "reduction_sizes": {}})


def test_each_node_is_fed_the_float64_runs_values_and_judged_against_its_float64_run(tmp_path):
    import numpy as np
    import onnx
    from onnx import numpy_helper

    from harness.isolate.reference_onnx import write_ops

    case, request = chain_case(tmp_path)
    written = write_ops(case, request, tmp_path / "out")
    assert [op["op"] for op in written["ops"]] == CHAIN and written["tolerance"] == [1e-3, 1e-7]
    add = written["ops"][1]
    assert (add["node"], add["outputs"], add["shapes"], add["dtypes"]) == ("/proj/Add", ["h"], [[4, 8], [8]],
                                                                          ["float32", "float32"])
    assert (add["against"], add["reference"], add["measure"]) == ("float64", "onnxruntime", "tolerances")
    folder = Path(add["folder"])
    model = onnx.load(folder / "model.onnx")
    assert [i.name for i in model.graph.input] == ["xw"] and [i.name for i in model.graph.initializer] == ["b"]
    fed = numpy_helper.to_array(onnx.load_tensor(str(folder / "test_data_set_0" / "input_0.pb")))
    x, w = np.load(tmp_path / "x.npy").astype(np.float64), numpy_helper.to_array(onnx.load(tmp_path / "chain.onnx")
                                                                                 .graph.initializer[0])
    assert fed.dtype == np.float32 and np.array_equal(fed, (x @ w.astype(np.float64)).astype(np.float32))
    with np.load(folder / "references.npz") as references:
        b = numpy_helper.to_array(model.graph.initializer[0]).astype(np.float64)
        assert np.array_equal(references["want_0"], fed.astype(np.float64) + b)   # the node at float64
        assert not np.array_equal(references["eager_0"], references["want_0"])    # onnxruntime's, at float32


def test_a_node_with_no_float64_run_is_judged_against_the_reference_runtime(tmp_path, monkeypatch):
    import numpy as np

    from harness.isolate import reference_onnx

    monkeypatch.setattr(reference_onnx, "float64_outputs", lambda model, inputs: None)
    case, request = chain_case(tmp_path)
    relu = reference_onnx.write_ops(case, request, tmp_path / "out")["ops"][2]
    assert (relu["op"], relu["against"]) == ("Relu", "onnxruntime")
    with np.load(Path(relu["folder"]) / "references.npz") as references:
        assert np.array_equal(references["want_0"], references["eager_0"])


def test_the_float64_model_widens_every_narrow_float_it_names():
    from onnx import TensorProto, helper

    from harness.isolate.reference_onnx import widened

    half = helper.make_tensor("c", TensorProto.FLOAT16, [1], [1.0])
    graph = helper.make_graph([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT),
                               helper.make_node("Constant", [], ["k"], value=half),
                               helper.make_node("Add", ["y", "k"], ["z"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1])],
                              [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1])],
                              initializer=[helper.make_tensor("w", TensorProto.BFLOAT16, [1], [1.0])])
    wide = widened(helper.make_model(graph)).graph
    assert wide.node[0].attribute[0].i == wide.node[1].attribute[0].t.data_type == TensorProto.DOUBLE
    assert wide.input[0].type.tensor_type.elem_type == wide.output[0].type.tensor_type.elem_type == TensorProto.DOUBLE
    assert wide.initializer[0].data_type == TensorProto.DOUBLE and graph.input[0].type.tensor_type.elem_type == \
        TensorProto.FLOAT16   # the model itself is left as it was


def perturbing(name: str, **options) -> str:
    """A PerturbingOnnxBackend config (JSON is YAML)."""
    return json.dumps({"name": name, "class": "isolate_onnx_backends:PerturbingOnnxBackend", "options": options,
                       "programs": {"onnx": "the model as it is"}, "timeout": 120})


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """The chain model as an onnx_model case, and configs/ of perturbing backends beside the built-in ones."""
    root = tmp_path_factory.mktemp("isolate-onnx")
    shutil.copy(TESTS / "isolate_onnx_backends.py", root / "isolate_onnx_backends.py")
    write_chain_model(root)
    (root / "cases.yaml").write_text("- family: onnx_model\n  name: chain\n  model: chain.onnx\n  inputs: [x.npy]\n")
    configs = root / "configs"
    configs.mkdir()
    for op in CHAIN:
        (configs / f"off-{op.lower()}.yaml").write_text(perturbing(f"off-{op.lower()}", perturb=op))
    (configs / "fused.yaml").write_text(perturbing("fused", perturb="Relu", perturb_after="Add"))
    (configs / "off-gelu.yaml").write_text(perturbing("off-gelu", perturb="Gelu"))   # no Gelu: it passes
    (configs / "torch-only.yaml").write_text(json.dumps({"name": "torch-only", "class": "harness.backends.eager:"
                                                         "EagerBackend"}))
    return root


def isolate(project: Path, backend: str, *more: str, case: str = "onnx_model/cases_file/chain",
            configs: str = "configs") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", "isolate", case, f"--backend={backend}",
                           f"--configs-dir={configs}", "--cases-file=cases.yaml", f"--out=out-{backend}", *more],
                          cwd=project, capture_output=True, text=True, timeout=600,
                          env={"PYTHONPATH": python_path_env(), "PATH": "/usr/bin:/bin"})


def culprits(run: subprocess.CompletedProcess) -> dict:
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


@pytest.mark.e2e
# CI time: CI perturbs the first node; the nightly each of the others too.
@pytest.mark.parametrize("op", [op if op == CHAIN[0] else pytest.param(op, marks=pytest.mark.nightly) for op in CHAIN])
def test_the_perturbed_node_is_named_first(project, op):
    result = culprits(isolate(project, f"off-{op.lower()}", "--format=json"))
    first = result["culprits"][0]
    assert (first["op"], first["against"], first["reference"]) == (op, "float64", "onnxruntime"), result
    assert first["node"] == first["module"] and first["node"].endswith(f"/{op}")   # the node's name
    assert first["error"] > 100 * first["eager_error"] and first["dtypes"][0] == "float32"
    assert first["shapes"][0] == [4, 8] and first["source"] is None   # the model records no source
    assert result["ops"] == len(CHAIN) and not result["failed_ops"] and result["compiles"] <= 3


@pytest.mark.e2e
def test_the_text_names_the_node_and_its_bundle_reproduces_it(project):
    run = isolate(project, "off-softmax")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("onnx_model/cases_file/chain on off-softmax: 1 culprit op of 4"), run.stdout
    assert lines[1].startswith("1. Softmax (node /head/Softmax): error ") and "x onnxruntime's" in lines[1]
    assert lines[2:4] == ["   module: /head/Softmax", "   source: (not recorded)"]
    assert lines[4] == "   inputs: [4, 8] float32"
    bundle = Path(lines[5].removeprefix("   bundle: ").split(" (python")[0])
    bundle = bundle if bundle.is_absolute() else project / bundle
    assert {"model.onnx", "repro.py", "test_data_set_0"} <= {p.name for p in bundle.iterdir()}
    repro = subprocess.run([sys.executable, "repro.py"], cwd=bundle, capture_output=True, text=True, timeout=120)
    assert "-m harness isolate onnx_model/cases_file/chain --backend=off-softmax" in repro.stdout + repro.stderr


@pytest.mark.e2e
@pytest.mark.nightly   # CI time: CI cuts a PyTorch program's wrong fusion (tests/test_isolate.py)
def test_a_wrong_fusion_no_node_shows_alone_is_cut_at_the_first_divergent_prefix(project):
    result = culprits(isolate(project, "fused", "--format=json"))
    assert result["culprits"] == [] and result["cut"]["op"] == "Relu", result
    assert result["cut"]["node"] == "/act/Relu" and result["cut"]["prefixes_run"] <= 3


@pytest.mark.e2e
def test_onnxruntime_itself_passes_the_model(project):
    run = isolate(project, "onnxruntime", configs=str(TESTS.parent / "configs"))
    assert run.returncode == 2 and run.stderr.splitlines()[-1] == (
        "error: onnx_model/cases_file/chain: passes on onnxruntime: nothing to isolate"), run.stderr


@pytest.mark.e2e
@pytest.mark.parametrize("backend, message", [
    ("off-gelu", "error: onnx_model/cases_file/chain: passes on off-gelu: nothing to isolate"),
    ("torch-only", "error: onnx_model/cases_file/chain: torch-only takes PyTorch programs only, not this case's "
                   "program (family onnx_model); isolate it on a backend that does"),
])
def test_bad_input_is_one_line(project, backend, message):
    run = isolate(project, backend)
    assert run.returncode == 2 and run.stderr.splitlines()[-1] == message, run.stderr
    assert "Traceback" not in run.stderr and not run.stdout
