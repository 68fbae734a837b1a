"""What a case family provides: the public interface a new family implements, ours or another
project's, without touching the controller or the worker.

A family has two halves that live in different processes:

* In the pytest process, which never imports torch (import-linter keeps it so), three pure
  functions of a case's JSON-able params:
    - `validate(params) -> dict`: normalise the params (defaults filled, scalars broadcast) and
      raise ValueError with a message that says what to change; the normalised dict is what the
      report and `--cases-file` show.
    - `reduction_sizes(params) -> {output name: terms summed into each element}`: how the float64
      comparison scales its tolerance per output (sqrt of the reduction length); 1 for none.
    - `derive_tags(params) -> [tag, ...]`: structural tags, which are pytest keywords (`-k grouped`).
* In a worker, the builder named by `builder` ("package.module:function", imported there only):
  `build(case: harness.spec.Case) -> Built`, with the program a backend compiles
  (harness.backend.Program: module, example inputs, dynamic shapes, output names) and every input
  set to run it on (the first being the example inputs). The program's module returns a tuple of
  tensors, one per output name, and may offer `repro_source()`: the module as a standalone class
  `Model`, for a bundle's repro.py.

Register a family by adding it to harness.families.FAMILIES (`register`); case modules then
declare cases with `family=<name>`.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping

from harness.backend import Program, load_object


@dataclasses.dataclass(frozen=True)
class Family:
    name: str
    validate: Callable[[Mapping[str, Any]], dict]              # raises ValueError on bad params
    builder: str                                               # "package.module:function", worker-only
    reduction_sizes: Callable[[Mapping[str, Any]], dict]       # output name -> terms summed per element
    derive_tags: Callable[[Mapping[str, Any]], list]           # structural tags of normalised params

    def load_builder(self) -> Callable[[Any], "Built"]:
        """Import and return the builder (imports torch: call it in a worker only)."""
        return load_object(self.builder)


@dataclasses.dataclass
class Built:
    """What a family's builder returns, in a worker."""

    program: Program
    input_sets: list[tuple]     # input_sets[0] is program.example_inputs
