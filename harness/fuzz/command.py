"""`python -m harness fuzz`: a family's generated configurations through a backend (harness.fuzz.engine)."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from harness.errors import HarnessInputError
from harness.files import write_text_atomically, writing
from harness.project import tool_arguments


def add_fuzz_command(commands: argparse._SubParsersAction) -> None:
    sub = commands.add_parser("fuzz", parents=[tool_arguments()],
                              help="run generated convolution configurations through a backend and shrink each "
                                   "distinct failure to a minimal --cases-file entry (exit status 1 on findings)")
    sub.add_argument("--backend", required=True, help="the backend to fuzz")
    sub.add_argument("--family", dest="fuzz_family", default="conv_backward", metavar="FAMILY",
                     help="the family whose configurations are generated: conv_backward (default) or conv_forward")
    sub.add_argument("--max-examples", type=int, metavar="N",
                     help="generated examples to search (default: 100, or as many as --time-budget allows)")
    sub.add_argument("--time-budget", type=float, metavar="SECONDS",
                     help="for the whole run: 40%% to search (all of it while nothing fails), "
                          "the rest to shrink (default: no limit)")
    sub.add_argument("--seed", type=int, default=0, help="the same seed gives the same examples (default 0)")
    sub.add_argument("--out", type=Path, help="write the findings as JSON here")
    sub.add_argument("--against", metavar="OTHER_BACKEND",
                     help="differential mode: report configurations where the two backends' results differ")
    sub.add_argument("--database-dir", type=Path, default=Path(".hypothesis-fuzz"),
                     help="the example database: known findings, replayed first (default .hypothesis-fuzz)")
    sub.set_defaults(run=fuzz)


def fuzz(args: argparse.Namespace) -> int:
    """Run generated convolution configurations through a backend, each distinct failure shrunk to
    a minimal cases-file entry (harness.fuzz.engine); exit status 1 when there are findings."""
    from harness.fuzz import engine  # imports hypothesis: only this subcommand needs it
    from harness.fuzz.text import findings_text

    if args.out is not None and not args.out.parent.is_dir():  # before the run, not after it
        raise HarnessInputError(str(args.out), "cannot be written (its directory does not exist)",
                                "create the directory or pass another --out")
    plan = engine.FuzzPlan(backend=args.backend, family=args.fuzz_family, max_examples=args.max_examples,
                           time_budget=args.time_budget, seed=args.seed, against=args.against,
                           database_dir=args.database_dir)
    result = engine.run(plan, args.project)
    if args.out is not None:
        with writing(args.out):
            write_text_atomically(args.out, json.dumps(result, indent=2) + "\n")
    print(findings_text(result), end="")
    return 1 if result["findings"] else 0


