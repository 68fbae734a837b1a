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
  tensors (or Python scalars), one per output name, and offers `repro_source()`: the module as a
  standalone class `Model`, for a bundle's repro.py. Outputs that are not floating tensors of the
  case's dtype, and outputs that cannot be compared by value, are described by `Built`'s
  `reference`, `float64_golden`, `unchecked`, `tolerance` and `selects`.
* A case module lists its cases as `CASES`, or, when they depend on options, as a function
  `cases(options: harness.spec.CaseOptions) -> list[Case]`, with `case_ids(options)` giving every
  id an expectation entry may name (a superset of the selected cases).

The built-in families are listed in harness.families; another package's register through an
entry point or the ini key `e2e_families` (harness.families.plugins). Case modules then declare
cases with `family=<name>`. A worker never looks a family up: it gets `worker_request(params)`.
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
    markers: tuple[str, ...] = ()                              # tags that are pytest markers too (-m opinfo)

    def worker_request(self, params: Mapping[str, Any]) -> dict:
        """What a worker needs of this family for one case (it never imports the registry, so a
        family from another package needs no registration there): the builder and the reductions."""
        return {"builder": self.builder, "reduction_sizes": self.reduction_sizes(params)}


def no_reductions(params: Mapping[str, Any]) -> dict:
    """`reduction_sizes` of a family whose outputs sum nothing the harness knows of (1 per element)."""
    return {}


def load_builder(request: Mapping[str, Any]) -> Callable[[Any], "Built"]:
    """The builder a worker request names (imports torch: call it in a worker only)."""
    return load_object(request["builder"])


@dataclasses.dataclass
class Built:
    """What a family's builder returns, in a worker."""

    program: Program
    input_sets: list[tuple]     # input_sets[0] is program.example_inputs
    # The module's outputs at the case's dtype, per input set, from eager PyTorch: each output's
    # expected dtype, and the golden of integer and boolean outputs (compared exactly). None: every
    # output is a floating tensor of the case's dtype.
    reference: list[tuple] | None = None
    float64_golden: bool = True   # False: floating outputs are compared with `reference` too
    # Float64 values the family computed itself, per input set (a float64 copy of a module with
    # weights, which upcasting the inputs alone cannot give); they replace `float64_golden`.
    goldens: list[tuple] | None = None
    # Outputs whose values cannot be compared (a random op's, uninitialised memory, eigenvectors
    # unique up to sign), by name ("*": all) with the reason: shapes and dtypes only, and the
    # result's notes say so.
    unchecked: dict[str, str] = dataclasses.field(default_factory=dict)
    tolerance: tuple[float, float] | None = None   # (rtol, atol) in place of the dtype's, for this case
    # Index outputs where ties make the index ambiguous (topk, sort, argmax): output name ->
    # (position of the input tensor they index, dim or None for the flattened tensor). They are
    # compared by the values they select from that input, exactly.
    selects: dict[str, tuple[int, int | None]] = dataclasses.field(default_factory=dict)
    notes: dict[str, str] = dataclasses.field(default_factory=dict)   # facts for the report
