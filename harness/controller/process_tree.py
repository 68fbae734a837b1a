"""A worker and every process under it: their resident memory, and killing them all (psutil)."""
from __future__ import annotations

import psutil


class ProcessTree:
    """A worker and the processes under it. Every process seen under it is remembered, so one that
    was orphaned when the worker died (reparented to init) is still killed with the tree."""

    def __init__(self, pid: int):
        try:
            self.root: psutil.Process | None = psutil.Process(pid)  # pid reuse is checked by psutil
        except psutil.Error:
            self.root = None
        self.seen: dict[int, psutil.Process] = {}

    def members(self) -> list[psutil.Process]:
        if self.root is not None:
            try:
                self.seen.update((c.pid, c) for c in self.root.children(recursive=True))
            except psutil.Error:
                pass
        self.seen = {pid: p for pid, p in self.seen.items() if p.is_running()}  # the dead go once
        return list(self.seen.values())

    def rss_mb(self) -> tuple[float, float]:
        """Resident MiB of the whole tree, and of the children alone (0 once they have exited)."""
        children = sum(_rss(p) for p in self.members()) / 2**20
        return (_rss(self.root) / 2**20 if self.root else 0.0) + children, children


def _rss(process: psutil.Process) -> int:
    try:
        return process.memory_info().rss
    except psutil.Error:  # gone, or a zombie
        return 0

