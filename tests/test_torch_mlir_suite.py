"""torch-mlir's e2e suite through the adapter, end to end, on tests/torch_mlir_mini: a suite in
upstream's API shape (the self-tests cannot fetch torch-mlir's source) with a test that segfaults
inside torch-mlir, one that hangs in native code, and a module that needs torchvision.

The importer turns its xfail_sets.py into the expectation files the run then uses: every entry it
writes is checked by that run (an entry that did not fail would be an unexpected pass).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from e2e_support import REPO, python_path_env

from harness.worker.compare import Output, compare

MINI = REPO / "tests" / "torch_mlir_mini"
REGISTERED = ["AccumulateTwice_basic", "AddModuleFromClassBody_basic", "AddModule_basic", "BFloat16Relu_basic",
              "DataDependentIf_basic", "FloatIntAdd_basic", "ItemResults_basic", "ListOutput_basic",
              "MatmulDynamicBatch_basic", "MultinomialOneHot_basic", "NanToNum_basic", "NativeHang_basic",
              "NonzeroCrash_basic", "ScaledByItsValues_basic", "SeededLinear_basic", "SumScalar_basic",
              "TupleOutput_basic", "UInt8Add_basic"]
IMPORT = ["import-xfail-sets", "suite/e2e_testing/xfail_sets.py", "--torch-mlir-suite", "suite",
          "--set", "FX_IMPORTER_XFAIL_SET", "--crash-set", "FX_IMPORTER_CRASHING_SET", "--backend", "linalg-on-tensors"]
IMPORT_REPORT = [
    "FX_IMPORTER_XFAIL_SET: 3 tests -> xfail/linalg-on-tensors.yaml",
    "FX_IMPORTER_CRASHING_SET: 2 tests -> crash_sets/linalg-on-tensors.yaml",
    "evaluated: xfail_sets.py:18: torch_version_for_comparison() < version.parse('2.5.0.dev') is false for "
    "torch 2.13.0",
    "dead (no test of the suite has the name): AddModuleOld_basic (xfail_sets.py:15)",
    "not written (its module did not import here): VisionIdentity_basic (vision.py did not import: "
    "ModuleNotFoundError: No module named 'torchvision')",
    "listed 2 times: DataDependentIf_basic (xfail_sets.py:13, xfail_sets.py:30)",
    "across every set of the file, 1 names match no test of the suite",
]
XFAIL_FILE = """\
# Imported from FX_IMPORTER_XFAIL_SET of suite/e2e_testing/xfail_sets.py by python -m harness import-xfail-sets,
# evaluated for torch 2.13.0; reasons are upstream's comments. Review before relying on it.
- id: torch_mlir/BFloat16Relu_basic
  reason: "the JIT's calling convention takes no bfloat16 memref"
- id: torch_mlir/DataDependentIf_basic
  reason: "control flow on a tensor's value: torch.export cannot trace it"
- id: torch_mlir/FloatIntAdd_basic
  reason: "torch-mlir's FX importer has no sym_float (an int made a float): strict export records one"
"""
NOTICE = ("torch-mlir suite: suite/torch_mlir_e2e_test/test_suite/vision.py did not import (ModuleNotFoundError: "
          "No module named 'torchvision'); its 2 tests are not cases; pip install torchvision to run them")


@pytest.fixture
def suite_project(e2e_project, tmp_path, monkeypatch):
    """The tiny project without its convolution cases, the mini suite copied in as suite/."""
    (e2e_project.path / "cases" / "tiny.py").unlink()
    shutil.copytree(MINI, e2e_project.path / "suite", ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setenv("TORCH_BACKEND_E2E_CACHE", str(tmp_path / "cache"))
    return e2e_project


def harness_cli(project, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=project.path, capture_output=True,
                          text=True, timeout=240)


def test_the_importer_and_the_adapter_end_to_end(suite_project):
    imported = harness_cli(suite_project, *IMPORT)
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.splitlines() == IMPORT_REPORT
    assert (suite_project.path / "xfail" / "linalg-on-tensors.yaml").read_text() == XFAIL_FILE
    crash_set = (suite_project.path / "crash_sets" / "linalg-on-tensors.yaml").read_text()
    assert "- id: torch_mlir/NativeHang_basic\n" in crash_set and "- id: torch_mlir/NonzeroCrash_basic\n" in crash_set
    checked = harness_cli(suite_project, "check", "--torch-mlir-suite", "suite")
    assert checked.stdout.startswith("ok: 5 expectation entries of 9 backends match the 18 cases; the classes of "), \
        checked.stderr

    result = suite_project.run("--torch-mlir-suite=suite", "--backend=eager,linalg-on-tensors")
    assert result.ret == 0, result.output[-3000:]
    for backend in ("eager", "linalg-on-tensors"):   # every registered test, reported once
        assert sorted(r["case"] for r in result.results if r["backend"] == backend) == \
            [f"torch_mlir/{name}" for name in REGISTERED]
    assert all(r["outcome"] == "passed" for r in result.results if r["backend"] == "eager")
    failed = {r["case"]: (r["outcome"], r["phase"], r["verdict"]) for r in result.results
              if r["backend"] == "linalg-on-tensors" and r["outcome"] != "passed"}
    assert failed == {"torch_mlir/BFloat16Relu_basic": ("compile_error", "compile", "ok"),
                      "torch_mlir/DataDependentIf_basic": ("compile_error", "export", "ok"),
                      "torch_mlir/FloatIntAdd_basic": ("compile_error", "import", "ok"),
                      "torch_mlir/NativeHang_basic": ("not_run", None, "skipped"),
                      "torch_mlir/NonzeroCrash_basic": ("not_run", None, "skipped")}
    accumulate = result.record("linalg-on-tensors", "torch_mlir/AccumulateTwice_basic")
    assert accumulate["notes"]["golden"] == "eager PyTorch at the test's dtypes, 2 call(s) of forward"
    assert result.record("eager", "torch_mlir/MatmulDynamicBatch_basic")["tags"] == ["basic", "torch_mlir", "dynamic"]
    assert NOTICE in result.output
    assert not any(p["torch"] for p in suite_project.probes() if not p["xdist_worker"])   # collected without torch

    # The crash set, attempted: the segfault and the hang are one result each, and the run goes on.
    result = suite_project.run("--torch-mlir-suite=suite", "--backend=linalg-on-tensors", "--run-crash-set",
                               "-k", "NonzeroCrash or NativeHang or AddModule_basic")
    assert result.ret == 0, result.output[-3000:]
    crash, hang = (result.record("linalg-on-tensors", f"torch_mlir/{n}") for n in ("NonzeroCrash_basic",
                                                                                   "NativeHang_basic"))
    assert (crash["outcome"], crash["phase"]) == ("crashed", "lower")
    assert "SIGSEGV in mlir::torch::Torch::DecomposeAtenNonzeroOp::matchAndRewrite" in crash["message"]
    assert (hang["outcome"], hang["phase"]) == ("timed_out", "export")
    assert hang["message"].startswith("timed out after 5 s")   # the test's own timeout_seconds=5
    assert result.record("linalg-on-tensors", "torch_mlir/AddModule_basic")["outcome"] == "passed"

@pytest.mark.e2e
def test_a_folder_of_its_own_lists_the_suite_alone_and_checks_its_entries(tmp_path):
    """A first run of the suite in a folder that holds nothing else (an empty cache) lists only the
    suite, though the built-in case modules hold PyTorch's OpInfo and ONNX's node tests; its
    expectation entries are still checked against the suite's tests."""
    shutil.copytree(MINI, tmp_path / "suite", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "xfail").mkdir()
    entry = "- id: torch_mlir/AddModule_basic\n  reason: r\n"
    env = {**os.environ, "PYTHONPATH": python_path_env(), "TORCH_BACKEND_E2E_CACHE": str(tmp_path / "cache")}

    def listing(entries: str) -> subprocess.CompletedProcess:
        (tmp_path / "xfail" / "linalg-on-tensors.yaml").write_text(entries)
        return subprocess.run([sys.executable, "-m", "pytest", "-p", "harness.plugin", "--torch-mlir-suite=suite",
                               "--backend=linalg-on-tensors", "--co", "-q", "-p", "no:cacheprovider"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)

    listed = listing(entry)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert "torch_mlir/AddModule_basic[linalg-on-tensors]" in listed.stdout
    assert "listing the tests of torch-mlir's e2e suite" in listed.stderr
    assert "OpInfo" not in listed.stderr and "ONNX" not in listed.stderr, listed.stderr
    stale = listing(entry.replace("AddModule_basic", "GoneModule_basic"))
    assert stale.returncode == 4 and ("xfail/linalg-on-tensors.yaml:1: id 'torch_mlir/GoneModule_basic' matches "
                                      "no case") in stale.stderr, stale.stdout + stale.stderr



@pytest.mark.nightly   # CI time: the suite's CI test is the importer's and the adapter's, end to end
def test_the_ini_key_and_k_select_the_suite_tests(suite_project):
    suite_project.write("pytest.ini", "[pytest]\ne2e_backends = eager\ne2e_torch_mlir_suite = suite\n")
    result = suite_project.run("--collect-only", "-q", "-k", "AccumulateTwice", report=None)
    assert result.ret == 0, result.output
    assert "suite/torch_mlir_e2e_test/test_suite/basic.py::torch_mlir/AccumulateTwice_basic[eager]" in result.stdout
    assert "1/18 tests collected (17 deselected)" in result.stdout


def test_a_scalar_is_compared_without_dividing_by_its_golden():
    """Upstream's float check, abs(v - g) / g > 1e-4, cannot judge g = 0 and passes any negative g."""
    def scalar(value):
        return [Output("output", __import__("numpy").asarray(value), "float64", python_scalar=True)]

    tolerance = (1e-3, 1e-7)
    assert compare(scalar(-1.5), scalar(-1.0), "float32", tolerance, {}, reference=scalar(-1.0))
    assert compare(scalar(1e-3), scalar(0.0), "float32", tolerance, {}, reference=scalar(0.0))
    assert compare(scalar(0.0), scalar(0.0), "float32", tolerance, {}, reference=scalar(0.0)) is None
    assert compare(scalar(-1.0000001), scalar(-1.0), "float32", tolerance, {}, reference=scalar(-1.0)) is None


CHECKED_SETS = '''\
CHECKED_XFAIL_SET = {
    "SumScalar_basic",        # fixed long ago: stale
    "DataDependentIf_basic",  # still fails
}
CHECKED_CRASHING_SET = {
    "NonzeroCrash_basic",     # still segfaults
    "AddModule_basic",        # crashed once: passes now
}
'''
CHECK_REPORT = """\
CHECKED_XFAIL_SET (sets.py) against linalg-on-tensors, torch {torch}, torch-mlir {torch_mlir}

Stale: these pass here; remove them from the set: 1
    "SumScalar_basic",  # sets.py:2: passed

Missing: these fail here and no set lists them; add them: 1
    "FloatIntAdd_basic",  # compile_error in phase import: NotImplementedError: FIX ME: Unimplemented call_function: \
target=<function sym_float...

CHECKED_CRASHING_SET (sets.py) against linalg-on-tensors, torch {torch}, torch-mlir {torch_mlir}

No longer crash: these pass here; remove them from the set: 1
    "AddModule_basic",  # sets.py:7: passed

No longer crash: these fail without crashing or hanging; move them to the xfail set: 0

Missing: these crash or hang here and are not in the set; add them: 1
    "NativeHang_basic",  # timed_out in phase export: timed out after 5 s in phase export; hung in _deadlock \
(torch_mlir_e2e_test/test_suite/faults.py)
"""


def test_check_xfail_sets_reports_stale_missing_and_stopped_crashes(suite_project):
    """A run of the suite, crash set attempted, against a sets file with one mistake of each kind."""
    import importlib.metadata
    import re

    suite_project.write("sets.py", CHECKED_SETS)
    run = suite_project.run("--torch-mlir-suite=suite", "--backend=linalg-on-tensors", "--run-crash-set", "-k",
                            "SumScalar or DataDependentIf or FloatIntAdd or NonzeroCrash or AddModule_basic "
                            "or NativeHang")
    assert len(run.results) == 6, run.output[-3000:]
    done = harness_cli(suite_project, "check-xfail-sets", "sets.py", "--torch-mlir-suite", "suite",
                       "--set", "CHECKED_XFAIL_SET", "--crash-set", "CHECKED_CRASHING_SET", "report.json")
    assert done.returncode == 0, done.stderr
    text = re.sub(r"(target=<function sym_float).*", r"\1...", done.stdout)   # an address, a path
    assert text == CHECK_REPORT.format(torch=importlib.metadata.version("torch"),
                                       torch_mlir=importlib.metadata.version("torch-mlir"))
    check_exported_patch(suite_project)


EXPORT = ["export-xfail-sets", "report.json", "--torch-mlir-suite", "suite", "--xfail-sets", "sets.py",
          "--set", "CHECKED_XFAIL_SET", "--crash-set", "CHECKED_CRASHING_SET"]


def check_exported_patch(project):
    """The same run written back: a patch git applies, after which the two sets expect exactly what
    the run measured; exported again from the patched file, the patch is empty."""
    import json

    from harness.families.torch_mlir.xfail_sets_import import SetsFile, _torch_version

    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    for command in (["init", "-q"], ["add", "sets.py"], ["commit", "-qm", "sets"]):
        subprocess.run(git + command, cwd=project.path, check=True)
    done = harness_cli(project, *EXPORT, "-o", "fix.patch")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == ["linalg-on-tensors -> fx_importer: CHECKED_XFAIL_SET: 1 added, 1 removed; "
                                        "CHECKED_CRASHING_SET: 1 added, 1 removed"]
    patch = (project.path / "fix.patch").read_text()
    assert '-    "SumScalar_basic",' in patch and '+    "FloatIntAdd_basic",  # compile_error in import' in patch
    assert '-    "AddModule_basic",' in patch and '+    "NativeHang_basic",  # timed_out in export' in patch
    subprocess.run(["git", "apply", "--check", "fix.patch"], cwd=project.path, check=True)
    subprocess.run(["git", "apply", "fix.patch"], cwd=project.path, check=True)
    sets = SetsFile(project.path / "sets.py", _torch_version(None)).evaluate().sets
    for record in json.loads((project.path / "report.json").read_text())["results"]:
        test, outcome = record["case"].removeprefix("torch_mlir/"), record["outcome"]
        crashes = outcome in ("crashed", "timed_out")
        assert (test in sets["CHECKED_CRASHING_SET"]) == crashes, test
        assert (test in sets["CHECKED_XFAIL_SET"]) == (outcome != "passed" and not crashes), test
    again = harness_cli(project, *EXPORT)
    assert again.returncode == 0 and again.stdout == "", again.stdout + again.stderr


LENDING_SETS = '''\
BASE_XFAIL_SET = {
    "Lent_basic",
}
MY_XFAIL_SET = BASE_XFAIL_SET | {
    "Own_basic",  # fixed since
    "Kept_basic",
}
MY_CRASHING_SET = {
    "Crash_basic",
}
OTHER_SET = BASE_XFAIL_SET | {"Other_basic"}
'''


def test_the_sets_edit_deletes_own_lines_subtracts_lent_names_and_leaves_the_other_sets(tmp_path):
    """A name the set's own literal lists loses its line; one another set lends it is subtracted
    after the set's assignment (the lender, which OTHER_SET reads too, stays); a new one joins the
    literal. A set built from the edited one after it would change: one error line, no patch."""
    from packaging.version import Version

    from harness.errors import HarnessInputError
    from harness.families.torch_mlir.xfail_sets_export import SetChange, edited
    from harness.families.torch_mlir.xfail_sets_import import SetsFile

    path = tmp_path / "xfail_sets.py"
    path.write_text(LENDING_SETS)
    changes = (SetChange("MY_XFAIL_SET", {"New_basic": "compile_error in lower: boom"}, {"Lent_basic", "Own_basic"}),
               SetChange("MY_CRASHING_SET"))
    text = edited(path, LENDING_SETS, Version("2.13"), {}, changes)
    assert '    "Own_basic",  # fixed since\n' not in text
    assert '    "Kept_basic",\n    "New_basic",  # compile_error in lower: boom\n}\n' in text
    assert 'MY_XFAIL_SET -= {\n    "Lent_basic",\n}\n' in text
    path.write_text(text)
    sets = SetsFile(path, Version("2.13")).evaluate().sets
    assert set(sets["MY_XFAIL_SET"]) == {"Kept_basic", "New_basic"}
    assert set(sets["OTHER_SET"]) == {"Lent_basic", "Other_basic"} and set(sets["BASE_XFAIL_SET"]) == {"Lent_basic"}
    later = LENDING_SETS + "LATER_SET = MY_XFAIL_SET | set()\n"
    with pytest.raises(HarnessInputError, match="without changing LATER_SET"):
        edited(path, later, Version("2.13"), {}, changes)
