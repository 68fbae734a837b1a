"""The convolution families' subcommand: `python -m harness fuzz`."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from harness.errors import HarnessInputError
from harness.files import write_text_atomically, writing


def add_commands(commands: argparse._SubParsersAction) -> None:
    sub = commands.add_parser("fuzz", help="run generated convolution configurations through a backend and shrink "
                                           "each distinct failure to a minimal --cases-file entry "
                                           "(exit status 1 on findings)")
    sub.add_argument("--backend", required=True, help="the backend to fuzz")
    sub.add_argument("--family", default="conv_backward", help="conv_backward (default) or conv_forward")
    sub.add_argument("--max-examples", type=int, metavar="N",
                     help="generated examples to search (default: 100, or as many as --time-budget allows)")
    sub.add_argument("--time-budget", type=float, metavar="SECONDS",
                     help="for the whole run: 40%% to search (all of it while nothing fails), "
                          "the rest to shrink (default: no limit)")
    sub.add_argument("--seed", type=int, default=0, help="the same seed gives the same examples (default 0)")
    sub.add_argument("--out", type=Path, help="write the findings as JSON here")
    sub.add_argument("--against", metavar="OTHER_BACKEND",
                     help="differential mode: report configurations where the two backends' results differ")
    sub.add_argument("--case-timeout", type=float, metavar="SECONDS",
                     help="per example and backend, in place of the backend config's timeout "
                          "(default: the config's, else 60)")
    sub.add_argument("--configs-dir", type=Path, action="append", help="default: configs")
    sub.add_argument("--database-dir", type=Path, default=Path(".hypothesis-fuzz"),
                     help="the example database: known findings, replayed first (default .hypothesis-fuzz)")
    sub.set_defaults(run=fuzz)


def fuzz(args: argparse.Namespace) -> int:
    """Run generated convolution configurations through a backend, each distinct failure shrunk to
    a minimal cases-file entry (harness/families/conv/fuzz.py); exit status 1 when there are findings."""
    from harness.families.conv import fuzz as fuzzing  # imports hypothesis: only this subcommand needs it
    from harness.families.conv.fuzz_text import render_text

    if args.out is not None and not args.out.parent.is_dir():  # before the run, not after it
        raise HarnessInputError(str(args.out), "cannot be written (its directory does not exist)",
                                "create the directory or pass another --out")
    options = fuzzing.FuzzOptions(backend=args.backend, family=args.family, max_examples=args.max_examples,
                                  time_budget=args.time_budget, seed=args.seed, against=args.against,
                                  case_timeout=args.case_timeout, configs_dirs=args.configs_dir or [Path("configs")],
                                  database_dir=args.database_dir)
    result = fuzzing.run(options)
    if args.out is not None:
        with writing(args.out):
            write_text_atomically(args.out, json.dumps(result, indent=2) + "\n")
    print(render_text(result), end="")
    return 1 if result["findings"] else 0


