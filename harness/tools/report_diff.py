"""What changed between two JSON reports (`python -m harness diff`): see diff_reports for what
lands in which section and RunDiff.failing for the exit status; the IR and speed changes beside
them come from harness.tools.compiler_change."""
from __future__ import annotations

import collections
import dataclasses

from harness.outcomes import Outcome
from harness.record import Record
from harness.reports import TOP_VERSIONS, key
from harness.tools.compiler_change import (
    CompilerChange,
    by_stage,
    compiler_change,
    ir_line,
    not_compared_note,
    speed_line,
    to_json,
)


@dataclasses.dataclass
class Change:
    """One (backend, case) as the two reports have it; None on the side it is missing from."""

    old: Record | None
    new: Record | None

    @property
    def either(self) -> Record:
        record = self.new or self.old
        assert record is not None, "a change has a record on one side at least"
        return record

    @property
    def backend(self) -> str:
        return self.either.backend

    @property
    def case(self) -> str:
        return self.either.case


@dataclasses.dataclass
class RunDiff:
    regressions: list[Change]
    progressions: list[Change]
    new_crashes: list[Change]
    signature_changes: list[Change]
    outcome_changes: list[Change]
    run_changes: list[Change]
    added: list[Change]
    removed: list[Change]
    environment: list[tuple[str, object, object]]  # (what, old value, new value), only the differing ones
    old_complete: bool
    new_complete: bool
    added_backends: list[str]    # backends in only one report: their cases are listed as one line
    removed_backends: list[str]
    compiler: CompilerChange     # the first stage whose fingerprint changed per result, the speed changes

    @property
    def failing(self) -> bool:
        """Exit status 1: a regression, or a crash or hang of a case the old run actually ran.

        A crash or hang of a case that was not_run before is listed but does not fail the diff:
        that is usually the crash set being run for the first time, and there was no result to
        lose. Progressions, added and removed cases never fail it.
        """
        return bool(self.regressions) or any(c.old is not None and c.old.outcome is not Outcome.NOT_RUN
                                             for c in self.new_crashes)


# (attribute, title, whether to print the rerun command of the new result)
SECTIONS = [
    ("regressions", "regressions", True),
    ("progressions", "progressions", False),
    ("new_crashes", "new crashes and hangs", True),
    ("signature_changes", "signature changes", False),
    ("outcome_changes", "outcome changes among failures", False),
    ("run_changes", "not run on one side", False),
    ("added", "added", False),
    ("removed", "removed", False),
]


def diff_reports(old: dict, new: dict) -> RunDiff:
    """Sort every (backend, case) whose result changed into the sections of SECTIONS.

    For a case in both reports, with outcomes o (old) and n (new):
    - regression: o is passed and n is a failure (mismatch, compile_error, runtime_error, crashed,
      timed_out). not_run on either side is never a regression or progression: nothing was learnt.
    - progression: o is a failure and n is passed.
    - new crash or hang: n is crashed or timed_out and o is anything else (passed, another failure,
      not_run; crashed -> timed_out counts, a hang costs the whole timeout). A passing case that now
      crashes is therefore both a regression and a new crash.
    - signature change: o == n, both failures, both signatures known and different. A null
      signature (reports older than signatures) does not count, or every failure would change.
    - outcome change: both failures, o != n, and n is no crash or hang (those are new crashes).
    - run change: one side not_run, the other ran, and not already a new crash.
    Cases in only one report are added or removed.
    """
    old_by_key = _records(old)
    new_by_key = _records(new)
    sections: dict[str, list[Change]] = {name: [] for name, _, _ in SECTIONS}
    for k in sorted(old_by_key.keys() | new_by_key.keys()):
        change = Change(old_by_key.get(k), new_by_key.get(k))
        for name in _sections_of(change):
            sections[name].append(change)
    old_backends, new_backends = {k[0] for k in old_by_key}, {k[0] for k in new_by_key}
    both = sorted(old_by_key.keys() & new_by_key.keys())
    compiler = compiler_change([(old_by_key[k], new_by_key[k]) for k in both], old, new)
    return RunDiff(**sections, environment=environment_changes(old.get("environment", {}), new.get("environment", {})),
                   old_complete=old.get("complete") is True, new_complete=new.get("complete") is True,
                   added_backends=sorted(new_backends - old_backends),
                   removed_backends=sorted(old_backends - new_backends), compiler=compiler)


def _records(report: dict) -> dict[tuple[str, str], Record]:
    """The JSON boundary: a checked report's results as Records, by (backend, case)."""
    return {key(r): Record.from_json(r) for r in report["results"]}


def _sections_of(change: Change) -> list[str]:
    if change.old is None:
        return ["added"]
    if change.new is None:
        return ["removed"]
    o, n = change.old.outcome, change.new.outcome
    found = []
    if o is Outcome.PASSED and n.is_failure:
        found.append("regressions")
    if o.is_failure and n is Outcome.PASSED:
        found.append("progressions")
    if n.is_crash and o is not n:
        found.append("new_crashes")
    elif o.is_failure and n.is_failure and o is not n:
        found.append("outcome_changes")
    elif o is n and o.is_failure and None not in (_sig(change.old), _sig(change.new)) \
            and _sig(change.old) != _sig(change.new):
        found.append("signature_changes")
    elif o is not n and Outcome.NOT_RUN in (o, n):
        found.append("run_changes")
    return found


def environment_changes(old: dict, new: dict) -> list[tuple[str, object, object]]:
    """The versions (and settings) that differ: a new torch-mlir usually explains a diff."""
    changes = [(name, old.get(name), new.get(name)) for name in (*TOP_VERSIONS, "platform", "run_crash_set")
               if old.get(name) != new.get(name)]
    old_backends, new_backends = old.get("backends") or {}, new.get("backends") or {}
    for backend in sorted(old_backends.keys() & new_backends.keys()):
        for part, suffix in (("versions", ""), ("reported", " (reported)")):
            was, now = old_backends[backend].get(part) or {}, new_backends[backend].get(part) or {}
            changes += [(f"{backend}: {name}{suffix}", was.get(name), now.get(name))
                        for name in sorted(was.keys() | now.keys()) if was.get(name) != now.get(name)]
    return changes


def _sig(record: Record | None) -> str | None:
    return record.signature if record else None  # None too in reports older than signatures


# ---- rendering -----------------------------------------------------------------------------

def _state(record: Record | None) -> str:
    if record is None:
        return "(absent)"
    return record.outcome.value + (f" in {record.phase}" if record.phase else "")


def _signature(change: Change, shown=str) -> str:
    """The signature that matters for this change: old → new when both exist and differ."""
    old, new = _sig(change.old), _sig(change.new)
    if old and new and old != new:
        return f"{shown(old)} → {shown(new)}"
    return shown(new or old) if new or old else ""


def _rerun(change: Change) -> str | None:
    # a hand-made record without nodeid: no command
    return change.new.rerun if change.new and change.new.nodeid else None


def _counts(diff: RunDiff) -> list[tuple[str, int]]:
    return [(title, len(getattr(diff, name))) for name, title, _ in SECTIONS] + [
        ("IR changed", len(diff.compiler.ir_changed))]


def _notes(diff: RunDiff) -> list[str]:
    notes = [f"the {side} report is incomplete (the run was interrupted): cases missing from it show as "
             f"{'removed' if side == 'new' else 'added'}"
             for side, complete in (("old", diff.old_complete), ("new", diff.new_complete)) if not complete]
    return notes + list(filter(None, [not_compared_note(diff.compiler)]))


def _shown(value: object) -> str:
    return "not installed" if value is None else str(value)


def _lines(diff: RunDiff, name: str) -> list[tuple[str, str, str, Change | None]]:
    """(case, backend, old → new, change) per line of a section; None: a whole backend in one line.

    A backend in only one report would otherwise add hundreds of lines of `(absent) → passed`.
    """
    changes = getattr(diff, name)
    whole = {"added": diff.added_backends, "removed": diff.removed_backends}.get(name, [])
    lines = [(c.case, c.backend, f"{_state(c.old)} → {_state(c.new)}", c) for c in changes if c.backend not in whole]
    for backend in whole:
        mine = [c for c in changes if c.backend == backend]
        tally = collections.Counter(c.either.outcome.value for c in mine)
        outcomes = ", ".join(f"{outcome} {n}" for outcome, n in sorted(tally.items()))
        lines.append((f"(all {len(mine)} case{'s' * (len(mine) != 1)})", backend,
                      f"(absent) → {outcomes}" if name == "added" else f"{outcomes} → (absent)", None))
    return lines


def diff_text(diff: RunDiff) -> str:
    lines = [", ".join(f"{title}: {n}" for title, n in _counts(diff))]
    lines += [f"note: {note}" for note in _notes(diff)]
    if diff.environment:
        lines += ["", "environment changed:"]
        lines += [f"  {what}: {_shown(was)} → {_shown(now)}" for what, was, now in diff.environment]
    for name, title, rerun in SECTIONS:
        if getattr(diff, name):
            lines += ["", f"{title} ({len(getattr(diff, name))}):"]
            for case, backend, states, c in _lines(diff, name):
                lines.append(f"  {case} [{backend}]  {states}  {_signature(c) if c else ''}".rstrip())
                command = _rerun(c) if rerun and c else None
                lines += [f"    rerun: {command}"] if command else []
    compiler = diff.compiler
    if compiler.ir_changed:
        lines += ["", f"IR changed, at the first stage whose fingerprint did ({by_stage(compiler)}):"]
        lines += [f"  {c.case} [{c.backend}]  {ir_line(c, compiler)}" for c in compiler.ir_changed]
    if compiler.speed:
        lines += ["", f"speed changes (--perf, as perf compare judges them) ({len(compiler.speed)}):"]
        lines += [f"  {s['case']} [{s['backend']}]  {speed_line(s)}" for s in compiler.speed]
    return "\n".join(lines) + "\n"


def diff_markdown(diff: RunDiff) -> str:
    counts = _counts(diff)
    lines = ["## Run diff", "", _row(title for title, _ in counts), _row("---" for _ in counts),
             _row(str(n) for _, n in counts)]
    for note in _notes(diff):
        lines += ["", f"> **Note:** {note}"]
    if diff.environment:
        lines += ["", "### Environment changed", "", _row(["what", "old", "new"]), _row(["---"] * 3)]
        lines += [_row([_code(what), _code(_shown(was)), _code(_shown(now))]) for what, was, now in diff.environment]
    for name, title, rerun in SECTIONS:
        changes = getattr(diff, name)
        if changes:
            lines += ["", f"### {title[0].upper() + title[1:]} ({len(changes)})", "",
                      _row(["case", "backend", "old → new", "signature"]), _row(["---"] * 4)]
            lines += [_row([_code(case) if c else case, _code(backend), states, _signature(c, _code) if c else ""])
                      for case, backend, states, c in _lines(diff, name)]
            commands = [cmd for cmd in map(_rerun, changes) if cmd] if rerun else []
            if commands:
                lines += ["", "<details><summary>rerun commands</summary>", "", "```", *commands, "```", "</details>"]
    compiler = diff.compiler
    if compiler.ir_changed:
        lines += ["", f"### IR changed ({by_stage(compiler)})", "",
                  _row(["case", "backend", "first changed stage, outcome, speed"]), _row(["---"] * 3)]
        lines += [_row([_code(c.case), _code(c.backend), ir_line(c, compiler)]) for c in compiler.ir_changed]
    if compiler.speed:
        lines += ["", f"### Speed changes ({len(compiler.speed)})", "", _row(["case", "backend", "time new/old"]),
                  _row(["---"] * 3)]
        lines += [_row([_code(s["case"]), _code(s["backend"]), speed_line(s)]) for s in compiler.speed]
    return "\n".join(lines) + "\n"


def diff_json(diff: RunDiff) -> dict:
    """The diff as data (`--format=json`): what the text shows, and the IR and speed changes."""
    def side(record: Record | None) -> dict | None:
        return None if record is None else {"outcome": record.outcome.value, "phase": record.phase and
                                            record.phase.value, "signature": record.signature}

    sections = {name: [{"case": c.case, "backend": c.backend, "old": side(c.old), "new": side(c.new),
                        **({"rerun": _rerun(c)} if rerun and _rerun(c) else {})} for c in getattr(diff, name)]
                for name, _, rerun in SECTIONS}
    return {"failing": diff.failing, "counts": {name: len(getattr(diff, name)) for name, _, _ in SECTIONS},
            "notes": _notes(diff), "old_complete": diff.old_complete, "new_complete": diff.new_complete,
            "environment": [{"what": what, "old": was, "new": now} for what, was, now in diff.environment],
            "added_backends": diff.added_backends, "removed_backends": diff.removed_backends,
            **sections, **to_json(diff.compiler)}


def _row(cells) -> str:
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def _code(text: str) -> str:
    """A Markdown code span that survives backticks inside the text."""
    return f"`` {text} ``" if "`" in text else f"`{text}`"
