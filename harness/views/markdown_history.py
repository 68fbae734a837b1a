"""The Markdown triage report's sections from the run history: new failures with what changed,
fixed and flaky cases (harness.history.status.case_statuses of the run's cases)."""
from __future__ import annotations

from harness.views.history_text import describe_changes
from harness.views.markdown_text import code, escape_text, row

HISTORY_SECTIONS = (("new_failure", "New failures since the run before",
                     "failed in this run, passed in the one before that held them"),
                    ("fixed", "Fixed since the run before", "passed in this run, failed in the one before"),
                    ("flaky", "Flaky cases", "their outcome changed with nothing changed, or their reruns disagreed"))
HISTORY_ROWS = 100


def history_sections(history: list[dict]) -> list[str]:
    out = []
    for status, title, meaning in HISTORY_SECTIONS:
        chosen = [c for c in history if c["status"] == status]
        if not chosen:
            continue
        out += [f"## {title} ({len(chosen)})", "", f"From the run history: {meaning}.", "",
                row(["backend", "case", "outcome", "what changed" if status != "flaky" else "flaky since",
                      "last outcomes"]), row(["---"] * 5)]
        for c in chosen[:HISTORY_ROWS]:
            changed = describe_changes(c.get("changed"))
            when = f"run {c['flaky_since']}" if status == "flaky" else changed or "nothing recorded"
            outcome = c["last_outcome"] + (f" in {c['last_phase']}" if c["last_phase"] else "")
            out.append(row([code(c["backend"]), code(c["case"]), escape_text(outcome), escape_text(when),
                             code(c["recent"] or "")]))
        if len(chosen) > HISTORY_ROWS:
            out.append(f"\n... and {len(chosen) - HISTORY_ROWS} more: `python -m harness history show DB`")
        out.append("")
    return out
