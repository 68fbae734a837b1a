"""`python -m harness bisect` on a package whose versions are wheels built here: fakecc 1.0.0 to
1.5.0, where 1.4.0 breaks a lowering (tests/fake_backends.py PackageVersionBackend) and 1.2.0
does not install (it requires another Python). Each probe is a real venv sharing this one, a real
pip install from the folder (--find-links) and a real worker; the second run reuses the venvs.
The real finding across IREE's releases is in the README."""
from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from e2e_support import Project, python_path_env

pytestmark = pytest.mark.e2e   # every test runs `python -m harness bisect`

VERSIONS = ["1.0.0", "1.1.0", "1.2.0", "1.3.0", "1.4.0", "1.5.0"]
CASE = "conv_backward/2d/tiny"


def build_wheel(folder: Path, version: str, requires_python: str | None = None) -> None:
    info = f"fakecc-{version}.dist-info"
    files = {"fakecc/__init__.py": f"__version__ = {version!r}\n",
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: fakecc\nVersion: {version}\n"
                                 + (f"Requires-Python: {requires_python}\n" if requires_python else ""),
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    files[f"{info}/RECORD"] = "".join(f"{name},,\n" for name in [*files, f"{info}/RECORD"])
    with zipfile.ZipFile(folder / f"fakecc-{version}-py3-none-any.whl", "w") as wheel:
        for name, text in files.items():
            wheel.writestr(name, text)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    project = Project(tmp_path_factory.mktemp("bisect"))
    project.write("configs/fakecc.yaml", json.dumps({"name": "fakecc", "class": "fake_backends:PackageVersionBackend",
                                                     "options": {"broken_from": "1.4.0"}}))
    wheels = project.path / "wheels"
    wheels.mkdir()
    for version in VERSIONS:
        build_wheel(wheels, version, ">=4" if version == "1.2.0" else None)
    return project.path


def bisect(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", "bisect", CASE, "--backend=fakecc", *args],
                          cwd=project, capture_output=True, text=True, timeout=600,
                          env={"PYTHONPATH": python_path_env(), "PATH": "/usr/bin:/bin", "HOME": str(project)})


def test_bisect_finds_the_first_bad_version_skipping_one_that_does_not_install_and_reuses_its_venvs(project):
    args = ["--package=fakecc", "--good=1.0.0", "--bad=1.5.0", "--find-links=wheels", "--venvs=venvs"]
    first = bisect(project, *args)
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert lines[-1] == ("first bad version: 1.4.0 (last good: 1.3.0); bad signature: "
                         "fakecc cannot lower aten.convolution_backward")
    probed = {line.split(":")[0]: line for line in lines[:-1]}
    # bad, good, then the middle: 1.2.0 (skipped), its nearest neighbour 1.1.0, then 1.3.0 and 1.4.0
    assert list(probed) == [f"version {v}" for v in ("1.5.0", "1.0.0", "1.2.0", "1.1.0", "1.3.0", "1.4.0")]
    assert "skipped, it does not install here (ERROR: Package 'fakecc' requires a different Python" in \
        probed["version 1.2.0"]
    assert "passed" in probed["version 1.3.0"] and "ran fakecc 1.3.0" in probed["version 1.3.0"]
    assert "compile_error in phase lower" in probed["version 1.4.0"] and "ran fakecc 1.4.0" in probed["version 1.4.0"]
    assert "cached environment" not in first.stdout

    second = bisect(project, *args)
    assert second.returncode == 0 and second.stdout.splitlines()[-1] == lines[-1], second.stderr
    installed = [line for line in second.stdout.splitlines()[:-1] if "skipped" not in line]
    assert installed and all("cached environment" in line for line in installed)


def test_bisect_over_source_builds_in_the_order_given(project):
    for name, version in (("old", "1.0.0"), ("new", "1.4.0")):
        (project / "builds" / name / "fakecc").mkdir(parents=True, exist_ok=True)
        (project / "builds" / name / "fakecc" / "__init__.py").write_text(f"__version__ = {version!r}\n")
    done = bisect(project, "--pythonpath", "builds/old", "builds/new", "--package=fakecc")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].startswith(f"first bad source build: {project / 'builds' / 'new'} "
                                                   f"(last good: {project / 'builds' / 'old'})")


def test_no_change_when_the_good_end_fails_already_and_when_the_bad_end_passes(project):
    done = bisect(project, "--package=fakecc", "--good=1.4.0", "--bad=1.5.0", "--find-links=wheels", "--venvs=venvs")
    assert done.returncode == 0 and done.stdout.splitlines()[-1].startswith(
        "no change: 1.4.0 (the good end) already fails with fakecc cannot lower"), done.stderr
    done = bisect(project, "--package=fakecc", "--good=1.0.0", "--bad=1.1.0", "--find-links=wheels", "--venvs=venvs")
    assert done.returncode == 0 and done.stdout.splitlines()[-1] == \
        f"no change: {CASE} passes at 1.1.0 (the bad end); nothing to bisect", done.stderr


@pytest.mark.parametrize("args, message", [
    (["--package=fakecc", "--good=1.5.0", "--bad=1.0.0", "--find-links=wheels"],
     "error: --good=1.5.0 --bad=1.0.0: the good version must be older than the bad one"),
    (["--package=nosuchpackage", "--good=1.0.0", "--bad=1.5.0", "--find-links=wheels"],
     "error: --package=nosuchpackage: the folder wheels has no version of it that installs here"),
    (["--package=fakecc", "--good=0.9.0", "--bad=1.5.0", "--find-links=wheels"],
     "error: --good=0.9.0: not a version of fakecc here; use one of 1.0.0, 1.1.0, 1.2.0"),
    (["--pythonpath", "cases", "configs", "--package=fakecc"], "error: --pythonpath=cases: holds no fakecc package"),
    (["--package=fakecc", "--good=1.0.0"], "error: bisect: needs --package DIST --good V --bad V"),
])
def test_bad_input_is_one_line(project, args, message):
    done = bisect(project, *args)
    assert done.returncode == 2 and done.stderr.startswith(message) and len(done.stderr.splitlines()) == 1, \
        done.stderr
