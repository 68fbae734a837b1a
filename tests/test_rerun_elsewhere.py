"""The rerun commands the harness prints (harness.rerun) run as printed, from any folder, in a
project outside the harness's repository whose backend is its own: a bundle's README and repro.py,
the JSON report's, and `python -m harness reduce`'s for the reduced case (whose folder has no
configs/ and lies outside the project)."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from e2e_support import REPO, python_path_env

from harness.outcomes import Expected
from harness.rerun import Place, plugin_flags, typed_flags

SMALL = '''\
import torch


class Small(torch.nn.Module):
    def forward(self, x):
        return (x.relu() * 2 + x.sin()).sum(dim=1)
'''
CASES = '''\
from harness.families.module import module_case

CASES = [module_case("small", "local_models:Small", [{"shape": [2, 4]}])]
'''
# Its backend: eager PyTorch with a compiler error injected into every case (fake_backends.py).
MINE = '{"name": "mine", "class": "fake_backends:FaultyBackend", "options": {"fault": "raise", "phase": "compile"}}'
FAILURE = "injected compiler failure"


def _env() -> dict[str, str]:
    """The harness importable, and nothing of the self-tests' own pytest (xdist, addopts)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return {**env, "PYTHONPATH": python_path_env()}


def _shell(command: str, cwd: Path) -> subprocess.CompletedProcess:
    """A printed command line, as a user pastes it into a shell."""
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=_env(), capture_output=True, text=True,
                          timeout=240)


def _printed(text: str, pattern: str) -> str:
    """The one line of `text` that matches `pattern`, stripped of surrounding blanks."""
    lines = [line.strip() for line in text.splitlines() if re.search(pattern, line)]
    assert len(lines) == 1, f"{pattern!r} in:\n{text}"
    return lines[0]


def _assert_reproduces(run: subprocess.CompletedProcess, case: str) -> None:
    output = run.stdout + run.stderr
    assert run.returncode == 1, output
    assert "unknown backend" not in output and "mine: 1 cases  compile_error=1" in output, output
    assert case in output and FAILURE in output, output


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project of its own, outside the repository: cases/, configs/ (a backend in a local module),
    and a pytest.ini that selects that backend."""
    root = tmp_path / "my project"   # a space: every path in a command must be quoted
    (root / "cases").mkdir(parents=True)
    (root / "configs").mkdir()
    (root / "cases" / "tiny.py").write_text(CASES)
    (root / "local_models.py").write_text(SMALL)
    (root / "configs" / "mine.yaml").write_text(MINE)
    shutil.copy(REPO / "tests" / "fake_backends.py", root / "fake_backends.py")
    (root / "pytest.ini").write_text("[pytest]\ntestpaths = cases\ne2e_backends = mine\n")
    assert REPO not in root.parents
    return root


@pytest.mark.e2e
def test_bundle_and_reduce_commands_run_as_printed_from_elsewhere(project: Path, tmp_path: Path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    artifacts, reduced = tmp_path / "artifacts", tmp_path / "reduced"
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "harness.plugin", "-p", "no:cacheprovider", "-n", "0",
                          f"--artifacts-dir={artifacts}", "--report-json=report.json"],
                         cwd=project, env=_env(), capture_output=True, text=True, timeout=240)
    assert run.returncode == 1, run.stdout + run.stderr
    [record] = json.loads((project / "report.json").read_text())["results"]
    assert (record["case"], record["outcome"]) == ("module/small", "compile_error")

    # The bundle's README: where to run, and both commands, each run as printed from elsewhere.
    readme = (project / record["artifacts"] / "README.md").read_text()
    assert "repository root" not in readme and f"in the project, {project}" in readme
    rerun = _printed(readme, r"-m pytest .*# through the harness")
    assert rerun.startswith(f"cd '{project}' && ") and rerun.split("  ")[0] == record["rerun_command"]
    _assert_reproduces(_shell(rerun, elsewhere), "module/small")
    repro = _shell(_printed(readme, r"repro\.py"), elsewhere)   # no standalone half: it names the rerun
    assert repro.returncode != 0 and "no standalone reproduction" in repro.stderr, repro.stderr
    _assert_reproduces(_shell(_printed(repro.stderr, r"-m pytest"), elsewhere), "module/small")

    # The reduction, out of the project: its printed command and its bundle's repro.py.
    run = subprocess.run([sys.executable, "-m", "harness", "reduce", "module/small", "--backend=mine",
                          f"--out={reduced}"], cwd=project, env=_env(), capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr
    printed = _printed(run.stderr, r"\] rerun: ").split("] rerun: ", 1)[1]
    assert printed == json.loads((reduced / "reduce.json").read_text())["rerun"]
    assert f"-c '{project / 'pytest.ini'}'" in printed and str(reduced / "case.yaml") in printed
    _assert_reproduces(_shell(printed, elsewhere), "reduced/cases_file/module_small")
    repro = _shell(f"cd '{reduced / 'bundle'}' && {sys.executable} repro.py", elsewhere)
    assert _printed(repro.stderr, r"-m pytest") == printed


def test_a_rerun_names_the_project_its_ini_and_what_was_typed(tmp_path: Path):
    typed = {"configs_dirs": ["more configs"], "case_timeout": 30.0, "cases_files": [], "memory_limit_mb": None,
             "xfail_dir": None, "backends": ["ignored: the rerun names its own"]}
    flags = typed_flags(typed.get, tmp_path)
    assert flags == (f"--configs-dir={tmp_path / 'more configs'}", "--case-timeout=30")
    place = Place(tmp_path, tmp_path / "pytest.ini", plugin_flags(["-p", "harness.plugin", "-pno:xdist", "-q"]))
    command = place.case("mine", "cases/tiny.py::module/small[mine]", Expected.CRASH)
    assert command.endswith(f"-m pytest -c {tmp_path}/pytest.ini --rootdir={tmp_path} -p harness.plugin -p no:xdist "
                            "-o e2e_workers=0 --backend=mine --run-crash-set 'cases/tiny.py::module/small[mine]'")
    assert command.startswith(f"cd {tmp_path} && ")
    elsewhere = tmp_path.parent / "out" / "case.yaml"   # outside the project: absolute
    assert place.cases_file("mine", elsewhere, tmp_path / "cases" / "tiny.py", "reduced/x").endswith(
        f"--cases-file={elsewhere} --backend=mine 'cases/tiny.py::reduced/x[mine]'")
