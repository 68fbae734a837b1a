"""How long a run's case workers take to say ready: the seconds from the pytest command's start to
each harness worker's Ready message (harness.protocol), stamped in the worker as it encodes it
(a sitecustomize.py put first on PYTHONPATH wraps harness.protocol.encode in every process of the
run; nothing else changes). Prints each run's times, then per worker (in the order they said
ready) the median over the runs with the lowest and highest, and the command's whole wall.

    python benchmarks/worker_start.py [--backend linalg-on-tensors] [-m conv_backward] [-k 1d] [-n 2] [--runs 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

STAMP = '''\
import os, time
import harness.protocol as protocol

_encode = protocol.encode


def encode(message):
    if isinstance(message, protocol.Ready):
        with open(os.environ["WORKER_START_STAMPS"], "a") as out:
            out.write(f"{message.pid} {time.time()}\\n")
    return _encode(message)


protocol.encode = encode
'''


def one_run(command: list[str], folder: Path) -> tuple[list[float], float]:
    """The seconds from the start to each worker's Ready, in order, and the command's wall."""
    stamps = folder / "stamps.txt"
    stamps.unlink(missing_ok=True)
    env = {**os.environ, "WORKER_START_STAMPS": str(stamps),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")]))}
    started = time.time()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.time() - started
    if done.returncode not in (0, 1):   # 1: an unexpected verdict, which does not matter here
        sys.exit(f"{' '.join(command)} exited {done.returncode}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    ready = sorted(float(line.split()[1]) - started for line in stamps.read_text().splitlines())
    return ready, wall


def spread(values: list[float]) -> str:
    return f"median {statistics.median(values):.2f} s ({min(values):.2f} to {max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="linalg-on-tensors")
    parser.add_argument("-m", dest="marker", default="conv_backward")
    parser.add_argument("-k", dest="keyword", default="1d")
    parser.add_argument("-n", dest="workers", default="2")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="worker-start-"))
    (folder / "sitecustomize.py").write_text(STAMP)
    command = [sys.executable, "-m", "pytest", "-m", args.marker, "-k", args.keyword, f"--backend={args.backend}",
               "-n", args.workers, "-q", "-p", "no:cacheprovider", "--cache=off"]
    print(" ".join(command[1:]))
    runs = []
    for number in range(1, args.runs + 1):
        ready, wall = one_run(command, folder)
        runs.append((ready, wall))
        print(f"run {number}: ready at {', '.join(f'{t:.2f}' for t in ready)} s; wall {wall:.2f} s", flush=True)
    workers = min(len(ready) for ready, _ in runs)
    for index in range(workers):
        print(f"worker {index + 1} ready: {spread([ready[index] for ready, _ in runs])}")
    print(f"wall: {spread([wall for _, wall in runs])}")


if __name__ == "__main__":
    main()
