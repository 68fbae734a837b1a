"""benchmarks/torch_mlir_agreement.py: its bad-input lines, and a run on a fake checkout.

The fake checkout is tests/torch_mlir_mini (upstream's registry, decorators, TestUtils and an
xfail_sets.py) copied under tmp_path, plus a runner half that the mini suite does not have and
that is written here, in upstream's shape and no more: framework.py's TestResult,
compile_and_run_test and run_tests (a multiprocess pool, one process forced on 2 cores, exit(1)
when a pool process died), reporting.py's ErrorContext and SingleTestReport, and a
FxImporterTestConfig whose "backend" runs the module eagerly, fails every test of AddModule, and
segfaults on the module FAKE_SEGFAULT names.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from extras import needs

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "benchmarks" / "torch_mlir_agreement.py"
MINI = REPO / "tests" / "torch_mlir_mini"

FRAMEWORK_RUNNER_HALF = '''

# The runner half, in the shape of upstream's framework.py (written for the agreement script's test).
import os
import traceback
from itertools import repeat

import multiprocess as mp
from multiprocess import set_start_method

try:
    set_start_method("spawn")
except RuntimeError:
    pass


class TraceItem(NamedTuple):
    symbol: str
    inputs: Any
    output: Any


class TestResult(NamedTuple):
    unique_name: str
    compilation_error: Any
    runtime_error: Any
    trace: Any
    golden_trace: Any


class _Recorder:
    def __init__(self, module, trace):
        self.module, self.trace = module, trace

    def forward(self, *args):
        inputs = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        output = self.module.forward(*args)
        self.trace.append(TraceItem("forward", inputs, output))
        return output


def compile_and_run_test(test, config, verbose=False):
    golden = []
    test.program_invoker(_Recorder(test.program_factory(), golden), TestUtils())
    try:
        compiled = config.compile(test.program_factory())
    except Exception as e:
        return TestResult(test.unique_name, "".join(traceback.format_exception(e)), None, None, None)
    try:
        trace = config.run(compiled, golden)
    except Exception as e:
        return TestResult(test.unique_name, None, "".join(traceback.format_exception(e)), None, None)
    return TestResult(test.unique_name, None, None, trace, golden)


def run_tests(tests, config, sequential=False, verbose=False):
    processes = min(int(mp.cpu_count() * 0.8) + 1, len(tests))
    concurrency = int(os.getenv("TORCH_MLIR_TEST_CONCURRENCY", "0"))
    if concurrency > 0:
        processes = min(processes, concurrency)
    if mp.cpu_count() == 2:
        processes = 1
    tests = sorted(tests, key=lambda t: t.unique_name)
    if processes == 1 or sequential:
        for test in tests:
            compile_and_run_test(test, config, verbose)
    pool = mp.Pool(processes)
    workers = pool._pool[:]
    handles = pool.starmap_async(compile_and_run_test, zip(tests, repeat(config)))
    while not handles.ready():
        if any(p.exitcode for p in workers):
            print("At least one of testing processes has exited with code != 0.")
            exit(1)
        handles.wait(timeout=1)
    return sorted(handles.get(), key=lambda r: r.unique_name)
'''

REPORTING = '''
"""In the shape of upstream's reporting.py: the per-test check."""
import torch


class ErrorContext:
    def __init__(self, contexts):
        self.contexts = contexts

    @staticmethod
    def empty():
        return ErrorContext([])


def _same(value, golden):
    if isinstance(golden, torch.Tensor):
        return isinstance(value, torch.Tensor) and torch.equal(value, golden)
    if isinstance(golden, (tuple, list)):
        return len(value) == len(golden) and all(map(_same, value, golden))
    return value == golden


class SingleTestReport:
    def __init__(self, result, context):
        self.result = result
        pairs = zip(result.trace or [], result.golden_trace or [])
        self.mismatches = [i for i, (item, golden) in enumerate(pairs) if not _same(item.output, golden.output)]

    @property
    def failed(self):
        r = self.result
        return r.compilation_error is not None or r.runtime_error is not None or bool(self.mismatches)

    def error_str(self):
        if self.result.compilation_error is not None:
            return "Compilation error: " + self.result.compilation_error
        if self.result.runtime_error is not None:
            return "Runtime error: " + self.result.runtime_error
        return "\\n".join(f"@ trace item #{i}\\nERROR: the output differs" for i in self.mismatches)
'''

FX_CONFIG = '''
"""In the shape of upstream's configs/fx_importer_backend.py; the "backend" is eager."""
import os
import signal


class FxImporterTestConfig:
    def __init__(self, backend, output_type="linalg-on-tensors"):
        self._backend, self._output_type = backend, output_type

    def compile(self, program, verbose=False):
        return program

    def run(self, artifact, trace):
        name = type(artifact).__name__
        if name == os.environ.get("FAKE_SEGFAULT"):
            os.kill(os.getpid(), signal.SIGSEGV)
        if name == "AddModule":
            raise RuntimeError("fake backend: AddModule has no lowering")
        return [item._replace(output=getattr(artifact, item.symbol)(*item.inputs)) for item in trace]
'''

# like upstream's configs/__init__.py with the wheel: an import that fails
CONFIGS_INIT = "import torch_mlir._mlir_libs._REFERENCE_LAZY_BACKEND  # noqa: F401\n"


def fake_checkout(root: Path) -> Path:
    """The mini suite as a checkout's projects/pt1, with the runner half added."""
    pt1 = root / "projects" / "pt1"
    package = pt1 / "python" / "torch_mlir_e2e_test"
    shutil.copytree(MINI / "torch_mlir_e2e_test", package, ignore=shutil.ignore_patterns("__pycache__"))
    (pt1 / "e2e_testing").mkdir()
    shutil.copy(MINI / "e2e_testing" / "xfail_sets.py", pt1 / "e2e_testing" / "xfail_sets.py")
    framework = package / "framework.py"
    framework.write_text(framework.read_text(encoding="utf-8") + FRAMEWORK_RUNNER_HALF, encoding="utf-8")
    (package / "reporting.py").write_text(REPORTING, encoding="utf-8")
    (package / "configs").mkdir()
    (package / "configs" / "__init__.py").write_text(CONFIGS_INIT, encoding="utf-8")
    (package / "configs" / "fx_importer_backend.py").write_text(FX_CONFIG, encoding="utf-8")
    (package / "linalg_on_tensors_backends").mkdir()
    (package / "linalg_on_tensors_backends" / "__init__.py").write_text("", encoding="utf-8")
    (package / "linalg_on_tensors_backends" / "refbackend.py").write_text(
        "class RefBackendLinalgOnTensorsBackend:\n    pass\n", encoding="utf-8")
    return root


def run_script(*args: str, env: dict | None = None, cwd: Path | None = None, timeout: float = 300):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=timeout, check=False)


def one_line_exit_2(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_a_directory_without_projects_pt1_is_not_a_checkout(tmp_path):
    line = one_line_exit_2(run_script("--torch-mlir", str(tmp_path), "--config", "fx_importer"))
    assert line == f"{tmp_path}: not a torch-mlir checkout (no projects/pt1); pass the checkout's top directory"


def test_an_unknown_config_lists_the_known_ones(tmp_path):
    (tmp_path / "projects" / "pt1").mkdir(parents=True)
    line = one_line_exit_2(run_script("--torch-mlir", str(tmp_path), "--config", "linalg"))
    assert line == ("--config linalg: not a config this script knows; known: fx_importer, fx_importer_tosa, "
                    "fx_importer_stablehlo")


@pytest.mark.e2e   # the script starts torch-mlir's runner, which imports torch before it fails
def test_a_runner_that_cannot_import_names_the_module_and_the_fix(tmp_path):
    checkout = fake_checkout(tmp_path / "tm")
    shadow = tmp_path / "shadow"   # multiprocess, as if it were not installed
    shadow.mkdir()
    (shadow / "multiprocess.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'multiprocess'\", name='multiprocess')\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(shadow), os.environ.get("PYTHONPATH", "")])}
    line = one_line_exit_2(run_script("--torch-mlir", str(checkout), "--config", "fx_importer",
                                      "--out", str(tmp_path / "out"), env=env))
    framework = checkout / "projects" / "pt1" / "python" / "torch_mlir_e2e_test" / "framework.py"
    assert line.startswith(f"torch-mlir's runner cannot import: no module named 'multiprocess' (at {framework}:")
    assert line.endswith("; pip install multiprocess (torch-mlir's framework.py imports it)")


# The runner half imports multiprocess, as upstream's framework.py does: the torch-mlir-suite extra.
needs_multiprocess = needs("torch-mlir-suite")


@needs_multiprocess
@pytest.mark.e2e   # the script runs upstream's runner, then pytest
@pytest.mark.nightly   # CI time (80 s): a benchmark's script, which the nightly checks
@pytest.mark.timeout(240)
def test_the_runner_and_the_harness_on_a_fake_checkout(tmp_path):
    checkout = fake_checkout(tmp_path / "tm")
    out = tmp_path / "out"
    result = run_script("--torch-mlir", str(checkout), "--config", "fx_importer", "--jobs", "2", "--out", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    data = json.loads((out / "agreement.json").read_text(encoding="utf-8"))
    harness = {r["case"].removeprefix("torch_mlir/"): r for r in
               json.loads((out / "harness.json").read_text(encoding="utf-8"))["results"]}
    runner = json.loads((out / "runner.json").read_text(encoding="utf-8"))

    # the runner side: the sets as xfail_sets.py computes them, vision.py's failure recorded
    assert runner["version_module"].startswith("provided by this script")
    assert {"NonzeroCrash_basic", "NativeHang_basic"} <= set(runner["crash_set"])
    assert [m["module"] for m in runner["failed_modules"]] == ["vision"]
    assert runner["failed_modules"][0]["missing"] == "torchvision"
    attempted = runner["attempted"]
    assert attempted and not set(attempted) & set(runner["crash_set"])
    # a pool of 2, each test run once (no sequential pass first)
    started = [line.split(" ", 1) for line in (out / "runner-started.txt").read_text().splitlines()]
    assert sorted(name for _, name in started) == sorted(attempted)
    assert len({pid for pid, _ in started}) <= 2 and len(runner["processes"]) == 2

    # the rows: over the tests both attempted, each side's verdict as it reported it
    rows = {r["test"]: r for r in data["rows"]}
    assert set(rows) == set(attempted) & {n for n, r in harness.items() if r["outcome"] != "not_run"}
    for name, row in rows.items():
        runner_passed = not name.startswith("AddModule")
        harness_passed = harness[name]["outcome"] == "passed"
        assert row["category"] == {(True, True): "both pass", (False, False): "both fail",
                                   (True, False): "harness-only failure",
                                   (False, True): "runner-only failure"}[(runner_passed, harness_passed)], row
        if not runner_passed:
            assert row["runner_error"] == "Runtime error: RuntimeError: fake backend: AddModule has no lowering"
        if not harness_passed:
            assert row["harness_error"].startswith(f"{harness[name]['outcome']} in {harness[name]['phase']}: ")
    assert rows["AddModule_basic"]["category"] == "runner-only failure"
    assert rows["AddModule_basic"]["runner_lit"] == "FAIL"   # what report_results would print
    assert "NonzeroCrash_basic" in data["neither"]
    summary = data["summary"]
    same = summary["both_pass"] + summary["both_fail"]
    assert summary["both_attempted"] == len(rows)
    assert summary["agreement_pct"] == round(100.0 * same / len(rows), 2)
    assert summary["runner_wall_s"] > 0 and summary["harness_wall_s"] > 0
    assert f"agreement: {summary['agreement_pct']}%" in result.stdout
    markdown = (out / "agreement.md").read_text(encoding="utf-8")
    assert "## runner-only failure" in markdown and "| AddModule_basic | Runtime error: RuntimeError" in markdown


@needs_multiprocess
@pytest.mark.e2e   # the script runs upstream's runner on the fake checkout
@pytest.mark.timeout(120)
def test_a_pool_process_that_dies_is_a_crash_of_the_runner_on_its_test(tmp_path):
    """The runner side alone (the hidden sub-command the script starts it with)."""
    checkout = fake_checkout(tmp_path / "tm")
    spec = {"checkout": str(checkout), "config": "fx_importer", "filter": "Sum|Nan|Seeded", "jobs": 2,
            "out": str(tmp_path / "runner.json"), "started": str(tmp_path / "started.txt"),
            "finished": str(tmp_path / "finished.jsonl")}
    (tmp_path / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
    result = run_script("--runner-side", str(tmp_path / "spec.json"), env={**os.environ, "FAKE_SEGFAULT": "SumScalar"},
                        timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "At least one of testing processes has exited with code != 0." in result.stdout
    runner = json.loads((tmp_path / "runner.json").read_text(encoding="utf-8"))
    [died] = runner["crash"]["died"]
    assert died["test"] == "SumScalar_basic" and died["signal"] == "SIGSEGV"
    assert "SumScalar_basic" not in runner["results"]
    assert set(runner["results"]) <= {"NanToNum_basic", "SeededLinear_basic"}
    assert all(r["passed"] for r in runner["results"].values())
