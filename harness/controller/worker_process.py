"""One worker process as the controller sees it: its pipes, the tail of its output, its memory,
and how it is lost (a crash, a hang, a memory overrun) or ended. harness.controller.pool runs
cases on these; a worker is forked by the pool's fork server (harness.controller.forks), else
started as `python -m harness.worker` (harness.controller.worker_start)."""
from __future__ import annotations

import contextlib
import os
import selectors
import signal
import time
from pathlib import Path

import psutil

from harness import native_stacks
from harness.controller.forks import ForkServer
from harness.controller.process_tree import ProcessTree
from harness.controller.worker_start import start_worker
from harness.helper_process import THIS_PYTHON, Interpreter
from harness.outcomes import Outcome
from harness.protocol import Flush, Flushed, Message, Ready, RunRequest, Start, decode, encode

STARTUP_TIMEOUT = 300.0   # seconds for a worker to import torch and say ready (cold caches are slow)


TAIL_BYTES = 4096         # how much of a dead worker's output goes into its result


TAIL_LINES = 25


STACK_DUMP_WAIT = 1.0     # seconds to wait for a stuck worker's stack dump before killing it


OUTPUT_CAP_BYTES = 1 << 20  # of a worker's output, the last this many bytes are kept


WATCH_INTERVAL = 0.1      # seconds between checks of a busy worker's memory


NATIVE_FRAMES = 40        # frames of a native stack kept in a result


FLUSH_TIMEOUT = 60.0      # seconds a worker may take to write its queued stage-cache entries before it ends


class WorkerLost(Exception):
    """The worker died or stopped answering; `outcome` says which."""

    def __init__(self, outcome: Outcome, message: str, frame: str | None = None):
        super().__init__(message)
        self.outcome = outcome
        self.message = message
        self.frame = frame  # the innermost meaningful native or Python frame, when known


class Worker:
    """One worker process, its pipes and the tail of its output: forked by the pool's fork server
    (harness.controller.forks), else started as `python -m harness.worker`."""

    def __init__(self, rootdir: Path, start: Start, env: dict[str, str] | None = None,
                 interpreter: Interpreter = THIS_PYTHON, forks: ForkServer | None = None):
        self.proc = start_worker(rootdir, env, interpreter, forks)
        assert self.proc.stdin and self.proc.stdout and self.proc.stderr   # all three piped
        self.stdin, self.stdout, self.stderr = self.proc.stdin, self.proc.stdout, self.proc.stderr
        self._tree: ProcessTree | None = None   # a forked worker's pid comes once the server has forked it
        self.output = bytearray()   # the last OUTPUT_CAP_BYTES the worker printed (its fd 1 is fd 2)
        self.memory_limit_mb: float | None = None  # of the case being run
        self.cases = 0
        self.selector = selectors.DefaultSelector()  # waits for replies and output, with a deadline
        for stream in (self.stdout, self.stderr):
            os.set_blocking(stream.fileno(), False)
            self.selector.register(stream, selectors.EVENT_READ)
        self.buffer = b""
        self.ready = False
        self.problems: dict[str, dict] = {}   # Ready's: the preloaded backends it could not create
        self._reading, self._read_at = (0.0, 0.0), -WATCH_INTERVAL   # the last memory reading, and when
        with contextlib.suppress(BrokenPipeError):   # dead already: wait_ready finds out
            self.stdin.write(encode(start).encode())
            self.stdin.flush()

    @property
    def tree(self) -> ProcessTree:
        if self._tree is None:
            self._tree = ProcessTree(self.proc.pid)
        return self._tree

    def wait_ready(self) -> None:
        if not self.ready:
            message = self.receive(time.monotonic() + STARTUP_TIMEOUT, "worker start-up")
            assert isinstance(message, Ready), message
            self.ready, self.problems = True, message.problems

    def flush(self) -> None:
        """Before the worker ends: wait for the stage-cache entries it still writes (a worker that
        dies or stops answering meanwhile loses only those)."""
        if not self.ready or self.cases == 0 or self.proc.returncode is not None:
            return
        with contextlib.suppress(WorkerLost):
            self.send(Flush())
            deadline = time.monotonic() + FLUSH_TIMEOUT
            while not isinstance(self.receive(deadline, "writing its stage-cache entries"), Flushed):
                pass

    def send(self, message: RunRequest | Flush) -> None:
        self.drain()
        self.output.clear()  # each case's message shows its own output only
        try:
            self.stdin.write(encode(message).encode())
            self.stdin.flush()
        except BrokenPipeError:
            raise self.lost("sending the case") from None

    def receive(self, deadline: float, doing: str) -> Message:
        """The next message, or WorkerLost when the worker dies or the deadline passes. The
        worker's output is drained meanwhile, so a flood never blocks it and never piles up."""
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WorkerLost(Outcome.TIMED_OUT, f"no answer within the timeout during {doing}")
            ready = self.selector.select(min(remaining, WATCH_INTERVAL))
            self.check_memory(doing)
            for key, _ in ready:
                if key.fileobj is self.stderr:
                    self.drain()
                    continue
                chunk = self.stdout.read()
                if chunk == b"":  # end of file: the worker has exited
                    raise self.lost(doing)
                self.buffer += chunk or b""  # None: nothing to read after all
        line, _, self.buffer = self.buffer.partition(b"\n")
        return decode(line)

    def drain(self) -> bool:
        """Move what the worker has printed into the tail buffer; False once nothing more comes."""
        got = False
        for _ in range(64):  # at most 64 MiB per call: a flood must not keep the controller here
            try:
                chunk = os.read(self.stderr.fileno(), 1 << 20)
            except (BlockingIOError, OSError):
                return got
            if not chunk:
                return got
            got = True
            self.output += chunk
            if len(self.output) > OUTPUT_CAP_BYTES:
                del self.output[:len(self.output) - OUTPUT_CAP_BYTES]
        return got

    def memory(self) -> tuple[float, float]:
        """Resident MiB of the worker's tree and of its children, read at most once per
        WATCH_INTERVAL: a reading lists every process on the machine (0.5 ms and more), which
        would cost a case of a millisecond more than its run."""
        now = time.monotonic()
        if now - self._read_at >= WATCH_INTERVAL:
            self._reading, self._read_at = self.tree.rss_mb(), now
        return self._reading

    def check_memory(self, doing: str) -> None:
        rss, children = self.memory()
        if self.memory_limit_mb is not None and rss > self.memory_limit_mb:
            self.kill_group()
            self.proc.wait()
            of_children = f", {children:.0f} MiB of it in child processes" if children >= 1 else ""
            raise WorkerLost(Outcome.CRASHED, f"worker killed by the harness: memory limit of "
                             f"{self.memory_limit_mb:g} MiB exceeded (resident {rss:.0f} MiB{of_children}) "
                             f"during {doing}{self.tail()}")

    def rss_mb(self) -> float:
        """The resident memory of the worker and its child processes in MiB (0 once it has exited)."""
        return self.memory()[0]

    def lost(self, doing: str) -> WorkerLost:
        """The worker has exited: say how, where (when it could tell), and its last output."""
        code = self.proc.wait()
        self.drain()
        how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exited with status {code}"
        output, native = native_stacks.split_crash_dump(self.text())
        frames = native_stacks.below_handler(native_stacks.main_thread(native or ""))
        frame = native_stacks.culprit(frames)
        at = f" in {frame}" if frame else ""
        stack = f"\n--- native stack at the crash (py-spy) ---\n{_listed(frames)}" if frames else ""
        return WorkerLost(Outcome.CRASHED, f"worker {how}{at} during {doing}{_tail(output)}{stack}", frame)

    def tail(self) -> str:
        self.drain()
        return _tail(self.text())

    def text(self) -> str:
        return self.output.decode(errors="replace")

    def where_stuck(self) -> tuple[str | None, str]:
        """A stuck worker's culprit frame and its stacks: native ones from py-spy, then the
        Python ones faulthandler prints on SIGUSR1 (in the output tail)."""
        pid = self.proc.pid
        if pid is None:   # never forked: nothing to ask
            return None, self.tail()
        frames = native_stacks.main_thread(native_stacks.dump(pid) or "")
        stack = f"\n--- native stack of the stuck worker (py-spy) ---\n{_listed(frames)}" if frames else ""
        self.drain()
        try:
            os.kill(pid, signal.SIGUSR1)
        except ProcessLookupError:
            return native_stacks.culprit(frames), stack + self.tail()
        deadline = time.monotonic() + STACK_DUMP_WAIT
        while time.monotonic() < deadline and not self.drain():
            time.sleep(0.02)
        time.sleep(0.05)  # let the dump finish
        return native_stacks.culprit(frames), stack + self.tail()

    def kill_group(self) -> None:
        """SIGKILL the worker's process group, which outlives the worker while a child is in it, and
        every descendant seen, also those that left the group (their own session)."""
        survivors = self.tree.members()
        pid = self.proc.pid
        running = self.proc.returncode is None
        if pid is not None and (running or survivors):  # not reaped, or held by a child: still this group's id
            # and the worker itself while it runs: a fork just made may have no group of its own yet
            for kill in (os.killpg, os.kill) if running else (os.killpg,):
                try:
                    kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        for process in survivors:
            try:
                process.kill()
            except psutil.Error:
                pass

    def kill(self) -> None:
        self.kill_group()
        self.proc.wait()
        self.selector.close()
        for stream in (self.stdin, self.stdout, self.stderr):
            try:
                stream.close()
            except BrokenPipeError:   # a request still buffered for the dead worker
                pass


def _tail(output: str) -> str:
    lines = output[-TAIL_BYTES:].splitlines()[-TAIL_LINES:]
    return ("\n--- last output of the worker ---\n" + "\n".join(lines)) if lines else ""


def _listed(frames: list[str]) -> str:
    more = f"\n  ... {len(frames) - NATIVE_FRAMES} more frames" if len(frames) > NATIVE_FRAMES else ""
    return "\n".join("  " + f for f in frames[:NATIVE_FRAMES]) + more

