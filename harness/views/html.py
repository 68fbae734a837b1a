"""A self-contained HTML view of a JSON report: a case x backend matrix with filters and details.

`render_html(report)` turns the dict that `--report-json` writes into one HTML page that needs no
network: the CSS and JS are inline, there are no fonts or images. Its parts are files in
harness/views/assets (package data): `report.html.j2`, rendered with Jinja's autoescaping, and the
`report.css` and `report.js` it inlines. The page is built in two layers:

* The server side (the template, fed by this module) renders the header (its badge: how many
  results were unexpected, or "all as expected"; and "partial run" for an interrupted one), the
  per-backend summary, the failures grouped by signature, the legend and the matrix itself,
  every report value escaped, so the page is readable even with scripts disabled. The matrix
  starts within the first screen: the phase-time and speed tables are folded (<details>).
* The records travel as JSON in a `<script type="application/json">` block with `<`, `>` and `&`
  written as `\\u003c`, `\\u003e` and `\\u0026`, so no report text (compiler output such as
  `tensor<2x3xf32>`, or even `</script>`) can end the block. The script parses that block and
  builds the filters' effects and the details panel with `textContent` only, never `innerHTML`;
  what it knows of outcomes and verdicts comes in the block too (harness.outcomes, as data).

To stay small for large matrices, per-case values (params, tags) are stored once per case and
identical messages once in a string table; `decode_payload` rebuilds the full records.

The `html` report format (`--report-html=PATH`, harness.views.formats); command line: `python -m
harness.views.html report.json [-o report.html]`, or `python -m harness report report.json --html=PATH`.
"""
from __future__ import annotations

import argparse
import datetime
import functools
import importlib.resources
import json
import sys
import urllib.parse
from pathlib import Path
from typing import Any, Mapping

import markupsafe

from harness.errors import HarnessInputError
from harness.outcomes import Expected, Outcome, Phase, Verdict
from harness.record import Record
from harness.reports import read_report
from harness.views.formats import ReportContext, ReportFormat
from harness.views.grouping import family_of, subject_families
from harness.views.phase_times import phase_rows
from harness.views.speed import backend_speeds

MAX_MESSAGE_CHARS = 100_000   # a message longer than this is cut in the page (the JSON keeps it whole)
DATA_ELEMENT_ID = "report-data"
_ASSETS = importlib.resources.files("harness.views") / "assets"
_CSS = markupsafe.Markup((_ASSETS / "report.css").read_text(encoding="utf-8"))
_JS = markupsafe.Markup((_ASSETS / "report.js").read_text(encoding="utf-8"))   # no `</script>` in it


@functools.cache
def _template() -> Any:
    """The page's template (Jinja loads when a page is written, not with the format registry)."""
    import jinja2

    return jinja2.Environment(autoescape=True, keep_trailing_newline=True, undefined=jinja2.StrictUndefined
                              ).from_string((_ASSETS / "report.html.j2").read_text(encoding="utf-8"))


def render_html(report: dict, reductions: Mapping[tuple[str, str], tuple[str, str]] | None = None) -> str:
    """One self-contained HTML page showing `report` (the dict `--report-json` writes). `reductions`:
    (backend, signature) -> (link, text) of its reduced program, shown with each result of the group."""
    model = _Model(report, reductions or {})
    iso, created = _created(report)
    n_unexpected = sum(_is_unexpected(r) for r in model.records)
    return _template().render(
        title="torch-backend-e2e report", complete=model.complete, created_iso=iso, created=created,
        badge=_badge(n_unexpected), signatures=_signatures(model),
        n_cases=len(model.cases), n_records=len(model.records), schema=report.get("schema_version", "?"),
        facts=_facts(model.env), backends=model.backends, summary=_summary(model), outcomes=_outcomes(model),
        families=_families(model), phases=phase_rows(model.records), speeds=backend_speeds(model.records),
        n_unexpected=n_unexpected, n_unexpected_passes=sum(r.verdict is Verdict.UNEXPECTED_PASS for r in model.records),
        n_timed=sum(bool(r.findings.perf and "speedup" in r.findings.perf) for r in model.records),
        css=_CSS, js=_JS, data_id=DATA_ELEMENT_ID,
        data=markupsafe.Markup(_json_for_script(model.payload())))


def _render(report: dict, context: ReportContext) -> str:
    return render_html(report, context.reductions())


FORMAT = ReportFormat("html", "a self-contained HTML result matrix", _render)


def decode_payload(payload: dict) -> list[dict]:
    """The records as the page sees them, rebuilt from the embedded JSON (the inverse of the packing)."""
    out = []
    for packed in payload["records"]:
        record = dict(packed)
        case = payload["cases"][record.pop("c")]
        record["case"] = case["id"]
        record["backend"] = payload["backends"][record.pop("b")]
        record["message"] = payload["messages"][record.pop("m")]
        record.setdefault("params", case["params"])
        record.setdefault("tags", case["tags"])
        for key in ("phase", "expected_phase", "expectation_source", "signature", "artifacts"):
            record.setdefault(key, None)
        out.append(record)
    return out


# ---------------------------------------------------------------------------------------------------
# The model: backends, cases and records in display order


class _Model:
    def __init__(self, report: dict, reductions: Mapping[tuple[str, str], tuple[str, str]]):
        self.report = report
        self.reductions = reductions
        self.complete = bool(report.get("complete", True))
        self.env = report.get("environment") or {}
        records = [Record.from_json(r) for r in report.get("results") or []]
        env_backends = list((self.env.get("backends") or {}).keys())
        seen = {r.backend for r in records}
        self.backends = env_backends + sorted(seen - set(env_backends))
        self.backend_index = {b: j for j, b in enumerate(self.backends)}
        case_ids = sorted({r.case for r in records}, key=lambda c: (family_of(c), c))
        self.cases = case_ids
        self.case_index = {c: i for i, c in enumerate(case_ids)}
        self.families = sorted({family_of(c) for c in case_ids})
        # One record per (case, backend); a later duplicate wins, as it would in a re-run.
        latest = {}
        for r in records:
            latest[(self.case_index[r.case], self.backend_index[r.backend])] = r
        self.records = list(latest.values())
        self.cell: dict[tuple[int, int], int] = {key: k for k, key in enumerate(latest)}
        self.by_subject = subject_families(self.records)   # their groups: one per subject, by name
        self.group_of = {self.case_index[r.case]: f"{family_of(r.case)}: {r.subject}" if family_of(r.case) in
                         self.by_subject else _group(r.case) for r in self.records}

    def payload(self) -> dict:
        messages: list[str] = []
        message_index: dict[str, int] = {}
        first_of: dict[int, Record] = {}
        for (c, _), k in sorted(self.cell.items()):
            first_of.setdefault(c, self.records[k])
        cases = []
        for i, case in enumerate(self.cases):
            first = first_of[i]
            cases.append({"id": case, "family": family_of(case), "params": first.params, "tags": first.tags})
        packed = []
        for r in self.records:
            c = self.case_index[r.case]
            message = r.message
            if len(message) > MAX_MESSAGE_CHARS:
                message = (message[:MAX_MESSAGE_CHARS] + f"\n… [{len(message) - MAX_MESSAGE_CHARS} more "
                           "characters cut here; the JSON report has the whole message]")
            if message not in message_index:
                message_index[message] = len(messages)
                messages.append(message)
            # Null values are left out (the page reads a missing key as null); times keep 0.1 ms.
            p = {key: value for key, value in r.to_json().items()
                 if key not in ("case", "backend", "message", "params", "tags") and value is not None}
            if isinstance(p.get("perf"), dict):   # the samples stay in the JSON report: the page shows summaries
                p["perf"] = {key: ({k: v for k, v in value.items() if k != "samples"} if isinstance(value, dict)
                                   else len(value) if key == "rounds" else value) for key, value in p["perf"].items()}
            if isinstance(p.get("phase_durations"), dict):
                p["phase_durations"] = {k: round(v, 4) if isinstance(v, float) else v
                                        for k, v in p["phase_durations"].items()}
            p["c"], p["b"], p["m"] = c, self.backend_index[r.backend], message_index[message]
            # Params and tags live with the case unless this record disagrees with the case's copy.
            if r.params != cases[c]["params"]:
                p["params"] = r.params
            if r.tags != cases[c]["tags"]:
                p["tags"] = r.tags
            p["repro"] = r.rerun
            if r.signature is not None and (r.backend, r.signature) in self.reductions:
                p["reduced"] = list(self.reductions[(r.backend, r.signature)])
            packed.append(p)
        return {"backends": self.backends, "families": self.families, "cases": cases,
                "messages": messages, "records": packed, "vocabulary": vocabulary()}


def vocabulary() -> dict:
    """What the page's script knows of outcomes and verdicts: harness.outcomes, as data."""
    return {"outcomes": {o.value: {"title": o.description, "failure": o.is_failure, "crash": o.is_crash}
                         for o in Outcome},
            "unexpected": sorted(v.value for v in Verdict if v.is_unexpected)}


def _is_unexpected(record: Record) -> bool:
    return record.verdict.is_unexpected


def _is_expected_failure(record: Record) -> bool:
    return record.verdict is Verdict.OK and record.outcome.is_failure and record.expected is not Expected.PASS


# ------------------------------------------------------------------ what the template shows (assets/report.html.j2)

def _escaped(value: Any) -> str:
    """A value as the page shows it (what autoescaping makes of it)."""
    return str(markupsafe.escape("" if value is None else value))


def _facts(env: dict) -> list[tuple[str, Any]]:
    facts = [(k, env.get(key)) for k, key in (("python", "python"), ("torch", "torch"), ("torch-mlir", "torch_mlir"),
                                             ("numpy", "numpy"), ("platform", "platform"))]
    facts = [(k, v) for k, v in facts if v]
    if "run_crash_set" in env:
        facts.append(("crash set", "run" if env.get("run_crash_set") else "not run"))
    return facts


def _badge(n_unexpected: int) -> dict:
    """The header's verdict on the run. Not "complete": on a failing run that reads as "passed"."""
    if n_unexpected:
        return {"cls": "bad", "text": f"{n_unexpected} unexpected"}
    return {"cls": "ok", "text": "all as expected"}


def _signatures(model: _Model) -> list[dict]:
    """The failures grouped by signature: unexpected ones first, then the most frequent. Each row
    has an example case (the first by id, an unexpected one if any) and its `#cell=` link."""
    groups: dict[str, list[Record]] = {}
    for r in model.records:
        if r.outcome.is_failure:
            # An old report has no signatures: its outcome and phase stand in.
            key = r.signature or f"{r.outcome.value} in {r.phase.value if r.phase else 'start-up'}"
            groups.setdefault(key, []).append(r)
    rows: list[dict[str, Any]] = []
    for key, mine in groups.items():
        unexpected = [r for r in mine if _is_unexpected(r)]
        example = min(unexpected or mine, key=lambda r: (model.case_index[r.case], model.backend_index[r.backend]))
        rows.append({
            "signature": key, "count": len(mine), "unexpected": len(unexpected),
            "outcomes": ", ".join(o.label for o in Outcome if any(r.outcome is o for r in mine)),
            "phases": ", ".join(p.value for p in Phase if any(r.phase is p for r in mine)),
            "backends": ", ".join(b for b in model.backends if any(r.backend == b for r in mine)),
            "example": example.case, "example_backend": example.backend,
            "href": "#cell=" + urllib.parse.quote(f"{example.backend}/{example.case}", safe="")})
    rows.sort(key=lambda row: (-row["unexpected"], -row["count"], row["signature"]))
    return rows


def _summary(model: _Model) -> list[dict]:
    rows = []
    env_backends = model.env.get("backends") or {}
    for j, backend in enumerate(model.backends):
        mine = [model.records[k] for (c, b), k in model.cell.items() if b == j]
        info = env_backends.get(backend) or {}
        versions = {**(info.get("versions") or {}), **(info.get("reported") or {})}
        bar = [{"cls": _outcome_class(o), "n": n, "title": o.description}
               for o in Outcome if (n := sum(r.outcome is o for r in mine))]
        if len(model.cases) > len(mine):
            bar.append({"cls": "o-missing", "n": len(model.cases) - len(mine), "title": "no result"})
        rows.append({
            "backend": backend, "config": info.get("config", ""),
            "versions": "  ".join(f"{k} {v}" for k, v in versions.items()), "total": len(mine),
            "passed": sum(r.outcome is Outcome.PASSED and not _is_unexpected(r) for r in mine),
            "xfail": sum(_is_expected_failure(r) for r in mine),
            "unexpected_failures": sum(r.verdict is Verdict.UNEXPECTED_FAILURE for r in mine),
            "unexpected_passes": sum(r.verdict is Verdict.UNEXPECTED_PASS for r in mine),
            "skipped": sum(r.verdict is Verdict.SKIPPED for r in mine),
            "seconds": sum(r.duration_s for r in mine), "bar": bar})
    return rows


def _outcomes(model: _Model) -> list[dict]:
    return [{"value": o.value, "cls": _outcome_class(o), "label": o.label, "title": o.description,
             "count": sum(r.outcome is o for r in model.records)} for o in Outcome]


def _families(model: _Model) -> list[dict]:
    """Per family: its totals per backend and its groups of cases (below), each group's rows of cells.
    A group of one case is its row alone, unless the family is grouped by subject (every op its row)."""
    families = []
    for family in model.families:
        members = [i for i, c in enumerate(model.cases) if family_of(c) == family]
        groups: dict[str, list[int]] = {}
        for i in members:
            groups.setdefault(model.group_of[i], []).append(i)
        if family in model.by_subject:
            groups = dict(sorted(groups.items()))
        collapsed = len(members) > COLLAPSE_GROUPS_OVER
        families.append({"name": family, "size": len(members), "totals": _totals(model, members), "groups": [
            {"key": key if len(cases) > 1 or family in model.by_subject else None, "rest": key[len(family):],
             "collapsed": collapsed, "totals": _totals(model, cases),
             "cases": [{"index": i, "rest": model.cases[i][len(family):],
                        "cells": [_cell(model, i, j) for j in range(len(model.backends))]} for i in cases]}
            for key, cases in groups.items()]})
    return families


# A family with more cases than this starts with its groups collapsed (a run of every sample of every op).
COLLAPSE_GROUPS_OVER = 500


def _group(case: str) -> str:
    """Cases are grouped by the id up to its last "/": one op, variant and dtype's samples,
    a convolution family's dimension. A group of one case is shown as its row alone."""
    return case.rsplit("/", 1)[0]


def _totals(model: _Model, members: list[int]) -> list[dict | None]:
    """Per backend, the members' passes, results and unexpected outcomes (None: no result)."""
    totals = []
    for j in range(len(model.backends)):
        mine = [model.records[model.cell[(i, j)]] for i in members if (i, j) in model.cell]
        totals.append({"passed": sum(r.outcome is Outcome.PASSED for r in mine),
                       "results": len(mine), "bad": sum(_is_unexpected(r) for r in mine)} if mine else None)
    return totals


def _cell(model: _Model, i: int, j: int) -> dict | None:
    k = model.cell.get((i, j))
    if k is None:
        return None
    record = model.records[k]
    outcome = record.outcome
    classes = [_outcome_class(outcome)]
    if _is_unexpected(record):
        classes.append("un")
    elif _is_expected_failure(record):
        classes.append("xf")
    phase = record.phase
    shown = phase.value if phase is not None and phase is not _PHASE_IN_LABEL.get(outcome) else None
    other = _phase_differs(record)
    if other:
        classes.append("pm")
    return {"classes": " ".join(classes), "k": k, "label": outcome.label, "phase": shown,
            "expected_phase": other}


def _phase_differs(record: Record) -> str | None:
    """The phase its expectation entry names, when the case failed in another one (an unexpected
    failure despite the entry); None otherwise. A report older than `expected_phase` says only
    that the phase differs: an expected failure that failed can only be unexpected that way."""
    if record.expected is Expected.PASS or not record.outcome.is_failure:
        return None
    if record.expected_phase is not None:
        return record.expected_phase.value if record.phase is not record.expected_phase else None
    return "another phase" if record.verdict is Verdict.UNEXPECTED_FAILURE else None


# The phase a cell's label already says ("compile"), or that is the only one its outcome is found
# in (a mismatch in compare): the cell shows another phase only.
_PHASE_IN_LABEL = {Outcome.COMPILE_ERROR: Phase.COMPILE, Outcome.MISMATCH: Phase.COMPARE,
                   Outcome.RUNTIME_ERROR: Phase.RUN}


def _json_for_script(data: Any) -> str:
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def _outcome_class(outcome: Outcome) -> str:
    return f"o-{outcome.value}"


def _created(report: dict) -> tuple[str, str]:
    created = report.get("created", "")
    try:
        moment = datetime.datetime.fromtimestamp(float(created), tz=datetime.timezone.utc)
    except (TypeError, ValueError, OverflowError, OSError):
        return "", "unknown"
    return moment.isoformat(timespec="seconds"), moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.views.html",
                                     description="Render a --report-json file as one self-contained HTML page.")
    parser.add_argument("report", type=Path, help="the JSON report")
    parser.add_argument("-o", "--output", type=Path, help="where to write the page (default: REPORT with .html)")
    args = parser.parse_args(argv)
    try:
        report = read_report(args.report)
    except HarnessInputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    out = args.output or args.report.with_suffix(".html")
    out.write_text(render_html(report), encoding="utf-8")
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
