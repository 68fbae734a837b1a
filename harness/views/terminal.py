"""The lit-style terminal summary: counts per backend, then each unexpected result on one line."""
from __future__ import annotations

from harness.outcomes import Outcome, Verdict
from harness.views.json_report import summarise


def terminal_lines(records: list[dict]) -> list[str]:
    """Per backend: counts per outcome, then each unexpected result on one line."""
    lines = []
    for backend, summary in summarise(records).items():
        counts = "  ".join(f"{o.value}={summary['outcomes'][o.value]}" for o in Outcome
                           if summary["outcomes"].get(o.value))
        lines.append(f"{backend}: {summary['total']} cases  {counts}")
        for r in sorted(records, key=lambda r: r["case"]):
            if r["backend"] == backend and Verdict(r["verdict"]).is_unexpected:
                where = f" in {r['phase']}" if r["phase"] else ""
                first = r["message"].splitlines()[0][:160] if r["message"] else ""
                lines.append(f"  {r['verdict'].upper()}: {r['case']} [{r['outcome']}{where}] {first}")
    return lines

