"""`python -m harness perf compare A.json B.json` and `... perf compare R.json --backends X,Y`."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from harness.errors import HarnessInputError
from harness.perf import ratios as comparison


def add_perf_commands(commands: argparse._SubParsersAction) -> None:
    perf = commands.add_parser("perf", help="the timings of --perf runs: compare two lowerings or two runs")
    verbs = perf.add_subparsers(dest="verb", required=True)
    sub = verbs.add_parser("compare", help="case by case, B's time over A's with a 95%% interval and whether the "
                                           "difference is significant; then the counts and the geomean")
    sub.add_argument("reports", nargs="+", type=Path, metavar="REPORT",
                     help="two JSON reports of --perf runs (A, then B), or one with --backends A,B")
    sub.add_argument("--backends", default="", metavar="A[,B]",
                     help="the two backends of one report; with two reports, the backend of each (one name: both)")
    sub.add_argument("--min-change", type=float, default=comparison.MIN_CHANGE, metavar="FRACTION",
                     help="a difference within this fraction either way is not significant, however narrow its "
                          "interval: the noise between two runs (default %(default)s)")
    sub.add_argument("--format", choices=("text", "json"), default="text")
    sub.set_defaults(run=compare)


def compare(args: argparse.Namespace) -> None:
    names = [n.strip() for n in args.backends.split(",") if n.strip()]
    if not 0 <= args.min_change < 1:
        raise HarnessInputError(f"--min-change={args.min_change:g}", "must be a fraction from 0 to 1, e.g. 0.05")
    result = comparison.compare(*comparison.sides(args.reports, names), min_change=args.min_change)
    print(json.dumps(result, indent=1) if args.format == "json" else comparison.compare_text(result),
          end="\n" if args.format == "json" else "")
