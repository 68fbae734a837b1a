"""torch-mlir's e2e suite as the `torch_mlir` family: its pure half (pytest process, no torch).

`--torch-mlir-suite=DIR` (ini `e2e_torch_mlir_suite`) names the directory holding the
`torch_mlir_e2e_test` package, `projects/pt1/python` in a checkout. Each registered test becomes
the case `torch_mlir/<TestName>`, collected under its test_suite module's file, with params
`suite` (DIR, absolute), `test`, `module` (the test_suite module), `dynamic` (its forward is
annotated with a -1 size) and `dtype` (float32, nominal: each output is compared at its own
dtype). Tags: the module's name, `torch_mlir`, and `dynamic`.

The tests are listed by harness.families.torch_mlir.manifest in a subprocess, once per content of
the suite's Python files (cached like the OpInfo manifest); a module that fails to import is one
notice naming it and its missing package.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
from pathlib import Path
from typing import Any, Mapping

from harness.case_data import check_keys
from harness.errors import HarnessInputError
from harness.families.manifest_cache import ManifestError, locked, run_lister
from harness.families.torch_mlir.manifest import PACKAGE
from harness.files import display_path, user_cache_dir

FAMILY = "torch_mlir"
MANIFEST_FORMAT = 3
MANIFEST_TIMEOUT_S = 600
PARAM_KEYS = ("suite", "test", "module", "dynamic", "dtype")


CHECKOUT_SUITE = Path("projects") / "pt1" / "python"   # where a torch-mlir checkout holds the suite


def suite_dir(suite: Path) -> Path:
    """The suite directory (the option's value, or a checkout's projects/pt1/python), or ValueError
    saying what a suite directory holds."""
    if (suite / CHECKOUT_SUITE / PACKAGE).is_dir():
        suite = suite / CHECKOUT_SUITE
    if not (suite / PACKAGE / "registry.py").is_file() or not (suite / PACKAGE / "test_suite").is_dir():
        raise ValueError(f"holds no {PACKAGE} package (registry.py and test_suite/); pass the directory that "
                         "holds it: projects/pt1/python in a torch-mlir checkout")
    return suite.resolve()


def check_suite_dir(suite: Path, option: str) -> Path:
    """suite_dir, its problem as one error line naming the option."""
    try:
        return suite_dir(suite)
    except ValueError as e:
        raise HarnessInputError(f"{option}={display_path(suite)}", str(e)) from None


def manifest_key(suite: Path) -> str:
    """The content of the suite's Python files and this manifest's format."""
    digest = hashlib.sha1(f"{MANIFEST_FORMAT}".encode())
    for path in sorted((suite / PACKAGE).rglob("*.py")):
        digest.update(str(path.relative_to(suite)).encode() + b"\0" + path.read_bytes())
    return f"torch-mlir-suite-{digest.hexdigest()[:16]}"


def load_manifest(suite: Path, directory: Path | None = None) -> dict:
    """The suite's tests, listed once per content; again when a module's missing package has appeared."""
    directory = directory or user_cache_dir()
    key = manifest_key(suite)
    path = directory / f"{key}.json"
    with locked(directory, key):
        if path.exists() and not _missing_now_present(_read(path)):
            return _read(path)
        try:
            run_lister("harness.families.torch_mlir.manifest", [str(suite), str(path)],
                       f"the tests of torch-mlir's e2e suite in {display_path(suite)}", "10 s per content of the suite",
                       MANIFEST_TIMEOUT_S)
        except ManifestError as e:
            hint = ("; pip install multiprocess (torch-mlir's framework.py imports it)"
                    if "multiprocess" in str(e) else "")
            raise HarnessInputError("torch-mlir suite", f"{e}{hint}") from None
        _read.cache_clear()
        return _read(path)


@functools.cache
def _read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _missing_now_present(manifest: dict) -> bool:
    return any(m["missing"] and importlib.util.find_spec(m["missing"].partition(".")[0])
               for m in manifest["failed_modules"])


def suite_tests(suite: Path) -> tuple[dict[Path, list[dict]], list[str]]:
    """The suite's tests (name, params, timeout) by test_suite file, and one notice per module that
    did not import."""
    manifest = load_manifest(suite)
    by_file: dict[Path, list[dict]] = {}
    for test in manifest["tests"]:
        by_file.setdefault(suite / PACKAGE / "test_suite" / f"{test['module']}.py", []).append(
            {"name": test["name"], "params": _params(suite, test), "timeout": test["timeout"]})
    notices = [_notice(suite, failed) for failed in manifest["failed_modules"]]
    return by_file, notices


def _notice(suite: Path, failed: dict) -> str:
    where = display_path(suite / PACKAGE / "test_suite" / f"{failed['module']}.py")
    fix = f"pip install {failed['missing']} to run them" if failed["missing"] else "fix the module to run them"
    return (f"torch-mlir suite: {where} did not import ({failed['error']}); its {failed['tests']} tests are "
            f"not cases; {fix}")


def validate(params: Mapping[str, Any]) -> dict:
    check_keys(params, PARAM_KEYS)
    suite = params.get("suite")
    if not isinstance(suite, str) or not (Path(suite) / PACKAGE / "registry.py").is_file():
        raise ValueError(f"suite must be the directory holding {PACKAGE} (projects/pt1/python), not {suite!r}")
    test = _tests_of(suite).get(str(params.get("test")))
    if test is None:
        raise ValueError(f"the suite in {suite} registers no test {params.get('test')!r}")
    return _params(Path(suite), test)


@functools.cache
def _tests_of(suite: str) -> dict[str, dict]:
    """The suite's tests by name, listed once per process (a report as a cases file names thousands)."""
    return {t["name"]: t for t in load_manifest(Path(suite))["tests"]}


def _params(suite: Path, test: dict) -> dict:
    return {"suite": str(suite), "test": test["name"], "module": test["module"], "dynamic": test["dynamic"],
            "dtype": "float32"}


def derive_tags(params: Mapping[str, Any]) -> list[str]:
    return [params["module"], FAMILY] + (["dynamic"] if params["dynamic"] else [])


