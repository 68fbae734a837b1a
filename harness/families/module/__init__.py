"""The `module` family: an nn.Module named by import path, its inputs described as data
(harness.families.module.params has the schema), and its case constructor.

Pure Python (the pytest process imports it); the builder lives in .build, imported in workers.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from harness.case_data import Case
from harness.families.interface import Family
from harness.families.module import params
from harness.program_kinds import TRAIN_STEP

MODULE = Family(name="module", validate=params.validate, builder="harness.families.module.build:build",
                derive_tags=params.derive_tags, markers=(TRAIN_STEP,), at_dtype=params.at_dtype)   # -m train_step
FAMILIES = [MODULE]


def module_case(name: str, module: str, inputs: Iterable[Mapping[str, Any]], *, tags: Iterable[str] = (),
                timeout: float | None = None, **case_params: Any) -> Case:
    """A validated module Case with id `module/<name>` (ValueError on bad params, naming the case)."""
    return MODULE.case(name, {"module": module, "inputs": list(inputs), **case_params}, tags=tags, timeout=timeout)
