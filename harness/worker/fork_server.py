"""The fork server: a process that imports torch, the compilers and the backends' modules once, then
forks each worker of its pool from itself, so that a worker (the first, a spare, a replacement after
a crash or a recycled one) starts in milliseconds instead of importing everything again.

    python -m harness.worker.fork_server FD [MODULE:CLASS...]

FD is its end of a socket pair (harness.controller.forks holds the other). Each request comes
with three file descriptors, the new worker's stdin, stdout and stderr; the reply says its pid, and
when a worker exits, its exit status follows (the server is its parent and reaps it). A worker is
what `python -m harness.worker` would be: its own session, the pool's environment, its thread count.

The preloaded backends' modules are imported before the first fork; their compilers' modules
(Backend.COMPILER_MODULES) before the second. So the first worker is ready without them, and a
warm rerun, whose stages all come from the stage cache, never imports them; a worker that replaces
or joins it (a crash, a hang, recycling) has them from the server, imported once.

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
import traceback

from harness.worker.__main__ import _die_with_parent

MESSAGE_BYTES = 1 << 16


def main(argv: list[str]) -> None:
    channel = socket.socket(fileno=int(argv[0]))
    _die_with_parent()   # the controller's end: its pool, its workers with it
    import harness.worker.execute  # noqa: F401 - torch and what every case needs, once
    for spec in argv[1:]:   # the preloaded backends' modules; one that fails fails in the worker, as always
        with contextlib.suppress(Exception):
            importlib.import_module(spec.partition(":")[0])
    forks = 0
    wake_read, wake_write = socket.socketpair()
    for end in (wake_read, wake_write):
        end.setblocking(False)
    signal.set_wakeup_fd(wake_write.fileno())
    signal.signal(signal.SIGCHLD, lambda *_: None)   # only to wake the loop: a child exited
    events = selectors.DefaultSelector()
    events.register(channel, selectors.EVENT_READ)
    events.register(wake_read, selectors.EVENT_READ)
    while True:
        for key, _ in events.select():
            if key.fileobj is wake_read:
                with contextlib.suppress(BlockingIOError):
                    wake_read.recv(4096)
                continue
            data, fds, _, _ = socket.recv_fds(channel, MESSAGE_BYTES, 3)
            if not data:   # the controller closed its end: the pool is done, and so is the server,
                sys.stdout.flush()   # at once: tearing down torch's modules would keep the controller waiting
                sys.stderr.flush()
                os._exit(0)
            forks += 1
            if forks == 2:   # the first worker started without them
                _import_compilers(argv[1:])
            pid = os.fork()
            if pid == 0:
                _become_worker(json.loads(data), fds, [channel, wake_read, wake_write])
            for fd in fds:
                os.close(fd)
            channel.send(json.dumps({"forked": pid}).encode())
        _reap(channel)


def _import_compilers(specs: list[str]) -> None:
    """The preloaded backend classes' compilers' modules (Backend.COMPILER_MODULES)."""
    for module, _, name in (spec.partition(":") for spec in specs):
        with contextlib.suppress(Exception):   # as for the backends' modules: the worker says what failed
            for compiler in getattr(getattr(sys.modules.get(module), name, None), "COMPILER_MODULES", ()):
                importlib.import_module(compiler)


def _reap(channel: socket.socket) -> None:
    """Every child that has exited, its status sent (as subprocess gives it: -N for signal N)."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        channel.send(json.dumps({"exited": pid, "status": os.waitstatus_to_exitcode(status)}).encode())


def _become_worker(request: dict, fds: list[int], inherited: list[socket.socket]) -> None:
    """In the child: the pipes as stdin, stdout and stderr, its own session, the pool's environment
    and thread count; then the worker's main, as `python -m harness.worker` runs it."""
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
        os.environ.update(request["env"])
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
