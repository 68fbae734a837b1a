"""The OpInfo families' subcommand: `python -m harness opinfo-stats`."""
from __future__ import annotations

import argparse

from harness.errors import HarnessInputError

FAMILY_NAMES = ("opinfo", "opinfo_grad")


def add_commands(commands: argparse._SubParsersAction) -> None:
    sub = commands.add_parser("opinfo-stats", help="PyTorch's OpInfo database on this torch: ops, samples, "
                                                   "and what is not a case, by rule")
    sub.add_argument("--dtypes", default="float32", help="comma list (default float32)")
    sub.set_defaults(run=opinfo_stats)


def opinfo_stats(args: argparse.Namespace) -> None:
    """What PyTorch's OpInfo database holds for the selected dtypes, and what is not a case, by rule."""
    from harness.families.opinfo import params
    from harness.families.opinfo.stats_text import render_opinfo_stats

    try:
        dtypes = params.parse_dtypes(args.dtypes)
    except ValueError as e:
        raise HarnessInputError(f"--dtypes={args.dtypes}", str(e)) from None
    manifests = params.manifests_for(dtypes)
    families = {f: (sum(1 for _ in params.samples(manifests, (f,))), params.exclusions(manifests, f))
                for f in FAMILY_NAMES}
    print(render_opinfo_stats(manifests, families, params.RULES), end="")
