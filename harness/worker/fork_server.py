"""The fork server: a process that imports torch, the compilers and the backends' modules once, then
forks each worker of its pool from itself, so that a worker (the first, a spare, a replacement after
a crash or a recycled one) starts in milliseconds instead of importing everything again.

    python -m harness.worker.fork_server FD [MODULE:CLASS...]
    python -m harness.worker.fork_server --listen PATH IDLE_SECONDS KIND [MODULE:CLASS...]

FD is its end of a socket pair (harness.controller.forks holds the other): one pool's server, which
dies with its controller. With --listen it listens on the Unix socket PATH and serves each pool
that connects (harness.controller.warm_server), until none has used it for IDLE_SECONDS: KIND
`warm`, a warm server that outlives the runs, or `run`, the server of one run's pools (the xdist
workers of a run: IDLE_SECONDS 0).

Each request comes with three file descriptors, the new worker's stdin, stdout and stderr, and
its environment and folder; the reply says its pid, and when a worker exits, its exit status follows
on the connection that asked for it (the server is its parent and reaps it). A worker is what
`python -m harness.worker` would be: its own session, the run's environment, its thread count.

The preloaded backends' modules are imported before the first fork; their compilers' modules
(Backend.COMPILER_MODULES) before the second. So the first worker is ready without them, and a
warm rerun, whose stages all come from the stage cache, never imports them; a worker that replaces
or joins it (a crash, a hang, recycling, another xdist worker's pool) has them from the server,
imported once. A warm server never imports them: a compiler its developer rebuilds between two
runs would be stale in it.

GNU OpenMP is not fork-safe once its threads exist (../shared/NOTES.md: a child of a server that
had run a case deadlocked), so the server starts with OMP_NUM_THREADS=1 and computes nothing; each
worker sets its own thread count after the fork.
"""
from __future__ import annotations

import contextlib
import importlib
import json
import os
import selectors
import signal
import socket
import sys
import time
import traceback

from harness.worker.__main__ import _die_with_parent

MESSAGE_BYTES = 1 << 16


def main(argv: list[str]) -> None:
    if argv[0] == "--listen":
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        listener.bind(argv[1])   # before the imports: a run connects at once, and its requests wait
        listener.listen(16)
        _preload(argv[4:])
        Server([], listener, float(argv[2]), argv[4:], compilers=argv[3] == "run").serve()
    else:
        channel = socket.socket(fileno=int(argv[0]))
        _die_with_parent()   # the controller's end: its pool, its workers with it
        _preload(argv[1:])
        Server([channel], None, 0.0, argv[1:]).serve()


def _preload(specs: list[str]) -> None:
    import harness.worker.execute  # noqa: F401 - torch and what every case needs, once
    for spec in specs:   # the preloaded backends' modules; one that fails fails in the worker, as always
        with contextlib.suppress(Exception):
            importlib.import_module(spec.partition(":")[0])


class Server:
    """The loop: requests from each connected run, forks, and exit statuses to the run that asked.
    One pool's server (no listener) ends with its one connection; a warm one after IDLE seconds
    without a connection or a worker."""

    def __init__(self, clients: list[socket.socket], listener: socket.socket | None, idle: float, specs: list[str],
                 compilers: bool = True):
        self.clients, self.listener, self.idle, self.specs = clients, listener, idle, specs
        self.compilers = compilers   # whether it imports the compilers' modules before its second fork
        self.owners: dict[int, socket.socket | None] = {}   # worker pid -> the connection that asked for it
        self.forks = 0
        self.idle_since = time.monotonic()
        self.wake_read, self.wake_write = socket.socketpair()
        for end in (self.wake_read, self.wake_write):
            end.setblocking(False)
        signal.set_wakeup_fd(self.wake_write.fileno())
        signal.signal(signal.SIGCHLD, lambda *_: None)   # only to wake the loop: a child exited
        self.events = selectors.DefaultSelector()
        for end in [*clients, self.wake_read, *([listener] if listener else [])]:
            self.events.register(end, selectors.EVENT_READ)

    def serve(self) -> None:
        while True:
            ready = self.events.select(self._timeout())
            if not ready and self._idle() and time.monotonic() >= self.idle_since + self.idle:
                self._exit()
            for key, _ in ready:
                if key.fileobj is self.wake_read:
                    with contextlib.suppress(BlockingIOError):
                        self.wake_read.recv(4096)
                elif key.fileobj is self.listener:
                    with contextlib.suppress(OSError):   # a run that gave up at once, no descriptors left
                        client, _ = self.listener.accept()
                        self.clients.append(client)
                        self.events.register(client, selectors.EVENT_READ)
                else:
                    self._request(key.fileobj)   # type: ignore[arg-type]
            self._reap()

    def _timeout(self) -> float | None:
        if self.listener is None or not self._idle():
            return None
        return max(0.0, self.idle_since + self.idle - time.monotonic())

    def _idle(self) -> bool:
        return not self.clients and not self.owners

    def _request(self, client: socket.socket) -> None:
        try:
            data, fds, _, _ = socket.recv_fds(client, MESSAGE_BYTES, 3)
        except OSError:   # reset: the run died; a warm server serves the others on
            data, fds = b"", []
        if not data:   # the run closed its end: its pool is done
            self._drop(client)
            return
        self.forks += 1
        if self.forks == 2 and self.compilers:   # the first worker started without them
            _import_compilers(self.specs)
        pid = os.fork()
        if pid == 0:
            inherited = [*self.clients, self.wake_read, self.wake_write, *([self.listener] if self.listener else [])]
            _become_worker(json.loads(data), fds, inherited)
        for fd in fds:
            os.close(fd)
        self.owners[pid] = client
        with contextlib.suppress(OSError):   # the run went meanwhile: its worker's keeper ends the worker
            client.send(json.dumps({"forked": pid}).encode())

    def _drop(self, client: socket.socket) -> None:
        if self.listener is None:   # one pool's server: done, at once (tearing down torch's
            sys.stdout.flush()      # modules would keep the controller waiting)
            sys.stderr.flush()
            os._exit(0)
        self.events.unregister(client)
        self.clients.remove(client)
        client.close()
        for pid, owner in self.owners.items():
            if owner is client:
                self.owners[pid] = None   # reaped all the same; its keeper ends it (its stdin closed)
        self.idle_since = time.monotonic()

    def _reap(self) -> None:
        """Every child that has exited, its status sent to its run (as subprocess gives it: -N for
        signal N)."""
        while self.owners:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            owner = self.owners.pop(pid, None)
            if owner is not None:
                with contextlib.suppress(OSError):
                    owner.send(json.dumps({"exited": pid, "status": os.waitstatus_to_exitcode(status)}).encode())
            self.idle_since = time.monotonic()

    def _exit(self) -> None:
        """A listening server's end, unused for its idle time: its socket removed first, so that the
        next run starts another rather than connecting to one that is leaving; then its lock, and
        its log unless something was written there."""
        assert self.listener is not None
        path = self.listener.getsockname()
        with contextlib.suppress(OSError):
            os.unlink(path)
        base = path.removesuffix(".sock")
        sys.stdout.flush()
        sys.stderr.flush()
        with contextlib.suppress(OSError):
            os.unlink(f"{base}.lock")
        with contextlib.suppress(OSError):   # apart: a lock already gone must not keep an empty log
            if os.path.getsize(f"{base}.log") == 0:
                os.unlink(f"{base}.log")
        os._exit(0)


def _import_compilers(specs: list[str]) -> None:
    """The preloaded backend classes' compilers' modules (Backend.COMPILER_MODULES)."""
    for module, _, name in (spec.partition(":") for spec in specs):
        with contextlib.suppress(Exception):   # as for the backends' modules: the worker says what failed
            for compiler in getattr(getattr(sys.modules.get(module), name, None), "COMPILER_MODULES", ()):
                importlib.import_module(compiler)


def _become_worker(request: dict, fds: list[int], inherited: list[socket.socket]) -> None:
    """In the child: the pipes as stdin, stdout and stderr, its own session, the run's environment,
    folder and thread count; then the worker's main, as `python -m harness.worker` runs it."""
    status = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for end in inherited:
            end.close()
        os.setsid()   # a group of its own: killing it kills its compilers, not the server
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        if request["whole"]:
            os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        import torch
        torch.set_num_threads(int(request["threads"]))
        from harness.worker.__main__ import main as worker_main
        worker_main()
        status = 0
    except BaseException:   # noqa: BLE001 - whatever it was, the controller reads it in the worker's output
        traceback.print_exc()
    finally:
        sys.stderr.flush()
        os._exit(status)


if __name__ == "__main__":
    main(sys.argv[1:])
