"""How close the passing results came to failing (Record.findings.margins: each output's worst error over
its tolerance, 1.0 at the limit), for the Markdown and terminal views: the closest outputs first,
with float16/bfloat16 outputs' ULPs."""
from __future__ import annotations

import dataclasses

from harness.outcomes import Outcome
from harness.record import Record
from harness.views.markdown_text import code, row

CLOSEST = 10   # the passing outputs a report lists; the JSON and HTML reports have every margin


@dataclasses.dataclass(frozen=True)
class Margin:
    case: str
    backend: str
    output: str
    margin: float
    ulps: dict[str, float] | None   # {"max", "p99"}: a float16 or bfloat16 output's


def closest(records: list[Record], count: int = CLOSEST) -> list[Margin]:
    """The `count` passing outputs with the largest margins, largest first."""
    margins = [Margin(r.case, r.backend, name, value, r.findings.ulps.get(name))
               for r in records if r.outcome is Outcome.PASSED for name, value in r.findings.margins.items()]
    return sorted(margins, key=lambda m: (-m.margin, m.backend, m.case, m.output))[:count]


def margins_markdown(records: list[Record]) -> list[str]:
    """The section "Closest to failing": empty when no passing result has a margin."""
    shown = closest(records)
    if not shown:
        return []
    out = ["## Closest to failing", "",
           f"The {len(shown)} passing outputs whose worst error came nearest their tolerance (margin: error over "
           "tolerance, 1.0 at the limit); ULPs for float16 and bfloat16 outputs.", "",
           row(["margin", "backend", "case", "output", "ULPs (max, p99)"]), row(["---:", "---", "---", "---", "---"])]
    for m in shown:
        ulps = f"{m.ulps['max']:.3g}, {m.ulps['p99']:.3g}" if m.ulps else ""
        out.append(row([f"{m.margin:.3g}", code(m.backend), code(m.case), code(m.output), ulps]))
    return out + [""]
