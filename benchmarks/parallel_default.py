"""The default run on every core against the same run in one process: `pytest --backend=B`
(no -n: the plugin adds `-n auto`) and `pytest --backend=B -n 0`, one after the other, each in a
fresh process. Prints both walls, their ratio (issue 19's goal: at most 0.55x) and the worker
count the default took.

    python benchmarks/parallel_default.py [--backend linalg-on-tensors] [-k EXPRESSION]
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(command: list[str]) -> tuple[float, str]:
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if done.returncode not in (0, 1):   # 1: some verdict was unexpected, which is data here
        sys.exit(f"{' '.join(command)} exited {done.returncode}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return time.monotonic() - started, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="linalg-on-tensors")
    parser.add_argument("-k", dest="keyword", help="pytest's -k, to time a part of the run")
    args = parser.parse_args()
    command = [sys.executable, "-m", "pytest", f"--backend={args.backend}",
               *(["-k", args.keyword] if args.keyword else [])]
    serial, serial_out = timed(command + ["-n", "0"])
    default, default_out = timed(command)
    workers = re.search(r"created: (\d+)/\d+ workers", default_out)
    print(f"serial (-n 0):        {serial:7.1f} s  {_counts(serial_out)}")
    print(f"default ({workers.group(1) if workers else '?'} workers): {default:7.1f} s  {_counts(default_out)}  "
          f"ratio {default / serial:.2f}")


def _counts(output: str) -> str:
    """pytest's last line, its counts: the two runs must have run the same cases."""
    lines = [line.strip("= ") for line in output.splitlines() if re.match(r"=+ .*\d+ (passed|failed)", line)]
    return lines[-1] if lines else "(no counts)"


if __name__ == "__main__":
    main()
