"""The ONNX node-test family's pure half: params, tags and the manifest, read without onnx.

A case is one node test of ONNX's backend test suite: params `test` (its name, e.g. `test_abs`) and
`dtype` (nominal: an ONNX test's outputs carry their own dtypes; its tolerance is the test's own).
Ids read `onnx_node/<test name>`.

The installed onnx package no longer ships the tests' protobuf files, only their generators. A
worker-side lister (harness.families.onnx.lister) runs the generators once per onnx installation
and writes each test as ONNX's own layout under the cache (`<key>/<test>/model.onnx` and
`test_data_set_0/{input,output}_<i>.pb`), with a manifest `<key>.json` that collection reads.
"""
from __future__ import annotations

import difflib
import functools
import hashlib
import json
import re
from pathlib import Path
from typing import Any, Mapping

from harness.case_data import Case, check_keys
from harness.errors import HarnessInputError
from harness.families.interface import Discovery
from harness.families.manifest_cache import ManifestError, locked, run_lister
from harness.files import user_cache_dir
from harness.installation.extras import install_command

FAMILY = "onnx_node"
MANIFEST_FORMAT = 1
MANIFEST_TIMEOUT_S = 900
PARAM_KEYS = {"test", "dtype"}


def not_installed() -> str:
    """Why the ONNX families have no cases here, and the command that fixes it."""
    return f"the onnx package is not installed ({install_command(['onnx'])})"


def validate(params: Mapping[str, Any]) -> dict:
    check_keys(params, PARAM_KEYS)
    name = params.get("test")
    if not isinstance(name, str) or not name:
        raise ValueError("onnx_node cases need 'test', the name of an ONNX node test such as 'test_abs'")
    try:
        tests = manifest()["tests"]
    except ManifestError as e:   # onnx missing, or its generators failed: said where the case is
        raise ValueError(str(e)) from None
    if name not in tests:
        close = difflib.get_close_matches(name, tests, n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise ValueError(f"onnx {manifest()['onnx']} has no node test {name!r}{hint}; the names are those "
                         "of onnx.backend.test.case.node.collect_testcases")
    if params.get("dtype", "float32") != "float32":
        raise ValueError("an onnx_node case's dtype is float32 (nominal: its outputs keep the test's own dtypes)")
    return {"test": name, "dtype": "float32"}


def op_tag(op_type: str) -> str:
    return re.sub(r"\W", "_", op_type)


def derive_tags(params: Mapping[str, Any]) -> list[str]:
    test = manifest()["tests"][params["test"]]
    return [FAMILY, op_tag(test["op_type"]), f"opset{test['opset']}"] + ["expanded"] * test["expanded"]


def subject(params: Mapping[str, Any]) -> str:
    """The test's op type (`Abs`; `ai.onnx.ml.LabelEncoder` outside the default domain)."""
    test = manifest()["tests"][params["test"]]
    return test["op_type"] if test["domain"] in ("", "ai.onnx") else f"{test['domain']}.{test['op_type']}"


def onnx_installed() -> bool:
    return _onnx_package() is not None


def discover(options: Mapping[str, Any]) -> Discovery | None:
    """No cases of its own to find: only, when onnx is missing, that there are none (and that the
    expectation entries of both ONNX families do not apply)."""
    if onnx_installed():
        return None
    return Discovery({}, notices=[f"{FAMILY}: ONNX's node tests are not collected: {not_installed()}"],
                     missing={FAMILY: not_installed(), "onnx_model": not_installed()})


def node_cases(options: Mapping[str, Any]) -> list[Case]:
    """Every node test of the installed onnx as a case (the case module's `cases`); none without onnx."""
    if not onnx_installed():
        return []
    return [Case(f"{FAMILY}/{name}", FAMILY, {"test": name, "dtype": "float32"},
                 tuple(derive_tags({"test": name})))
            for name in _manifest_or_error()["tests"]]


def node_case_ids(options: Mapping[str, Any]) -> list[str]:
    if not onnx_installed():
        return []
    return [f"{FAMILY}/{name}" for name in _manifest_or_error()["tests"]]


# ------------------------------------------------------------------------------------- manifest

@functools.cache
def _onnx_package():
    """Where the worker would import onnx from, or None (looked up once per process)."""
    from harness.installation.packages import locate

    return locate("onnx", "onnx")


def manifest_key() -> str:
    """onnx's version and location, and this format: another onnx gets its own tests."""
    onnx = _onnx_package()
    if onnx is None:
        raise ManifestError(not_installed())
    text = f"{onnx.version_text}|{Path(onnx.path).resolve()}|{MANIFEST_FORMAT}"
    return f"onnx-node-{onnx.version or 'unknown'}-{hashlib.sha1(text.encode()).hexdigest()[:10]}"


def test_dir(name: str) -> Path:
    """Where a test's model.onnx and test_data_set_0 are (the manifest must have been written)."""
    return user_cache_dir() / manifest_key() / name


@functools.cache
def manifest() -> dict:
    """{"onnx": version, "tests": {name: {op_type, domain, opset, expanded, rtol, atol, ...}}},
    written first by a worker process when missing."""
    directory, key = user_cache_dir(), manifest_key()
    path = directory / f"{key}.json"
    with locked(directory, key):
        if not path.exists():
            run_lister("harness.families.onnx.lister", [str(directory), key],
                       f"ONNX's node tests into {directory}", "60 s per onnx installation", MANIFEST_TIMEOUT_S)
    return json.loads(path.read_text(encoding="utf-8"))


def _manifest_or_error() -> dict:
    try:
        return manifest()
    except (ManifestError, OSError) as e:
        raise HarnessInputError(f"{FAMILY} cases", str(e),
                                f"set TORCH_BACKEND_E2E_CACHE to a writable directory (now {user_cache_dir()})"
                                if isinstance(e, OSError) else "") from None
