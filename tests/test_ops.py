"""What a record says of its program's ops (harness.ops) and the coverage matrix built from them
(`python -m harness coverage`)."""
from __future__ import annotations

import json

import pytest

from harness.backends.inductor import inductor_paths
from harness.cli import main
from harness.ops.command import BEGIN, END
from harness.ops.core_aten import core_aten_ops
from harness.ops.coverage import FAILED, NOT_COVERED, PASSED, coverage
from harness.ops.names import fx_op_name, named_in, onnx_op_counts, torch_ir_op_counts
from harness.ops.paths import decomposition_paths, new_ops
from harness.record import Record
from harness.reports import write_report


def record(backend, case, outcome="passed", ops=None, expected="pass", verdict="ok", **more):
    return Record.from_json({"backend": backend, "case": case, "outcome": outcome, "expected": expected,
                             "verdict": verdict, "ops": ops or {}, **more})


def test_op_names_drop_the_overload_whichever_layer_spells_them():
    import torch

    assert fx_op_name(torch.ops.aten.add.Tensor) == "aten.add"
    assert fx_op_name(torch.ops.aten.convolution_backward.default) == "aten.convolution_backward"
    assert fx_op_name(len) is None   # operator.getitem and the like are no op
    ir = ('%0 = torch.aten.add.Tensor %a, %b\n%1 = torch.aten.add.Tensor %0, %b\n'
          '%2 = "torch.quantized_decomposed.quantize_per_tensor"(%1)\n%3 = torch.prim.ListConstruct %0\n'
          '%4 = torch.constant.int 1 : !torch.vtensor<[2],f32>')
    assert torch_ir_op_counts(ir) == {"aten.add": 2, "quantized_decomposed.quantize_per_tensor": 1}
    ops = {"aten.topk", "aten.add", "aten.addmm"}
    assert named_in("failed to legalize operation 'torch.aten.topk'", ops) == {"aten.topk"}
    assert named_in("aten::add.Tensor is not supported", ops) == {"aten.add"}   # not addmm: a whole name


def test_onnx_ops_carry_their_domain():
    onnx = pytest.importorskip("onnx")
    nodes = [onnx.helper.make_node("Add", ["a", "b"], ["c"]), onnx.helper.make_node("Add", ["c", "b"], ["d"]),
             onnx.helper.make_node("Gelu", ["d"], ["e"], domain="com.microsoft")]
    model = onnx.helper.make_model(onnx.helper.make_graph(nodes, "g", [], []))
    assert onnx_op_counts(model) == {"com.microsoft.Gelu": 1, "onnx.Add": 2}


def test_a_decomposition_keeps_the_ops_still_there_and_names_what_the_others_became():
    before = {"aten.convolution_backward": 1, "aten.gelu": 1}
    after = {"aten.gelu": 1, "aten.convolution": 2, "aten.sum": 1}
    assert decomposition_paths(before, after) == {"aten.convolution_backward": "decomposed", "aten.gelu": "kept"}
    assert new_ops(before, after) == {"aten.convolution": 2, "aten.sum": 1}


def test_inductor_paths_read_its_wrapper_code():
    source = ("buf0 = torch.ops.aten.convolution_backward.default(a, b)\n"
              "buf1 = extern_kernels.addmm(bias, x, w)\ncpp_fused_gelu_0(buf1)")
    paths, made = inductor_paths({"aten.convolution_backward": 1, "aten.linear": 1, "aten.gelu": 1},
                                 [({"aten.convolution_backward": 1, "aten.addmm": 1, "aten.gelu": 1}, source)])
    assert paths == {"aten.addmm": "extern", "aten.convolution_backward": "fallback", "aten.gelu": "generated",
                     "aten.linear": "decomposed"}
    assert made == {"aten.addmm": 1}


def test_the_core_aten_file_is_the_installed_torchs_list():
    """python -m harness.ops.write_core_aten writes it: after a torch upgrade this fails until it is rerun."""
    from harness.ops.write_core_aten import installed_core_aten_ops

    version, names = installed_core_aten_ops()
    assert core_aten_ops() == names, f"rerun python -m harness.ops.write_core_aten for torch {version}"
    assert {"aten.convolution", "aten.convolution_backward"} <= set(names) and "aten.conv2d" not in names


RECORDS = [
    record("be", "opinfo/topk/0", ops={"aten.topk": 1}),
    record("be", "opinfo/topk/1", "compile_error", {"aten.topk": 1, "aten.view": 1}, expected="xfail",
           phase="lower", signature="failed to legalize operation 'torch.aten.topk'"),
    record("be", "opinfo/view/0", ops={"aten.view": 1}),
    record("be", "opinfo/sort/0", "mismatch", {"aten.sort": 1, "aten.clone": 1}, expected="xfail",
           phase="compare", signature="mismatch"),
    record("be", "opinfo/allclose/0", "compile_error", expected="xfail", phase="export", signature="data dependent",
           subject="allclose"),
    record("be", "opinfo/crashy/0", "not_run", expected="crash", verdict="skipped", message="hangs"),
    record("eager", "opinfo/crashy/0", ops={"aten.crashy": 1}),
    record("be", "opinfo/add/f16", ops={"aten.add": 1}, params={"dtype": "float16"}),
    record("be", "opinfo/add/bf16", "mismatch", {"aten.add": 1}, expected="xfail", phase="compare",
           params={"dtype": "bfloat16"}),
    record("be", "model/tiny", ops={"aten.topk": 1, "aten.view": 2, "aten.add": 1, "aten.mm": 1},
           params={"dtype": "float32"}),
]


def test_an_op_fails_where_a_failure_counts_against_it_and_passes_where_one_of_its_cases_passed():
    cov = coverage(RECORDS, ["opinfo"], ["model"])
    status = {op: cov.cell(op, "be").status for op in cov.ops}
    assert status["aten.topk"] == FAILED              # its own failure names it
    assert status["aten.view"] == PASSED              # topk's failure names topk, not view
    assert status["aten.sort"] == status["aten.clone"] == FAILED   # a mismatch names no op: both share it
    assert status["allclose"] == FAILED                # a case that did not export covers its subject
    assert status["aten.crashy"] == FAILED             # a crash-set case covers the ops eager listed
    assert cov.cell("aten.crashy", "be").phase == "crash set"
    assert status["aten.add"] == FAILED and cov.cell("aten.add", "be").dtypes == {
        "bfloat16": FAILED, "float16": PASSED, "float32": PASSED}
    assert cov.cell("aten.crashy", "other").status == NOT_COVERED
    topk = cov.cell("aten.topk", "be")
    assert (topk.cases, topk.passed, topk.failed, topk.phase) == (3, 2, 1, "lower")   # the model's case counts
    assert cov.families["aten.topk"] == ["model", "opinfo"]


def test_a_model_counts_its_ops_that_pass_in_opinfo_and_core_aten_lists_what_no_case_covers():
    cov = coverage(RECORDS, ["opinfo"], ["model"])
    assert coverage(RECORDS, [], ["model"]).programs == [("model/tiny", "be", 0, 4)]   # no op tests: none covered
    assert cov.programs == [("model/tiny", "be", 1, 4)]   # view passes in OpInfo; topk and add fail; mm has no case
    assert "aten.mm" in cov.uncovered_core or "aten.mm" in cov.ops
    assert "aten.view" not in cov.uncovered_core and "aten.convolution" in cov.uncovered_core


def test_coverage_command_writes_each_format_and_the_page(tmp_path, capsys):
    report = tmp_path / "r.json"
    write_report(report, {}, [r.to_json() for r in RECORDS], complete=True)
    assert main(["coverage", str(report), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    topk = next(o for o in data["ops"] if o["op"] == "aten.topk")
    assert topk["backends"]["be"]["status"] == "failed" and topk["backends"]["be"]["phase"] == "lower"
    assert topk["backends"]["be"]["signature"] == "failed to legalize operation 'torch.aten.topk'"
    assert data["programs"] == [{"case": "model/tiny", "backend": "be", "covered": 1, "ops": 4}]
    assert main(["coverage", str(report)]) == 0
    text = capsys.readouterr().out
    assert "| `aten.topk` | model, opinfo | **lower** (1/3) |" in text and "| `model/tiny` | 1 of 4 |" in text
    assert main(["coverage", str(report), "--format", "html", "-o", str(tmp_path / "c.html")]) == 0
    page = (tmp_path / "c.html").read_text()
    assert 'class="failed" title="failed to legalize operation &#x27;torch.aten.topk&#x27;"' in page
    docs = tmp_path / "op-coverage.md"
    docs.write_text(f"intro\n{BEGIN}\nold\n{END}\n")
    assert main(["coverage", str(report), "--page", str(docs)]) == 0
    assert "old" not in docs.read_text() and "| `aten.view` |" in docs.read_text()


def test_a_damaged_report_is_one_line(tmp_path, capsys):
    report = tmp_path / "r.json"
    report.write_text("{not json")
    assert main(["coverage", str(report)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {report}") and len(err.strip().splitlines()) == 1


IREE_CONFIG = """{
  "config_name": "cpu_llvm_sync",
  "iree_compile_flags": [
    "--iree-hal-target-backends=llvm-cpu"
  ],
  "skip_compile_tests": [
    "onnx/node/generated/test_flaky"
  ],
  "skip_run_tests": [],
  "expected_compile_failures": [
    "onnx/node/generated/test_fixed",
    "onnx/node/generated/test_still_fails"
  ],
  "expected_run_failures": []
}
"""


def test_export_iree_configs_writes_a_patch_git_applies_and_nothing_when_the_run_agrees(tmp_path, capsys):
    """iree-test-suites' onnx_ops config from a node-test run: a fixed test leaves its list, a new
    run failure and a new hang join theirs, a skip the run did not see stays."""
    import subprocess

    checkout = tmp_path / "iree-test-suites"
    config = checkout / "onnx_ops" / "configs" / "onnx_ops_cpu_llvm_sync.json"
    config.parent.mkdir(parents=True)
    config.write_text(IREE_CONFIG)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    for command in (["init", "-q"], ["add", "."], ["commit", "-qm", "config"]):
        subprocess.run(git + command, cwd=checkout, check=True)
    iree, unexpected = "iree-llvm-cpu", "unexpected_failure"
    results = [record(iree, "onnx_node/test_fixed"),
               record(iree, "onnx_node/test_still_fails", "compile_error", expected="xfail", phase="lower"),
               record(iree, "onnx_node/test_wrong", "mismatch", phase="compare", verdict=unexpected),
               record(iree, "onnx_node/test_hangs", "timed_out", phase="run", verdict=unexpected),
               record(iree, "onnx_node/test_flaky")]
    report = tmp_path / "nodes.json"
    write_report(report, {}, [r.to_json() for r in results], complete=True)
    export = ["export-iree-configs", str(report), "--iree-test-suites", str(checkout), "--config",
              "onnx_ops_cpu_llvm_sync"]
    assert main([*export, "-o", str(tmp_path / "config.patch")]) == 0
    patch = (tmp_path / "config.patch").read_text()
    assert patch.startswith("--- a/onnx_ops/configs/onnx_ops_cpu_llvm_sync.json\n"), patch
    subprocess.run(["git", "apply", "--check", str(tmp_path / "config.patch")], cwd=checkout, check=True)
    subprocess.run(["git", "apply", str(tmp_path / "config.patch")], cwd=checkout, check=True)
    data = json.loads(config.read_text())
    assert data["expected_compile_failures"] == ["onnx/node/generated/test_still_fails"]
    assert data["expected_run_failures"] == ["onnx/node/generated/test_wrong"]
    assert data["skip_run_tests"] == ["onnx/node/generated/test_hangs"]
    assert data["skip_compile_tests"] == ["onnx/node/generated/test_flaky"]   # a skip the run did not see stays
    capsys.readouterr()
    assert main(export) == 0
    assert capsys.readouterr().out == ""   # the run agrees with the patched config: an empty patch


@pytest.mark.skipif(not __import__("pathlib").Path("/usr/bin/chromium").exists(), reason="no /usr/bin/chromium")
def test_chromium_runs_the_coverage_pages_filter(tmp_path):
    """The HTML form in a real browser: a `#filter=` link keeps only the ops that hold its text."""
    import subprocess

    from harness.ops.coverage_views import html_page

    page = tmp_path / "coverage.html"
    page.write_text(html_page(coverage(RECORDS, ["opinfo"], ["model"])), encoding="utf-8")
    done = subprocess.run(["/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu",
                           "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                           page.as_uri() + "#filter=top"], capture_output=True, text=True, timeout=180)
    dom = done.stdout
    assert 'data-ready="1"' in dom, done.stderr[-2000:]
    rows = [line for line in dom.splitlines() if "<tr data-op=" in line]
    shown = [line for line in rows if "hidden" not in line.split(">")[0]]
    assert len(rows) == len(coverage(RECORDS).ops) and len(shown) == 1 and 'data-op="aten.topk"' in shown[0]
