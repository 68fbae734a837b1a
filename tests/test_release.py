"""What a released package carries: its version (`python -m harness --version`, the wheel's
metadata) moves with CHANGELOG.md, whose "Unreleased" section names the version being made; the
license is declared and shipped."""
from __future__ import annotations

import re
import subprocess
import sys
import tomllib

import pytest
from e2e_support import REPO, python_path_env
from packaging.version import Version

import harness


def changelog_versions() -> tuple[str, list[str]]:
    """(the Unreleased section's version, the released versions newest first)."""
    text = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    unreleased = re.search(r"^## Unreleased \((\S+)\)$", text, re.M)
    assert unreleased, "CHANGELOG.md needs a '## Unreleased (X.Y.Z)' section"
    return unreleased.group(1), re.findall(r"^## (\d\S*) \(\d{4}-\d\d-\d\d\)$", text, re.M)


def test_the_version_is_the_changelogs_unreleased_one_and_newer_than_every_release():
    coming, released = changelog_versions()
    version = Version(harness.__version__)
    assert version.base_version == coming and (version.is_devrelease or version == Version(coming))
    assert released == sorted(released, key=Version, reverse=True) and Version(released[0]) < version


@pytest.mark.e2e
def test_the_command_line_says_its_version():
    run = subprocess.run([sys.executable, "-m", "harness", "--version"], capture_output=True, text=True,
                         env={"PYTHONPATH": python_path_env()}, timeout=60)
    assert run.stdout == f"torch-backend-e2e {harness.__version__}\n"


def test_the_license_is_declared_and_shipped():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0 WITH LLVM-exception" and project["license-files"] == ["LICENSE"]
    text = (REPO / "LICENSE").read_text()
    assert "Apache License" in text and "LLVM Exceptions to the Apache 2.0 License" in text
