"""The versions a bisection probes: those of a distribution on the package index (pip's own
`pip index versions`, with the user's --index-url and --find-links), or in a folder of wheels,
in version order. Several distributions that move together (iree-base-compiler and
iree-base-runtime) are probed at the versions they all have."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from harness.errors import HarnessInputError


def index_options(index_url: str | None, find_links: Path | None) -> list[str]:
    return [*(["--index-url", index_url] if index_url else []),
            *(["--find-links", str(find_links)] if find_links else [])]


def available(dist: str, index_url: str | None, find_links: Path | None) -> list[Version]:
    """Every version of `dist` that pip can install here, oldest first."""
    found = set(_in_folder(dist, find_links)) if find_links else set()
    if index_url or not find_links:   # a folder alone is the whole source (nightly wheels)
        found |= set(_on_index(dist, index_url, find_links))
    if not found:
        where = f"the folder {find_links}" if find_links and not index_url else "the package index"
        raise HarnessInputError(f"--package={dist}", f"{where} has no version of it that installs here",
                                "check the name (pip index versions NAME), or pass --index-url or --find-links")
    return sorted(found)


def _on_index(dist: str, index_url: str | None, find_links: Path | None) -> list[Version]:
    done = subprocess.run([sys.executable, "-m", "pip", "index", "versions", dist, "--disable-pip-version-check",
                           *index_options(index_url, find_links)], capture_output=True, text=True)
    listed = re.search(r"^Available versions: (.+)$", done.stdout, re.M)
    return [Version(v.strip()) for v in listed.group(1).split(",")] if listed else []


def _in_folder(dist: str, folder: Path) -> list[Version]:
    if not folder.is_dir():
        raise HarnessInputError(f"--find-links={folder}", "is not a folder", "pass the folder holding the wheels")
    versions = []
    for wheel in folder.glob("*.whl"):
        try:
            name, version, _, _ = parse_wheel_filename(wheel.name)
        except ValueError:
            continue
        if name == canonicalize_name(dist):
            versions.append(version)
    return versions


def parse_version(text: str, option: str) -> Version:
    try:
        return Version(text)
    except InvalidVersion:
        raise HarnessInputError(f"{option}={text}", "is not a version", "write it as pip does, e.g. 3.10.0") from None


def between(dists: list[str], good: str, bad: str, index_url: str | None, find_links: Path | None) -> list[Version]:
    """The versions all `dists` have from good to bad, both included (both must be among them)."""
    low, high = parse_version(good, "--good"), parse_version(bad, "--bad")
    if low >= high:
        raise HarnessInputError(f"--good={good} --bad={bad}", "the good version must be older than the bad one",
                                "swap them (a bisection looks for the first bad version after a good one)")
    common: set[Version] | None = None
    for dist in dists:
        versions = set(available(dist, index_url, find_links))
        common = versions if common is None else common & versions
    common = common or set()
    ordered = sorted(common)
    for version, option in ((low, "--good"), (high, "--bad")):
        if version not in common:
            shown = ", ".join(str(v) for v in ordered) or "none"
            raise HarnessInputError(f"{option}={version}", f"not a version of {' and '.join(dists)} here",
                                    f"use one of {shown}")
    return [v for v in ordered if low <= v <= high]
