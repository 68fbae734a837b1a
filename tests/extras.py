"""Self-tests that need one of the harness's extras skip where it is not installed (the README's
`pip install -e ".[dev]"` has none), with a reason that names the extra."""
from __future__ import annotations

import importlib.util

import pytest

MODULES = {"onnx": "onnx", "iree": "iree.compiler", "torch-mlir-suite": "multiprocess"}   # extra -> what it brings


def installed(extra: str) -> bool:
    module = MODULES[extra]
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:   # a parent package (iree) is missing
        return False


def missing_reason(extra: str) -> str:
    return f'needs the {extra} extra ({MODULES[extra]} is not installed): pip install -e ".[{extra}]"'


def needs(extra: str) -> pytest.MarkDecorator:
    """Skip the test (or param) unless the extra is installed."""
    return pytest.mark.skipif(not installed(extra), reason=missing_reason(extra))


def require(extra: str) -> None:
    """The same, for a whole module (at its top) or inside a fixture."""
    if not installed(extra):
        pytest.skip(missing_reason(extra), allow_module_level=True)
