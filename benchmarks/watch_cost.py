"""What watching a busy worker's memory costs the controller, per check (one every 0.1 s): the
resident memory of its whole process tree through psutil (harness.controller.process_tree.ProcessTree), against
reading the worker's own /proc/<pid>/statm, as the harness did before it counted children.

    python benchmarks/watch_cost.py [--children 4] [--calls 500]

Prints the median microseconds per check of each, and what the tree check costs as a share of
one core at the harness's check interval. The cost grows with the number of processes on the
machine (psutil walks /proc to find children), which it also prints.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

import psutil

from harness.controller.process_tree import ProcessTree
from harness.controller.worker_process import WATCH_INTERVAL


def median_us(check, calls: int) -> float:
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        check()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--children", type=int, default=4, help="sleeping children of the watched process")
    parser.add_argument("--calls", type=int, default=500)
    args = parser.parse_args()
    spawn = "import subprocess, sys, time\n" \
            "sleeper = [sys.executable, '-c', 'import time; time.sleep(60)']\n" \
            f"kids = [subprocess.Popen(sleeper) for _ in range({args.children})]\n" \
            "print('ready', flush=True); time.sleep(60)"
    watched = subprocess.Popen([sys.executable, "-c", spawn], stdout=subprocess.PIPE, text=True)
    try:
        watched.stdout.readline()
        tree = ProcessTree(watched.pid)
        page = os.sysconf("SC_PAGE_SIZE")

        def statm() -> float:
            with open(f"/proc/{watched.pid}/statm") as f:
                return int(f.read().split()[1]) * page

        tree_us, statm_us = median_us(tree.rss_mb, args.calls), median_us(statm, args.calls)
        print(f"processes on the machine: {len(psutil.pids())}; watched tree: 1 + {len(tree.members())}")
        print(f"tree (psutil): {tree_us:.0f} us per check; worker alone (/proc statm): {statm_us:.0f} us")
        print(f"tree check every {WATCH_INTERVAL:g} s: {tree_us / 1e6 / WATCH_INTERVAL:.2%} of one core")
    finally:
        for child in psutil.Process(watched.pid).children(recursive=True):
            child.kill()
        watched.kill()


if __name__ == "__main__":
    main()
