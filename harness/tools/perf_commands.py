"""`python -m harness perf compare A.json B.json` and `... perf compare R.json --backends X,Y`."""
from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_perf_commands(commands: argparse._SubParsersAction) -> None:
    perf = commands.add_parser("perf", help="the timings of --perf runs: compare two lowerings or two runs")
    verbs = perf.add_subparsers(dest="verb", required=True)
    sub = verbs.add_parser("compare", help="case by case, B's time over A's with a 95%% interval and whether the "
                                           "difference is significant; then the counts and the geomean")
    sub.add_argument("reports", nargs="+", type=Path, metavar="REPORT",
                     help="two JSON reports of --perf runs (A, then B), or one with --backends A,B")
    sub.add_argument("--backends", default="", metavar="A[,B]",
                     help="the two backends of one report; with two reports, the backend of each (one name: both)")
    sub.add_argument("--format", choices=("text", "json"), default="text")
    sub.set_defaults(run=compare)


def compare(args: argparse.Namespace) -> None:
    from harness.perf.compare import compare, compare_text, sides

    names = [n.strip() for n in args.backends.split(",") if n.strip()]
    result = compare(*sides(args.reports, names))
    print(json.dumps(result, indent=1) if args.format == "json" else compare_text(result), end="\n" * (
        args.format == "json"))
