"""The memory the controller charges to a worker's process tree (harness.controller.process_tree)."""
from __future__ import annotations

import subprocess
import sys
import time

from harness.controller.process_tree import SCAN_INTERVAL, ProcessTree

# Holds 300 MiB, written so that it is resident, then forks: the child runs the same command line
# and shares those pages (as a child of subprocess does between fork and exec).
FORKER = """
import os, sys, time
data = b"x" * (300 * 2**20)
if os.fork() == 0:
    time.sleep(60)
sys.stdout.write("forked\\n"); sys.stdout.flush()
time.sleep(60)
"""
# Starts a child that allocates 200 MiB of its own.
SPAWNER = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "data = b'y' * (200 * 2**20); import time; time.sleep(60)"])
time.sleep(60)
"""


def settled(tree: ProcessTree, children_at_least: int) -> tuple[float, float]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if len(tree.members()) >= children_at_least:
            total, children = tree.rss_mb()
            if total > 250:
                return total, children
        time.sleep(0.2)
    raise AssertionError("the process tree did not settle")


def test_a_forked_child_is_charged_its_private_memory_not_the_shared_pages():
    process = subprocess.Popen([sys.executable, "-c", FORKER], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline() == "forked\n"
        total, children = settled(ProcessTree(process.pid), 1)
        assert 300 < total < 400 and children < 50, (total, children)   # summing RSS would say about 600
    finally:
        process.kill()
        for child in ProcessTree(process.pid).members():
            child.kill()


def test_a_child_running_another_program_is_charged_its_resident_memory():
    process = subprocess.Popen([sys.executable, "-c", SPAWNER])
    tree = ProcessTree(process.pid)
    try:
        deadline = time.monotonic() + 30
        while tree.rss_mb()[1] < 200 and time.monotonic() < deadline:
            time.sleep(0.2)
        total, children = tree.rss_mb()
        assert 200 < children < 300 and total > children, (total, children)
    finally:
        for member in tree.members():
            member.kill()
        process.kill()


# Starts a sleeping child when a line comes on stdin, and says so.
SPAWN_ON_ASK = """
import subprocess, sys, time
sys.stdin.readline()
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
sys.stdout.write("started\\n"); sys.stdout.flush()
time.sleep(60)
"""


def test_a_reading_looks_for_new_children_once_per_scan_interval_and_a_kill_always_looks():
    process = subprocess.Popen([sys.executable, "-c", SPAWN_ON_ASK], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True)
    tree = ProcessTree(process.pid)
    try:
        tree.rss_mb()   # the first reading looks: no child yet
        process.stdin.write("go\n")
        process.stdin.flush()
        assert process.stdout.readline() == "started\n"
        tree.scanned_at = time.monotonic()   # the last look, just now as far as the reading knows
        assert tree.rss_mb()[1] == 0   # within the interval: it does not look again
        assert len(tree.members()) == 1   # the list a kill takes looks now
        tree.scanned_at -= SCAN_INTERVAL   # as if the interval had passed: the next reading looks
        assert len(tree.members(rescan=False)) == 1 and tree.rss_mb()[1] > 0
    finally:
        for member in tree.members():
            member.kill()
        process.kill()
