"""The controller side (pytest process): never imports torch; the Runner's timeout and crash-set logic."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from e2e_support import REPO, TINY_CASES, python_path_env
from extras import installed, needs

from harness.case_data import Case
from harness.controller.run_case import DEFAULT_TIMEOUT, case_timeout
from harness.controller.runner import Runner
from harness.expectations import Entry
from harness.outcomes import Expected, Outcome, Verdict
from harness.project import Project
from harness.settings import Settings


def clean_env(pythonpath: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PY_COLORS"))}
    return dict(env, PYTHONPATH=pythonpath)


def test_controller_modules_do_not_import_torch():
    code = textwrap.dedent(f"""\
        import json, sys
        from pathlib import Path
        import harness.plugin, harness.controller.runner, harness.controller.pool, harness.reports
        import harness.expectations.read, harness.project_files.configs, harness.project_files.registry
        import harness.families
        from harness.project_files.registry import case_modules, load_case_module
        from harness.controller.runner import Runner
        from harness.project import Project
        from harness.settings import Settings
        root = Path({str(REPO)!r})
        cases = [c for m in case_modules([root / "cases"]) for c in load_case_module(m)]
        runner = Runner(Project(Settings(rootdir=root, backends=["eager"], cases_dirs=[root / "cases"],
                                 configs_dirs=[root / "configs"], xfail_dir=root / "xfail",
                                 crash_sets_dir=root / "crash_sets", cases_files=[], run_crash_set=False,
                                 case_timeout=None)))
        for case in runner.all_cases:
            runner.timeout(case, "eager")
        heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "onnx", "onnxruntime"))
        print(json.dumps({{"cases": len(cases), "heavy": heavy}}))
        """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                          env=clean_env(python_path_env()), timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["cases"] > 100
    assert result["heavy"] == []   # neither torch nor onnx: workers list OpInfo's samples and ONNX's tests


@pytest.mark.e2e
@needs()   # its summary differs with the onnx extra: run again where it is installed
def test_the_repo_collects_without_importing_torch(tmp_path):
    """`pytest --collect-only` on the repo itself (its conftest loads the plugin), with an empty
    cache: workers list the OpInfo samples and ONNX's node tests, the pytest process imports
    neither torch nor onnx."""
    probe = tmp_path / "probe.py"
    probe.write_text(textwrap.dedent("""\
        import sys
        def pytest_collection_finish(session):
            print("TORCH_IMPORTED=%s" % ("torch" in sys.modules))
            print("ONNX_IMPORTED=%s" % ("onnx" in sys.modules or "onnxruntime" in sys.modules))
        """))
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "--backend=eager",
                           "-p", "probe"], capture_output=True, text=True, cwd=REPO, timeout=600,
                          env=dict(clean_env(f"{tmp_path}:{python_path_env()}"),
                                   TORCH_BACKEND_E2E_CACHE=str(tmp_path / "cache")))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "TORCH_IMPORTED=False" in done.stdout
    assert "cases/conv_backward.py::conv_backward/2d/basic[eager]" in done.stdout
    assert "cases/opinfo.py::opinfo/abs/default/float32/0[eager]" in done.stdout
    assert "listing PyTorch's OpInfo samples (float32)" in done.stderr
    assert len(list((tmp_path / "cache").glob("opinfo-torch*-float32.json"))) == 1
    assert "ONNX_IMPORTED=False" in done.stdout
    assert "cases/onnx_node.py::onnx_node/test_abs[eager]" not in done.stdout   # eager takes no ONNX model
    if installed("onnx"):
        assert "listing ONNX's node tests" in done.stderr
        assert len(list((tmp_path / "cache").glob("onnx-node-*.json"))) == 1
    else:   # said once in the summary, not an error
        assert "ONNX's node tests are not collected: the onnx package is not installed" in done.stdout


# ------------------------------------------------------------------------------------- Runner

@pytest.fixture
def runner(tmp_path) -> Runner:
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "tiny.py").write_text(TINY_CASES)
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "slow.yaml").write_text("name: slow\nclass: a:B\ntimeout: 30\n")
    (tmp_path / "configs" / "plain.yaml").write_text("name: plain\nclass: a:B\n")
    (tmp_path / "crash_sets").mkdir()
    (tmp_path / "crash_sets" / "plain.yaml").write_text("- id: conv_forward/*\n  reason: crashes\n  timeout: 9\n")
    settings = Settings(rootdir=tmp_path, backends=["slow", "plain"], cases_dirs=[tmp_path / "cases"],
                        configs_dirs=[tmp_path / "configs"], xfail_dir=tmp_path / "xfail",
                        crash_sets_dir=tmp_path / "crash_sets", cases_files=[], run_crash_set=False,
                        case_timeout=None)
    return Runner(Project(settings))


def case(timeout=None) -> Case:
    return Case(id="conv_backward/2d/x", family="conv_backward", params={}, timeout=timeout)


def entry(timeout=None) -> Entry:
    return Entry("conv_backward/*", "r", Expected.XFAIL, "xfail/x.yaml:1", timeout=timeout)


def test_timeout_precedence(runner):
    slow, plain = runner.configs["slow"], runner.configs["plain"]
    assert case_timeout(case(5), slow, entry(2)) == 2          # entry first
    assert case_timeout(case(5), slow, entry(None)) == 5       # then the case
    assert case_timeout(case(), slow, None) == 30              # then the backend config
    assert case_timeout(case(), plain, None) == DEFAULT_TIMEOUT == 60
    assert case_timeout(case(), slow, None, 7.0) == 7          # --case-timeout beats the config's default
    assert case_timeout(case(), plain, None, 7.0) == 7         # and the harness's
    assert case_timeout(case(5), slow, None, 7.0) == 5         # the case's own beats --case-timeout
    assert case_timeout(case(5), slow, entry(2), 7.0) == 2     # and the entry's beats them all


def test_crash_set_case_is_not_run_and_no_worker_is_started(runner):
    (forward,) = [c for c in runner.all_cases if c.id == "conv_forward/2d/tiny"]
    record = runner.run(forward, "plain", "cases/tiny.py::conv_forward/2d/tiny[plain]")
    assert runner.pool.worker is None  # nothing was started
    assert (record.outcome, record.verdict, record.expected, record.phase) == \
        (Outcome.NOT_RUN, Verdict.SKIPPED, Expected.CRASH, None)
    assert record.expectation_source.endswith("crash_sets/plain.yaml:1")
    assert record.message.endswith("crashes; run it with --run-crash-set")
    assert runner.timeout(forward, "plain") == 9
    data = record.to_json()
    assert (data["outcome"], data["verdict"], data["expected"]) == ("not_run", "skipped", "crash")
    json.dumps(data)

