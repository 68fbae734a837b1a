"""pytest --isolate: a mismatch is isolated to its culprit ops right after its result, on the
run's workers (a backend that makes one named op 1% off: tests/isolate_backends.py); the culprits
reach the JSON record, the terminal summary, the Markdown and HTML reports, and the history,
which groups the mismatches by culprit op; a case the search cannot isolate says why in one line."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from e2e_support import python_path_env

from harness.record import Record
from harness.views.culprit_lines import culprit_ops, isolation_line
from harness.views.html import DATA_ELEMENT_ID, decode_payload

TESTS = Path(__file__).parent


@pytest.fixture
def project(tmp_path) -> Path:
    shutil.copy(TESTS / "isolate_backends.py", tmp_path / "isolate_backends.py")
    (tmp_path / "configs").mkdir()
    for name, options in (("off-gelu", {"perturb": "aten.gelu.default"}),
                          ("whole-only", {"perturb": "aten.gelu.default", "refuse_cut_programs": True})):
        (tmp_path / "configs" / f"{name}.yaml").write_text(json.dumps(
            {"name": name, "class": "isolate_backends:PerturbingBackend", "options": options, "timeout": 120}))
    return tmp_path


def run(project: Path, backend: str, *more: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "--pyargs", "harness.cases", f"--backend={backend}",
                           "--configs-dir=configs", "-k", "module/mlp and not dynamic and not normal and not int8",
                           "-n", "0",
                           "-p", "no:cacheprovider", "--report-json=r.json", *more], cwd=project,
                          capture_output=True, text=True, timeout=600,
                          env={"PYTHONPATH": python_path_env(), "PATH": "/usr/bin:/bin"})


def records(project: Path) -> dict[str, Record]:
    report = json.loads((project / "r.json").read_text())
    return {r["case"]: Record.from_json(r) for r in report["results"]}


@pytest.mark.e2e
def test_the_culprit_reaches_every_report_and_the_history(project):
    done = run(project, "off-gelu", "--isolate", "--report-md=r.md", "--report-html=r.html", "--history=h.duckdb")
    assert done.returncode == 1, done.stdout + done.stderr   # the mismatches fail the run as before
    isolation = records(project)["module/mlp"].isolation
    first = isolation["culprits"][0]
    assert (first["op"], first["module"]) == ("aten.gelu.default", "MLP") and first["ratio"] > 1000
    assert (project / first["bundle"] / "repro.py").is_file() and (project / isolation["folder"]).is_dir()
    assert "  module/mlp on off-gelu: culprit: aten.gelu.default in MLP (" in done.stdout
    assert "isolated mismatches: 2" in done.stdout   # mlp and mlp_float64
    markdown = (project / "r.md").read_text()
    # the ratio's digits follow the CPU's rounding (2.3e+04 on one machine, 7e+04 on another): not its value
    assert "## Isolated mismatches" in markdown
    assert re.search(r"\| `aten\.gelu\.default` \| `MLP` \| 1 \| [0-9.e+]+x eager's error \|", markdown), markdown
    page = (project / "r.html").read_text()
    payload = json.loads(page.split(f'id="{DATA_ELEMENT_ID}">')[1].split("</script>")[0])
    assert any(r.get("isolation", {}).get("culprits") for r in decode_payload(payload))
    shown = subprocess.run([sys.executable, "-m", "harness", "history", "show", "h.duckdb", "--format=json"],
                           cwd=project, capture_output=True, text=True, env={"PYTHONPATH": python_path_env()})
    groups = json.loads(shown.stdout)["culprits"]
    assert [(g["op"], sorted(r["case"] for r in g["results"])) for g in groups] == [
        ("aten.gelu.default", ["module/mlp", "module/mlp_float64"])]


@pytest.mark.e2e
def test_without_the_option_nothing_is_isolated_and_a_backend_that_cannot_says_why(project):
    run(project, "off-gelu")
    assert all(r.isolation is None for r in records(project).values())
    done = run(project, "whole-only", "--isolate")
    isolation = records(project)["module/mlp"].isolation
    assert isolation["error"].startswith("module/mlp: not isolatable on whole-only: it cannot run a one-op program")
    assert "  module/mlp on whole-only: not isolated: module/mlp: not isolatable" in done.stdout


def test_the_line_names_each_op_once_in_rank_order():
    culprit = {"node": "n", "error": 1.0, "eager_error": 1e-6, "bundle": None}
    isolation = {"culprits": [{**culprit, "op": "aten.gelu.default", "module": "a", "ratio": 9e5},
                              {**culprit, "op": "aten.mm.default", "module": "b", "ratio": 5e5},
                              {**culprit, "op": "aten.gelu.default", "module": "c", "ratio": 1e5}]}
    assert [(c.op, c.module, c.places) for c in culprit_ops(isolation)] == [
        ("aten.gelu.default", "a", 2), ("aten.mm.default", "b", 1)]
    assert isolation_line(isolation) == ("culprits: aten.gelu.default in a at 2 nodes (9e+05x eager's error); "
                                         "aten.mm.default in b (5e+05x eager's error)")
    assert isolation_line({"culprits": [], "failed_ops": [], "cut": "the prefix cut ends at gelu"}) == (
        "the prefix cut ends at gelu")


def test_a_damaged_isolation_is_named():
    with pytest.raises(ValueError, match="its isolation is not an object with a list of culprits"):
        Record.from_json({"case": "c", "backend": "b", "outcome": "mismatch", "isolation": {"culprits": "gelu"}})


def test_an_onnx_culprit_names_onnxruntime_as_its_reference():
    culprit = {"node": "y", "error": 10.0, "eager_error": 1e-3, "bundle": None, "module": "/head/Softmax",
               "op": "Softmax", "reference": "onnxruntime", "against": "float64", "ratio": 9.01e4}
    assert isolation_line({"culprits": [culprit]}) == (
        "culprit: Softmax in /head/Softmax (9.01e+04x onnxruntime's error)")
    fallback = {**culprit, "against": "onnxruntime", "ratio": None}
    assert isolation_line({"culprits": [fallback]}).endswith("(off onnxruntime's results beyond the tolerance)")
