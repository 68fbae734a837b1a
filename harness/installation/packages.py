"""The packages backends require: where the worker will import each from, and its version.

A package counts as present when it can be imported, whether or not a distribution of that name
is installed: torch-mlir contributors put their build's python_packages folder on PYTHONPATH,
which gives an importable `torch_mlir` without metadata. The version then comes from the package's
own version file, if it has one, and is otherwise unknown. Nothing is imported here (the
controller stays free of torch); `importlib.util.find_spec` says where the import would come from.
`locate` is the one place that finds a package: the reports, `when:` conditions, the backends'
versions and the stage cache's keys (harness.stages.keys) all ask it.
"""
from __future__ import annotations

import dataclasses
import importlib.metadata
import importlib.util
import json
import re
from pathlib import Path

VERSION_FILES = ("_version.py", "version.py")
UNKNOWN_VERSION = "unknown (source build)"   # a package without metadata or a version file
_VERSION_LINE = re.compile(r"^(?:__version__|version)\s*(?::\s*str\s*)?=\s*['\"]([^'\"]+)['\"]", re.M)


@dataclasses.dataclass(frozen=True)
class Package:
    distribution: str      # e.g. torch-mlir
    module: str            # its import name, e.g. torch_mlir
    path: str              # the folder (or file) it is imported from
    version: str | None    # from the distribution's metadata or the package's version file; None: unknown

    @property
    def known_version(self) -> str:
        """The version, or UNKNOWN_VERSION: what a stage cache key holds (one build alike in two folders)."""
        return self.version or UNKNOWN_VERSION

    @property
    def version_text(self) -> str:
        """The version, or UNKNOWN_VERSION and where the build is: what reports and `when:` conditions see."""
        return self.version or f"{UNKNOWN_VERSION} at {self.path}"


def default_module(distribution: str) -> str:
    """The import name a distribution's name suggests: torch-mlir -> torch_mlir."""
    return distribution.replace("-", "_").replace(".", "_")


def locate(distribution: str, module: str | None = None) -> Package | None:
    """The package as the worker would import it, or None when it is neither importable nor installed."""
    module = module or default_module(distribution)
    path = next(iter(module_paths(module)), None)
    dist = _distribution(distribution)
    if dist is not None and (path is None or _describes(dist, module, path)):
        return Package(distribution, module, str(path or dist.locate_file("")), dist.version)
    if path is not None:
        return Package(distribution, module, str(path), _version_file(path))
    return None


def version_text(distribution: str, module: str | None = None) -> str | None:
    """The version for reports and conditions: a version, 'unknown (source build) at PATH', or None
    when the package is not there at all."""
    package = locate(distribution, module)
    return package.version_text if package else None


def module_paths(module: str) -> list[Path]:
    """Where `module` would be imported from, without importing it: a package's folders (several
    for a namespace package) or a module's file; [] when it cannot be imported."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):  # a parent package that is missing or broken
        return []
    if spec is None:
        return []
    if spec.submodule_search_locations:
        return [Path(p) for p in spec.submodule_search_locations]
    return [Path(spec.origin)] if spec.origin and spec.origin not in ("built-in", "frozen") else []


def _distribution(name: str) -> importlib.metadata.Distribution | None:
    try:
        return importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _describes(dist: importlib.metadata.Distribution, module: str, path: Path) -> bool:
    """Whether the metadata belongs to the package that is imported: it sits in the same folder,
    or it is an editable install (whose package lives elsewhere by design). A source build on
    PYTHONPATH shadowing an installed wheel is neither."""
    site = path.parents[module.count(".")]
    if Path(str(dist.locate_file(""))).resolve() == site.resolve():
        return True
    direct_url = dist.read_text("direct_url.json")
    try:
        return bool(direct_url and json.loads(direct_url).get("dir_info", {}).get("editable"))
    except ValueError:
        return False


def _version_file(path: Path) -> str | None:
    """`__version__ = "..."` (or `version = ...`) from the package's version module, read as text."""
    for name in VERSION_FILES:
        try:
            found = _VERSION_LINE.search((path / name).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            continue
        if found:
            return found.group(1)
    return None
