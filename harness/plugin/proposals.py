"""Expectation proposals: the xfail and crash-set files that would make a run match, into the
Markdown report, and written over the files with --update-expectations."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import HarnessInputError
from harness.files import display_path, write_text_atomically
from harness.plugin.state import RUNNER
from harness.record import Record


def write_proposals(config: pytest.Config, report: dict, complete: bool) -> list[str]:
    """The expectation files that would make this run match: into the Markdown report, and
    written over the files with --update-expectations (only after a complete run). Returns the
    lines the run's summary says of them."""
    messages: list[str] = []
    try:
        proposals = proposals_for(config, report["results"])
    except HarnessInputError as e:  # an expectation file changed during the run
        messages.append(f"no expectation proposals: {e}")
        proposals = {}
    if config.getoption("report_md"):
        from harness.views.markdown import render_markdown
        text = render_markdown(report, {display_path(p): t for p, t in proposals.items()},
                               originals={display_path(p): p.read_text(encoding="utf-8") if p.exists() else ""
                                          for p in proposals},
                               history=history_of(config.getoption("history"), report))
        write_text_atomically(Path(config.getoption("report_md")), text)
    if not config.getoption("update_expectations"):
        return messages
    runner = config.stash[RUNNER]
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


def proposals_for(config: pytest.Config, records: list[dict]) -> dict[Path, str]:
    """Per selected backend, the expectation files' new texts that make this run's records match."""
    from harness.expectations import propose
    runner = config.stash[RUNNER]
    ids = runner.known_ids
    found: dict[Path, str] = {}
    for backend in runner.configs:
        mine = [Record.from_json(r) for r in records if r["backend"] == backend]
        if mine:
            found.update(propose(mine, *runner.expectation_files(backend), case_ids=ids,
                                 versions=runner.conditions, missing_families=runner.discovered.missing))
    return found


def history_of(database: str | None, report: dict) -> list[dict] | None:
    """This run's cases' statuses, when it was recorded in a history (--history)."""
    if not database:
        return None
    from harness.history.status import run_statuses

    try:
        return run_statuses(Path(database), report)
    except HarnessInputError:
        return None   # the summary says why the run was not recorded
