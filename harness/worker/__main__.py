"""The worker process, started by harness.controller.pool as `python -m harness.worker`: it builds
each case, computes golden values, compiles, runs and compares (harness.worker.execute).

It speaks harness.protocol: requests on stdin, replies on the original stdout. fd 1 is then
pointed at stderr, so whatever a case or compiler prints lands in the captured log and cannot
corrupt the protocol. Its first request, Start, names the backends to create before Ready (which
says those that could not be) and the stage cache the backends use. Before the controller ends a
worker that ran cases it sends Flush: the worker writes the stage-cache entries its writer thread
still holds (harness.stages.writer) and says Flushed.

A worker dies with the controller (PR_SET_PDEATHSIG), even a SIGKILLed one; the processes it
started (a compiler, say) would outlive both, so a keeper forked first waits for the controller's
end of stdin to close and then kills the worker's process group, those processes with it.
"""
from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import os
import select
import signal
import sys
from typing import TYPE_CHECKING

from harness.protocol import KEEPER_NAME

if TYPE_CHECKING:
    from harness.protocol import Message


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this worker when the controller dies, even mid native call."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() == 1:  # the parent died before prctl took effect
        os._exit(1)


def _keep_group() -> None:
    """Fork the keeper: it holds no pipe but stdin's read end, and once every writer is gone (the
    controller exited, was killed or dropped this worker) it SIGKILLs the worker's process group."""
    if os.fork() != 0:
        return
    try:
        os.closerange(1, os.sysconf("SC_OPEN_MAX"))   # the controller must see the worker's EOF
        with contextlib.suppress(OSError, AttributeError):   # its name: the worker's memory leaves it out
            ctypes.CDLL(None).prctl(15, KEEPER_NAME.encode())   # PR_SET_NAME
        waiting = select.poll()
        waiting.register(0, 0)   # no events asked: it wakes on the hang-up alone
        while not waiting.poll():
            pass
        os.killpg(os.getpgid(0), signal.SIGKILL)
    finally:
        os._exit(0)


def main() -> None:
    _keep_group()   # before the harness's modules load: the keeper's copy of the pages stays small
    from harness.protocol import Flush, Flushed, Ready, RunRequest, Start, decode, encode
    from harness.stages.reuse import flush_cache, use_cache
    from harness.worker.crash_handler import install_crash_dump
    from harness.worker.session import Session

    reply = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the controller decides when workers stop
    faulthandler.disable()  # PYTHONFAULTHANDLER enabled it at start-up; it must come after:
    install_crash_dump()    # it prints the Python stack, then chains to the native stack dump
    faulthandler.enable(all_threads=False)   # the crashing thread's: not the stage-cache writer's too
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # the controller asks "where are you?" before a kill
    _die_with_parent()

    def send(message: Message) -> None:
        reply.write(encode(message))

    from harness.worker.execute import execute  # imports torch: before "ready", off any case's clock
    session = Session(send, execute)
    line = sys.stdin.readline()
    if not line:   # the controller is gone already
        return
    start = decode(line)
    assert isinstance(start, Start), start
    use_cache(start.cache, background=True)   # before the backends: Inductor's follows it from its __init__
    problems = session.preload(start.preload)
    send(Ready(os.getpid(), problems))
    for line in sys.stdin:
        request = decode(line)
        if isinstance(request, RunRequest):
            send(session.run(request))
        elif isinstance(request, Flush):
            flush_cache()
            send(Flushed())


if __name__ == "__main__":
    main()

