"""Controller side of the worker protocol: run a case in a worker, survive hangs and crashes.

A worker is reused across cases (imports are paid once), and each is forked from the pool's fork
server (harness.controller.forks), which imported torch and the backends' modules once: a
replacement or a recycled worker is ready in milliseconds. When a case hangs past its timeout
the worker's process group is killed; when it crashes, its exit signal and the tail of its
output are recorded. Either way a replacement takes over and the run goes on.

While a case runs, the controller also watches the worker: past its memory limit (the resident
memory of the worker and every process under it, such as iree-compile or Inductor's compile
workers, read with psutil) the whole tree is killed and the case is `crashed` with "memory
limit". Its output comes through a pipe that the controller drains into a buffer holding only
the last OUTPUT_CAP_BYTES, so a flood neither blocks the worker nor fills memory or disk. A worker is
recycled (replaced by the spare) after `recycle_after` cases or once its resident memory passes
`recycle_rss_mb`, so state that leaks from case to case stays bounded. Every worker creates the
`preload` backends before it says ready, so a spare that takes over is fully warm; the first says
which it could not create (`preload_problems`), and the run stops before its first case.
"""
from __future__ import annotations

import contextlib
import os
import selectors
import signal
import time
from pathlib import Path
from typing import Sequence

import psutil

from harness import native_stacks
from harness.case_findings import Findings
from harness.controller import warm_server
from harness.controller.forks import ForkedProcess, ForkServer, ServerGone
from harness.controller.process_tree import ProcessTree
from harness.controller.worker_start import process_env, start_worker
from harness.helper_process import THIS_PYTHON, Interpreter
from harness.outcomes import Outcome, Phase
from harness.protocol import CacheSettings, CaseResult, Message, PhaseEvent, Ready, RunRequest, Start, decode, encode
from harness.stages.keys import BUILDS_MEMO

STARTUP_TIMEOUT = 300.0   # seconds for a worker to import torch and say ready (cold caches are slow)


TAIL_BYTES = 4096         # how much of a dead worker's output goes into its result


TAIL_LINES = 25


STACK_DUMP_WAIT = 1.0     # seconds to wait for a stuck worker's stack dump before killing it


OUTPUT_CAP_BYTES = 1 << 20  # of a worker's output, the last this many bytes are kept


WATCH_INTERVAL = 0.1      # seconds between checks of a busy worker's memory


NATIVE_FRAMES = 40        # frames of a native stack kept in a result


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

    def send(self, message: RunRequest) -> None:
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


class WorkerPool:
    """Runs cases one at a time in a reusable worker, with a spare started after the first loss."""

    def __init__(self, rootdir: Path, recycle_after: int | None = None, recycle_rss_mb: float | None = None,
                 preload: Sequence[dict] = (), env: dict[str, str] | None = None,
                 interpreter: Interpreter = THIS_PYTHON, cache: CacheSettings | None = None,
                 fork_server: bool = True, warm: bool = False, run: str | None = None):
        self.rootdir = Path(rootdir)
        self.interpreter = interpreter
        self.env = dict(env or {})            # set in every worker, beside the harness's own variables
        self.preload = list(preload)          # backend specs every worker creates before it is ready
        self.cache = cache                    # the stage cache every worker uses; None: none
        self.recycle_after = recycle_after    # cases per worker; None: no limit
        self.recycle_rss_mb = recycle_rss_mb  # resident MiB after which a worker is replaced
        self.worker: Worker | None = None
        self.spare: Worker | None = None
        self.forking = fork_server and interpreter == THIS_PYTHON   # another Python's workers start as processes
        self.forks: ForkServer | None = None
        self.warm = warm   # forked from a warm server (harness.controller.warm_server), kept between runs
        self.run_id = run  # else, with an xdist run's id, from the server its pools share (one torch import)

    def run(self, request: RunRequest, timeout: float, memory_limit_mb: float | None = None) -> CaseResult:
        """Send one case; return the worker's result, or a crashed / timed_out result."""
        worker = self._current()
        phase = Phase.SETUP
        started = time.monotonic()
        sent = False
        try:
            if not self._ready(worker):  # a preloaded backend killed it, or its server went: retry
                return self.run(request, timeout, memory_limit_mb)
            worker.memory_limit_mb = memory_limit_mb
            worker.send(request)
            sent = True
            deadline = time.monotonic() + timeout
            while True:
                message = worker.receive(deadline, f"phase {phase.value}")
                if isinstance(message, PhaseEvent):
                    phase = message.phase
                elif isinstance(message, CaseResult):
                    self._recycle_if_due(worker)
                    return message
        except WorkerLost as lost:
            text, frame = lost.message, lost.frame
            if lost.outcome is Outcome.TIMED_OUT and sent:
                frame, stacks = worker.where_stuck()
                where = f"; hung in {frame}" if frame else ""
                text = f"timed out after {timeout:g} s in phase {phase.value}{where}{stacks}"
            self._replace()
            seconds = round(time.monotonic() - started, 6)
            return CaseResult(outcome=lost.outcome, phase=phase, message=text, frame=frame,
                              findings=Findings(phase_durations={phase.value: seconds}))
        except BaseException:  # Ctrl-C or pytest-timeout mid-case: the worker's next answer would
            worker.kill()      # belong to this case, so it must not serve another
            self.worker = None
            raise

    def start(self) -> None:
        """Start the first worker now (it imports torch and the backends while pytest collects)."""
        self._current()

    def preload_problems(self) -> dict[str, dict]:
        """The preloaded backends the first worker could not create, once it is ready (by name:
        harness.worker.backend_check's problems); empty when a preloaded backend killed it: that one
        then costs only its own cases."""
        worker = self._current()
        if self._ready(worker):
            return worker.problems
        return self.preload_problems() if self.preload else {}   # its server went: the next worker's

    def close(self) -> None:
        for worker in (self.worker, self.spare):
            if worker is not None:
                worker.kill()
        self.worker = self.spare = None
        if self.forks is not None:
            self.forks.close()
            self.forks = None

    def _current(self) -> Worker:
        if self.worker is None:
            self.worker, self.spare = self.spare or self._new_worker(), None
        return self.worker

    def _ready(self, worker: Worker) -> bool:
        """Wait for the worker's start-up. If it dies there while preloading backends, stop
        preloading (one backend crashing on import must cost only its own cases) and say False."""
        try:
            worker.wait_ready()
            return True
        except WorkerLost:
            if isinstance(worker.proc, ForkedProcess) and worker.proc.unforked:
                self.close()   # its server went before it forked this worker (a warm one leaving, say):
                self.forking = False   # no case ran, and the next workers start as processes
                return False
            if not self.preload:
                raise
            self.preload = []
            self.close()
            return False

    def _new_worker(self) -> Worker:
        return Worker(self.rootdir, Start(self.preload, self.cache), self.env, self.interpreter, self._fork_server())

    def _fork_server(self) -> ForkServer | None:
        """The server the pool's workers are forked from, started with the first. One that died (a
        backend's module crashed it on import, say) is not restarted: the workers start as processes."""
        if not self.forking:
            return None
        if self.forks is not None and not self.forks.alive:
            self.forks.close()
            self.forks, self.forking = None, False
            return None
        if self.forks is None:
            classes = [spec["class"] for spec in self.preload if spec.get("class")]
            env = process_env(self.rootdir, self.env, self.interpreter)
            if self.warm or self.run_id:
                with contextlib.suppress(ServerGone, OSError):   # none could start: one of the pool's own
                    memo = Path(self.cache.dir) / BUILDS_MEMO if self.cache and self.cache.mode != "off" else None
                    self.forks = warm_server.connect(self.interpreter.python, env, self.rootdir, classes, memo,
                                                     None if self.warm else self.run_id)
            self.forks = self.forks or ForkServer.start(self.interpreter.python, env, self.rootdir, classes)
        return self.forks

    def fresh_worker(self) -> None:
        """The next case runs in a worker that has run no case yet (a rerun of a failure)."""
        if self.worker is not None and self.worker.cases > 0:
            self._replace()

    def _recycle_if_due(self, worker: Worker) -> None:
        worker.cases += 1
        if ((self.recycle_after and worker.cases >= self.recycle_after)
                or (self.recycle_rss_mb and worker.rss_mb() > self.recycle_rss_mb)):
            self._replace()

    def _replace(self) -> None:
        """Drop the current worker; promote the spare and start a new spare in the background."""
        if self.worker is not None:
            self.worker.kill()
        self.worker, self.spare = self.spare or self._new_worker(), self._new_worker()


def _tail(output: str) -> str:
    lines = output[-TAIL_BYTES:].splitlines()[-TAIL_LINES:]
    return ("\n--- last output of the worker ---\n" + "\n".join(lines)) if lines else ""


def _listed(frames: list[str]) -> str:
    more = f"\n  ... {len(frames) - NATIVE_FRAMES} more frames" if len(frames) > NATIVE_FRAMES else ""
    return "\n".join("  " + f for f in frames[:NATIVE_FRAMES]) + more

