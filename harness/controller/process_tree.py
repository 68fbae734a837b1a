"""A worker and every process under it: their resident memory, and killing them all (psutil).

Finding the processes under a worker lists every process on the machine (psutil reads each one's
parent: 1 to 5 ms here, with 80 processes), while reading the memory of those already known costs
tens of microseconds; so a memory reading looks for new children at most once per SCAN_INTERVAL,
and killing the tree always looks again."""
from __future__ import annotations

import time

import psutil

from harness.protocol import KEEPER_NAME

SCAN_INTERVAL = 1.0   # seconds between two looks for a worker's new children while its memory is watched


class ProcessTree:
    """A worker and the processes under it. Every process seen under it is remembered, so one that
    was orphaned when the worker died (reparented to init) is still killed with the tree."""

    def __init__(self, pid: int | None):
        """pid None: no process (a worker the fork server never forked): an empty tree."""
        try:
            self.root: psutil.Process | None = psutil.Process(pid) if pid else None  # pid reuse: psutil checks
        except psutil.Error:
            self.root = None
        self.command = _cmdline(self.root) if self.root else None
        self.seen: dict[int, psutil.Process] = {}
        self.scanned_at = -SCAN_INTERVAL

    def members(self, rescan: bool = True) -> list[psutil.Process]:
        """The processes under the root; without `rescan`, those already seen unless the last look
        for new ones is SCAN_INTERVAL old (a child is charged within that time of its start)."""
        now = time.monotonic()
        if self.root is not None and (rescan or now - self.scanned_at >= SCAN_INTERVAL):
            self.scanned_at = now
            try:
                self.seen.update((c.pid, c) for c in self.root.children(recursive=True))
            except psutil.Error:
                pass
        self.seen = {pid: p for pid, p in self.seen.items() if p.is_running()}  # the dead go once
        return list(self.seen.values())

    def rss_mb(self) -> tuple[float, float]:
        """Resident MiB of the whole tree, and of the children alone (0 once they have exited).

        A child still running the worker's command line is a fork (subprocess forks, then execs
        iree-compile or a compile worker): it shares the worker's pages, so its resident size
        repeats the worker's. It counts with its private memory (USS) instead. The worker's keeper
        (5 MiB, the harness's own) is left out: the figures are the case's."""
        children = sum(_private(p) if _cmdline(p) == self.command else _rss(p) for p in self.members(rescan=False)
                       if not _keeper(p)) / 2**20
        return (_rss(self.root) / 2**20 if self.root else 0.0) + children, children


def _keeper(process: psutil.Process) -> bool:
    try:
        return process.name() == KEEPER_NAME
    except psutil.Error:
        return False


def _rss(process: psutil.Process) -> int:
    try:
        return process.memory_info().rss
    except psutil.Error:  # gone, or a zombie
        return 0


def _private(process: psutil.Process) -> int:
    try:
        return process.memory_full_info().uss   # reads smaps: only for the rare forked child
    except psutil.Error:
        return 0


def _cmdline(process: psutil.Process) -> list[str] | None:
    try:
        return process.cmdline()
    except psutil.Error:
        return None

