"""The op coverage matrix of reports (`python -m harness coverage`): per op and backend, passed, the
phase and signature it failed with, or not covered; the cases and families that cover each op; for
each whole program (a family's whose Family.coverage says "programs") and training step, how many
of its ops pass on each backend in the op tests (the "ops" families'); and the core ATen ops no case
covers. Pure Python over records: no torch.

A case covers the ops its program holds (Record.findings.ops: any backend's record of the case lists them,
so a crash-set case that was not run covers them too). A failure counts against the ops its
message names (`torch.aten.topk`, `aten::topk`, `aten.topk.default`) when it names one of the
case's ops, else against every op of the case. An op is `passed` on a backend when a case of it
passed and no failure counts against it, `failed` when one does, and `not_covered` when no case of
it ran there (or every one of them failed on another op). A case whose program could not be listed
(it does not export) covers its subject instead (`allclose`), so no op a family tests goes unseen."""
from __future__ import annotations

import collections
import dataclasses
from typing import Any, Iterable, Sequence

from harness.ops.core_aten import core_aten_ops
from harness.ops.names import named_in
from harness.outcomes import Expected, Outcome
from harness.record import Record

PASSED, FAILED, NOT_COVERED = "passed", "failed", "not_covered"
CRASH_SET = "crash set"   # the phase a not-run crash-set case shows


@dataclasses.dataclass
class Cell:
    """One op on one backend."""

    cases: int = 0                  # cases of the op that ran there (or are in its crash set)
    passed: int = 0
    failed: int = 0                 # failures that count against the op
    phase: str | None = None        # the first such failure's (by case id)
    signature: str | None = None
    unexpected: int = 0             # its cases whose result the expectation files did not foresee
    dtypes: dict[str, str] = dataclasses.field(default_factory=dict)   # when its cases vary the dtype

    @property
    def status(self) -> str:
        return FAILED if self.failed else PASSED if self.passed else NOT_COVERED

    def to_json(self) -> dict:
        data: dict[str, Any] = {"status": self.status, "phase": self.phase, "signature": self.signature,
                                "cases": self.cases, "passed": self.passed, "failed": self.failed}
        if self.unexpected:
            data["unexpected"] = self.unexpected
        if self.dtypes:
            data["dtypes"] = self.dtypes
        return data


@dataclasses.dataclass
class Coverage:
    backends: list[str]
    ops: dict[str, dict[str, Cell]]             # op -> backend -> its cell (a backend absent: not covered)
    families: dict[str, list[str]]              # op -> the families whose cases cover it
    programs: list[tuple[str, str, int, int]]   # (program or step, backend, its ops passing in op tests, its ops)
    uncovered_core: list[str]                   # core ATen ops no case covers

    def cell(self, op: str, backend: str) -> Cell:
        return self.ops[op].get(backend) or Cell()

    def to_json(self) -> dict:
        return {"backends": self.backends,
                "ops": [{"op": op, "families": self.families[op],
                         "backends": {b: self.cell(op, b).to_json() for b in self.backends}} for op in self.ops],
                "programs": [{"case": case, "backend": backend, "covered": covered, "ops": total}
                             for case, backend, covered, total in self.programs],
                "core_aten": {"total": len(core_aten_ops()), "uncovered": self.uncovered_core}}


def coverage(records: Sequence[Record], op_families: Iterable[str] = (), program_families: Iterable[str] = ()
             ) -> Coverage:
    """The matrix of the records. `op_families`: those whose cases each test one op (Family.coverage
    "ops"); `program_families`: those whose cases are whole programs ("programs"), each counted, as
    is every training step, by its ops that pass in the op families' cases."""
    ops_of = case_ops(records)
    cells: dict[str, dict[str, Cell]] = collections.defaultdict(dict)
    families: dict[str, set[str]] = collections.defaultdict(set)
    by_dtype: dict[tuple[str, str], dict[str, Cell]] = collections.defaultdict(dict)
    for r in sorted(records, key=lambda r: (r.case, r.backend)):
        ops = ops_of.get(r.case) or {r.what_it_tests}
        family = _family(r)
        blamed = counted_against(r, ops)
        for op in ops:
            families[op].add(family)
            _count(cells[op].setdefault(r.backend, Cell()), r, op in blamed)
            dtype = str(r.params.get("dtype", ""))
            _count(by_dtype[(op, r.backend)].setdefault(dtype, Cell()), r, op in blamed)
    for (op, backend), per_dtype in by_dtype.items():
        if len(per_dtype) > 1 and backend in cells[op]:
            cells[op][backend].dtypes = {d: c.status for d, c in sorted(per_dtype.items())}
    backends = sorted({r.backend for r in records})
    ordered = {op: cells[op] for op in sorted(cells)}
    return Coverage(backends, ordered, {op: sorted(families[op]) for op in ordered},
                    _programs(records, ops_of, set(op_families), set(program_families)),
                    [op for op in core_aten_ops() if op not in ordered])


def case_ops(records: Iterable[Record]) -> dict[str, set[str]]:
    """Each case's ops, from the first of its records that lists them."""
    found: dict[str, set[str]] = {}
    for r in records:
        if r.findings.ops and r.case not in found:
            found[r.case] = set(r.findings.ops)
    return found


def counted_against(r: Record, ops: set[str]) -> set[str]:
    """The ops a failure counts against: those of its ops its message names, else all of them."""
    if not _failed(r):
        return set()
    return named_in(f"{r.signature or ''}\n{r.message}", ops) or ops


def _failed(r: Record) -> bool:
    return r.outcome.is_failure or (r.outcome is Outcome.NOT_RUN and r.expected is Expected.CRASH)


def _count(cell: Cell, r: Record, blamed: bool) -> None:
    if r.outcome is Outcome.NOT_RUN and r.expected is not Expected.CRASH:
        return   # skipped: says nothing of the op
    cell.cases += 1
    cell.unexpected += r.verdict.is_unexpected
    if r.outcome is Outcome.PASSED:
        cell.passed += 1
    elif blamed:
        cell.failed += 1
        if cell.phase is None:
            cell.phase = r.phase.value if r.phase else CRASH_SET if r.outcome is Outcome.NOT_RUN else r.outcome.value
            cell.signature = r.signature or (f"in the crash set: {r.message}" if r.outcome is Outcome.NOT_RUN
                                             else None)


def _programs(records: Sequence[Record], ops_of: dict[str, set[str]], op_families: set[str],
              program_families: set[str]) -> list[tuple[str, str, int, int]]:
    """For each whole program and training step, on each backend it ran on: how many of its ops
    pass there in the op families' cases, of its ops."""
    in_op_tests = _op_test_statuses(records, ops_of, op_families)
    rows = set()
    for r in records:
        if (_family(r) in program_families or r.params.get("train_step")) and r.case in ops_of:
            ops = ops_of[r.case]
            covered = sum(in_op_tests.get((op, r.backend)) == PASSED for op in ops)
            rows.add((r.case, r.backend, covered, len(ops)))
    return sorted(rows)


def _family(r: Record) -> str:
    return r.case.split("/")[0]


def _op_test_statuses(records: Sequence[Record], ops_of: dict[str, set[str]], op_families: set[str]
                      ) -> dict[tuple[str, str], str]:
    """(op, backend) -> its status over the op families' cases alone."""
    cells: dict[tuple[str, str], Cell] = {}
    for r in records:
        if _family(r) in op_families:
            ops = ops_of.get(r.case) or {r.what_it_tests}
            blamed = counted_against(r, ops)
            for op in ops:
                _count(cells.setdefault((op, r.backend), Cell()), r, op in blamed)
    return {key: cell.status for key, cell in cells.items()}
