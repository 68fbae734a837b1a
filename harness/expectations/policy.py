"""What --update-expectations changes, decided from a run's records: a plan of operations per file.

    plan = make_plan(records, {Expected.XFAIL: xfail_file, Expected.CRASH: crash_file}, backend, case_ids)

No YAML here: each file is seen through its `path` and its `entries` (the harness loader's
mappings, which know their line); harness.expectations.edit carries the plan out.

An entry is judged only by the records whose `expectation_source` names it (the file and the line
of its first key). Entries with no such record (their cases were deselected, their `when` does not
hold, or they are crash-set entries that were not run because --run-crash-set was off: outcome
not_run) are left exactly as they are. For each record of an entry:
  - passed: the case leaves the entry;
  - an xfail case that crashed or timed out: it moves to the crash set (the crash set is the list of
    cases not to attempt; the entry's `issue` and `when` go with it);
  - a crash-set case that failed without crashing: it moves to the xfail file, with its phase;
  - still failing: it stays. Its failure changed when the entry has a `phase` and the case failed in
    another one, or the entry has a `signature` (the one it was written for) and the case's differs:
    then the entry gets the new phase, and its reason and signature are rewritten from the new
    failure (a reason that still named the old cause would be false). Otherwise the reason, hand-
    written or not, is kept. An entry without `signature` (written by hand, or before the key
    existed) is judged by its phase only: nothing tells what its reason was measured on;
  - its reruns (--rerun-failures) disagreed, a pass and a failure: the entry is marked
    `nondeterministic` (`MarkNondeterministic`; a glob gives the case an entry of its own so
    marked). A case no entry names whose reruns disagreed gets a new entry so marked. Only two
    runs that disagree propose the mark: a failure that repeats never gets it;
  - an entry already marked nondeterministic stays as it is, whatever its case did (but crash).
The operations: an entry is dropped (`Drop`), gets a new failure (`Rewrite`: phase, reason and
signature), or, for a glob that must stop matching some cases, is replaced in place by copies
matching exactly the cases that stay (`Narrow`), each keeping the entry's failure or rewritten;
a case that moves becomes a `NewEntry` of the other file whose `origin` names the entry it leaves;
a new failure becomes a `NewEntry` with no origin (an unexpected mismatch, compile_error
or runtime_error goes to the xfail file, an unexpected crash or hang to the crash set).

Narrowing: fnmatch has no "all but these". The cases that must stay are the still-failing cases
of the run, plus, when `case_ids` (every case id of the registry) is given, the glob's cases the
run did not exercise: they keep the glob's failure, because the run says nothing about them. Where
such cases share a directory (`myfamily/3d/...`), the glob's last path segment under that
directory (`myfamily/3d/*transposed*`) replaces their exact ids when the registry shows that
it matches only cases that stay (and at least two). Without `case_ids` the copies are exact ids of
the exercised cases only: right after a full run, but after a `-k` selection a glob's unselected
cases lose their expectation, so pass `case_ids` then. A glob all of whose exercised cases changed
to one new failure (one phase and signature, and no unexercised case) keeps its id and gets it.
"""
from __future__ import annotations

import collections
import dataclasses
import fnmatch
import os
import re
from pathlib import Path
from typing import Iterable, Mapping, Protocol, Sequence

from harness.errors import HarnessInputError
from harness.files import display_path
from harness.outcomes import Expected, Outcome
from harness.project_files.yamlio import flow_text
from harness.record import Record

GLOB_CHARS = frozenset("*?[")
REASON_LIMIT = 240       # a reason taken from a message's first line is cut here


@dataclasses.dataclass(frozen=True)
class Drop:
    """The entry goes (with the comments directly above it)."""


@dataclasses.dataclass(frozen=True)
class Rewrite:
    """The entry's failure changed: these replace its phase, reason and signature."""

    phase: str | None        # None: the `phase` key goes
    reason: str
    signature: str | None    # None: the `signature` key goes (a record without one)
    note: str = ""           # a review comment above the entry (none on a narrowed glob's copies)


@dataclasses.dataclass(frozen=True)
class Narrow:
    copies: tuple[tuple[str, Rewrite | None], ...]  # (id, its new failure or None: the entry's, kept as written)
    note: str                                       # a review comment above the first copy


@dataclasses.dataclass(frozen=True)
class MarkNondeterministic:
    note: str                                    # a review comment above the entry


Operation = Drop | Rewrite | Narrow | MarkNondeterministic


@dataclasses.dataclass
class NewEntry:
    """An entry to append under a review comment (also written by the fuzzer, with comment "")."""

    case: str
    phase: str | None
    reason: str
    comment: str
    origin: int | None = None   # a move: the index of the entry it leaves in the other file
    nondeterministic: bool = False
    signature: str | None = None   # the failure's, written so that a later update sees it change


@dataclasses.dataclass
class Plan:
    changes: dict[Expected, dict[int, Operation]]   # file kind -> entry index -> what becomes of it
    added: dict[Expected, list[NewEntry]]          # file kind -> entries to append, sorted by case


class EntryFile(Protocol):
    @property
    def path(self) -> Path: ...

    @property
    def entries(self) -> Sequence[dict]: ...   # loaded entries; each has `.line`, the line of its first key


def make_plan(records: Iterable[Record], files: Mapping[Expected, EntryFile], backend: str,
              case_ids: Sequence[str] | None) -> Plan:
    """The operations that make a rerun of `records`' cases match the two files."""
    plan = Plan({kind: {} for kind in Expected.files()}, {kind: [] for kind in Expected.files()})
    judged: dict[tuple[Expected, int], list[Record]] = collections.defaultdict(list)
    for r in sorted(records, key=lambda r: r.case):
        if r.outcome in (Outcome.NOT_RUN, Outcome.WRONG_LOWERING):
            continue  # a crash-set case that was not attempted says nothing; a broken lowering claim is the author's
        kind = r.expected if r.expected is not Expected.PASS else None
        if kind is None or not r.expectation_source:
            if _disagreed(r):
                plan.added[Expected.XFAIL].append(NewEntry(r.case, None, _reason(r), _flaky_comment(r),
                                                           nondeterministic=True, signature=r.signature))
                continue
            new_kind = _file_for(r.outcome)
            if new_kind:
                plan.added[new_kind].append(NewEntry(r.case, _phase(r), _reason(r), _added_comment(backend),
                                                     signature=r.signature))
            continue
        index = _entry_for(r, files[kind])
        if index is not None:
            judged[(kind, index)].append(r)
    for (file_kind, index), recs in judged.items():
        operation = _judge(file_kind, index, files[file_kind].entries[index], recs, plan, case_ids)
        if operation is not None:
            plan.changes[file_kind][index] = operation
    for added in plan.added.values():
        added.sort(key=lambda e: e.case)
    return plan


def _disagreed(r: Record) -> bool:
    """Its reruns gave a pass and a failure that is not a crash: its outcome varies."""
    outcomes = {a.outcome for a in r.attempts}
    return Outcome.PASSED in outcomes and any(o.is_failure and not o.is_crash for o in outcomes)


def _phase(r: Record) -> str | None:
    """A record's phase as an entry's `phase` is written: plain text, which the YAML writer takes."""
    return r.phase.value if r.phase else None


def _file_for(outcome: Outcome) -> Expected | None:
    """Which file an unexpected failure belongs in: a crash or hang the crash set, else xfail."""
    return (Expected.CRASH if outcome.is_crash else Expected.XFAIL) if outcome.is_failure else None


def _judge(kind: Expected, index: int, entry: dict, records: list[Record], plan: Plan,
           case_ids: Sequence[str] | None) -> Operation | None:
    """What becomes of one entry, from the records that name it (moves are added to `plan`)."""
    phase0 = entry.get("phase")
    stay: dict[str, Rewrite | None] = {}   # case -> its new failure, None when it is the entry's
    left: collections.Counter = collections.Counter()
    varies = [r for r in records if _disagreed(r)]
    if entry.get("nondeterministic") is True:
        records = [r for r in records if r.outcome.is_crash]   # a pass or its failure: as declared
    elif varies and kind is Expected.XFAIL and not any(ch in GLOB_CHARS for ch in str(entry["id"])):
        return MarkNondeterministic(_flaky_comment(varies[0]))
    for r in records:
        if r in varies:   # an entry of its own, in the xfail file (a crash-set case moves there)
            left["marked nondeterministic"] += 1
            moved = kind is Expected.CRASH
            plan.added[Expected.XFAIL].append(NewEntry(r.case, None if moved else phase0, str(entry.get("reason", "")),
                                                       _flaky_comment(r), origin=index if moved else None,
                                                       nondeterministic=True, signature=entry.get("signature")))
        elif r.outcome is Outcome.PASSED:
            left["now pass"] += 1
        elif _file_for(r.outcome) is kind.other_file_kind:
            left[f"moved to {kind.other_file_kind.file_title}"] += 1
            plan.added[kind.other_file_kind].append(NewEntry(r.case, _phase(r), _reason(r), _moved_comment(r, kind),
                                                   origin=index, signature=r.signature))
        else:
            stay[r.case] = _rewrite(entry, r)
    if not left and all(f is None for f in stay.values()):
        return None
    pattern = str(entry["id"])
    if not any(ch in GLOB_CHARS for ch in pattern):
        if not stay:
            return Drop()
        rewrite = next(iter(stay.values()))   # None: it failed as the entry says, and also passed or moved
        return _noted(entry, rewrite) if rewrite else None
    exercised = {r.case for r in records}
    unexercised = [c for c in case_ids or () if fnmatch.fnmatchcase(c, pattern) and c not in exercised]
    failures = set(stay.values())
    only = failures.pop() if len(failures) == 1 else None   # all None and nothing left: returned above
    if not left and not unexercised and only is not None:
        return _noted(entry, only)
    copies = _narrow(pattern, {**stay, **{c: None for c in unexercised}}, case_ids)
    if not copies:
        return Drop()
    other_phase = sum(f is not None and f.phase != phase0 for f in stay.values())
    changed = sum(f is not None and f.phase == phase0 for f in stay.values())
    why = ([f"{n} {what}" for what, n in sorted(left.items())]
           + [f"{other_phase} failed in another phase"] * bool(other_phase)
           + [f"{changed} failed with another signature"] * bool(changed))
    note = f"# review: narrowed from {flow_text(pattern)} by --update-expectations ({', '.join(why)})"
    return Narrow(tuple(copies), note)


def _rewrite(entry: dict, r: Record) -> Rewrite | None:
    """The case's new failure when it is not the one the entry was written for (its phase, and its
    signature when the entry records one), else None: the entry's reason still holds."""
    phase0, written_for = entry.get("phase"), entry.get("signature")
    moved = "phase" in entry and _phase(r) != phase0
    if not moved and not (written_for and r.signature and r.signature != written_for):
        return None
    return Rewrite(_phase(r) if "phase" in entry else None, _reason(r), r.signature)


def _noted(entry: dict, rewrite: Rewrite) -> Rewrite:
    """The rewrite with its review comment: the entry's comments and issue may name the old cause too."""
    moved = "phase" in entry and rewrite.phase != entry.get("phase")
    what = f"phase {entry.get('phase')} -> {rewrite.phase or 'none'}" if moved else "another signature"
    issue = " and the issue" if "issue" in entry else ""
    return dataclasses.replace(rewrite, note=f"# review: reason rewritten by --update-expectations ({what}); "
                                             f"check it{issue}")


def _narrow(pattern: str, keep: dict[str, Rewrite | None], case_ids: Sequence[str] | None
            ) -> list[tuple[str, Rewrite | None]]:
    """Ids matching exactly the cases in `keep` (case -> its new failure, None for the entry's):
    directory globs where safe, else exact ids."""
    chosen: list[tuple[str, Rewrite | None]] = []
    remaining = dict(keep)
    if case_ids is not None and "/" in pattern:
        tail = pattern.rsplit("/", 1)[1]
        for directory in sorted({c.rsplit("/", 1)[0] for c, f in keep.items() if f is None and "/" in c}):
            candidate = f"{directory}/{tail}"
            if candidate == pattern or any(ch in directory for ch in GLOB_CHARS | {"]"}):
                continue
            matched = [c for c in case_ids if fnmatch.fnmatchcase(c, candidate)]
            if (len(matched) >= 2 and all(c in remaining and remaining[c] is None for c in matched)
                    and all(fnmatch.fnmatchcase(c, pattern) for c in matched)):
                chosen.append((candidate, None))
                for c in matched:
                    del remaining[c]
    chosen += [(exact(c), f) for c, f in remaining.items()]
    return sorted(chosen, key=lambda copy: copy[0])


def exact(case_id: str) -> str:
    """An fnmatch pattern that matches this id only (ids with glob characters get them bracketed)."""
    return "".join(f"[{ch}]" if ch in GLOB_CHARS else ch for ch in case_id)


def _entry_for(record: Record, file: EntryFile) -> int | None:
    """The index of the entry a record's expectation_source names; None when it names another file."""
    source = record.expectation_source or ""   # the caller chose records that have one
    path, _, line = source.rpartition(":")
    if not line.isdigit():
        raise HarnessInputError(source, "expectation_source is not 'file:line'")
    if not _same_file(path, file.path):
        return None
    index = next((i for i, e in enumerate(file.entries) if getattr(e, "line", None) == int(line)), None)
    if index is None or not fnmatch.fnmatchcase(record.case, str(file.entries[index].get("id"))):
        raise HarnessInputError(source, f"names no entry for {record.case} in {display_path(file.path)}",
                                "the file changed since the run: run again, then update")
    return index


def _same_file(source_path: str, path: Path) -> bool:
    """Whether a record's source path names `path`: the same file, else the same last two parts."""
    source = Path(source_path)
    try:
        if source.exists() and path.exists() and source.samefile(path):
            return True
    except OSError:
        pass
    return Path(os.path.normpath(source)).parts[-2:] == Path(os.path.normpath(path)).parts[-2:]


CONTROLS = re.compile(r"\x1b\[[0-9;]*[A-Za-z]|[\x00-\x08\x0b-\x1f\x7f]")   # terminal colours and controls


def _reason(r: Record) -> str:
    text = r.signature or next((line for line in r.message.splitlines() if line.strip()), "")
    text = " ".join(CONTROLS.sub("", str(text)).split())   # a YAML file holds no escape characters
    if len(text) > REASON_LIMIT:
        text = text[:REASON_LIMIT - 4].rstrip() + " ..."
    return text or f"{r.outcome.value} in phase {r.phase}"


def _added_comment(backend: str) -> str:
    return f"# review: added by --update-expectations from a run on {backend}; check the reason"


def _flaky_comment(r: Record) -> str:
    attempts = ", ".join(a.outcome.value for a in r.attempts)
    return f"# review: marked nondeterministic by --update-expectations (its reruns gave {attempts})"


def _moved_comment(r: Record, moved_from: Expected) -> str:
    how = "it crashed or hung" if r.outcome.is_crash else "it failed without crashing"
    return f"# review: moved from {moved_from.file_title} by --update-expectations ({how}); check the reason"
