"""`python -m harness`: the command-line tools (reports, expectations, history, reduce, bisect, fuzz, isolate, and
the installed families' own, which `python -m harness --help` lists).

    python -m harness --help            the commands, each with its own --help

A command lives in its own package, beside what it runs, and registers itself there with a function
`add_X_command(commands)` (argparse's subparsers); this module only lists those registrars
(`REGISTRARS`), in the order `--help` shows the commands, then the installed families' own
(Family.commands), and runs the one asked for. Each subcommand is a function taking the parsed
arguments and returning the exit status (None: 0); bad input is a HarnessInputError, printed as one
`error: ...` line with exit status 2 (`check`'s bad backend config: 4, as pytest gives it).
"""
from __future__ import annotations

import argparse
import sys

import harness
from harness.bisect.command import add_bisect_command
from harness.controller.server_command import add_servers_command
from harness.errors import HarnessInputError
from harness.families.loader import entry_point_families
from harness.fuzz.command import add_fuzz_command
from harness.isolate.command import add_isolate_command
from harness.ops.command import add_coverage_command
from harness.project import Project, add_tool_arguments
from harness.reduce.command import add_reduce_command
from harness.stages.commands import add_cache_commands
from harness.tools.check_command import add_check_command
from harness.tools.history_commands import add_history_commands
from harness.tools.perf_commands import add_perf_commands
from harness.tools.report_commands import add_report_commands
from harness.training.table import add_train_step_table_command

REGISTRARS = (add_report_commands, add_check_command, add_history_commands, add_cache_commands, add_servers_command,
              add_perf_commands, add_reduce_command, add_bisect_command, add_fuzz_command, add_isolate_command,
              add_train_step_table_command, add_coverage_command)


def build_parser() -> argparse.ArgumentParser:
    """The harness's subcommands and those of the families installed (entry points)."""
    families = entry_point_families()
    parser = argparse.ArgumentParser(prog="python -m harness")
    parser.add_argument("--version", action="version", version=f"torch-backend-e2e {harness.__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    for register in REGISTRARS:
        register(commands)
    for family in families.values():   # their own subcommands
        if family.commands is not None:
            before = set(commands.choices)
            family.commands(commands)
            for name in set(commands.choices) - before:   # they take the project, as the others do
                add_tool_arguments(commands.choices[name])
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        if hasattr(args, "configs_dirs"):   # a command that takes the project: a family's reads args.project
            args.project = Project.from_args(args)
        return args.run(args) or 0
    except HarnessInputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
