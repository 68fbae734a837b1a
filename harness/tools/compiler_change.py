"""What a compiler change changed between two reports, for `python -m harness diff`: per (case,
backend) the first stage whose fingerprint changed (harness.stages.changes), how many results could
not be compared, and, for the backends timed in both (--perf), the cases whose speed changed
significantly (harness.perf.ratios, as `perf compare` judges it), each saying whether its IR
changed: a time that changed with the same IR in every stage is the machine's or the runtime's.
"""
from __future__ import annotations

import collections
import dataclasses
from typing import Any, Iterable

from harness.errors import HarnessInputError
from harness.perf.ratios import Side, compare, timed_backends
from harness.record import Record
from harness.stages.changes import comparable, first_changed_stage


@dataclasses.dataclass(frozen=True)
class IrChange:
    """A result whose IR changed: the first stage that did, and both records (for their outcomes)."""

    old: Record
    new: Record
    stage: str

    @property
    def case(self) -> str:
        return self.new.case

    @property
    def backend(self) -> str:
        return self.new.backend


@dataclasses.dataclass
class CompilerChange:
    ir_changed: list[IrChange]
    compared: int       # results in both reports with a stage fingerprinted on both sides
    not_compared: int   # results in both reports without one: an old report, an early failure, eager
    speed: list[dict[str, Any]]   # significant speed changes: {case, backend, ratio, low, high, ir}

    def speed_of(self, case: str, backend: str) -> dict[str, Any] | None:
        return next((s for s in self.speed if s["case"] == case and s["backend"] == backend), None)


def compiler_change(pairs: Iterable[tuple[Record, Record]], old: dict, new: dict) -> CompilerChange:
    """The IR and speed changes of the (old, new) records of the results in both reports."""
    changed, same, not_compared = [], set(), 0
    for before, after in pairs:
        if not comparable(before.findings.fingerprints, after.findings.fingerprints):
            not_compared += 1
            continue
        stage = first_changed_stage(before.findings.fingerprints, after.findings.fingerprints)
        if stage is None:
            same.add((after.case, after.backend))
        else:
            changed.append(IrChange(before, after, stage))
    speed = speed_changes(old, new)
    differ = {(c.case, c.backend) for c in changed}
    for change in speed:   # a time that changed while no stage's output did: the machine or the runtime, not the IR
        key = (change["case"], change["backend"])
        change["ir"] = "same" if key in same else "changed" if key in differ else "not compared"
    return CompilerChange(changed, len(same) + len(changed), not_compared, speed)


def speed_changes(old: dict, new: dict) -> list[dict[str, Any]]:
    """Per backend timed in both reports, its cases whose time changed beyond perf compare's floor."""
    timed_old, timed_new = timed_backends(old), timed_backends(new)
    found = []
    for backend in sorted(timed_old.keys() & timed_new.keys()):
        try:
            result = compare(Side("old", timed_old[backend]), Side("new", timed_new[backend]))
        except HarnessInputError:   # no case timed on both sides
            continue
        found += [{"case": c["case"], "backend": backend, "ratio": c["ratio"], "low": c["low"], "high": c["high"]}
                  for c in result["cases"] if c["significant"]]
    return found


def by_stage(result: CompilerChange) -> str:
    """How many results' IR changed, and how many first at each stage (`48: torch_backend_ir 48`), the
    stages in the order the records hold them (each its backend's)."""
    counts = collections.Counter(c.stage for c in result.ir_changed)
    order = dict.fromkeys(stage for c in result.ir_changed for stage in c.new.findings.fingerprints if stage in counts)
    return f"{len(result.ir_changed)}: " + ", ".join(f"{stage} {counts[stage]}" for stage in order)


def speed_text(speed: dict[str, Any] | None) -> str:
    if speed is None:
        return ""
    return f"time x{speed['ratio']:.3g} ({'faster' if speed['ratio'] < 1 else 'slower'})"


def speed_line(speed: dict[str, Any]) -> str:
    """A speed change with its interval, and whether the IR changed with it."""
    same = ", with the same IR in every stage (the machine or the runtime changed, not the code)"
    return f"{speed_text(speed)}, {speed['low']:.3g}-{speed['high']:.3g}" + (same if speed.get("ir") == "same" else "")


def ir_line(change: IrChange, result: CompilerChange) -> str:
    """One IR change: its first changed stage, beside its outcomes and its speed change."""
    outcomes = f"{_state(change.old)} → {_state(change.new)}"
    if change.old.outcome is change.new.outcome and change.old.phase is change.new.phase:
        outcomes = f"{_state(change.new)} (unchanged)"
    speed = speed_text(result.speed_of(change.case, change.backend))
    return "  ".join(filter(None, [f"first changed: {change.stage}", outcomes, speed]))


def _state(record: Record) -> str:
    return record.outcome.value + (f" in {record.phase}" if record.phase else "")


def not_compared_note(result: CompilerChange) -> str | None:
    if not result.not_compared:
        return None
    return (f"{result.not_compared} result(s) could not be compared: no stage fingerprinted in both reports "
            f"(a report older than fingerprints, a failure before the first stage, a backend with none)")


def expect_same_ir_lines(result: CompilerChange) -> list[str]:
    """`--expect-same-ir`'s verdict: one line per changed result, then the count."""
    lines = [f"ir changed: {c.case} [{c.backend}] at {c.stage}" for c in result.ir_changed]
    if lines:
        lines.append(f"{len(lines)} result(s) changed IR, expected none (--expect-same-ir); "
                     f"{result.compared} compared")
    return lines


def to_json(result: CompilerChange) -> dict[str, Any]:
    return {"ir_changed": [{"case": c.case, "backend": c.backend, "stage": c.stage} for c in result.ir_changed],
            "ir_compared": result.compared, "ir_not_compared": result.not_compared, "speed_changes": result.speed}
