"""Expectation files (xfail/<backend>.yaml, crash_sets/<backend>.yaml): read, matched to cases,
and rewritten from a run's records. The names below are the package's surface; its modules are
`read` (loading and matching), `policy` (what an update changes, decided from records), `edit`
(carrying a plan out on one file, through `yaml_roundtrip`'s round-trip YAML) and `update`
(proposing and writing the files).

The writing side imports ruamel.yaml, which a run that only reads its expectations does not need:
its names load on first use.
"""
from __future__ import annotations

import importlib
from typing import Any

from harness.expectations.read import ENTRY_KEYS, Entry, Expectations, load_expectations

_WRITING = {"propose": "update", "apply": "update", "proposals_for_report": "update",
            "new_entries_text": "edit", "NewEntry": "policy"}

__all__ = ["ENTRY_KEYS", "Entry", "Expectations", "load_expectations", *_WRITING]


def __getattr__(name: str) -> Any:
    if name not in _WRITING:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WRITING[name]}"), name)
