"""Required packages without distribution metadata (source builds), the `when:` rule for a version
that cannot be read, --assume-version, and finding tools beside a package rather than on PATH."""
from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import textwrap

import pytest
from e2e_support import REPO, python_path_env
from test_config import settings, write

from harness.controller.runner import Runner
from harness.errors import HarnessInputError
from harness.families.loader import load_families
from harness.installation.executables import find_tool
from harness.installation.packages import locate
from harness.project import Project

FAMILY_TABLE = load_families([], REPO)

@pytest.fixture
def source_build(tmp_path, monkeypatch):
    """`srcpkg`, importable from a build folder on sys.path, with no distribution installed."""
    package = tmp_path / "build" / "python_packages" / "srcpkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(package.parent))
    return package


def test_an_importable_package_without_metadata_is_found_with_its_path(source_build):
    found = locate("srcpkg")
    assert (found.path, found.version) == (str(source_build), None)
    assert found.version_text == f"unknown (source build) at {source_build}"
    assert locate("not-a-package-anywhere") is None


def test_a_source_builds_version_file_gives_its_version(source_build):
    (source_build / "_version.py").write_text('__version__ = "2.0.dev1"\n')
    assert locate("srcpkg").version == "2.0.dev1"


def located_in_a_fresh_interpreter(cwd, *front: str) -> tuple[str, str | None]:
    """`locate("torch-mlir")` in a new Python whose sys.path starts with `front`: find_spec would
    answer from a torch_mlir already imported, and other self-tests import it in this process."""
    code = "from harness.installation.packages import locate; p = locate('torch-mlir'); print(p.path); print(p.version)"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*front, python_path_env()])}
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    path, version = done.stdout.splitlines()
    return path, None if version == "None" else version


def test_metadata_of_an_installed_wheel_is_not_taken_for_a_source_build_that_shadows_it(tmp_path):
    try:
        wheel = importlib.metadata.version("torch-mlir")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("needs the torch-mlir wheel installed")
    shadow = tmp_path / "build" / "torch_mlir"  # the wheel is installed; this build comes first on sys.path
    shadow.mkdir(parents=True)
    path, version = located_in_a_fresh_interpreter(tmp_path)
    assert version == wheel and path != str(shadow)
    assert located_in_a_fresh_interpreter(tmp_path, str(shadow.parent)) == (str(shadow), None)


def test_requires_is_met_by_an_importable_module_and_may_name_its_import_name(tmp_path, source_build):
    write(tmp_path / "configs", "src", "name: src\nclass: a:B\nrequires: [srcpkg, {other-dist: srcpkg}]\n")
    runner = Runner(Project(settings(tmp_path, ["src"])))
    block = runner.backend_environment()["src"]
    assert block["imported_from"] == {"srcpkg": str(source_build), "other-dist": str(source_build)}
    assert block["versions"]["srcpkg"] == f"unknown (source build) at {source_build}"


def when_entry(tmp_path, condition: str) -> None:
    write(tmp_path / "configs", "src", "name: src\nclass: a:B\nrequires: [srcpkg]\n")
    (tmp_path / "xfail").mkdir(exist_ok=True)
    (tmp_path / "xfail" / "src.yaml").write_text(textwrap.dedent(f"""\
        - id: conv_backward/2d/tiny
          reason: fails on 1.x
          when: {{srcpkg: "{condition}"}}
        """))


def test_an_unknown_version_satisfies_no_condition_and_the_summary_names_the_entries(tmp_path, source_build):
    when_entry(tmp_path, ">=1")
    runner = Runner(Project(settings(tmp_path, ["src"])))
    assert runner.expectations["src"].lookup("conv_backward/2d/tiny") is None
    notice = next(n for n in runner.notices() if n.startswith("when:"))
    assert notice == (f"when: srcpkg is unknown (source build) at {source_build}: an unknown version satisfies "
                      f"no condition, so 1 entries do not apply ({tmp_path / 'xfail' / 'src.yaml'} line 1); state it "
                      f"with --assume-version srcpkg=VERSION")


def test_assume_version_states_it(tmp_path, source_build):
    when_entry(tmp_path, ">=1")
    runner = Runner(Project(settings(tmp_path, ["src"], assumed_versions={"srcpkg": "1.5"})))
    assert runner.expectations["src"].lookup("conv_backward/2d/tiny").reason == "fails on 1.x"
    assert not [n for n in runner.notices() if n.startswith("when:")]
    unknown = r"--assume-version=tensorflow=2: unknown name 'tensorflow'; use one of"
    with pytest.raises(HarnessInputError, match=unknown):
        Runner(Project(settings(tmp_path, ["src"], assumed_versions={"tensorflow": "2"})))


def test_tools_are_found_beside_the_package_or_in_a_build_trees_bin(source_build, tmp_path):
    libs = source_build / "_libs"
    libs.mkdir()
    tool = libs / "srcpkg-opt-e2e"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    assert find_tool("srcpkg-opt-e2e", module="srcpkg") == str(tool)
    built = tmp_path / "build" / "bin" / "srcpkg-translate-e2e"  # build/bin, as a CMake build lays it out
    built.parent.mkdir()
    built.write_text("#!/bin/sh\n")
    built.chmod(0o755)
    assert find_tool("srcpkg-translate-e2e", module="srcpkg") == str(built)
    assert find_tool("srcpkg-nowhere-e2e", module="srcpkg") is None


def test_py_spy_is_found_from_its_distribution_not_from_path(monkeypatch):
    find_tool.cache_clear()
    monkeypatch.setenv("PATH", "/nonexistent")
    try:
        found = find_tool("py-spy", distribution="py-spy")
    finally:
        find_tool.cache_clear()
    assert found and os.access(found, os.X_OK)
