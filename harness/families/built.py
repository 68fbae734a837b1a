"""What a family's builder returns, in a worker: `Built`, the program and its inputs, and its
`Golden`, what the outputs are compared with: one subclass per kind, each made with what it needs
and computing its own values. A new kind is one subclass, a family's own or ours; the worker
(harness.worker.execute) calls its methods and names no kind.

Pure Python, like the rest of harness.families' top level: a golden reaches torch and the
harness's numeric comparison only through the `GoldenContext` the worker hands it.
"""
from __future__ import annotations

import abc
import dataclasses
from typing import Any, Callable, ClassVar, Protocol

from harness.backend_interface import OnnxProgram, Program


class GoldenContext(Protocol):
    """What a golden is handed in a worker, one per case (harness.worker.execute makes it): the
    harness's own comparison and the result's notes, so that a golden needs neither torch nor the
    comparison's code to use them."""

    notes: dict[str, Any]   # the result's notes (JSON-able): the report shows them, pass or fail

    def note_margin(self, output: str, margin: float) -> None:
        """How close `output` came to failing under the family's own rule: its worst error over
        its tolerance (1.0 at the limit). The harness's rule (`compare`) notes its own."""

    def upcast(self, inputs: tuple) -> Any:
        """The program's module run eagerly, without autograd, on `inputs` with their floating
        tensors upcast to float64: its outputs as the module returns them."""

    def compare(self, got: Any, want: Any, index: int, ratio: tuple | None = None) -> str | None:
        """The harness's rule (docs/explanation/comparison.md) for input set `index`: None when
        every output of `got` (as the backend's run returned them) matches `want` (as the module
        returns its outputs), else what differs. Floating outputs within the dtype's tolerance;
        integer and boolean outputs, and every output's dtype, against `Built.reference`;
        `Built.unchecked` and `Built.selects` as they say. With `ratio`, (multiplier, floor):
        floating outputs by their RMS error against eager's (`Built.reference`) instead, each
        output's errors recorded in the notes as "accuracy"."""


class Golden(abc.ABC):
    """What a case's outputs are compared with, and how: a family's builder sets one as
    `Built.golden`. Each kind is one subclass, constructed with everything it needs, that a
    family may define for itself; the harness calls its three methods and names no kind:

    * `check(built)`, when the Built is made and again in the worker: ValueError when the Built
      lacks what the kind needs (its eager outputs, one golden per input set);
    * `compute(built, context)`, once per case in the worker: the golden of each input set;
    * `judge(got, want, index, context)`, per input set: what differs, or None.

    The kinds the harness offers: `Float64Golden` (the default), `GivenGolden`, `EagerGolden`,
    `FamilyGolden` and `RatioGolden`.
    """

    kind: ClassVar[str] = "golden"   # its name in messages

    def check(self, built: Built) -> None:
        """Raise ValueError, naming the kind and the fix, when `built` lacks what this kind needs.
        The default needs nothing."""
        return None

    @abc.abstractmethod
    def compute(self, built: Built, context: GoldenContext) -> list:
        """The golden of each input set of `built`, in the form `judge` takes as `want`."""

    def judge(self, got: Any, want: Any, index: int, context: GoldenContext) -> str | None:
        """None when the backend's outputs `got` for input set `index` (as its run returned them)
        match `want`, else what differs. The default: the harness's rule, `context.compare`."""
        return context.compare(got, want, index)

    def _one_per_input_set(self, values: list, built: Built) -> None:
        if len(values) != len(built.input_sets):
            raise ValueError(f"{self.kind} golden: {len(values)} input sets' values for {len(built.input_sets)} "
                             "input sets: give one entry per input set, in their order")

    def _needs_reference(self, built: Built) -> None:
        if built.reference is None:
            raise ValueError(f"{self.kind} golden: compares with eager's outputs at the case's dtype, and "
                             "Built.reference is None: give them as Built(reference=...)")
        self._one_per_input_set(built.reference, built)


class Float64Golden(Golden):
    """The default: the program's module run eagerly on the inputs upcast to float64, compared
    within the dtype's tolerance. Right for a module without floating weights of its own (upcasting
    the inputs alone gives its float64 run); a module with weights gives `GivenGolden`."""

    kind: ClassVar[str] = "float64"

    def check(self, built: Built) -> None:
        """The program must be a PyTorch one: an ONNX model has no module to run in float64."""
        if not isinstance(built.program, Program):
            raise ValueError(f"{self.kind} golden: runs the program's PyTorch module, and an "
                             f"{type(built.program).__name__} has none: give a GivenGolden or a FamilyGolden")

    def compute(self, built: Built, context: GoldenContext) -> list:
        """The module's float64 run on each input set, upcast (`context.upcast`)."""
        return [context.upcast(inputs) for inputs in built.input_sets]


@dataclasses.dataclass(frozen=True)
class GivenGolden(Golden):
    """Float64 values the family computed itself, one tuple per input set (a float64 copy of a
    module with weights, which upcasting the inputs alone cannot give), compared within the
    dtype's tolerance."""

    values: list[tuple]
    kind: ClassVar[str] = "given"

    def check(self, built: Built) -> None:
        """One entry of `values` per input set."""
        self._one_per_input_set(self.values, built)

    def compute(self, built: Built, context: GoldenContext) -> list:
        """`values`, as given."""
        return list(self.values)


class EagerGolden(Golden):
    """Eager PyTorch at the case's dtype, `Built.reference` (which it needs): for a module that
    does not run in float64, or a suite whose own golden is eager's."""

    kind: ClassVar[str] = "eager"

    def check(self, built: Built) -> None:
        """`Built.reference` must be given, one entry per input set."""
        self._needs_reference(built)

    def compute(self, built: Built, context: GoldenContext) -> list:
        """`Built.reference`, as given."""
        return list(built.reference or ())   # check() made sure it is given


@dataclasses.dataclass(frozen=True)
class FamilyGolden(Golden):
    """The family's own values and comparison, for outputs that are not one tensor each (ONNX's
    sequences, optionals, strings): `compare(got, want)` -> None or what differs, `got` as the
    backend's run returned it for one input set, `want` its entry of `values`; `margins(got, want)`
    -> {output: its worst error over its tolerance}, for the outputs the rule can say it of."""

    values: list
    compare: Callable[[Any, Any], str | None]
    margins: Callable[[Any, Any], dict[str, float]] | None = None
    kind: ClassVar[str] = "family"

    def check(self, built: Built) -> None:
        """One entry of `values` per input set."""
        self._one_per_input_set(self.values, built)

    def compute(self, built: Built, context: GoldenContext) -> list:
        """`values`, as given."""
        return list(self.values)

    def judge(self, got: Any, want: Any, index: int, context: GoldenContext) -> str | None:
        """The family's `compare`, the input set named after the first; its margins noted."""
        for output, margin in (self.margins(got, want) if self.margins else {}).items():
            context.note_margin(output, margin)
        problem = self.compare(got, want)
        return problem and problem + (f" (input set {index + 1})" if index else "")


# RatioGolden's defaults: the multiplier, and the floor by dtype as a fraction of max(1, an output's RMS)
# what a correct backend's reordered sums may add where eager's own error is near 0 (an output it
# computes exactly). On the tiny models (2026-12-03) every passing result of 8 backends stayed within
# 3x eager's error without a floor: the closest, Gemma's logits on onnx-linalg-on-tensors, at 2.95x
# (benchmarks/RESULTS.md).
RATIO_MULTIPLIER = 3.0
RATIO_FLOORS = {"float64": 1e-12, "float32": 1e-5, "float16": 2e-3, "bfloat16": 1e-2}


@dataclasses.dataclass(frozen=True)
class RatioGolden(GivenGolden):
    """Float64 values as `GivenGolden`, judged by how far eager itself is from them (PyTorch's
    dynamo benchmarks' rule for whole models): a floating output passes when its RMS error is at
    most `multiplier` x eager's (`Built.reference`, which it needs) plus `floor` x max(1, its RMS)
    (`relative`: x its RMS). The result's notes give each output's errors and their ratio."""

    multiplier: float
    floor: float
    relative: bool = False
    kind: ClassVar[str] = "ratio"

    @property
    def rule(self) -> tuple[float, float, bool]:
        """(multiplier, floor, relative), as the harness's comparison takes them."""
        return self.multiplier, self.floor, self.relative

    def check(self, built: Built) -> None:
        """One entry of `values` per input set, and `Built.reference` given."""
        super().check(built)
        self._needs_reference(built)

    def judge(self, got: Any, want: Any, index: int, context: GoldenContext) -> str | None:
        """The harness's rule with the ratio in place of the tolerance for floating outputs."""
        return context.compare(got, want, index, ratio=self.rule)


@dataclasses.dataclass
class Built:
    """What a family's builder returns, in a worker: the program a backend compiles and every
    input set to run it on (the first being the program's example inputs). The program's module
    returns a tuple of tensors (or Python scalars), one per output name, and offers
    `repro_source()`: the module as a standalone class `Model`, for a bundle's repro.py."""

    program: Program | OnnxProgram   # of the family's kind (Family.program)
    input_sets: list[tuple]     # input_sets[0] is program.example_inputs (an OnnxProgram's first inputs)
    # The module's outputs at the case's dtype, per input set, from eager PyTorch: each output's
    # expected dtype, and the golden of integer and boolean outputs (compared exactly). None: every
    # output is a floating tensor of the case's dtype.
    reference: list[tuple] | None = None
    golden: Golden = dataclasses.field(default_factory=Float64Golden)   # what the outputs are compared with, and how
    # Outputs whose values cannot be compared (a random op's, uninitialised memory, eigenvectors
    # unique up to sign), by name ("*": all) with the reason: shapes and dtypes only, and the
    # result's notes say so.
    unchecked: dict[str, str] = dataclasses.field(default_factory=dict)
    tolerance: tuple[float, float] | None = None   # (rtol, atol) in place of the dtype's, for this case
    # Index outputs where ties make the index ambiguous (topk, sort, argmax): output name ->
    # (position of the input tensor they index, dim or None for the flattened tensor). They are
    # compared by the values they select from that input, exactly.
    selects: dict[str, tuple[int, int | None]] = dataclasses.field(default_factory=dict)
    notes: dict[str, Any] = dataclasses.field(default_factory=dict)   # facts for the report (JSON-able)

    def __post_init__(self) -> None:
        self.golden.check(self)   # what the golden needs of the Built (its reference): said here, not at the run
