"""Failure signatures: a short normalised form of a result's first meaningful error.

One bug should give one signature across cases, shapes and runs, so everything that varies
with the case is normalised away: SSA names, sizes and other numbers, file paths, addresses,
source locations, and the op dumps MLIR appends to its diagnostics. Indices written `#1` stay:
"operand #1" and "operand #2" are different bugs.

A mismatch's signature is its first failing output's line up to the first ";" ("grad_input: N of
N elements differ beyond tolerance"). When several outputs fail, harness.worker.compare opens the
message with a line counting and naming them; that line is skipped, so the signature of a bug in
one output does not change with what else fails in that case (nor with how many outputs it has).
"""
from __future__ import annotations

import dataclasses
import re

from harness.outcomes import Outcome
from harness.protocol import CaseResult

MAX_LENGTH = 200

_DIAGNOSTIC = re.compile(r"(?:^|\n|:\s)\s*error: (.+)")      # an MLIR / IREE diagnostic line
# The op dump MLIR appends: "...: %12:3 = "torch.aten..."(...)", or for an op without results '..: "op"(...)'
_OP_DUMP = re.compile(r":\s+(?:%[\w#:]+(?:\s*,\s*%[\w#:]+)*\s*=|\"[\w.]+\"\().*")
_OPERATOR_NAME = re.compile(r'"torch\.operator"\(.*?<\{name = "([\w.]+)"')  # the op inside a torch.operator
# torch.onnx's errors open with the step that failed and put the cause under "## Exception summary",
# as "<class 'torch.onnx._internal.exporter._errors.DispatchError'>: No ONNX function found for ...".
_EXPORTER_CAUSE = re.compile(r"## Exception summary\s+<class '(?:\w+\.)*(\w+)'>: ([^\n]+)")
# harness.worker.compare's first line when several outputs fail: "2 of 3 outputs differ: grad_input, grad_bias"
_OUTPUTS_DIFFER = re.compile(r"^\s*\d+ of \d+ outputs differ: [^\n]*\n")
_INPUT_SET = re.compile(r"\s*\(input set \d+: shapes .*\)$")  # harness.worker.execute's note on later input sets
_NORMALISERS = [
    (re.compile(r"\x1b\[[0-9;]*[A-Za-z]|[\x00-\x08\x0b-\x1f\x7f]"), ""),  # terminal colours (torch.onnx's), controls
    (re.compile(r"\s*\(at [^()]*:\d+\)\s*$"), ""),             # our "(at file.py:12)" suffix
    (re.compile(r"(?:<stdin>|[\w./-]+\.\w+):\d+:\d+:\s*"), ""),  # "file.mlir:23:36: "
    (re.compile(r"(?<![\w.])/[\w.+-]+(?:/[\w.+-]+)+"), "<path>"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "0xN"),
    (re.compile(r"%[\w.$-]+(?::\d+)?"), "%N"),                   # SSA values
    (re.compile(r"(?<=<)(?:(?:\d+|\?)x)+(?=[a-z])"), "...x"),   # tensor<4x?x3xf32> -> tensor<...xf32>:
                                                                  # the rank, like the sizes, varies with the case
    (re.compile(r"(?<![\w.#])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?=x(?:\s|$))"), "N"),  # a multiplier, "2.43e+03x
                                                                  # eager's": a number (a 4x4 shape is not one)
    (re.compile(r"(?<![\w.#])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?!\w|\.\d)"), "N"),
    (re.compile(r"\s+"), " "),
]


def normalise(text: str) -> str:
    """Text with the case-specific parts replaced by placeholders."""
    for pattern, replacement in _NORMALISERS:
        text = pattern.sub(replacement, text)
    return _cut(text)


def _cut(text: str) -> str:
    return " ".join(text.split())[:MAX_LENGTH].rstrip()


def first_error(message: str) -> str:
    """The first MLIR diagnostic of a message, else its first line; op dumps cut off, except the
    name of a `torch.operator` (an op torch-mlir has no definition of), which is the bug."""
    match = _DIAGNOSTIC.search(message)
    cause = None if match else _EXPORTER_CAUSE.search(message)
    line = (match.group(1) if match else f"{cause.group(1)}: {cause.group(2)}" if cause
            else next((text for text in message.splitlines() if text.strip()), ""))
    named = _OPERATOR_NAME.search(line) if "'torch.operator'" in line else None
    line = _OP_DUMP.sub("", line)
    return f"{line} ({named.group(1)})" if named else line


def signature(outcome: str, phase: str | None, message: str, frame: str | None = None) -> str | None:
    """The signature of a result; None for results that did not fail."""
    if outcome in (Outcome.PASSED.value, Outcome.NOT_RUN.value):
        return None
    during = f"phase {phase}" if phase else "start-up"
    if outcome == Outcome.TIMED_OUT.value:
        return _cut(f"hang in {frame} during {during}" if frame else f"timeout in {during}")
    if outcome == Outcome.CRASHED.value:
        return _crash_signature(message, frame, during)
    if outcome == Outcome.MISMATCH.value:
        message = _OUTPUTS_DIFFER.sub("", message, count=1)   # the first failing output's line leads
    error = first_error(message)
    if outcome == Outcome.MISMATCH.value:
        error = "mismatch: " + _INPUT_SET.sub("", error.split(";")[0])  # "grad_input: 3 of 96 elements differ ..."
    return normalise(error) or f"{outcome} in {during}"


def _crash_signature(message: str, frame: str | None, during: str) -> str:
    """'SIGSEGV in <frame>', 'SIGABRT during phase run', 'exit status 3 during phase compile',
    'memory limit exceeded during phase lower'."""
    how = re.search(r"killed by (SIG\w+)|exited with status (-?\d+)|(memory limit)", message)
    what = "crash" if not how else how.group(1) or (how.group(2) and f"exit status {how.group(2)}") or \
        "memory limit exceeded"
    return _cut(f"{what} in {frame}" if frame else f"{what} during {during}")


@dataclasses.dataclass(frozen=True)
class Failure:
    """A failure's identity: its phase and signature. `kept_by` is what a reduced program must keep
    and what a bisection looks for (a mismatch's output name aside: a cut program renames outputs)."""

    phase: str | None
    signature: str

    @classmethod
    def of(cls, result: CaseResult) -> "Failure | None":
        phase = result.phase and result.phase.value
        text = signature(result.outcome.value, phase, result.message, result.frame)
        return None if text is None else cls(phase, text)

    def kept_by(self, other: "Failure | None") -> bool:
        return other is not None and other.phase == self.phase and _key(other.signature) == _key(self.signature)


def _key(text: str) -> str:
    """A mismatch names the output that differs; a cut program's outputs have other names."""
    return re.sub(r"^mismatch: [\w.]+: ", "mismatch: ", text)
