"""pytest's rerun flags on e2e cases, as in any pytest project: after a run with failures, `--lf`
collects exactly the failed cases (with and without -n), `--ff` runs them first, `--sw` stops at
the first failure and the next `--sw` run starts there, `--nf` runs a new case module first and
then the most recently modified ones. A backend that makes gelu 1% off
(tests/isolate_backends.py) fails the four MLP module cases and passes the rest."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from e2e_support import REPO, Project, python_path_env

TESTS = Path(__file__).parent
SELECTION = "(module/mlp or conv_backward/1d/basic) and not int8"   # with the quant extra, module/mlp/int8 runs too
FAILING = {"module/mlp", "module/mlp_normal_inputs", "module/mlp_dynamic_batch", "module/mlp_float64"}


@pytest.fixture
def project(tmp_path) -> Path:
    shutil.copy(TESTS / "isolate_backends.py", tmp_path / "isolate_backends.py")
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "off-gelu.yaml").write_text(json.dumps(
        {"name": "off-gelu", "class": "isolate_backends:PerturbingBackend",
         "options": {"perturb": "aten.gelu.default"}, "timeout": 120}))
    return tmp_path


def pytest_run(project: Path, *args: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    """The run and the case ids it ran, in the order it ran them (its verbose lines; the JSON
    report, sorted by case, says the same set)."""
    run = subprocess.run([sys.executable, "-m", "pytest", "--pyargs", "harness.cases", "--backend=off-gelu",
                          "--configs-dir=configs", "--report-json=r.json", "-v", *args], cwd=project,
                         capture_output=True, text=True, timeout=600,
                         env={"PYTHONPATH": python_path_env(), "PATH": "/usr/bin:/bin"})
    ran = [serial or parallel for serial, parallel in re.findall(   # -n 0's lines, and -n 2's
        r"^\S+\.py::(\S+)\[off-gelu\] (?:PASSED|FAILED)|^\[gw\d+\].* (?:PASSED|FAILED) \S+\.py::(\S+)\[off-gelu\]",
        run.stdout, re.M)]
    reported = [r["case"] for r in json.loads((project / "r.json").read_text())["results"]]
    assert sorted(ran) == sorted(reported), run.stdout
    return run, ran


@pytest.mark.e2e
def test_last_failed_reruns_exactly_the_failed_cases(project):
    first, ran = pytest_run(project, "-k", SELECTION, "-n", "0")
    assert first.returncode == 1 and len(ran) == 5
    again, ran = pytest_run(project, "--lf", "-n", "0")
    assert "run-last-failure: rerun previous 4 failures" in again.stdout and set(ran) == FAILING and len(ran) == 4
    parallel, ran = pytest_run(project, "--lf", "-n", "2")
    assert set(ran) == FAILING and len(ran) == 4, parallel.stdout


@pytest.mark.e2e
def test_failed_first_and_stepwise(project):
    pytest_run(project, "-k", SELECTION, "-n", "0")
    _, ran = pytest_run(project, "--ff", "-k", SELECTION, "-n", "0")
    assert set(ran[:4]) == FAILING and len(ran) == 5
    _, ran = pytest_run(project, "--sw", "-k", SELECTION, "-n", "0")
    assert ran[-1] in FAILING and not FAILING & set(ran[:-1])   # it stopped at the first failure
    _, then = pytest_run(project, "--sw", "--sw-skip", "-k", SELECTION, "-n", "0")
    assert then[0] == ran[-1] and len(then) == 2 and then[1] in FAILING   # from there, past it, to the next


def one_case_module(name: str) -> str:
    return ("from harness.families.conv import conv_backward_case\n"
            f"CASES = [conv_backward_case({name!r}, input_shape=[1, 2, 4, 4], weight_shape=[2, 2, 3, 3])]\n")


def modules_in_run_order(project: Path, *args: str) -> list[str]:
    """The case modules of an eager run of the tiny project, in the order their cases ran."""
    run = subprocess.run([sys.executable, "-m", "pytest", "-v", "-n", "0", *args], cwd=project, capture_output=True,
                         text=True, timeout=300, env={"PYTHONPATH": python_path_env(), "PATH": "/usr/bin:/bin"})
    assert run.returncode == 0, run.stdout + run.stderr
    ran = re.findall(r"^cases/(\S+)\.py::\S+\[eager\] PASSED", run.stdout, re.M)
    return [module for i, module in enumerate(ran) if i == 0 or ran[i - 1] != module]


@pytest.mark.e2e
def test_new_first_runs_a_new_case_module_first_then_the_most_recently_modified(tmp_path):
    project = Project(tmp_path).path   # cases/tiny.py, three cases on eager
    (project / "cases" / "a_old.py").write_text(one_case_module("a_old"))
    assert modules_in_run_order(project) == ["a_old", "tiny"]   # the run that --nf's new cases are new to
    (project / "cases" / "z_new.py").write_text(one_case_module("z_new"))
    now = os.stat(project / "cases" / "z_new.py").st_mtime
    for module, age in (("a_old", 3600), ("z_new", 1800), ("tiny", 60)):   # tiny modified last, z_new new
        os.utime(project / "cases" / f"{module}.py", (now - age, now - age))
    assert modules_in_run_order(project, "-p", "no:cacheprovider") == ["a_old", "tiny", "z_new"]   # z_new stays new
    assert modules_in_run_order(project, "--nf") == ["z_new", "tiny", "a_old"]


def test_the_checkout_keeps_the_cache_provider_on():
    options = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "no:cacheprovider" not in options.get("addopts", "")
