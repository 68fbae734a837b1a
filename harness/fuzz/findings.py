"""What a fuzz run found: each configuration's results, their groups, and a finding as reported."""
from __future__ import annotations

import dataclasses
from typing import Any

from harness.case_data import Case
from harness.expectations import NewEntry, new_entries_text
from harness.fuzz.examples import Examples, entry_text
from harness.fuzz.text import outcome_text
from harness.outcomes import Expected, Outcome

MESSAGE_CHARS = 600               # of a finding's first failing message kept in the JSON output


@dataclasses.dataclass
class Evaluation:
    """One configuration's results: per backend (outcome, phase, signature, message)."""

    params: dict[str, Any]
    case: Case
    results: dict[str, dict[str, Any]]
    signature: str | None                  # the group: a failure's signature, or a disagreement's


@dataclasses.dataclass
class Group:
    signature: str
    found_in: str                          # "replay", "search" or "shrink"
    hits: int = 0                          # search examples with this signature
    first_hit: int | None = None           # the search example that first had it (1-based)
    keys: list[str] = dataclasses.field(default_factory=list)   # distinct configurations with it
    minimal: Evaluation | None = None
    shrink: str | None = None              # "complete", "partial" (time ran out), "none"
    shrink_runs: int = 0
    shrink_s: float = 0.0


def finding(group: Group, examples: Examples, backend: str, against: str | None) -> dict[str, Any]:
    """One finding of the JSON report: its minimal configuration, as a cases-file entry and expectations."""
    minimal = group.minimal
    assert minimal is not None, "a group is shrunk, or its smallest example kept, before it is a finding"
    entry = examples.entry(minimal.params)
    on = ", ".join(f"{name}: {outcome_text(r)}" for name, r in minimal.results.items())
    failing = {name: r for name, r in minimal.results.items() if r["outcome"] != Outcome.PASSED}
    files, expectation_texts = [], []
    for name, r in failing.items():
        kind = Expected.CRASH if Outcome(r["outcome"]).is_crash else Expected.XFAIL
        file = f"{kind.folder}/{name}.yaml"
        files.append(file)
        new = NewEntry(minimal.case.id, r["phase"], r["signature"], "", signature=r["signature"])
        expectation_texts.append(f"# {file}: the id is the one the cases-file entry gets (name {entry['name']})\n"
                                 + new_entries_text([new]))
    primary = minimal.results[backend]
    message = next((r["message"] for r in failing.values()), "")
    result = {"signature": group.signature, "outcome": primary["outcome"], "phase": primary["phase"],
              "hits": group.hits, "configs_seen": len(group.keys), "found_in": group.found_in,
              "shrink": group.shrink, "shrink_runs": group.shrink_runs, "shrink_s": group.shrink_s,
              "case": minimal.case.id, "minimal_params": minimal.params,
              "cases_file_entry": entry_text(entry, f"# fuzz finding: {on}"),
              "xfail_entry": "".join(expectation_texts), "expectation_files": files,
              "message": message[:MESSAGE_CHARS]}
    if against is not None:
        other = minimal.results[against]
        result["against"] = {"backend": against, "outcome": other["outcome"],
                             "phase": other["phase"], "signature": other["signature"]}
    return result
