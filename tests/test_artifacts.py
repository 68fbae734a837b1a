"""Repro bundles (--artifacts-dir): what goes in, which results keep theirs, and that their
commands reproduce the result outside the harness, on fakes and on the real linalg-on-tensors."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from e2e_support import REPO

from harness.bundle_layout import bundle_path
from harness.installation.executables import python_command


@pytest.mark.parametrize("case_id", ["conv/../../etc", "..", "a/b", "a_b", "x" * 300, "sp ace/ü"])
def test_bundle_paths_stay_inside_the_root(tmp_path, case_id):
    path = bundle_path(tmp_path, "../backend", case_id)
    assert path.resolve().is_relative_to(tmp_path.resolve())
    assert len(path.relative_to(tmp_path).parts) == 2
    assert all(part not in (".", "..") for part in path.relative_to(tmp_path).parts)


def test_bundle_paths_do_not_collide_when_sanitising_makes_names_alike(tmp_path):
    ids = ["a/b", "a_b", "a b", "a__b", "A/b"]
    assert len({bundle_path(tmp_path, "eager", i) for i in ids}) == len(ids)
    assert bundle_path(tmp_path, "eager", "a_b").name == "a_b"  # a name that is already safe stays readable


def bundle_of(result, backend: str, case: str) -> Path:
    record = result.record(backend, case)
    assert record["artifacts"], record
    return result.project_path / record["artifacts"]


@pytest.fixture
def artifacts_run(e2e_project):
    e2e_project.add_fake("fake-raise", "raise", "lower", "conv_backward/2d/tiny")
    e2e_project.add_fake("fake-hang", "hang", "lower", "conv_forward/2d/tiny", timeout=3)
    result = e2e_project.run("--backend=eager,fake-raise,fake-hang", "--artifacts-dir=art")
    result.project_path = e2e_project.path
    return result


def test_only_unexpected_results_keep_a_bundle(artifacts_run):
    kept = {(r["backend"], r["case"]) for r in artifacts_run.results if r["artifacts"]}
    assert kept == {("fake-raise", "conv_backward/2d/tiny"), ("fake-hang", "conv_forward/2d/tiny")}
    assert sorted(p.name for p in (artifacts_run.project_path / "art").iterdir()) == ["fake-hang", "fake-raise"]


def test_a_bundle_has_the_case_its_inputs_a_repro_script_and_a_readme(artifacts_run):
    bundle = bundle_of(artifacts_run, "fake-raise", "conv_backward/2d/tiny")
    assert sorted(p.name for p in (bundle / "inputs").iterdir()) == [
        "set0_grad_output.npy", "set0_input.npy", "set0_weight.npy"]
    readme = (bundle / "README.md").read_text()
    assert "compile_error in phase lower" in readme
    rerun = artifacts_run.record("fake-raise", "conv_backward/2d/tiny")["rerun_command"]   # runs from anywhere
    assert rerun.startswith(f"cd {artifacts_run.project_path} && {python_command()} -m pytest -c ")
    assert rerun.endswith("--backend=fake-raise 'cases/tiny.py::conv_backward/2d/tiny[fake-raise]'")
    assert rerun in readme and "repository root" not in readme
    assert f"&& {python_command()} repro.py" in readme
    assert "injected compiler failure" in readme
    # The fake backend has no standalone reproduction: repro.py says so, naming the harness command.
    done = subprocess.run([sys.executable, "repro.py"], cwd=bundle, capture_output=True, text=True)
    assert done.returncode == 1 and "no standalone reproduction yet" in done.stderr


def test_a_hung_case_still_leaves_its_inputs(artifacts_run):
    bundle = bundle_of(artifacts_run, "fake-hang", "conv_forward/2d/tiny")
    assert (bundle / "inputs" / "set0_input.npy").exists()
    assert "timed_out in phase lower" in (bundle / "README.md").read_text()


def test_artifacts_all_keeps_passing_results_and_their_repro_runs_alone(e2e_project):
    result = e2e_project.run("--backend=eager", "--artifacts-dir=art", "--artifacts=all")
    assert all(r["artifacts"] for r in result.results)
    bundle = e2e_project.path / result.record("eager", "conv_backward/2d/tiny")["artifacts"]
    done = subprocess.run([sys.executable, str(bundle / "repro.py")], capture_output=True, text=True, cwd="/")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("0 of ") == 3  # three gradients, every element within tolerance
    assert not re.search(r"^\s*(import|from) harness", (bundle / "repro.py").read_text(), re.M)


def test_unwritable_artifacts_dir_is_one_usage_error(e2e_project):
    (e2e_project.path / "file").write_text("")
    result = e2e_project.run("--backend=eager", "--artifacts-dir=file/sub", report=None)
    assert result.ret == 4
    assert "--artifacts-dir=file/sub: cannot create it" in result.output
    assert "Traceback" not in result.output


@pytest.mark.e2e
def test_a_real_linalg_compile_failure_reproduces_from_the_bundle(tmp_path):
    """conv_backward/2d/groups2 fails to lower on the pinned torch-mlir: the bundle's torch-mlir-opt
    command and its repro.py both reproduce that error without the harness."""
    case = "conv_backward/2d/groups2"
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
                          "--backend=linalg-on-tensors", f"--artifacts-dir={tmp_path}", "--artifacts=all",
                          f"cases/conv_backward.py::{case}[linalg-on-tensors]"],
                         cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:]  # an expected failure (xfail/linalg-on-tensors.yaml)
    bundle = bundle_path(tmp_path, "linalg-on-tensors", case)
    error = "'linalg.conv_2d_ngchw_gfchw' op inferred input/output operand #1 has shape's dimension #2"
    command = (bundle / "stages.txt").read_text().splitlines()[-1]
    opt, pipeline = shlex.split(command)[:2]  # torch-mlir-opt by its full path: no PATH needed
    assert os.path.isabs(opt) and opt.endswith("/torch-mlir-opt") and os.access(opt, os.X_OK)
    assert pipeline.startswith("--pass-pipeline=builtin.module(torch-backend-to-linalg")
    opt = subprocess.run(command, shell=True, cwd=bundle, capture_output=True, text=True)
    assert opt.returncode != 0 and error in opt.stderr
    repro = subprocess.run([sys.executable, "repro.py"], cwd=bundle, capture_output=True, text=True)
    assert repro.returncode != 0 and error in repro.stderr
    assert command in (bundle / "README.md").read_text()
