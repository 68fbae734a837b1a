"""Self-tests that need one of the harness's extras carry the marker `extra(NAME)` and skip where it
is not installed (the README's `pip install -e ".[dev]"` has none), with a reason that names the
extra (tests/conftest.py). CI runs every self-test in the README's venv, then, once the extras are
installed, the marked ones again (`-m extra`)."""
from __future__ import annotations

import importlib.util

import pytest

MODULES = {"onnx": "onnx", "iree": "iree.compiler", "torch-mlir-suite": "multiprocess",   # extra -> what it brings
           "models": "transformers", "quant": "torchao"}


def installed(extra: str) -> bool:
    try:
        return importlib.util.find_spec(MODULES[extra]) is not None
    except ModuleNotFoundError:   # a parent package (iree) is missing
        return False


def missing(extras) -> str | None:
    """Why a test needing `extras` cannot run here, or None."""
    absent = [e for e in extras if not installed(e)]
    if not absent:
        return None
    names = ", ".join(absent)
    modules = ", ".join(MODULES[e] for e in absent)
    return f'needs the {names} extra ({modules} not installed): pip install -e ".[{",".join(absent)}]"'


def needs(*extras: str) -> pytest.MarkDecorator:
    """The marker of a test (or param) that runs only where the extras are installed; with none, of
    a test that runs everywhere but checks something else where an extra is installed."""
    return pytest.mark.extra(*extras)
