"""The harness where its users run it, each set-up a subprocess arranged as a user has it:
a venv that is not activated (its python by full path, PATH=/usr/bin:/bin), the same venv without
py-spy, torch-mlir from a source build (importable, no distribution metadata), and the wheel
pip-installed into a fresh venv used from another project's directory."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from e2e_support import PASS, PATTERN, REPO, build_fake_compiler, run_pytest_with
from venvs import harness_wheel, linked_venv, unactivated_env, venv_with_harness

pytestmark = pytest.mark.e2e   # every test runs pytest in a set-up of its own

HANG, CRASH = "conv_backward/2d/tiny", "conv_forward/2d/tiny"


def native_faults(project) -> tuple[str, ...]:
    """The fake compiler's native hang and crash, on one case each."""
    build_fake_compiler(project.path)
    project.add_fake("native-hang", "native_hang", "lower", HANG, timeout=3)
    project.add_fake("native-crash", "native_crash", "lower", CRASH)
    return "-p", "harness.plugin", "--backend=native-hang,native-crash", "--artifacts-dir=art"


def readme_command(bundle: Path, comment: str) -> str:
    """The command of the bundle README's line that ends with `# <comment>`."""
    lines = (bundle / "README.md").read_text().splitlines()
    line = next(text for text in lines if text.rstrip().endswith(f"# {comment}"))
    return line.split("#")[0].strip()


# ------------------------------------------------------------------ 1. a venv that is not activated

def test_an_unactivated_venv_names_the_native_culprits_and_its_commands_run(e2e_project, tmp_path):
    python = linked_venv(tmp_path / "venv")
    env = unactivated_env(PYTHONPATH=str(REPO))
    result = run_pytest_with(python, e2e_project.path, *native_faults(e2e_project), env=env)
    hang, crash = result.record("native-hang", HANG), result.record("native-crash", CRASH)
    assert hang["signature"] == f"hang in {PATTERN} during phase lower", hang["message"][:500]
    assert crash["signature"] == f"SIGSEGV in {PASS}", crash["message"][:500]
    assert "native stacks unavailable" not in result.output
    bundle = e2e_project.path / crash["artifacts"]
    rerun = readme_command(bundle, "through the harness, with the project's configs and ini")
    assert rerun.startswith(f"cd {e2e_project.path} && {python} -m pytest ")  # the interpreter, by full path
    again = subprocess.run(rerun, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True)  # from anywhere
    assert again.returncode == 1 and f"worker killed by SIGSEGV in {PASS}" in again.stdout, again.stdout[-2000:]
    repro = subprocess.run(readme_command(bundle, "torch and the backend alone"), shell=True, env=env,
                           capture_output=True, text=True)
    assert repro.returncode == 1 and "no standalone reproduction yet" in repro.stderr, repro.stderr[-2000:]


def test_a_missing_py_spy_is_said_once_in_the_summary(e2e_project, tmp_path):
    python = linked_venv(tmp_path / "venv", hide=lambda name: name == "py-spy" or name.startswith("py_spy"))
    result = run_pytest_with(python, e2e_project.path, *native_faults(e2e_project),
                             env=unactivated_env(PYTHONPATH=str(REPO)))
    assert result.output.count("native stacks unavailable: py-spy not found") == 1
    hang = result.record("native-hang", HANG)
    assert (hang["outcome"], hang["signature"]) == ("timed_out", "timeout in phase lower")  # no frame to name


# ------------------------------------------------------------------ 2. torch-mlir from a source build

def test_a_torch_mlir_source_build_on_pythonpath_gives_the_wheels_outcomes(tmp_path):
    wheel = run_pytest_with(sys.executable, REPO, "-k", "parity", "--backend=linalg-on-tensors",
                            env=unactivated_env(), report=str(tmp_path / "wheel.json"))
    installed = Path(wheel.report["environment"]["backends"]["linalg-on-tensors"]["imported_from"]["torch-mlir"])
    build = tmp_path / "build" / "python_packages" / "torch_mlir"  # a source build's layout
    shutil.copytree(installed, build / "torch_mlir", copy_function=_link_or_copy)
    python = linked_venv(tmp_path / "venv", hide=lambda name: name.startswith(("torch_mlir", "torch-mlir")))
    assert subprocess.run([python, "-c", "import importlib.metadata as m; m.version('torch-mlir')"],
                          capture_output=True).returncode != 0  # no distribution metadata: only the package
    source = run_pytest_with(python, REPO, "-k", "parity", "--backend=linalg-on-tensors",
                             f"--artifacts-dir={tmp_path / 'art'}", "--artifacts=all",
                             env=unactivated_env(PYTHONPATH=str(build)), report=str(tmp_path / "source.json"))
    outcomes = {(r["case"], r["outcome"], r["phase"]) for r in wheel.results}
    assert len(outcomes) == 7 and {(r["case"], r["outcome"], r["phase"]) for r in source.results} == outcomes
    block = source.report["environment"]["backends"]["linalg-on-tensors"]
    assert block["imported_from"]["torch-mlir"] == str(build / "torch_mlir")
    assert block["versions"]["torch-mlir"] == f"unknown (source build) at {build / 'torch_mlir'}"
    assert block["reported"]["torch-mlir"] == block["versions"]["torch-mlir"]  # what the worker saw
    strided = next(r for r in source.results if r["case"].endswith("2DStrided"))
    stage = (REPO / strided["artifacts"] / "stages.txt").read_text().splitlines()[1]
    assert stage.startswith(f"{build}/torch_mlir/_mlir_libs/torch-mlir-opt ")  # the build's own tool
    assert source.ret == 0 and {r["verdict"] for r in source.results} == {"ok"}  # the parity entries need torch only
    # Other entries hold on torch-mlir==20261001: with the version unknown they do not apply, which the
    # summary says once, naming them; with the version stated (--assume-version) they apply again.
    notice = re.search(r"^when: torch-mlir is unknown \(source build\) at .*?: an unknown version satisfies no "
                       r"condition, so (\d+) entries do not apply "
                       r"\(xfail/linalg-on-tensors.yaml lines (\d+(, \d+)*)\); "
                       r"state it with --assume-version torch-mlir=VERSION$", source.stdout, re.M)
    assert notice and int(notice.group(1)) == len(notice.group(2).split(", ")) >= 2, source.stdout[-3000:]
    assumed = run_pytest_with(python, REPO, "-k", "parity and 2DStrided", "--backend=linalg-on-tensors",
                              "--assume-version=torch-mlir=20261001", env=unactivated_env(PYTHONPATH=str(build)),
                              report=str(tmp_path / "assumed.json"))
    assert assumed.ret == 0 and "an unknown version" not in assumed.output, assumed.output[-3000:]
    assert assumed.report["environment"]["assumed_versions"] == {"torch-mlir": "20261001"}


def _link_or_copy(source: str, dest: str) -> None:
    try:
        os.link(source, dest)  # a copy as far as imports go, without 300 MB of writes
    except OSError:
        shutil.copy2(source, dest)


# ------------------------------------------------------------------ 3. the wheel, from another project

MINE = """\
from harness.families.conv import conv_backward_case

CASES = [
    conv_backward_case("plain", input_shape=[1, 2, 5, 5], weight_shape=[2, 2, 3, 3]),
    conv_backward_case("grouped", input_shape=[2, 4, 8, 8], weight_shape=[6, 2, 3, 3], groups=2),
]
"""


# CI time: CI runs another project's cases from the wheel (tests/test_install_sets.py's base set) and a
# project's own config from the wheel (tests/test_families_from_packages.py)
@pytest.mark.nightly
def test_the_installed_wheel_runs_another_projects_cases_with_its_own_config(tmp_path):
    python = venv_with_harness(tmp_path / "venv", harness_wheel(tmp_path, REPO))
    project = tmp_path / "project"
    for relpath, text in {
        "cases/mine.py": MINE,
        "configs/mine.yaml": "name: mine\nextends: linalg-on-tensors\ndescription: our linalg settings\n",
        "xfail/mine.yaml": """\
            - id: conv_backward/2d/grouped
              phase: lower
              reason: the decomposition builds a grouped convolution with a bad shape
            """,
    }.items():
        (project / relpath).parent.mkdir(parents=True, exist_ok=True)
        (project / relpath).write_text(textwrap.dedent(text))
    result = run_pytest_with(python, project, "--backend=eager,mine", "--report-html=page.html", env=unactivated_env())
    assert result.ret == 0, result.output[-3000:]
    assert "conv_backward/2d/grouped" in (project / "page.html").read_text()  # the page's assets are in the wheel
    outcomes = {(r["backend"], r["case"]): (r["outcome"], r["verdict"]) for r in result.results}
    assert outcomes == {("eager", "conv_backward/2d/plain"): ("passed", "ok"),
                        ("eager", "conv_backward/2d/grouped"): ("passed", "ok"),
                        ("mine", "conv_backward/2d/plain"): ("passed", "ok"),
                        ("mine", "conv_backward/2d/grouped"): ("compile_error", "ok")}
    assert "1 xfailed" in result.stdout
    backends = result.report["environment"]["backends"]
    site = subprocess.run([python, "-c", "import harness, pathlib; print(pathlib.Path(harness.__file__).parent)"],
                          cwd=project, capture_output=True, text=True, check=True).stdout.strip()
    assert site.startswith(str(tmp_path / "venv")) and Path(site, "configs", "eager.yaml").is_file()
    assert backends["eager"]["config"] == str(Path(site, "configs", "eager.yaml"))  # the wheel's built-in
    assert backends["mine"]["config"] == "configs/mine.yaml"                      # the project's own
    assert not Path(site, "configs").is_symlink()


# ------------------------------------------------------------------ the environment block

def test_the_environment_block_says_where_each_required_package_comes_from(e2e_project):
    result = e2e_project.run("--backend=eager", "-k", "conv_forward")
    eager = result.report["environment"]["backends"]["eager"]
    assert eager["imported_from"]["torch"].endswith("/torch") and os.path.isdir(eager["imported_from"]["torch"])
    assert eager["versions"]["torch"] == result.report["environment"]["torch"]
    assert json.dumps(eager)  # plain data
