"""A triage report of one JSON report in GitHub-flavoured Markdown (job summaries, PR comments):
the `md` report format (`--report-md=PATH`, harness.views.formats).

    text = render_markdown(report, proposals)   # proposals: harness.expectations.update

Order: what is worst first. A title and the environment (marked PARTIAL when the run was
interrupted), a summary table per backend, then
  - Crashes and hangs, grouped by signature (expected ones too: they are the costliest results);
  - Unexpected failures (cases expected to pass), grouped by signature;
  - Unexpected passes, grouped by the expectation entry to delete or narrow;
  - Crash-set entries that now pass (or fail without crashing), or how many were not attempted;
  - Stale expectations: an entry's case failed, but in another phase than the entry names;
  - Isolated mismatches (--isolate): each one's culprit ops, with their module paths;
  - What the cases test, the phase times, the speed (--perf), and the passing outputs closest
    to failing (their margins);
  - Expectation files that would make this run match: each proposed file, ready to paste.
Sections with nothing in them are left out; a clean run reads "All N results as expected".
Every case line carries the command that reruns it and, when there is one, its repro bundle.
Text from results (messages, signatures, ids) only appears in code spans and fenced blocks
sized to the backticks inside it, and table cells have `|` escaped and newlines removed.
"""
from __future__ import annotations

import collections
import difflib
import html
from typing import Mapping

from harness.outcomes import Expected, Outcome, Verdict
from harness.record import Record
from harness.views.culprit_lines import isolation_markdown
from harness.views.formats import ReportContext, ReportFormat
from harness.views.grouping import by_signature, family_of, signature_of, subject_families
from harness.views.margins import margins_markdown
from harness.views.markdown_history import history_sections
from harness.views.markdown_text import bold_if as _bold_if
from harness.views.markdown_text import code as _code
from harness.views.markdown_text import escape_text as _escape_text
from harness.views.markdown_text import fenced as _fenced
from harness.views.markdown_text import row as _row
from harness.views.phase_times import phase_rows
from harness.views.speed import speed_markdown

SHOWN_CASES = 3          # a group longer than COLLAPSE_AFTER shows this many, the rest in <details>
COLLAPSE_AFTER = 5
LISTED_CASES = 100       # a group lists at most this many cases; the JSON and HTML reports have all
LISTED_OPS = 30          # the counts per op of a group name at most this many ops
MESSAGE_LINES = 25       # lines of a group's sample message
HEADER_LENGTH = 200      # a signature in a heading is cut here
COLLAPSE_FILE_LINES = 80  # a proposed file longer than this is collapsed


def render_markdown(report: dict, proposals: Mapping[str, str] | None = None, *,
                    originals: Mapping[str, str] | None = None, history: list[dict] | None = None,
                    reductions: Mapping[tuple[str, str], tuple[str, str]] | None = None) -> str:
    """The report as Markdown. `proposals`: {path: proposed text} (see proposals_for_report);
    `originals`, optional: {path: current text}, to show a diff above each proposed file;
    `history`, optional: this run's cases' statuses over the run history
    (harness.history.status.case_statuses), for sections on new failures, fixed and flaky cases;
    `reductions`, optional: (backend, signature) -> (link, text) of its reduced program
    (harness.views.reductions.reduction_links), linked from the signature's group."""
    records = sorted((Record.from_json(r) for r in report.get("results", [])),   # the JSON boundary
                     key=lambda r: (r.backend, r.case))
    environment = report.get("environment") or {}
    out = _head(report, records, environment)
    out += history_sections(history) if history is not None else []
    out += _crashes(records, reductions or {})
    out += _unexpected_failures(records, reductions or {})
    out += _unexpected_passes(records)
    out += _crash_set(records, environment)
    out += _stale(records)
    out += isolation_markdown(records)
    out += _by_subject(records)
    out += _phase_times(records)
    out += speed_markdown(records)
    out += margins_markdown(records)
    if proposals is not None:
        out += _proposals(proposals, originals or {})
    return "\n".join(out).rstrip("\n") + "\n"


def _render(report: dict, context: ReportContext) -> str:
    proposals = context.proposals()
    return render_markdown(report, proposals.files if proposals else None,
                           originals=proposals.originals if proposals else None,
                           history=context.history(), reductions=context.reductions())


FORMAT = ReportFormat("md", "a Markdown triage report", _render)


# ------------------------------------------------------------------------------------ sections

def _head(report: dict, records: list[Record], environment: dict) -> list[str]:
    backends = sorted({r.backend for r in records} | set(environment.get("backends") or {}))
    title = ", ".join(backends) if len(backends) <= 3 else f"{len(backends)} backends"
    out = [f"# E2E results: {_escape_text(title) or 'no backend'}", ""]
    versions = [f"{_escape_text(k)} {_code(v)}" for k, v in environment.items()
                if k not in ("backends", "platform", "run_crash_set") and isinstance(v, (str, int, float))]
    if environment.get("platform"):
        versions.append(_code(environment["platform"]))
    complete = report.get("complete") is True
    out.append(" · ".join(versions + ["complete run" if complete else "**PARTIAL**"]))
    if not complete:
        out += ["", "> **PARTIAL report:** the run did not finish (interrupted, or a shard is missing); "
                    "only the cases that finished are counted below."]
    out += [""] + _summary_table(records, environment)
    unexpected_failures = sum(r.verdict is Verdict.UNEXPECTED_FAILURE for r in records)
    unexpected_passes = sum(r.verdict is Verdict.UNEXPECTED_PASS for r in records)
    skipped = sum(r.verdict is Verdict.SKIPPED for r in records)
    out.append("")
    if not records:
        out.append("No results.")
    elif not unexpected_failures and not unexpected_passes:
        note = f" ({skipped} not run)" if skipped else ""
        out.append(f"**All {len(records)} results as expected**{note}.")
    else:
        parts = [f"{n} unexpected {one if n == 1 else many}" for n, one, many in
                 ((unexpected_failures, "failure", "failures"), (unexpected_passes, "pass", "passes")) if n]
        out.append(f"**{' and '.join(parts)}** among {len(records)} results.")
    out.append("")
    return out


def _summary_table(records: list[Record], environment: dict) -> list[str]:
    summary = _counts(records)
    present = [o for o in Outcome if o is Outcome.PASSED or any(s["outcomes"][o] for s in summary.values())]
    backends = environment.get("backends") or {}
    top = {str(k).replace("-", "_"): v for k, v in environment.items()}
    versions = {name: ", ".join(f"{d} {v}" for d, v in {**(info or {}).get("versions", {}),
                                                        **(info or {}).get("reported", {})}.items()
                                if top.get(str(d).replace("-", "_")) != v)
                for name, info in backends.items()}
    with_versions = any(versions.get(name) for name in summary)
    head = ["backend", "cases", *(o.value for o in present), "unexpected failures", "unexpected passes"]
    head += ["other versions"] if with_versions else []
    rows = [_row(head), _row(["---"] + ["---:"] * (len(head) - 1 - with_versions) + ["---"] * with_versions)]
    for name, s in summary.items():
        cells = [_code(name), str(s["total"]), *(str(s["outcomes"][o]) for o in present),
                 _bold_if(s["verdicts"][Verdict.UNEXPECTED_FAILURE]), _bold_if(s["verdicts"][Verdict.UNEXPECTED_PASS])]
        cells += [_escape_text(versions.get(name, ""))] if with_versions else []
        rows.append(_row(cells))
    return rows if summary else []


def _counts(records: list[Record]) -> dict[str, dict]:
    """Per backend, sorted: its cases, and how many of them had each outcome and each verdict."""
    counts: dict[str, dict] = {}
    for r in records:
        entry = counts.setdefault(r.backend, {"total": 0, "outcomes": collections.Counter(),
                                              "verdicts": collections.Counter()})
        entry["total"] += 1
        entry["outcomes"][r.outcome] += 1
        entry["verdicts"][r.verdict] += 1
    return dict(sorted(counts.items()))


def _crashes(records: list[Record], reductions: Mapping) -> list[str]:
    return _by_signature_section("Crashes and hangs", [r for r in records if r.outcome.is_crash], reductions)


def _unexpected_failures(records: list[Record], reductions: Mapping) -> list[str]:
    return _by_signature_section("Unexpected failures", [
        r for r in records if r.verdict is Verdict.UNEXPECTED_FAILURE and r.expected is Expected.PASS
        and not r.outcome.is_crash], reductions)


def _by_signature_section(title: str, chosen: list[Record], reductions: Mapping) -> list[str]:
    if not chosen:
        return []
    out = [f"## {title} ({len(chosen)})", ""]
    for signature, group in by_signature(chosen):
        out += _group(signature, group) + _reduced(signature, group, reductions)
    return out


def _reduced(signature: str, group: list[Record], reductions: Mapping) -> list[str]:
    """Links to the group's reduced programs, one per backend (python -m harness reduce --all)."""
    links = [(backend, reductions[(backend, signature)]) for backend in sorted({r.backend for r in group})
             if (backend, signature) in reductions]
    return [f"Reduced on {_code(backend)}: [{_escape_text(text)}]({href})" for backend, (href, text) in links] + \
        ([""] if links else [])


def _unexpected_passes(records: list[Record]) -> list[str]:
    chosen = [r for r in records if r.verdict is Verdict.UNEXPECTED_PASS and r.expected is Expected.XFAIL]
    if not chosen:
        return []
    out = [f"## Unexpected passes ({len(chosen)})", "",
           "Each entry below expected these cases to fail: delete it, or narrow its id if other cases of it "
           "still fail.", ""]
    for source, group in _by_source(chosen):
        out.append(f"- {_code(source)}: {_cases_phrase(group)} now pass{'es' * (len(group) == 1)}")
        out += _indent(_case_list(group, phase=False))
    return out + [""]


def _crash_set(records: list[Record], environment: dict) -> list[str]:
    crash = [r for r in records if r.expected is Expected.CRASH]
    not_run = [r for r in crash if r.outcome is Outcome.NOT_RUN]
    passed = [r for r in crash if r.outcome is Outcome.PASSED]
    failing = [r for r in crash if r.outcome.is_failure and not r.outcome.is_crash]
    ran_crash_set = environment.get("run_crash_set", not not_run)
    if not (passed or failing or (not_run and not ran_crash_set)):
        return []
    out = ["## Crash-set entries that now pass", ""]
    if not_run and not ran_crash_set:
        out += [f"{len(not_run)} crash-set case{'s were' if len(not_run) != 1 else ' was'} not attempted; "
                "`--run-crash-set` re-checks them.", ""]
    if passed:
        out += _by_entry("These entries' cases ran (with `--run-crash-set`) and passed: delete the entry.",
                         passed, phase=False)
    if failing:
        out += _by_entry("These no longer crash or hang but fail: move them to the xfail file, with their phase.",
                         failing, phase=True)
    return out


def _by_entry(advice: str, records: list[Record], phase: bool) -> list[str]:
    """The advice, then each expectation entry with its cases."""
    out = [advice, ""]
    for source, group in _by_source(records):
        out.append(f"- {_code(source)}: {_cases_phrase(group)}")
        out += _indent(_case_list(group, phase=phase))
    return out + [""]


def _stale(records: list[Record]) -> list[str]:
    chosen = [r for r in records if r.verdict is Verdict.UNEXPECTED_FAILURE and r.expected is not Expected.PASS]
    if not chosen:
        return []
    out = [f"## Stale expectations ({len(chosen)})", "",
           "These cases still fail, but not in the phase their entry names: update the entry's `phase`.", "",
           _row(["entry", "case", "backend", "now", "signature"]), _row(["---"] * 5)]
    for r in chosen:
        now = r.outcome.value + (f" in {r.phase}" if r.phase else "")
        out.append(_row([_code(r.expectation_source or "?"), _code(r.case), _code(r.backend),
                         _escape_text(now), _code(signature_of(r))]))
    return out + [""]


def _proposals(proposals: Mapping[str, str], originals: Mapping[str, str]) -> list[str]:
    out = ["## Expectation files that would make this run match", ""]
    if not proposals:
        return out + ["The expectation files need no change.", ""]
    out += ["Proposed by `harness.expectations.update` from this run's results. New entries carry a "
            "`# review:` comment: check their reasons before committing.", ""]
    for path, text in sorted(proposals.items()):
        lines = text.count("\n")
        out += [f"### {_code(path)}", ""]
        if path in originals:
            diff = list(difflib.unified_diff(originals[path].splitlines(), text.splitlines(),
                                             f"a/{path}", f"b/{path}", lineterm=""))
            out += _fenced("\n".join(diff), "diff") + [""]
        block = [f"Replace {_code(path)} with ({lines} lines):", ""] + _fenced(text, "yaml")
        if lines > COLLAPSE_FILE_LINES or path in originals:
            block = ["<details><summary>" + html.escape(f"the proposed {path} ({lines} lines), ready to paste")
                     + "</summary>", "", *_fenced(text, "yaml"), "", "</details>"]
        out += block + [""]
    return out


# ------------------------------------------------------------------------------------ grouping

def _phase_times(records: list[Record]) -> list[str]:
    rows = phase_rows(records)
    if not rows:
        return []
    out = ["## Time and memory by phase", "",
           "Wall seconds per phase over the results that reached it; CPU counts the worker's threads and "
           "the compilers it waited for; peak is the highest resident memory of a worker in the phase.", "",
           _row(["backend", "phase", "cases", "total s", "median s", "slowest case", "CPU s", "peak MiB"]),
           _row(["---", "---", "---:", "---:", "---:", "---", "---:", "---:"])]
    for row in rows:
        peak = f"{row.peak_mb:.0f}" if row.peak_mb is not None else ""
        out.append(_row([_code(row.backend), row.phase, str(row.cases), f"{row.total_s:.2f}", f"{row.median_s:.3f}",
                         f"{_code(row.slowest)} ({row.slowest_s:.2f} s)", f"{row.cpu_s:.2f}", peak]))
    return out + [""]


def _by_subject(records: list[Record]) -> list[str]:
    """Per family grouped by subject (harness.views.grouping), a table of its subjects: on each
    backend, passed of results and the phase most of the others failed in."""
    out = []
    for family in sorted(subject_families(records)):
        mine = [r for r in records if family_of(r.case) == family]
        backends = sorted({r.backend for r in mine})
        cells: dict[str, dict[str, list[Record]]] = {}
        for r in mine:
            cells.setdefault(r.subject or "", {}).setdefault(r.backend, []).append(r)
        out += [f"## {_code(family)} by subject", "",
                f"What its {len(mine)} results test, one row each: on each backend, the cases passed of those run, "
                "and the phase where most of the others failed.", "",
                _row(["subject", *(_code(b) for b in backends)]), _row(["---"] + ["---"] * len(backends))]
        for subject, by_backend in sorted(cells.items()):
            out.append(_row([_code(subject), *(_subject_cell(by_backend.get(b, [])) for b in backends)]))
        out.append("")
    return out


def _subject_cell(results: list[Record]) -> str:
    if not results:
        return ""
    passed = sum(r.outcome is Outcome.PASSED for r in results)
    phases = collections.Counter(r.phase for r in results if r.outcome.is_failure and r.phase)
    worst = f" ({phases.most_common(1)[0][0]})" if phases else ""
    return f"{passed}/{len(results)}{worst}"


def _by_source(records: list[Record]) -> list[tuple[str, list[Record]]]:
    groups: dict[str, list[Record]] = collections.defaultdict(list)
    for r in records:
        groups[r.expectation_source or "?"].append(r)
    return sorted(groups.items(), key=lambda item: _source_order(item[0]))


def _source_order(source: str) -> tuple:
    path, _, line = source.rpartition(":")
    return (path, int(line)) if line.isdigit() else (source, 0)


def _group(signature: str, group: list[Record]) -> list[str]:
    outcomes = collections.Counter(r.outcome.value for r in group)
    what = ", ".join(f"{o} {n}" if len(outcomes) > 1 else o for o, n in sorted(outcomes.items()))
    heading = signature if len(signature) <= HEADER_LENGTH else signature[:HEADER_LENGTH - 3] + "..."
    out = [f"### {_code(heading)} — {_escape_text(what)}, {_cases_phrase(group)}", ""]
    sample = group[0]
    message = sample.message.strip("\n")
    if message:
        lines = message.splitlines()
        cut = lines[:MESSAGE_LINES] + ([f"... ({len(lines) - MESSAGE_LINES} more lines)"]
                                       if len(lines) > MESSAGE_LINES else [])
        out += ["<details><summary>" + html.escape(f"message of {sample.case} on {sample.backend}")
                + "</summary>", "", *_fenced("\n".join(cut)), "", "</details>", ""]
    return out + _op_counts(group) + _case_list(group, phase=True) + [""]


def _op_counts(group: list[Record]) -> list[str]:
    """`By op: topk 12 · sort 3`, most first, when the group's cases test more than one op."""
    counts = collections.Counter(r.what_it_tests for r in group)
    if len(counts) < 2:
        return []
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    parts = [f"{_code(op)} {n}" for op, n in ranked[:LISTED_OPS]]
    more = f" · and {len(ranked) - LISTED_OPS} more ops" if len(ranked) > LISTED_OPS else ""
    return [f"By op ({len(counts)}): " + " · ".join(parts) + more, ""]


def _case_list(group: list[Record], phase: bool) -> list[str]:
    """One bullet per case, with its rerun command; a long list shows a few, the rest folded."""
    bullets = [_case_bullet(r, phase) for r in group[:LISTED_CASES]]
    if len(bullets) <= COLLAPSE_AFTER:
        return [line for bullet in bullets for line in bullet]
    shown, rest = bullets[:SHOWN_CASES], bullets[SHOWN_CASES:]
    unlisted = len(group) - len(bullets)
    return ([line for bullet in shown for line in bullet]
            + ["", f"<details><summary>{len(group) - SHOWN_CASES} more cases</summary>", ""]
            + [line for bullet in rest for line in bullet]
            + ([f"- and {unlisted} more: every case is in the JSON report and the HTML matrix"] if unlisted else [])
            + ["", "</details>"])


def _case_bullet(r: Record, phase: bool) -> list[str]:
    facts = [_code(r.backend)]
    if phase and r.phase:
        facts.append(f"phase {_code(r.phase)}")
    if r.outcome.is_crash:
        facts.append(_escape_text(r.outcome.value))
        if r.verdict is Verdict.OK:
            facts.append(f"expected by {_code(r.expectation_source or r.expected.value)}")
        elif r.expected is not Expected.PASS:
            facts.append(f"entry {_code(r.expectation_source or r.expected.value)} names another phase")
    lines = [f"- {_code(r.case)} · " + " · ".join(facts)]
    if r.nodeid:  # a hand-made record without one: no command to offer
        lines.append(f"  rerun: {_code(r.rerun)}")
    if r.artifacts:
        lines.append(f"  repro bundle: {_code(r.artifacts)}")
    return lines


def _cases_phrase(group: list[Record]) -> str:
    return f"{len(group)} case{'s' * (len(group) != 1)}"


def _indent(lines: list[str]) -> list[str]:
    return [("  " + line) if line else line for line in lines]
