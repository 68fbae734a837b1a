"""The controller's side of the fork server (harness.worker.fork_server): start it, ask it for
workers, learn how they ended.

A pool's workers all run one Python with one environment, so the pool starts one server with that
environment, and each worker it needs is a fork of it: the first is ready once the server's imports
are done (as a fresh process would be), every later one in milliseconds. A request does not wait for
the server: its pipes exist at once, and the pid comes when the worker's start-up is waited on.

A run in a terminal asks a warm server instead (harness.controller.warm_server): the same requests
on a connection to a server that outlives the run, each carrying the run's whole environment and
folder, since the server's own are another run's.

A forked worker is not the controller's child; `ForkedProcess` gives what the pool uses of a
`subprocess.Popen` (pid, poll, wait, returncode) from what the server reports. When the server is
gone, the pool starts its workers as processes of its own again (`ForkServer.alive`).
"""
from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import IO, Sequence

import psutil

MESSAGE_BYTES = 1 << 16
FORK_TIMEOUT = 300.0   # seconds for the server to import what it holds and fork (cold caches are slow)


class ServerGone(Exception):
    """The fork server exited (or never started): the pool's workers start as processes, whose own
    output then says what went wrong."""


class ForkServer:
    """One pool's server, started at once and not waited for, its own output kept in a file; or a
    warm server's connection (harness.controller.warm_server): the same requests and replies."""

    def __init__(self, channel: socket.socket, env: dict[str, str] | None, cwd: Path,
                 proc: subprocess.Popen | None = None, log: IO[bytes] | None = None):
        self.channel, self.env, self.cwd = channel, env, cwd   # every worker's; env None: the server's own
        self.proc, self.log = proc, log    # one pool's server; None: a warm server, not this run's
        self.gone = False                  # the warm server's connection ended
        self.asked = 0                       # requests sent
        self.forked: list[int] = []          # pids, in the order of the requests
        self.exited: dict[int, int] = {}     # pid -> exit status, as reported

    @classmethod
    def start(cls, python: str, env: dict[str, str], cwd: Path, classes: Sequence[str]) -> ForkServer:
        """One pool's server, which dies with this process."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        log = tempfile.TemporaryFile()   # its own output, out of the terminal's way; never a pipe to drain
        proc = subprocess.Popen(
            [python, "-m", "harness.worker.fork_server", str(theirs.fileno()), *classes], cwd=cwd,
            env={**env, "OMP_NUM_THREADS": "1"}, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            pass_fds=[theirs.fileno()], start_new_session=True)
        theirs.close()
        return cls(ours, None, cwd, proc, log)

    @property
    def alive(self) -> bool:
        return not self.gone if self.proc is None else self.proc.poll() is None

    def spawn(self, env: dict[str, str], threads: int) -> ForkedProcess:
        """A worker forked with these environment variables and this many compute threads; its pipes
        at once, its pid once the server has forked it."""
        ends = [os.pipe() for _ in range(3)]   # stdin, stdout, stderr: (read, write) each
        theirs = [ends[0][0], ends[1][1], ends[2][1]]
        try:
            whole = self.env is not None   # a warm server's own environment was another run's
            request = {"env": {**(self.env or {}), **env}, "whole": whole, "cwd": str(self.cwd), "threads": threads}
            socket.send_fds(self.channel, [json.dumps(request).encode()], theirs)
        except OSError:
            self.gone = True
            for read, write in ends:
                os.close(read)
                os.close(write)
            raise ServerGone from None
        for fd in theirs:
            os.close(fd)
        self.asked += 1
        return ForkedProcess(self, self.asked - 1, os.fdopen(ends[0][1], "wb"), os.fdopen(ends[1][0], "rb"),
                             os.fdopen(ends[2][0], "rb"))

    def pid(self, index: int, deadline: float) -> int:
        """The pid of the index-th worker asked for, waiting for the server until the deadline."""
        while len(self.forked) <= index:
            self._receive(deadline)
        return self.forked[index]

    def status(self, pid: int, deadline: float | None) -> int | None:
        """The worker's exit status; None when it is still running at the deadline (None: block)."""
        while pid not in self.exited:
            if not self._receive(deadline):
                return None
        return self.exited[pid]

    def _receive(self, deadline: float | None) -> bool:
        """One message from the server; False at the deadline. ServerGone when it has exited."""
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        self.channel.settimeout(timeout)
        try:
            data = self.channel.recv(MESSAGE_BYTES)
        except (TimeoutError, BlockingIOError):
            return False
        except OSError:   # reset: it died with messages unread
            data = b""
        if not data:
            self.gone = True
            raise ServerGone
        message = json.loads(data)
        if "forked" in message:
            self.forked.append(message["forked"])
        else:
            self.exited[message["exited"]] = message["status"]
        return True

    def close(self) -> None:
        """Stop one pool's server (its workers die with it: their parent-death signal); leave a warm
        one to the next run (this run's workers end as their stdin closes)."""
        with contextlib.suppress(OSError):
            self.channel.close()
        if self.proc is None or self.log is None:
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


class ForkedProcess:
    """A worker forked by the server: what the pool uses of subprocess.Popen."""

    def __init__(self, server: ForkServer, index: int, stdin: IO[bytes], stdout: IO[bytes], stderr: IO[bytes]):
        self.server, self.index = server, index
        self.stdin, self.stdout, self.stderr = stdin, stdout, stderr
        self.returncode: int | None = None
        self._pid: int | None = None

    @property
    def pid(self) -> int | None:
        """Its pid, once the server has forked it; None when the server died first (no process)."""
        if self._pid is None and self.returncode is None:
            try:
                self._pid = self.server.pid(self.index, time.monotonic() + FORK_TIMEOUT)
            except ServerGone:
                self.returncode = 1
        return self._pid

    @property
    def unforked(self) -> bool:
        """Whether the server went before forking it: there never was a process."""
        return self.pid is None and self.returncode is not None

    def poll(self) -> int | None:
        if self.returncode is None:
            self._status(time.monotonic())
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        self._status(deadline)
        if self.returncode is None:
            raise subprocess.TimeoutExpired("forked worker", timeout or 0)
        return self.returncode

    def _status(self, deadline: float | None) -> None:
        pid = self.pid
        if pid is None or self.returncode is not None:
            return
        try:
            self.returncode = self.server.status(pid, deadline)
        except ServerGone:
            self.returncode = _status_without_server(pid, deadline)


def _status_without_server(pid: int, deadline: float | None) -> int | None:
    """The server died, so its workers die too (their parent-death signal): SIGKILL's status once
    the worker is gone or a zombie (no one may reap it here); None at the deadline."""
    while deadline is None or time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return -9
        except psutil.NoSuchProcess:
            return -9
        time.sleep(0.01)
    return None
