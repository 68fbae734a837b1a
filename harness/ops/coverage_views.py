"""The coverage matrix as Markdown (the docs page, docs/results/op-coverage.md) and as one
self-contained HTML page (a filter box, a colour per status, a failure's signature on hover)."""
from __future__ import annotations

import html

from harness.ops.core_aten import core_aten_ops
from harness.ops.coverage import FAILED, NOT_COVERED, PASSED, Cell, Coverage


def markdown(cov: Coverage) -> str:
    return "\n".join(part for part in (_totals_md(cov), _programs_md(cov), _uncovered_md(cov), _ops_md(cov)) if part)


def _cell_text(cell: Cell) -> str:
    if cell.status == PASSED:
        text = f"pass ({cell.passed})"
    elif cell.status == FAILED:
        text = f"**{cell.phase}** ({cell.failed}/{cell.cases})"
    else:
        return ""
    failing = [d for d, s in cell.dtypes.items() if s == FAILED]
    return text + (f" fails at {', '.join(failing)}" if failing and cell.status == PASSED else "")


def _table(head: list[str], rows: list[list[str]]) -> str:
    lines = [head, ["---"] * len(head), *rows]
    return "\n".join("| " + " | ".join(cells) + " |" for cells in lines) + "\n"


def _totals_md(cov: Coverage) -> str:
    rows = []
    for b in cov.backends:
        statuses = [cov.cell(op, b).status for op in cov.ops]
        rows.append([f"`{b}`", *(str(statuses.count(s)) for s in (PASSED, FAILED, NOT_COVERED))])
    head = ["backend", "passed", "failed", "not covered"]
    return (f"{len(cov.ops)} ops, {len(cov.backends)} backends. An op passes on a backend when a case of it passed "
            "there and no failure counts against it.\n\n" + _table(head, rows))


def _programs_md(cov: Coverage) -> str:
    if not cov.programs:
        return ""
    cells = {(case, b): f"{covered} of {total}" for case, b, covered, total in cov.programs}
    cases = sorted({case for case, *_ in cov.programs})
    rows = [[f"`{case}`", *(cells.get((case, b), "") for b in cov.backends)] for case in cases]
    return ("## Whole programs and training steps\n\nHow many of each program's ops pass on each backend in the "
            "op tests: x of y ops covered.\n\n" + _table(["program", *cov.backends], rows))


def _uncovered_md(cov: Coverage) -> str:
    names = ", ".join(f"`{op}`" for op in cov.uncovered_core) or "none"
    return (f"## Core ATen ops no case covers\n\n{len(cov.uncovered_core)} of PyTorch's {len(core_aten_ops())} "
            f"core ATen ops: {names}\n")


def _ops_md(cov: Coverage) -> str:
    rows = [[f"`{op}`", ", ".join(cov.families[op]), *(_cell_text(cov.cell(op, b)) for b in cov.backends)]
            for op in cov.ops]
    head = ["op", "families", *cov.backends]
    return ("## Per op\n\nA cell: `pass (cases that passed)`, or the phase of the first failure that counts "
            "against the op (failures/cases); empty: not covered.\n\n" + _table(head, rows))


COLOURS = {PASSED: "#d9f2d9", FAILED: "#f8d0d0", NOT_COVERED: "#f0f0f0"}


def html_page(cov: Coverage) -> str:
    head = "".join(f"<th>{html.escape(b)}</th>" for b in cov.backends)
    body = "\n".join(_html_row(cov, op) for op in cov.ops)
    style = "".join(f"td.{s}{{background:{c}}}" for s, c in COLOURS.items())
    uncovered = ", ".join(html.escape(op) for op in cov.uncovered_core) or "none"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Op coverage</title>
<style>body{{font:13px sans-serif}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:2px 6px}}
{style}</style></head><body>
<h1>Op coverage</h1>
<p>{len(cov.ops)} ops on {len(cov.backends)} backends. Core ATen ops no case covers
({len(cov.uncovered_core)} of {len(core_aten_ops())}): {uncovered}</p>
<p><input id="filter" placeholder="filter ops" autofocus></p>
<table id="coverage"><thead><tr><th>op</th><th>families</th>{head}</tr></thead><tbody>
{body}
</tbody></table>
<script>
// The box keeps the rows whose op holds its text; `#filter=TEXT` in the address fills it (a link to a view).
var box = document.getElementById("filter");
function apply() {{
  var text = box.value.toLowerCase();
  document.querySelectorAll("#coverage tbody tr").forEach(function (row) {{
    row.hidden = row.dataset.op.indexOf(text) < 0;
  }});
}}
box.addEventListener("input", apply);
var linked = /[#&]filter=([^&]*)/.exec(location.hash);
if (linked) {{ box.value = decodeURIComponent(linked[1]); apply(); }}
document.body.dataset.ready = "1";
</script></body></html>
"""


def _html_row(cov: Coverage, op: str) -> str:
    cells = []
    for b in cov.backends:
        cell = cov.cell(op, b)
        title = f' title="{html.escape(cell.signature)}"' if cell.signature else ""
        text = html.escape(_cell_text(cell).replace("**", ""))
        cells.append(f'<td class="{cell.status}"{title}>{text}</td>')
    families = html.escape(", ".join(cov.families[op]))
    return f'<tr data-op="{html.escape(op.lower())}"><td>{html.escape(op)}</td><td>{families}</td>{"".join(cells)}</tr>'
