"""`python -m harness history ingest DB REPORT.json...` and `python -m harness history show DB`."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from harness.files import display_path, write_text_atomically, writing


def add_history_commands(commands: argparse._SubParsersAction) -> None:
    history = commands.add_parser("history", help="the run history: record reports, show what changed")
    verbs = history.add_subparsers(dest="verb", required=True)

    sub = verbs.add_parser("ingest", help="record the runs of JSON reports (a report recorded already adds nothing)")
    sub.add_argument("db", type=Path, help="the history database (created when missing)")
    sub.add_argument("reports", nargs="+", type=Path, help="JSON reports: a run's, a nightly's merged one, shards")
    sub.set_defaults(run=ingest)

    sub = verbs.add_parser("show", help="what changed in the latest runs: new failures, fixed, flaky, still failing")
    sub.add_argument("db", type=Path)
    sub.add_argument("--format", choices=("text", "json"), default="text")
    sub.add_argument("--all", action="store_true", help="with --format=json, the passing cases too")
    sub.add_argument("--html", type=Path, metavar="PATH", help="also write the history page here")
    sub.add_argument("--drift-factor", type=_positive, default=2.0, metavar="X",
                     help="an output drifts when its margin is at least X times its baseline (default: 2)")
    sub.add_argument("--drift-floor", type=_positive, default=0.25, metavar="M",
                     help="... and its margin is at least M, of 1.0 at its tolerance (default: 0.25)")
    sub.add_argument("--fail-on-drift", action="store_true", help="exit 1 when an output drifts (the nightly's)")
    sub.set_defaults(run=show)


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number")
    return value


def ingest(args: argparse.Namespace) -> None:
    from harness.history.store import open_history  # DuckDB loads for the history commands alone

    with open_history(args.db, write=True) as store:
        for report, (number, added) in zip(args.reports, store.ingest_all(args.reports)):
            print(f"{display_path(report)}: run {number}" + ("" if added else " (recorded already: nothing added)"))


def history_json(store, include_passing: bool = False, drifting: list[dict] | None = None) -> str:
    """`history show --format=json`: the runs, the cases' statuses, the speed, size and IR changes,
    the drifting outputs (harness.history.drift's default rule unless given)."""
    from harness.history import status
    from harness.history.culprit_groups import culprit_groups
    from harness.history.drift import drift
    from harness.history.perf_changes import perf_changes, size_changes

    performance, ir = side_by_side(perf_changes(store), status.ir_changes(store))
    return json.dumps({"runs": status.runs(store), "cases": status.case_statuses(store, include_passing),
                       "performance": performance, "sizes": size_changes(store),
                       "culprits": culprit_groups(store), "ir_changes": ir,
                       "drift": drift(store) if drifting is None else drifting}, indent=1)


def side_by_side(performance: list[dict], ir: list[dict]) -> tuple[list[dict], list[dict]]:
    """Each speed change with its case's IR change (`ir_changed`), each IR change with its case's
    speed change (`speed`); None where the case has none."""
    def key(change: dict) -> tuple[str, str]:
        return change["case"], change["backend"]

    speeds = {key(p): p for p in performance}
    stages = {key(c): {"since": c["since"], "stage": c["stage"]} for c in ir}
    for change in ir:
        speed = speeds.get(key(change))
        change["speed"] = None if speed is None else {k: speed[k] for k in ("status", "since", "baseline", "latest")}
    for change in performance:
        change["ir_changed"] = stages.get(key(change))
    return performance, ir


def show(args: argparse.Namespace) -> None:
    from harness.history import status
    from harness.history.culprit_groups import culprit_groups
    from harness.history.drift import drift
    from harness.history.perf_changes import perf_changes, size_changes
    from harness.history.store import open_history

    with open_history(args.db, write=False) as store:
        drifting = drift(store, args.drift_factor, args.drift_floor)
        if args.format == "json":
            print(history_json(store, args.all, drifting))
        else:
            from harness.views.history_text import history_text

            performance, ir = side_by_side(perf_changes(store), status.ir_changes(store))
            print(history_text(status.runs(store), status.case_statuses(store), performance,
                               size_changes(store), culprit_groups(store), ir, drifting))
        if args.html:
            from harness.views.history_html import render_history_html

            with writing(args.html):
                write_text_atomically(args.html, render_history_html(store))
    if args.fail_on_drift and drifting:
        print(f"{len(drifting)} output{'s' * (len(drifting) > 1)} drifted (--fail-on-drift)", file=sys.stderr)
        raise SystemExit(1)
