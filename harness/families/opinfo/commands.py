"""The OpInfo families' subcommand: `python -m harness opinfo-stats`."""
from __future__ import annotations

import argparse

FAMILY_NAMES = ("opinfo", "opinfo_grad")


def add_commands(commands: argparse._SubParsersAction) -> None:
    sub = commands.add_parser("opinfo-stats", help="PyTorch's OpInfo database on this torch: ops, samples, "
                                                   "and what is not a case, by rule")
    sub.set_defaults(run=opinfo_stats)   # --dtypes (default float32) is the project's, as for a run


def opinfo_stats(args: argparse.Namespace) -> None:
    """What PyTorch's OpInfo database holds for the selected dtypes, and what is not a case, by rule."""
    from harness.families.opinfo import params
    from harness.families.opinfo.stats_text import render_opinfo_stats

    manifests = params.manifests_for(args.project.settings.dtypes or params.DEFAULT_DTYPES)
    families = {f: (sum(1 for _ in params.samples(manifests, (f,))), params.exclusions(manifests, f))
                for f in FAMILY_NAMES}
    print(render_opinfo_stats(manifests, families, params.RULES), end="")
