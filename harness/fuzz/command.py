"""`python -m harness fuzz`: a family's generated configurations through a backend (harness.fuzz.engine).

The families it can fuzz are those that offer a fuzz space (Family.fuzz_space), read from the
registry: the command names none of them itself."""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Mapping

from harness.errors import HarnessInputError
from harness.families.interface import Family
from harness.families.loader import entry_point_families
from harness.files import write_text_atomically, writing
from harness.project import tool_arguments


def fuzzable(families: Mapping[str, Family]) -> list[str]:
    """The families that offer a fuzz space, in the registry's order."""
    return [name for name, family in families.items() if family.fuzz_space]


def family_to_fuzz(named: str | None, families: Mapping[str, Family]) -> str:
    """The family named on the command line, checked; when none is named, the only one that offers
    a fuzz space. One error line otherwise, naming those that offer one."""
    offered = fuzzable(families)
    choices = (f"name one of: {', '.join(offered)}" if offered
               else "install a family that offers one (Family.fuzz_space)")
    if named is None:
        if len(offered) == 1:
            return offered[0]
        problem = "several families offer a fuzz space" if offered else "no installed family offers a fuzz space"
        raise HarnessInputError("python -m harness fuzz", problem, choices)
    if named not in offered:
        problem = "offers no fuzz space" if named in families else "is not an installed family"
        raise HarnessInputError(named, problem, choices)
    return named


def add_fuzz_command(commands: argparse._SubParsersAction) -> None:
    offered = fuzzable(entry_point_families())
    sub = commands.add_parser("fuzz", parents=[tool_arguments()],
                              help="run a family's generated configurations through a backend and shrink each "
                                   "distinct failure to a minimal --cases-file entry (exit status 1 on findings)")
    sub.add_argument("family", nargs="?", metavar="FAMILY",
                     help="the family whose configurations are generated, one that offers a fuzz space: "
                          f"{', '.join(offered) or 'none is installed'}"
                          + (" (the default, the only one)" if len(offered) == 1 else ""))
    sub.add_argument("--backend", required=True, help="the backend to fuzz")
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
    """Run a family's generated configurations through a backend, each distinct failure shrunk to
    a minimal cases-file entry (harness.fuzz.engine); exit status 1 when there are findings."""
    from harness.fuzz import engine  # imports hypothesis: only this subcommand needs it
    from harness.fuzz.text import findings_text

    family = family_to_fuzz(args.family, args.project.families)
    if args.out is not None and not args.out.parent.is_dir():  # before the run, not after it
        raise HarnessInputError(str(args.out), "cannot be written (its directory does not exist)",
                                "create the directory or pass another --out")
    plan = engine.FuzzPlan(backend=args.backend, family=family, max_examples=args.max_examples,
                           time_budget=args.time_budget, seed=args.seed, against=args.against,
                           database_dir=args.database_dir)
    result = engine.run(plan, args.project)
    if args.out is not None:
        with writing(args.out):
            write_text_atomically(args.out, json.dumps(result, indent=2) + "\n")
    print(findings_text(result), end="")
    return 1 if result["findings"] else 0
