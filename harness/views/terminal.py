"""The lit-style terminal summary: counts per backend, then the unexpected results grouped by
signature (one bug, one line, however many cases it fails), each unexpected pass with the
expectation entry to delete, the stage cache's hits, and the culprit ops of each mismatch
isolated with --isolate. The `summary` report format: pytest's "e2e summary", and a file with
`--report-summary=PATH`."""
from __future__ import annotations

import collections

from harness.outcomes import Outcome, Verdict
from harness.record import Record
from harness.stages.entries import WARNINGS_NOTE
from harness.views.culprit_lines import isolated, isolation_line
from harness.views.formats import ReportContext, ReportFormat
from harness.views.grouping import signature_of
from harness.views.speed import backend_speeds, speed_line


def terminal_lines(records: list[Record]) -> list[str]:
    """Per backend: counts per outcome and its flaky results; then every unexpected failure, by
    signature; then every unexpected pass."""
    lines = []
    for backend in sorted({r.backend for r in records}):
        mine = sorted((r for r in records if r.backend == backend), key=lambda r: r.case)
        outcomes = collections.Counter(r.outcome for r in mine)
        counts = "  ".join(f"{o.value}={outcomes[o]}" for o in Outcome if outcomes[o])
        lines.append(f"{backend}: {len(mine)} cases  {counts}")
        lines += [f"  perf: {speed_line(row)}" for row in backend_speeds(mine)]
        lines += [_flaky_line(r) for r in mine if r.flaky or r.verdict is Verdict.FLAKY]
    ordered = sorted(records, key=lambda r: (r.case, r.backend))
    lines += _failure_groups([r for r in ordered if r.verdict is Verdict.UNEXPECTED_FAILURE and not r.flaky])
    lines += [f"UNEXPECTED_PASS: {r.case} on {r.backend}: delete the entry at {r.expectation_source} "
              f"(or narrow its id)" for r in ordered if r.verdict is Verdict.UNEXPECTED_PASS]
    return lines + _cache_line(records) + _isolations(records)


def _cache_line(records: list[Record]) -> list[str]:
    """The stage cache's hits per stage, in the order the stages ran, and the compute they saved."""
    counts: dict[str, collections.Counter] = {}
    for r in records:
        for stage, status in r.findings.cache.items():
            counts.setdefault(stage, collections.Counter())[status] += 1
    warnings = [line for r in records for line in r.findings.notes.get(WARNINGS_NOTE, [])]
    if not any(c["hit"] or c["miss"] for c in counts.values()):
        return []
    stages = ", ".join(f"{stage} {c['hit']}/{sum(c.values())}" for stage, c in counts.items())
    saved = sum(r.findings.cache_saved_s for r in records)
    more = f" ({len(warnings) - 1} more like it)" if len(warnings) > 1 else ""
    return ([f"stage cache: hits {stages}; {saved:.1f} s of stage work saved"]
            + ([f"WARNING: {warnings[0]}{more}"] if warnings else []))


def _isolations(records: list[Record]) -> list[str]:
    """Each isolated mismatch (--isolate) and its culprit ops."""
    chosen = isolated(records)
    lines = [f"isolated mismatches: {len(chosen)}"] if chosen else []
    for r in chosen:
        isolation = r.isolation or {}   # isolated() chose records that have one
        lines.append(f"  {r.case} on {r.backend}: {isolation_line(isolation)}")
        if isolation.get("folder"):
            lines.append(f"      details: {isolation['folder']}")
    return lines


def _flaky_line(r: Record) -> str:
    if r.flaky:
        return (f"  FLAKY: {r.case} [attempts: {', '.join(a.outcome.value for a in r.attempts)}]"
                + ("" if r.verdict is Verdict.FLAKY else " (fails the run; --flaky-ok lets it pass)"))
    return (f"  FLAKY: {r.case} [{r.outcome.value}] its entry says its outcome is nondeterministic "
            f"({r.expectation_source})")


def _failure_groups(failures: list[Record]) -> list[str]:
    """One line per (signature, outcome, phase), the largest group first: its count, its backends
    and one example case; a failure in another phase than its entry's says so."""
    groups: dict[tuple, list[Record]] = {}
    for r in failures:
        groups.setdefault((signature_of(r), r.outcome.value, r.phase), []).append(r)
    if not groups:
        return []
    lines = [f"unexpected failures: {len(failures)}, by signature"]
    for (text, outcome, phase), members in sorted(groups.items(), key=lambda item: -len(item[1])):
        where = f" in {phase.value}" if phase else ""
        backends = ", ".join(dict.fromkeys(r.backend for r in members))
        example = members[0]
        more = f" and {len(members) - 1} more" if len(members) > 1 else ""
        moved = (f"; its entry ({example.expectation_source}) expects {example.expected_phase.value}"
                 if example.expected_phase and example.expected_phase != phase else "")
        lines.append(f"  {len(members)} x {outcome}{where} [{backends}] {text}")
        lines.append(f"      e.g. {example.case} on {example.backend}{more}{moved}")
    return lines


def _render(report: dict, context: ReportContext) -> str:
    lines = terminal_lines([Record.from_json(r) for r in report.get("results", [])])
    return "".join(line + "\n" for line in lines)


FORMAT = ReportFormat("summary", "the run's summary as the terminal shows it", _render, terminal=True)
