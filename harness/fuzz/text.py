"""The text view of a fuzz run (the dict `python -m harness fuzz --out` writes): each finding with
its outcome, how often it was hit, its minimal configuration as a --cases-file entry and the
expectation entry for it."""
from __future__ import annotations

from typing import Any, Mapping

from harness.outcomes import Outcome


def findings_text(report: Mapping[str, Any]) -> str:
    """The human-readable summary of a fuzz report."""
    against = f" against {report['against']}" if report["against"] else ""
    outcomes = ", ".join(f"{k} {v}" for k, v in report["outcomes"].items())
    replayed = f", {report['replayed']} replayed" if report["replayed"] else ""
    lines = [f"fuzz {report['backend']}{against}, {report['family']}, seed {report['seed']}: "
             f"{report['examples_run']} examples ({outcomes or 'none'}), {report['configs_run']} configurations "
             f"run{replayed}, {report['elapsed_s']:g} s{' (interrupted)' if report['interrupted'] else ''}"]
    findings = report["findings"]
    kind = "disagreement" if report["against"] else "distinct failure"
    lines.append(f"{len(findings)} {kind}{'' if len(findings) == 1 else 's'}" + (":" if findings else ""))
    for i, f in enumerate(findings, 1):
        shrink = {"complete": "shrunk", "partial": "partly shrunk (time budget)", "none": "not shrunk"}[f["shrink"]]
        what = outcome_text(f)
        if "against" in f:
            what = f"{report['backend']}: {what}, {report['against']}: {outcome_text(f['against'])}"
        lines += ["", f"[{i}] {what}; {f['hits']} of {report['examples_run']} examples; "
                      f"minimal configuration {shrink}",
                  f"    signature: {f['signature']}",
                  "    cases-file entry:"]
        lines += ["      " + line for line in f["cases_file_entry"].splitlines()]
        if f["xfail_entry"]:
            lines.append("    expectation entry:")
            lines += ["      " + line for line in f["xfail_entry"].splitlines()]
    return "\n".join(lines) + "\n"


def outcome_text(result: Mapping[str, Any]) -> str:
    outcome = Outcome(result["outcome"])
    return outcome.value if outcome is Outcome.PASSED else f"{outcome.value} in phase {result['phase']}"
