"""Run the README's first code block as a newcomer would, from README.md itself (never a copy).

    python3 .ci/readme_block.py [--print] [--selection ARGS]

Each line of the block runs in order in bash (`set -eo pipefail`), in the repository, with the
environment this is started in (CI activates a fresh venv first); the first failing line ends it
with its status. `--selection ARGS` reaches the first line's pytest through PYTEST_ADDOPTS (a `-k`
that keeps CI inside its budget): that line still loads every expectation file of the default
backend, which is what broke on a fresh machine. The other lines run exactly as written.
`--print` prints the lines instead. Standard library only: it runs before anything is installed.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```(?:bash|sh|console)?\s*\n(.*?)^```", re.M | re.S)


def first_block(readme: Path) -> list[str]:
    """The commands of the README's first fenced code block, one per line: whole-line comments
    go, a trailing comment stays (bash ignores it, and the line reads as the README shows it)."""
    found = FENCE.search(readme.read_text(encoding="utf-8"))
    if found is None:
        sys.exit(f"{readme}: no fenced code block; the README must open with the commands that install and run")
    return [line for line in found.group(1).splitlines() if line.strip() and not line.lstrip().startswith("#")]


def run(lines: list[str], selection: str) -> int:
    for number, line in enumerate(lines, 1):
        env = dict(os.environ)
        if number == 1 and selection:
            env["PYTEST_ADDOPTS"] = f"{env.get('PYTEST_ADDOPTS', '')} {selection}".strip()
        shown = f"{line}   [PYTEST_ADDOPTS={env['PYTEST_ADDOPTS']}]" if number == 1 and selection else line
        print(f"readme block, line {number}: {shown}", flush=True)
        started = time.monotonic()
        status = subprocess.run(["bash", "-eo", "pipefail", "-c", line], cwd=ROOT, env=env).returncode
        print(f"readme block, line {number}: exit status {status} after {time.monotonic() - started:.0f} s", flush=True)
        if status:
            return status
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--readme", type=Path, default=ROOT / "README.md")
    parser.add_argument("--selection", default="", help="pytest arguments for the first line, e.g. '-k conv'")
    parser.add_argument("--print", action="store_true", help="print the block's lines, run nothing")
    args = parser.parse_args()
    lines = first_block(args.readme)
    if args.print:
        print("\n".join(lines))
        return 0
    return run(lines, args.selection)


if __name__ == "__main__":
    sys.exit(main())
