"""Which cases a view shows together. A family whose ids say nothing of what the cases test (flat
ids, `<family>/<test name>`) but whose records name it (Record.subject, from Family.subject: an op
type, say) is shown by subject, so that one row reads "this op passes on one backend and fails in
another's importer". Other families are grouped by the id up to its last "/" (one op's samples,
say). The rule reads the records only: no family is named here. Failures are shown by signature,
one bug a group, in every view that groups them (Markdown, the terminal)."""
from __future__ import annotations

import collections
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


SIGNATURE_LENGTH = 200   # a first line standing in for a signature is cut here


def signature_of(r: Record) -> str:
    """A result's signature; without one (older reports), the first line of its message."""
    if r.signature:
        return str(r.signature)
    first = next((line for line in r.message.splitlines() if line.strip()), "")
    return " ".join(first.split())[:SIGNATURE_LENGTH] or f"{r.outcome.value} (no message)"


def by_signature(records: Iterable[Record]) -> list[tuple[str, list[Record]]]:
    """The records grouped by signature, the largest group first."""
    groups: dict[str, list[Record]] = collections.defaultdict(list)
    for r in records:
        groups[signature_of(r)].append(r)
    return sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
