"""Which cases a view shows together. A family whose ids say nothing of what the cases test (flat
ids: `onnx_node/test_abs`) but whose records name it (Record.subject: the op type `Abs`) is shown
by subject, so that one row reads "this op passes on one backend and fails in another's importer".
Other families are grouped by the id up to its last "/" (an OpInfo op's samples)."""
from __future__ import annotations

from typing import Iterable

from harness.record import Record


def family_of(case: str) -> str:
    return case.split("/", 1)[0]


def subject_families(records: Iterable[Record]) -> set[str]:
    """Families with flat ids whose every record names its subject."""
    flat: dict[str, bool] = {}
    for r in records:
        family = family_of(r.case)
        flat[family] = flat.get(family, True) and r.subject is not None and r.case.count("/") == 1
    return {family for family, yes in flat.items() if yes}
