"""A self-contained HTML view of a JSON report: a case x backend matrix with filters and details.

`render_html(report)` turns the dict that `--report-json` writes into one HTML page that needs no
network: the CSS and JS are inline, there are no fonts or images. The page is built in two layers:

* The server side (this module) renders the header, the per-backend summary, the legend and the
  matrix itself with every report value passed through `html.escape`, so the page is readable even
  with scripts disabled.
* The records travel as JSON in a `<script type="application/json">` block with `<`, `>` and `&`
  written as `\\u003c`, `\\u003e` and `\\u0026`, so no report text (compiler output such as
  `tensor<2x3xf32>`, or even `</script>`) can end the block. The inline script parses that block and
  builds the filters' effects and the details panel with `textContent` only, never `innerHTML`.

To stay small for large matrices, per-case values (params, tags) are stored once per case and
identical messages once in a string table; `decode_payload` rebuilds the full records.

Command line: `python -m harness.views.html report.json [-o report.html]`.
"""
from __future__ import annotations

import argparse
import datetime
import html
import json
import sys
from pathlib import Path
from typing import Any

from harness.outcomes import Expected, Outcome, Verdict
from harness.record import repro_command

# From the one vocabulary (harness.outcomes), in display order; the page's script gets the same.
OUTCOME_LABELS = {o.value: o.label for o in Outcome}
OUTCOME_TITLES = {o.value: o.title for o in Outcome}
UNEXPECTED = frozenset(v.value for v in Verdict if v.is_unexpected)
MAX_MESSAGE_CHARS = 100_000   # a message longer than this is cut in the page (the JSON keeps it whole)
DATA_ELEMENT_ID = "report-data"


def render_html(report: dict) -> str:
    """One self-contained HTML page showing `report` (the dict `--report-json` writes)."""
    model = _Model(report)
    title = "torch-backend-e2e report"
    parts = [
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n",
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n",
        f"<title>{_e(title)}{_e(' (partial)') if not model.complete else ''}</title>\n",
        f"<style>{_CSS}</style>\n</head>\n<body>\n",
        _header(model, title),
        _banner(model),
        "<main>\n",
        "<section class=\"cards\">", _summary(model), _legend(model), "</section>\n",
        _toolbar(model),
        _matrix(model),
        "</main>\n",
        _DETAILS_SHELL,
        f"<script type=\"application/json\" id=\"{DATA_ELEMENT_ID}\">{_json_for_script(model.payload())}</script>\n",
        f"<script>{_JS}</script>\n",
        "</body>\n</html>\n",
    ]
    return "".join(parts)


def write_html(path: Path | str, report: dict) -> None:
    Path(path).write_text(render_html(report), encoding="utf-8")


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
        for key in ("phase", "expectation_source", "signature", "artifacts"):
            record.setdefault(key, None)
        out.append(record)
    return out


# ---------------------------------------------------------------------------------------------------
# The model: backends, cases and records in display order


class _Model:
    def __init__(self, report: dict):
        self.report = report
        self.complete = bool(report.get("complete", True))
        self.env = report.get("environment") or {}
        records = [r for r in report.get("results") or [] if isinstance(r, dict)]
        env_backends = list((self.env.get("backends") or {}).keys())
        seen = {r.get("backend", "?") for r in records}
        self.backends = env_backends + sorted(seen - set(env_backends))
        self.backend_index = {b: j for j, b in enumerate(self.backends)}
        case_ids = sorted({r.get("case", "?") for r in records}, key=lambda c: (_family(c), c))
        self.cases = case_ids
        self.case_index = {c: i for i, c in enumerate(case_ids)}
        self.families = sorted({_family(c) for c in case_ids})
        # One record per (case, backend); a later duplicate wins, as it would in a re-run.
        latest = {}
        for r in records:
            latest[(self.case_index[r.get("case", "?")], self.backend_index[r.get("backend", "?")])] = r
        self.records = list(latest.values())
        self.cell: dict[tuple[int, int], int] = {key: k for k, key in enumerate(latest)}

    def payload(self) -> dict:
        messages: list[str] = []
        message_index: dict[str, int] = {}
        first_of: dict[int, dict] = {}
        for (c, _), k in sorted(self.cell.items()):
            first_of.setdefault(c, self.records[k])
        cases = []
        for i, case in enumerate(self.cases):
            first = first_of.get(i, {})
            cases.append({"id": case, "family": _family(case), "params": first.get("params", {}),
                          "tags": first.get("tags", [])})
        packed = []
        for r in self.records:
            c = self.case_index[r.get("case", "?")]
            message = r.get("message") or ""
            if len(message) > MAX_MESSAGE_CHARS:
                message = (message[:MAX_MESSAGE_CHARS] + f"\n… [{len(message) - MAX_MESSAGE_CHARS} more "
                           "characters cut here; the JSON report has the whole message]")
            if message not in message_index:
                message_index[message] = len(messages)
                messages.append(message)
            # Null values are left out (the page reads a missing key as null); times keep 0.1 ms.
            p = {key: value for key, value in r.items()
                 if key not in ("case", "backend", "message", "params", "tags") and value is not None}
            if isinstance(p.get("phase_durations"), dict):
                p["phase_durations"] = {k: round(v, 4) if isinstance(v, float) else v
                                        for k, v in p["phase_durations"].items()}
            p["c"], p["b"], p["m"] = c, self.backend_index[r.get("backend", "?")], message_index[message]
            # Params and tags live with the case unless this record disagrees with the case's copy.
            if r.get("params", {}) != cases[c]["params"]:
                p["params"] = r.get("params")
            if r.get("tags", []) != cases[c]["tags"]:
                p["tags"] = r.get("tags")
            p["repro"] = _repro(r)
            packed.append(p)
        return {"backends": self.backends, "families": self.families, "cases": cases,
                "messages": messages, "records": packed, "vocabulary": vocabulary()}


def vocabulary() -> dict:
    """What the page's script knows of outcomes and verdicts: harness.outcomes, as data."""
    return {"outcomes": {o.value: {"title": o.title, "failure": o.is_failure, "crash": o.is_crash} for o in Outcome},
            "unexpected": sorted(UNEXPECTED)}


def _family(case: str) -> str:
    return case.split("/", 1)[0]


def _repro(record: dict) -> str | None:
    try:
        return repro_command(record)
    except (KeyError, TypeError):   # a hand-made or damaged record: no command rather than no page
        return None


def _is_unexpected(record: dict) -> bool:
    return record.get("verdict") in UNEXPECTED


def _is_expected_failure(record: dict) -> bool:
    outcome = record.get("outcome")
    return (record.get("verdict") == Verdict.OK.value and outcome in OUTCOME_LABELS and Outcome(outcome).is_failure
            and record.get("expected") in (Expected.XFAIL.value, Expected.CRASH.value))


# ---------------------------------------------------------------------------------------------------
# Server-rendered parts. Every value from the report goes through _e.


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _json_for_script(data: Any) -> str:
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def _outcome_class(outcome: Any) -> str:
    return f"o-{outcome}" if outcome in OUTCOME_LABELS else "o-other"


def _created(report: dict) -> tuple[str, str]:
    created = report.get("created")
    try:
        moment = datetime.datetime.fromtimestamp(float(created), tz=datetime.timezone.utc)
    except (TypeError, ValueError, OverflowError, OSError):
        return "", "unknown"
    return moment.isoformat(timespec="seconds"), moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def _header(model: _Model, title: str) -> str:
    iso, shown = _created(model.report)
    env = model.env
    status = ("<span class=\"pill ok\">complete</span>" if model.complete
              else "<span class=\"pill warn\">partial run</span>")
    facts = [("python", env.get("python")), ("torch", env.get("torch")), ("torch-mlir", env.get("torch_mlir")),
             ("numpy", env.get("numpy")), ("platform", env.get("platform"))]
    chips = "".join(f"<span class=\"fact\"><span class=\"k\">{_e(k)}</span> {_e(v)}</span>"
                    for k, v in facts if v)
    if "run_crash_set" in env:
        chips += (f"<span class=\"fact\"><span class=\"k\">crash set</span> "
                  f"{'run' if env.get('run_crash_set') else 'not run'}</span>")
    n_records = len(model.records)
    when = f"<time datetime=\"{_e(iso)}\">{_e(shown)}</time>" if iso else _e(shown)
    return (f"<header class=\"top\"><div class=\"title\"><h1>{_e(title)}</h1>{status}"
            f"<span class=\"meta\">{when} · {len(model.cases)} cases × {len(model.backends)} backends · "
            f"{n_records} results · schema {_e(model.report.get('schema_version', '?'))}</span></div>"
            f"<div class=\"facts\">{chips}</div></header>\n")


def _banner(model: _Model) -> str:
    if model.complete:
        return ""
    return ("<div class=\"banner\" role=\"alert\"><strong>Partial run.</strong> This report is marked "
            "<code>complete: false</code>: the run was interrupted or is still going, so empty cells may "
            "be cases that never got to run and the counts below are not final.</div>\n")


def _summary(model: _Model) -> str:
    rows = []
    env_backends = model.env.get("backends") or {}
    for j, backend in enumerate(model.backends):
        mine = [model.records[k] for (c, b), k in model.cell.items() if b == j]
        total = len(mine)
        passed = sum(r.get("outcome") == Outcome.PASSED.value and not _is_unexpected(r) for r in mine)
        xfail = sum(_is_expected_failure(r) for r in mine)
        unexp_fail = sum(r.get("verdict") == Verdict.UNEXPECTED_FAILURE.value for r in mine)
        unexp_pass = sum(r.get("verdict") == Verdict.UNEXPECTED_PASS.value for r in mine)
        skipped = sum(r.get("verdict") == "skipped" for r in mine)
        seconds = sum(float(r.get("duration_s") or 0) for r in mine)
        info = env_backends.get(backend) or {}
        versions = {**(info.get("versions") or {}), **(info.get("reported") or {})}
        version_text = "  ".join(f"{k} {v}" for k, v in versions.items())
        bar = []
        for outcome in OUTCOME_LABELS:
            n = sum(r.get("outcome") == outcome for r in mine)
            if n:
                bar.append(f"<span class=\"{_outcome_class(outcome)}\" style=\"flex-grow:{n}\" "
                           f"title=\"{_e(OUTCOME_TITLES[outcome])}: {n}\"></span>")
        missing = len(model.cases) - total
        if missing > 0:
            bar.append(f"<span class=\"o-missing\" style=\"flex-grow:{missing}\" "
                       f"title=\"no result: {missing}\"></span>")

        def num(n: int, cls: str = "") -> str:
            if not n:
                return "<td class=\"n zero\">0</td>"
            if cls == "bad":
                return f"<td class=\"n\"><span class=\"badnum\">{n}</span></td>"
            return f"<td class=\"n{' ' + cls if cls else ''}\">{n}</td>"

        rows.append(f"<tr><th scope=\"row\" title=\"{_e(info.get('config', ''))}\">{_e(backend)}"
                    f"<span class=\"ver\">{_e(version_text)}</span></th>"
                    f"{num(total)}{num(passed, 'good')}{num(xfail, 'xf')}{num(unexp_fail, 'bad')}"
                    f"{num(unexp_pass, 'bad')}{num(skipped)}<td class=\"n t\">{seconds:.1f}&#8239;s</td>"
                    f"<td class=\"barcell\"><div class=\"bar\">{''.join(bar)}</div></td></tr>")
    head = ("<tr><th scope=\"col\">backend</th><th class=\"n\">results</th><th class=\"n\">passed</th>"
            "<th class=\"n\" title=\"failed as the expectation files say (xfail or crash set)\">"
            "expected<br>failures</th>"
            "<th class=\"n\">unexpected<br>failures</th><th class=\"n\">unexpected<br>passes</th>"
            "<th class=\"n\">not run</th><th class=\"n\">time</th><th>outcomes</th></tr>")
    return (f"<div class=\"card summary\"><h2>Per backend</h2><table class=\"sum\"><thead>{head}</thead>"
            f"<tbody>{''.join(rows)}</tbody></table></div>")


def _legend(model: _Model) -> str:
    items = "".join(f"<li><span class=\"sw {_outcome_class(o)}\">{_e(label)}</span>{_e(OUTCOME_TITLES[o])}</li>"
                    for o, label in OUTCOME_LABELS.items())
    return ("<div class=\"card legend\"><h2>Legend</h2><ul class=\"sw-list\">" + items + "</ul>"
            "<ul class=\"sw-list marks\">"
            "<li><span class=\"sw o-compile_error xf\">compile</span>expected failure (striped: xfail / crash set)</li>"
            "<li><span class=\"sw o-crashed un\">crash</span>unexpected failure (red frame, !)</li>"
            "<li><span class=\"sw o-passed un\">pass</span>unexpected pass (red frame, !)</li>"
            "<li><span class=\"sw o-missing\">·</span>no result for this backend</li></ul>"
            "<p class=\"hint\">The small word after a label is the phase the case stopped in. Click a cell "
            "for its details; the address bar then links to that cell.</p></div>")


def _toolbar(model: _Model) -> str:
    counts = {o: sum(r.get("outcome") == o for r in model.records) for o in OUTCOME_LABELS}
    fam_counts = {f: sum(_family(c) == f for c in model.cases) for f in model.families}
    families = "".join(f"<option value=\"{_e(f)}\">{_e(f)} ({fam_counts[f]})</option>" for f in model.families)
    outcomes = "".join(
        f"<label class=\"chip\"><input type=\"checkbox\" data-outcome=\"{_e(o)}\" checked>"
        f"<span class=\"dot {_outcome_class(o)}\"></span>{_e(OUTCOME_LABELS[o])}"
        f"<span class=\"cnt\">{counts[o]}</span></label>"
        for o in OUTCOME_LABELS if counts[o])
    backends = "".join(
        f"<label class=\"chip\"><input type=\"checkbox\" data-backend=\"{j}\" checked>{_e(b)}</label>"
        for j, b in enumerate(model.backends))
    n_unexpected = sum(_is_unexpected(r) for r in model.records)
    return ("<div class=\"toolbar\" id=\"toolbar\"><div class=\"row\">"
            "<input type=\"search\" id=\"f-text\" placeholder=\"Filter case ids (space = and)\" autocomplete=\"off\">"
            f"<select id=\"f-family\"><option value=\"\">All families ({len(model.cases)})</option>{families}</select>"
            f"<label class=\"chip toggle{' hot' if n_unexpected else ''}\">"
            "<input type=\"checkbox\" id=\"f-unexpected\">"
            f"only unexpected<span class=\"cnt\">{n_unexpected}</span></label>"
            "<button type=\"button\" id=\"f-reset\">Reset</button>"
            "<span class=\"count\" id=\"f-count\"></span></div>"
            f"<div class=\"row\"><span class=\"lbl\">Outcomes</span>{outcomes}</div>"
            f"<div class=\"row\"><span class=\"lbl\">Backends</span>{backends}</div></div>\n")


def _cell(record: dict, k: int) -> str:
    outcome = record.get("outcome")
    classes = [_outcome_class(outcome)]
    if _is_unexpected(record):
        classes.append("un")
    elif _is_expected_failure(record):
        classes.append("xf")
    label = OUTCOME_LABELS.get(outcome, str(outcome))
    phase = record.get("phase")
    # The phase, unless the label already says it (a mismatch is always found in compare).
    redundant = (phase == label or (outcome == Outcome.MISMATCH.value and phase == "compare")
                 or (outcome == Outcome.RUNTIME_ERROR.value and phase == "run"))
    sub = f"<small>{_e(phase)}</small>" if phase and not redundant else ""
    return f"<td class=\"{' '.join(classes)}\" data-r=\"{k}\">{_e(label)}{sub}</td>"


def _matrix(model: _Model) -> str:
    head = ["<thead><tr><th class=\"case sortable\" data-sort=\"case\" scope=\"col\">"
            "case <span class=\"arrow\"></span></th>"]
    for j, b in enumerate(model.backends):
        head.append(f"<th class=\"be sortable\" data-sort=\"{j}\" scope=\"col\" "
                    f"title=\"sort by the outcome on {_e(b)}\">{_e(b)} <span class=\"arrow\"></span></th>")
    head.append("</tr></thead>")
    body = ["<tbody>"]
    for family in model.families:
        members = [i for i, c in enumerate(model.cases) if _family(c) == family]
        fam_cells = []
        for j in range(len(model.backends)):
            mine = [model.records[model.cell[(i, j)]] for i in members if (i, j) in model.cell]
            passed = sum(r.get("outcome") == Outcome.PASSED.value for r in mine)
            bad = sum(_is_unexpected(r) for r in mine)
            flag = f" <b class=\"bad\">{bad}!</b>" if bad else ""
            fam_cells.append(f"<td>{passed}/{len(mine)}{flag}</td>" if mine else "<td></td>")
        body.append(f"<tr class=\"fam\" data-family=\"{_e(family)}\"><th scope=\"rowgroup\">"
                    f"<span class=\"tw\"></span>{_e(family)} <span class=\"cnt\">{len(members)} "
                    f"case{'s' if len(members) != 1 else ''}</span></th>"
                    f"{''.join(fam_cells)}</tr>")
        for i in members:
            case = model.cases[i]
            rest = case[len(family):]
            cells = []
            for j in range(len(model.backends)):
                k = model.cell.get((i, j))
                cells.append(_cell(model.records[k], k) if k is not None else "<td class=\"o-missing\"></td>")
            body.append(f"<tr data-c=\"{i}\"><th scope=\"row\"><span class=\"fp\">{_e(family)}</span>"
                        f"{_e(rest)}</th>{''.join(cells)}</tr>")
    body.append("</tbody>")
    empty = "" if model.cases else "<p class=\"empty\">This report has no results.</p>"
    return (f"<div class=\"matrix-wrap\"><table id=\"matrix\" class=\"matrix\">{''.join(head)}{''.join(body)}</table>"
            f"{empty}<p class=\"empty\" id=\"f-none\" hidden>No case matches the filters.</p></div>\n")


_DETAILS_SHELL = """<aside id="details" class="details" hidden aria-label="result details">
<div class="d-head"><div class="d-title" id="d-title"></div>
<button type="button" class="close" id="d-close" title="Close (Esc)">&times;</button></div>
<div class="d-body" id="d-body"></div>
</aside>
<noscript><p class="noscript">Scripts are off: the matrix shows, but the filters and the details panel
need JavaScript.</p></noscript>
"""

_CSS = r"""
:root{--bg:#f5f6f8;--card:#fff;--text:#1f2328;--muted:#5f6b7a;--faint:#8b949e;--line:#d8dee4;--accent:#0969da;
--bad:#cf222e;--warnbg:#fff8c5;--warnline:#d4a72c;
--passed:#d7f2de;--passed-t:#0f5323;--passed-s:#2da44e;
--mismatch:#ece1ff;--mismatch-t:#4c2589;--mismatch-s:#8250df;
--compile_error:#ffebc7;--compile_error-t:#6b4200;--compile_error-s:#d99a00;
--runtime_error:#ffdfcf;--runtime_error-t:#7f2d0b;--runtime_error-s:#e8692a;
--crashed:#ffd6da;--crashed-t:#82071e;--crashed-s:#cf222e;
--timed_out:#dce6f7;--timed_out-t:#1b3a73;--timed_out-s:#4a78c8;
--not_run:#eceff2;--not_run-t:#57606a;--not_run-s:#afb8c1;
--sans:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,"Noto Sans","Liberation Sans",sans-serif;
--mono:ui-monospace,SFMono-Regular,"SF Mono",Menlo,Consolas,"Liberation Mono","DejaVu Sans Mono",monospace}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;background:var(--bg);color:var(--text);font:13px/1.45 var(--sans)}
code,pre,.mono{font-family:var(--mono);font-size:12px}
h1{font-size:17px;font-weight:650;margin:0;letter-spacing:-.01em}
h2{font-size:11px;font-weight:650;text-transform:uppercase;letter-spacing:.06em;color:var(--muted);margin:0 0 8px}
.top{background:#1f2933;color:#e6edf3;padding:12px 20px 10px}
.top .title{display:flex;align-items:center;gap:12px;flex-wrap:wrap}
.top .meta{color:#9fb0c0;font-size:12px}
.facts{display:flex;flex-wrap:wrap;gap:6px;margin-top:8px}
.fact{background:#2c3a47;border-radius:4px;padding:1px 8px;font-size:12px;font-family:var(--mono)}
.fact .k{color:#9fb0c0;font-family:var(--sans)}
.pill{border-radius:999px;padding:1px 10px;font-size:11px;font-weight:650;text-transform:uppercase;letter-spacing:.05em}
.pill.ok{background:#1a7f37;color:#fff}.pill.warn{background:#d4a72c;color:#1f2328}
.banner{background:var(--warnbg);border-bottom:1px solid var(--warnline);padding:9px 20px;color:#4d3800}
.banner code{background:rgba(0,0,0,.06);padding:0 4px;border-radius:3px}
main{padding:14px 20px 40px}
.cards{display:flex;gap:14px;flex-wrap:wrap;align-items:flex-start;margin-bottom:14px}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:12px 14px}
.card.summary{flex:1 1 720px;overflow-x:auto}.card.legend{flex:0 1 300px}
table.sum{border-collapse:collapse;width:100%}
table.sum th,table.sum td{padding:4px 8px;border-bottom:1px solid #eef1f4;text-align:left;vertical-align:middle}
table.sum thead th{font-size:11px;color:var(--muted);font-weight:600;line-height:1.2;border-bottom:1px solid var(--line)}
table.sum tbody tr:last-child>*{border-bottom:0}
table.sum tbody th{font-weight:600;min-width:170px;max-width:300px}
.ver{display:block;font-weight:400;font-size:11px;color:var(--faint);font-family:var(--mono)}
.n{text-align:right!important;font-variant-numeric:tabular-nums;white-space:nowrap}
td.zero{color:#c4cbd3}td.good{color:var(--passed-t)}td.xf{color:var(--compile_error-t)}
.badnum{display:inline-block;min-width:22px;text-align:center;background:var(--bad);color:#fff;font-weight:700;border-radius:999px;padding:0 7px}
td.t{color:var(--muted)}
.barcell{width:24%;min-width:140px}
.bar{display:flex;height:10px;border-radius:5px;overflow:hidden;background:#eef1f4}
.bar>span{display:block;min-width:2px}
.bar>.o-passed{background:var(--passed-s)}.bar>.o-mismatch{background:var(--mismatch-s)}
.bar>.o-compile_error{background:var(--compile_error-s)}.bar>.o-runtime_error{background:var(--runtime_error-s)}
.bar>.o-crashed{background:var(--crashed-s)}.bar>.o-timed_out{background:var(--timed_out-s)}
.bar>.o-not_run{background:var(--not_run-s)}.bar>.o-missing{background:repeating-linear-gradient(135deg,#dfe3e8 0 3px,#f3f5f7 3px 6px)}
.sw-list{list-style:none;margin:0;padding:0;display:grid;grid-template-columns:1fr;gap:4px}
.sw-list.marks{grid-template-columns:1fr;margin-top:10px;padding-top:10px;border-top:1px solid #eef1f4}
.sw-list li{display:flex;align-items:center;gap:8px;color:var(--muted);font-size:12px}
.sw{display:inline-block;min-width:62px;text-align:center;border-radius:4px;padding:1px 6px;font-size:11.5px;font-weight:600;position:relative}
.hint{color:var(--faint);font-size:11.5px;margin:10px 0 0}
.toolbar{position:sticky;top:0;z-index:5;background:rgba(245,246,248,.96);backdrop-filter:blur(4px);
border:1px solid var(--line);border-radius:8px;padding:8px 10px;margin-bottom:10px;display:flex;flex-direction:column;gap:6px}
.toolbar .row{display:flex;flex-wrap:wrap;align-items:center;gap:6px}
.toolbar .lbl{font-size:11px;font-weight:650;text-transform:uppercase;letter-spacing:.06em;color:var(--muted);width:74px}
.toolbar input[type=search]{font:inherit;padding:4px 9px;border:1px solid var(--line);border-radius:6px;width:300px;background:#fff}
.toolbar select,.toolbar button{font:inherit;padding:3px 8px;border:1px solid var(--line);border-radius:6px;background:#fff;color:var(--text)}
.toolbar button{cursor:pointer}.toolbar button:hover{background:#f0f3f6}
.toolbar input:focus,.toolbar select:focus{outline:2px solid rgba(9,105,218,.35);border-color:var(--accent)}
.chip{display:inline-flex;align-items:center;gap:5px;border:1px solid var(--line);background:#fff;border-radius:999px;
padding:1px 9px 1px 6px;font-size:12px;cursor:pointer;user-select:none}
.chip input{margin:0;accent-color:var(--accent)}
.chip:has(input:not(:checked)){opacity:.55;background:transparent}
.chip.toggle:has(input:not(:checked)){opacity:1;background:#fff}
.chip.toggle.hot:has(input:checked){border-color:var(--bad);box-shadow:0 0 0 1px var(--bad) inset}
.chip .cnt,.fam .cnt{color:var(--faint);font-variant-numeric:tabular-nums;font-size:11px}
.chip.hot .cnt{color:var(--bad);font-weight:700}
.dot{width:10px;height:10px;border-radius:3px;display:inline-block;border:1px solid rgba(0,0,0,.12)}
.count{margin-left:auto;color:var(--muted);font-size:12px;font-variant-numeric:tabular-nums}
.matrix-wrap{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:4px 6px 8px}
table.matrix{border-collapse:separate;border-spacing:2px;font-size:12px}
.matrix thead th{position:sticky;top:var(--toolbar-h,0px);z-index:3;background:var(--card);font-weight:600;font-size:11.5px;
padding:6px 4px 5px;text-align:center;vertical-align:bottom;border-bottom:1px solid var(--line);white-space:normal;line-height:1.2}
.matrix thead th.be{min-width:86px;max-width:120px;overflow-wrap:anywhere}
.matrix thead th.case{text-align:left;padding-left:6px}
.sortable{cursor:pointer}.sortable:hover{color:var(--accent)}
.arrow{color:var(--accent);font-size:10px}
.matrix tbody th{text-align:left;font-weight:500;padding:2px 10px 2px 6px;white-space:nowrap;font-family:var(--mono);font-size:12px}
.matrix tbody th .fp{color:var(--faint)}
.matrix tbody tr[data-c]:hover th{background:#eef4ff;border-radius:4px}
.matrix td{text-align:center;padding:2px 6px;border-radius:4px;white-space:nowrap;cursor:pointer;position:relative;font-weight:550;line-height:18px}
.matrix td small{font-weight:400;opacity:.75;margin-left:4px;font-size:10.5px}
.matrix tr[data-c] td:hover{filter:brightness(.94);box-shadow:0 0 0 1px rgba(0,0,0,.25) inset}
.matrix tr.fam>*{background:#f0f2f5;font-size:11.5px;color:var(--muted);font-family:var(--sans)}
.matrix tr.fam th{font-weight:650;color:var(--text);cursor:pointer;padding:5px 6px;border-radius:4px 0 0 4px}
.matrix tr.fam td{cursor:default;font-weight:500;font-variant-numeric:tabular-nums}
.matrix tr.fam td:last-child{border-radius:0 4px 4px 0}
.fam .bad{color:var(--bad)}
.tw{display:inline-block;width:12px;color:var(--faint)}.tw::before{content:"\25BE"}
tr.fam.collapsed .tw::before{content:"\25B8"}
.o-passed{background:var(--passed);color:var(--passed-t)}
.o-mismatch{background:var(--mismatch);color:var(--mismatch-t)}
.o-compile_error{background:var(--compile_error);color:var(--compile_error-t)}
.o-runtime_error{background:var(--runtime_error);color:var(--runtime_error-t)}
.o-crashed{background:var(--crashed);color:var(--crashed-t)}
.o-timed_out{background:var(--timed_out);color:var(--timed_out-t)}
.o-not_run{background:var(--not_run);color:var(--not_run-t)}
.o-other{background:#e6e1dc;color:#4a4036}
.o-missing{background:repeating-linear-gradient(135deg,#f1f3f5 0 4px,#fafbfc 4px 8px);color:var(--faint)}
.matrix td.o-missing{cursor:default}
.dot.o-passed{background:var(--passed-s)}.dot.o-mismatch{background:var(--mismatch-s)}.dot.o-compile_error{background:var(--compile_error-s)}
.dot.o-runtime_error{background:var(--runtime_error-s)}.dot.o-crashed{background:var(--crashed-s)}.dot.o-timed_out{background:var(--timed_out-s)}
.dot.o-not_run{background:var(--not_run-s)}
.xf{background-image:repeating-linear-gradient(135deg,rgba(255,255,255,.7) 0 3px,rgba(255,255,255,0) 3px 7px);font-weight:500!important}
.un{box-shadow:0 0 0 2px var(--bad) inset!important;font-weight:750!important}
.un::before{content:"!";position:absolute;top:-5px;right:-4px;width:13px;height:13px;line-height:13px;border-radius:50%;
background:var(--bad);color:#fff;font-size:9.5px;font-weight:800;text-align:center;z-index:1;font-family:var(--sans)}
.matrix td.dim{opacity:.22}
.matrix td.sel{outline:2px solid var(--accent);outline-offset:1px;z-index:2}
.empty{color:var(--muted);padding:20px;text-align:center}
.noscript{margin:0 20px 20px;color:var(--muted)}
.details{position:fixed;top:0;right:0;bottom:0;width:min(580px,100vw);background:#fff;border-left:1px solid var(--line);
box-shadow:-10px 0 30px rgba(31,35,40,.14);z-index:20;display:flex;flex-direction:column}
.details[hidden]{display:none}
.d-head{display:flex;align-items:flex-start;gap:10px;padding:14px 16px 10px;border-bottom:1px solid var(--line);background:#fafbfc}
.d-title{flex:1;min-width:0}
.d-title .case{font-family:var(--mono);font-size:13.5px;font-weight:650;overflow-wrap:anywhere}
.d-title .sub{color:var(--muted);font-size:12px;margin-top:2px}
.close{border:0;background:transparent;font-size:22px;line-height:1;cursor:pointer;color:var(--muted);padding:0 4px}
.close:hover{color:var(--text)}
.d-body{overflow:auto;padding:12px 16px 30px}
.badges{display:flex;flex-wrap:wrap;gap:6px;margin-bottom:12px}
.badge{border-radius:4px;padding:2px 8px;font-size:12px;font-weight:600;position:relative}
.badge .k{font-weight:400;opacity:.75;margin-right:4px}
.badge.v-ok{background:#dafbe1;color:#116329}.badge.v-bad{background:var(--bad);color:#fff}
.badge.v-skipped,.badge.plain{background:#eef1f4;color:#424a53}
.others{display:flex;flex-wrap:wrap;gap:4px;margin:0 0 14px}
.others button{font:inherit;font-size:11px;border:0;border-radius:4px;padding:2px 7px;cursor:pointer;position:relative}
.others button.cur{outline:2px solid var(--accent);outline-offset:1px}
.others button.o-missing{cursor:default}
.details h3{font-size:11px;text-transform:uppercase;letter-spacing:.06em;color:var(--muted);margin:16px 0 6px;display:flex;align-items:center;gap:8px}
.details h3 button{font:inherit;font-size:10.5px;text-transform:none;letter-spacing:0;border:1px solid var(--line);background:#fff;border-radius:4px;padding:0 6px;cursor:pointer;color:var(--muted)}
.kv{display:grid;grid-template-columns:140px 1fr;gap:3px 12px;margin:0}
.kv dt{color:var(--muted)}.kv dd{margin:0;overflow-wrap:anywhere;font-family:var(--mono);font-size:12px}
.kv dd.none{color:#c4cbd3;font-family:var(--sans)}
pre.msg,pre.cmd{margin:0;background:#f6f8fa;border:1px solid var(--line);border-radius:6px;padding:8px 10px;overflow:auto;max-height:42vh;white-space:pre;line-height:1.45}
pre.msg.wrap{white-space:pre-wrap;overflow-wrap:anywhere}
pre.cmd{background:#1f2933;color:#e6edf3;border-color:#1f2933;white-space:pre-wrap;overflow-wrap:anywhere;max-height:none}
table.kvt{border-collapse:collapse;width:100%;font-size:12px}
table.kvt td{border-bottom:1px solid #eef1f4;padding:3px 6px;vertical-align:top}
table.kvt td:first-child{color:var(--muted);width:38%;font-family:var(--sans)}
table.kvt td:last-child{font-family:var(--mono);overflow-wrap:anywhere}
.pbar{display:inline-block;height:8px;background:var(--accent);opacity:.55;border-radius:2px;margin-right:6px;vertical-align:middle}
.muted{color:var(--faint)}
@media (max-width:900px){.card.legend{flex-basis:100%}.toolbar input[type=search]{width:100%}}
"""

_JS = r"""
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var recs = data.records, cases = data.cases, backends = data.backends, messages = data.messages;
  var table = document.getElementById("matrix");
  var tbody = table.tBodies[0];
  var details = document.getElementById("details");
  var LABEL = {};  // outcome -> title, from harness.outcomes (the payload's vocabulary)
  Object.keys(data.vocabulary.outcomes).forEach(function (o) { LABEL[o] = data.vocabulary.outcomes[o].title; });
  var KNOWN = Object.keys(LABEL);
  var UNEXPECTED = data.vocabulary.unexpected;
  function unexpected(r) { return UNEXPECTED.indexOf(r.verdict) >= 0; }
  function caseOf(r) { return cases[r.c]; }
  function full(r, key) { return r[key] !== undefined ? r[key] : caseOf(r)[key]; }
  function outcomeClass(o) { return KNOWN.indexOf(o) >= 0 ? "o-" + o : "o-other"; }

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  // -- index the server-rendered matrix --------------------------------------------------------
  var byKey = new Map();
  recs.forEach(function (r, i) { byKey.set(r.b + "\u0000" + r.c, i); });
  var rows = [], famRows = new Map();
  Array.prototype.forEach.call(tbody.rows, function (tr) {
    if (tr.classList.contains("fam")) { famRows.set(tr.getAttribute("data-family"), tr); return; }
    var c = Number(tr.getAttribute("data-c"));
    var cells = [];
    for (var j = 1; j < tr.cells.length; j++) {
      var td = tr.cells[j], k = td.getAttribute("data-r");
      cells.push({td: td, col: j - 1, r: k === null ? -1 : Number(k)});
    }
    rows.push({tr: tr, c: c, id: cases[c].id, lower: cases[c].id.toLowerCase(), family: cases[c].family, cells: cells});
  });

  // -- filters -------------------------------------------------------------------------------------
  var fText = document.getElementById("f-text"), fFamily = document.getElementById("f-family");
  var fUnexpected = document.getElementById("f-unexpected"), fCount = document.getElementById("f-count");
  var fNone = document.getElementById("f-none"), toolbar = document.getElementById("toolbar");
  var outcomeBoxes = Array.prototype.slice.call(document.querySelectorAll("input[data-outcome]"));
  var backendBoxes = Array.prototype.slice.call(document.querySelectorAll("input[data-backend]"));
  var collapsed = new Set();
  var colStyle = document.createElement("style");
  document.head.appendChild(colStyle);

  function apply() {
    var terms = fText.value.toLowerCase().split(/\s+/).filter(Boolean);
    var family = fFamily.value, onlyUnexp = fUnexpected.checked;
    var allowed = new Set(outcomeBoxes.filter(function (b) { return b.checked; }).map(function (b) { return b.getAttribute("data-outcome"); }));
    var outcomeFilter = allowed.size < outcomeBoxes.length;
    var hidden = new Set(backendBoxes.filter(function (b) { return !b.checked; }).map(function (b) { return Number(b.getAttribute("data-backend")); }));
    var css = "";
    hidden.forEach(function (j) { css += "#matrix tr>:nth-child(" + (j + 2) + "){display:none}"; });
    colStyle.textContent = css;
    var filtering = outcomeFilter || onlyUnexp, shown = 0, famShown = new Map();
    rows.forEach(function (row) {
      var ok = (!family || row.family === family) && terms.every(function (t) { return row.lower.indexOf(t) >= 0; });
      var any = false;
      row.cells.forEach(function (cell) {
        if (cell.r < 0) return;
        var r = recs[cell.r];
        var match = (!outcomeFilter || allowed.has(r.outcome)) && (!onlyUnexp || unexpected(r));
        cell.td.classList.toggle("dim", filtering && !match);
        if (match && !hidden.has(cell.col)) any = true;
      });
      ok = ok && (!filtering || any);
      if (ok) { shown++; famShown.set(row.family, (famShown.get(row.family) || 0) + 1); }
      row.tr.hidden = !ok || collapsed.has(row.family);
    });
    famRows.forEach(function (tr, fam) {
      tr.hidden = !famShown.get(fam);
      tr.classList.toggle("collapsed", collapsed.has(fam));
    });
    fCount.textContent = "Showing " + shown + " of " + rows.length + " cases";
    fNone.hidden = shown > 0 || rows.length === 0;
  }
  fText.addEventListener("input", apply);
  [fFamily, fUnexpected].concat(outcomeBoxes, backendBoxes).forEach(function (b) { b.addEventListener("change", apply); });
  document.getElementById("f-reset").addEventListener("click", function () {
    fText.value = ""; fFamily.value = ""; fUnexpected.checked = false; collapsed.clear();
    outcomeBoxes.concat(backendBoxes).forEach(function (b) { b.checked = true; });
    sortBy("case", 1);
    apply();
  });
  famRows.forEach(function (tr, fam) {
    tr.cells[0].addEventListener("click", function () {
      if (collapsed.has(fam)) collapsed.delete(fam); else collapsed.add(fam);
      apply();
    });
  });

  // -- sorting: by case id, or by the outcome on one backend; rows stay grouped by family ----------
  var SEVERITY = {crashed: 0, timed_out: 1, runtime_error: 2, mismatch: 3, compile_error: 4, not_run: 6, passed: 7};
  function rank(row, col) {
    var cell = row.cells[col];
    if (!cell || cell.r < 0) return 100;
    var r = recs[cell.r];
    var s = SEVERITY[r.outcome] !== undefined ? SEVERITY[r.outcome] : 5;
    return (unexpected(r) ? 0 : 10) + s;
  }
  var sortState = {key: "case", dir: 1};
  function sortBy(key, dir) {
    sortState = {key: key, dir: dir};
    var sorted = rows.slice().sort(function (a, b) {
      var d = 0;
      if (key !== "case") d = rank(a, Number(key)) - rank(b, Number(key));
      if (d === 0) d = a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
      return key === "case" ? d * dir : (d === 0 ? 0 : d * dir);
    });
    var fams = Array.from(famRows.keys()).sort();
    if (key === "case" && dir < 0) fams.reverse();
    fams.forEach(function (fam) {
      tbody.appendChild(famRows.get(fam));
      sorted.forEach(function (row) { if (row.family === fam) tbody.appendChild(row.tr); });
    });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
      var mine = th.getAttribute("data-sort") === String(key);
      th.querySelector(".arrow").textContent = mine ? (dir > 0 ? "\u25B2" : "\u25BC") : "";
      th.setAttribute("aria-sort", mine ? (dir > 0 ? "ascending" : "descending") : "none");
    });
  }
  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
    th.addEventListener("click", function () {
      var key = th.getAttribute("data-sort");
      sortBy(key, sortState.key === key ? -sortState.dir : 1);
    });
  });

  // -- details panel ------------------------------------------------------------------------------
  var dTitle = document.getElementById("d-title"), dBody = document.getElementById("d-body");
  var selected = null;

  function section(title, extra) {
    var h = el("h3", null, title);
    if (extra) h.appendChild(extra);
    dBody.appendChild(h);
  }
  function valueText(v) {
    if (v === null || v === undefined) return "";
    return typeof v === "string" ? v : JSON.stringify(v);
  }
  function kvTable(obj, fmt) {
    var keys = obj && typeof obj === "object" ? Object.keys(obj) : [];
    if (!keys.length) { dBody.appendChild(el("div", "muted", "none")); return; }
    var t = el("table", "kvt");
    keys.forEach(function (k) {
      var tr = t.insertRow();
      tr.appendChild(el("td", null, k));
      var td = el("td");
      if (fmt) fmt(td, obj[k]); else td.textContent = valueText(obj[k]);
      tr.appendChild(td);
    });
    dBody.appendChild(t);
  }
  function badge(cls, key, value) {
    var b = el("span", "badge " + cls);
    b.appendChild(el("span", "k", key));
    b.appendChild(document.createTextNode(value === null || value === undefined ? "\u2014" : String(value)));
    return b;
  }

  function open(i, scroll) {
    var r = recs[i];
    if (!r) return;
    var c = caseOf(r), backend = backends[r.b];
    if (selected) selected.classList.remove("sel");
    selected = table.querySelector('td[data-r="' + i + '"]');
    if (selected) {
      selected.classList.add("sel");
      var cell = selected;
      // Scroll after the first paint (and only when needed): an early jump can leave a blank frame.
      if (scroll) requestAnimationFrame(function () {
        var box = cell.getBoundingClientRect();
        if (box.top < toolbar.offsetHeight + 40 || box.bottom > window.innerHeight) cell.scrollIntoView({block: "center", inline: "nearest"});
      });
    }
    dTitle.textContent = "";
    dTitle.appendChild(el("div", "case", c.id));
    dTitle.appendChild(el("div", "sub", "on " + backend + "  \u00B7  " + (r.nodeid || "")));
    dBody.textContent = "";

    var badges = el("div", "badges");
    var ob = badge(outcomeClass(r.outcome) + (unexpected(r) ? " un" : ""), "outcome", LABEL[r.outcome] || r.outcome);
    badges.appendChild(ob);
    var vcls = unexpected(r) ? "v-bad" : r.verdict === "ok" ? "v-ok" : "v-skipped";
    badges.appendChild(badge(vcls, "verdict", r.verdict ? String(r.verdict).replace(/_/g, " ") : null));
    badges.appendChild(badge("plain", "expected", r.expected));
    if (r.phase) badges.appendChild(badge("plain", "phase", r.phase));
    dBody.appendChild(badges);

    var others = el("div", "others");
    backends.forEach(function (name, j) {
      var k = byKey.get(j + "\u0000" + r.c);
      var other = k === undefined ? null : recs[k];
      var b = el("button", other ? outcomeClass(other.outcome) + (unexpected(other) ? " un" : "") +
                 (j === r.b ? " cur" : "") : "o-missing", name);
      b.type = "button";
      b.title = other ? name + ": " + (LABEL[other.outcome] || other.outcome) + " (" + other.verdict + ")" : name + ": no result";
      if (other) b.addEventListener("click", function () { go(k); });
      others.appendChild(b);
    });
    section("This case on every backend");
    dBody.appendChild(others);

    section("Result");
    var dl = el("dl", "kv");
    function row(k, v) {
      dl.appendChild(el("dt", null, k));
      var empty = v === null || v === undefined || v === "";
      dl.appendChild(el("dd", empty ? "none" : null, empty ? "\u2014" : v));
    }
    row("case", c.id);
    row("backend", backend);
    row("outcome", r.outcome);
    row("verdict", r.verdict);
    row("expected", r.expected);
    row("phase", r.phase);
    row("signature", r.signature);
    row("duration_s", typeof r.duration_s === "number" ? r.duration_s.toFixed(3) + " s" : r.duration_s);
    row("expectation_source", r.expectation_source);
    row("artifacts", r.artifacts);
    var tags = full(r, "tags");
    row("tags", tags && tags.length ? tags.join(", ") : null);
    dBody.appendChild(dl);

    var msg = messages[r.m] || "";
    var wrapBtn = el("button", null, "no wrap");
    wrapBtn.type = "button";
    section("Message", msg ? wrapBtn : null);
    if (msg) {
      var pre = el("pre", "msg wrap", msg);
      wrapBtn.addEventListener("click", function () {
        wrapBtn.textContent = pre.classList.toggle("wrap") ? "no wrap" : "wrap lines";
      });
      dBody.appendChild(pre);
    } else {
      dBody.appendChild(el("div", "muted", "no message"));
    }

    var copyBtn = el("button", null, "copy");
    copyBtn.type = "button";
    section("Reproduce", r.repro ? copyBtn : null);
    if (r.repro) {
      var cmd = el("pre", "cmd", r.repro);
      copyBtn.addEventListener("click", function () {
        var done = function () { copyBtn.textContent = "copied"; };
        var range = document.createRange();
        range.selectNodeContents(cmd);
        var sel = window.getSelection(); sel.removeAllRanges(); sel.addRange(range);
        if (navigator.clipboard && navigator.clipboard.writeText) {
          navigator.clipboard.writeText(r.repro).then(done, function () { copyBtn.textContent = "selected: press Ctrl+C"; });
        } else {
          try { document.execCommand("copy"); done(); } catch (e) { copyBtn.textContent = "selected: press Ctrl+C"; }
        }
      });
      dBody.appendChild(cmd);
    } else {
      dBody.appendChild(el("div", "muted", "not available for this record"));
    }

    section("Params");
    kvTable(full(r, "params"));
    section("Phase durations");
    var pd = r.phase_durations || {}, most = 0;
    Object.keys(pd).forEach(function (k) { if (typeof pd[k] === "number" && pd[k] > most) most = pd[k]; });
    kvTable(pd, function (td, v) {
      if (typeof v === "number") {
        var bar = el("span", "pbar");
        bar.style.width = Math.max(2, Math.round(160 * v / (most || 1))) + "px";
        td.appendChild(bar);
        td.appendChild(document.createTextNode(v.toFixed(4) + " s"));
      } else td.textContent = valueText(v);
    });
    section("Notes");
    kvTable(r.notes);

    details.hidden = false;
    dBody.scrollTop = 0;
  }

  function close() {
    details.hidden = true;
    if (selected) selected.classList.remove("sel");
    selected = null;
    if (location.hash) {
      try { history.replaceState(null, "", location.pathname + location.search); }
      catch (e) { location.hash = ""; }
    }
  }
  function go(i) {
    var r = recs[i];
    var hash = "#cell=" + encodeURIComponent(backends[r.b] + "/" + cases[r.c].id);
    if (location.hash === hash) open(i, true); else location.hash = hash;
  }
  function fromHash() {
    var m = /^#cell=(.*)$/.exec(location.hash);
    if (!m) { if (!details.hidden) close(); return; }
    var key;
    try { key = decodeURIComponent(m[1]); } catch (e) { return; }
    // Backend names have no "/", case ids do: the backend is everything before the first "/".
    var cut = key.indexOf("/"), b = backends.indexOf(key.slice(0, cut));
    var c = -1;
    for (var x = 0; x < cases.length; x++) if (cases[x].id === key.slice(cut + 1)) { c = x; break; }
    var i = byKey.get(b + "\u0000" + c);
    if (cut > 0 && i !== undefined) open(i, true);
  }

  tbody.addEventListener("click", function (ev) {
    var td = ev.target.closest("td[data-r]");
    if (td) go(Number(td.getAttribute("data-r")));
  });
  tbody.addEventListener("mouseover", function (ev) {
    var td = ev.target.closest("td[data-r]");
    if (!td || td.title) return;
    var r = recs[Number(td.getAttribute("data-r"))];
    var first = (messages[r.m] || "").split("\n")[0].slice(0, 200);
    td.title = backends[r.b] + ": " + (LABEL[r.outcome] || r.outcome) + (r.phase ? " in " + r.phase : "") +
               " \u00B7 " + r.verdict + (first ? "\n" + first : "");
  });
  document.getElementById("d-close").addEventListener("click", close);
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "Escape" && !details.hidden) close();
  });
  window.addEventListener("hashchange", fromHash);

  // Keep the matrix header just under the sticky toolbar.
  function measure() { document.documentElement.style.setProperty("--toolbar-h", (toolbar.offsetHeight - 1) + "px"); }
  window.addEventListener("resize", measure);
  measure();

  sortBy("case", 1);
  apply();
  fromHash();
  document.body.setAttribute("data-ready", "1");
})();
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.views.html",
                                     description="Render a --report-json file as one self-contained HTML page.")
    parser.add_argument("report", type=Path, help="the JSON report")
    parser.add_argument("-o", "--output", type=Path, help="where to write the page (default: REPORT with .html)")
    args = parser.parse_args(argv)
    try:
        report = json.loads(args.report.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"{args.report}: cannot read the report: {exc}", file=sys.stderr)
        return 2
    out = args.output or args.report.with_suffix(".html")
    write_html(out, report)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
