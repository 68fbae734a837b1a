"""--update-expectations: the xfail and crash-set files that would make a run match, proposed per
selected backend, and written over the files after a complete run (the Markdown report shows the
same proposals, harness.views.markdown)."""
from __future__ import annotations

from pathlib import Path

from harness.controller.runner import Runner
from harness.files import display_path
from harness.record import Record


def proposals_for(runner: Runner, records: list[dict]) -> dict[Path, str]:
    """Per selected backend, the expectation files' new texts that make this run's records match."""
    from harness.expectations import propose
    found: dict[Path, str] = {}
    for backend in runner.configs:
        mine = [Record.from_json(r) for r in records if r["backend"] == backend]
        if mine:
            found.update(propose(mine, *runner.expectation_files(backend), case_ids=runner.known_ids,
                                 versions=runner.conditions, missing_families=runner.discovered.missing))
    return found


def update_expectations(runner: Runner, proposals: dict[Path, str], complete: bool) -> list[str]:
    """Write the proposals over the expectation files (only after a complete run); the lines the
    run's summary says of it."""
    messages: list[str] = []
    kept = sorted({e.missing_family for x in runner.expectations.values() for e in x.entries if e.missing_family})
    if kept:
        messages.append(f"--update-expectations: the entries for {', '.join(kept)} stay as they are: "
                        f"{runner.discovered.missing[kept[0]]}")
    if not complete:
        messages.append("--update-expectations: the run was interrupted; no file changed")
    elif not proposals:
        messages.append("--update-expectations: the expectation files already match this run")
    else:
        from harness.expectations import apply
        apply(proposals)
        messages += [f"--update-expectations: rewrote {display_path(p)} (review the '# review:' entries)"
                     for p in proposals]
    return messages
