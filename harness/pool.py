"""Controller side of the worker protocol: run a case in a worker, survive hangs and crashes.

A worker is reused across cases (imports are paid once). When a case hangs past its timeout
the worker's process group is killed; when it crashes, its exit signal and the tail of its
output are recorded. Either way a replacement takes over and the run goes on.

While a case runs, the controller also watches the worker: past its memory limit (resident
memory, read from /proc) it is killed and the case is `crashed` with "memory limit"; its output
is captured in a file that is cut back to its tail whenever it outgrows OUTPUT_CAP_BYTES. A
worker is recycled (replaced by the spare) after `recycle_after` cases or once its resident
memory passes `recycle_rss_mb`, so state that leaks from case to case stays bounded.
"""
from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import native_stack
from harness.outcomes import Outcome, Phase

STARTUP_TIMEOUT = 300.0   # seconds for a worker to import torch and say ready (cold caches are slow)
TAIL_BYTES = 4096         # how much of a dead worker's output goes into its result
TAIL_LINES = 25
STACK_DUMP_WAIT = 1.0     # seconds to wait for a stuck worker's stack dump before killing it
CRASH_DUMP_BYTES = 256 * 1024  # where in a crashed worker's log to look for its native stack
OUTPUT_CAP_BYTES = 8 * 1024 * 1024  # a worker's captured output is cut back to its tail beyond this
WATCH_INTERVAL = 0.1      # seconds between checks of a busy worker's memory and output size
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
NATIVE_FRAMES = 40        # frames of a native stack kept in a result


class WorkerLost(Exception):
    """The worker died or stopped answering; `outcome` says which."""

    def __init__(self, outcome: Outcome, message: str, frame: str | None = None):
        super().__init__(message)
        self.outcome = outcome
        self.message = message
        self.frame = frame  # the innermost meaningful native or Python frame, when known


class Worker:
    """One worker process, its pipes and its captured output."""

    def __init__(self, rootdir: Path):
        self.log = tempfile.TemporaryFile()  # stdout+stderr of the worker; truncated per case
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(rootdir), os.environ.get("PYTHONPATH")])),
                   PYTHONFAULTHANDLER="1", PYTHONUNBUFFERED="1")
        # The worker appends (O_APPEND), so the controller may cut the file back under it.
        with open(f"/proc/self/fd/{self.log.fileno()}", "ab") as output:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "harness.worker"], cwd=rootdir, env=env,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=output,
                start_new_session=True)  # Ctrl-C reaches the controller only; it stops the workers
        self.memory_limit_mb: float | None = None  # of the case being run
        self.cases = 0
        os.set_blocking(self.proc.stdout.fileno(), False)
        self.selector = selectors.DefaultSelector()  # waits for the worker's replies, with a deadline
        self.selector.register(self.proc.stdout, selectors.EVENT_READ)
        self.buffer = b""
        self.ready = False

    def wait_ready(self) -> None:
        if not self.ready:
            message = self.receive(time.monotonic() + STARTUP_TIMEOUT, "worker start-up")
            assert message["type"] == "ready", message
            self.ready = True

    def send(self, message: dict) -> None:
        self.log.seek(0)
        self.log.truncate()
        try:
            self.proc.stdin.write((json.dumps(message) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise self.lost("sending the case") from None

    def receive(self, deadline: float, doing: str) -> dict:
        """The next message, or WorkerLost when the worker dies or the deadline passes."""
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WorkerLost(Outcome.TIMED_OUT, f"no answer within the timeout during {doing}")
            if not self.selector.select(min(remaining, WATCH_INTERVAL)):
                self.watch(doing)
                continue
            chunk = self.proc.stdout.read()
            if chunk == b"":  # end of file: the worker has exited
                raise self.lost(doing)
            self.buffer += chunk or b""  # None: nothing to read after all
        line, _, self.buffer = self.buffer.partition(b"\n")
        return json.loads(line)

    def watch(self, doing: str) -> None:
        """Between replies: enforce the memory limit and keep the captured output bounded."""
        rss = self.rss_mb()
        if self.memory_limit_mb is not None and rss > self.memory_limit_mb:
            self.kill_group()
            self.proc.wait()
            raise WorkerLost(Outcome.CRASHED, f"worker killed by the harness: memory limit of "
                             f"{self.memory_limit_mb:g} MiB exceeded (resident {rss:.0f} MiB) during {doing}"
                             f"{self.tail()}")
        if os.fstat(self.log.fileno()).st_size > OUTPUT_CAP_BYTES:
            kept = self._log_end(CRASH_DUMP_BYTES).encode()
            self.log.truncate(0)
            self.log.seek(0)
            self.log.write(b"[... earlier output cut by the harness ...]\n" + kept)
            self.log.flush()

    def rss_mb(self) -> float:
        """The worker's resident memory in MiB (0 once it has exited)."""
        try:
            with open(f"/proc/{self.proc.pid}/statm") as statm:
                return int(statm.read().split()[1]) * PAGE_SIZE / 2**20
        except (OSError, IndexError, ValueError):
            return 0.0

    def lost(self, doing: str) -> WorkerLost:
        """The worker has exited: say how, where (when it could tell), and its last output."""
        code = self.proc.wait()
        how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exited with status {code}"
        output, native = native_stack.split_crash_dump(self._log_end(CRASH_DUMP_BYTES))
        frames = native_stack.below_handler(native_stack.main_thread(native or ""))
        frame = native_stack.culprit(frames)
        at = f" in {frame}" if frame else ""
        stack = f"\n--- native stack at the crash (py-spy) ---\n{_listed(frames)}" if frames else ""
        return WorkerLost(Outcome.CRASHED, f"worker {how}{at} during {doing}{_tail(output)}{stack}", frame)

    def tail(self) -> str:
        return _tail(self._log_end(TAIL_BYTES))

    def _log_end(self, size: int) -> str:
        self.log.seek(0, os.SEEK_END)
        self.log.seek(max(0, self.log.tell() - size))
        return self.log.read().decode(errors="replace")

    def where_stuck(self) -> tuple[str | None, str]:
        """A stuck worker's culprit frame and its stacks: native ones from py-spy, then the
        Python ones faulthandler prints on SIGUSR1 (in the output tail)."""
        frames = native_stack.main_thread(native_stack.dump(self.proc.pid) or "")
        stack = f"\n--- native stack of the stuck worker (py-spy) ---\n{_listed(frames)}" if frames else ""
        self.log.seek(0, os.SEEK_END)
        before = self.log.tell()
        try:
            os.kill(self.proc.pid, signal.SIGUSR1)
        except ProcessLookupError:
            return native_stack.culprit(frames), stack + self.tail()
        deadline = time.monotonic() + STACK_DUMP_WAIT
        while time.monotonic() < deadline and os.fstat(self.log.fileno()).st_size == before:
            time.sleep(0.02)
        time.sleep(0.05)  # let the dump finish
        return native_stack.culprit(frames), stack + self.tail()

    def kill_group(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def kill(self) -> None:
        self.kill_group()
        self.proc.wait()
        self.selector.close()
        for stream in (self.proc.stdin, self.proc.stdout, self.log):
            stream.close()


class WorkerPool:
    """Runs cases one at a time in a reusable worker, with a spare started after the first loss."""

    def __init__(self, rootdir: Path, recycle_after: int | None = None, recycle_rss_mb: float | None = None):
        self.rootdir = Path(rootdir)
        self.recycle_after = recycle_after    # cases per worker; None: no limit
        self.recycle_rss_mb = recycle_rss_mb  # resident MiB after which a worker is replaced
        self.worker: Worker | None = None
        self.spare: Worker | None = None

    def run(self, request: dict, timeout: float, memory_limit_mb: float | None = None) -> dict:
        """Send one case; return the worker's result, or a crashed / timed_out result."""
        worker = self._current()
        phase = Phase.SETUP
        started = time.monotonic()
        sent = False
        try:
            worker.wait_ready()
            worker.memory_limit_mb = memory_limit_mb
            worker.send(request)
            sent = True
            deadline = time.monotonic() + timeout
            while True:
                message = worker.receive(deadline, f"phase {phase.value}")
                if message["type"] == "phase":
                    phase = Phase(message["phase"])
                elif message["type"] == "result":
                    self._recycle_if_due(worker)
                    return message
        except WorkerLost as lost:
            message, frame = lost.message, lost.frame
            if lost.outcome is Outcome.TIMED_OUT and sent:
                frame, stacks = worker.where_stuck()
                where = f"; hung in {frame}" if frame else ""
                message = f"timed out after {timeout:g} s in phase {phase.value}{where}{stacks}"
            self._replace()
            return {"type": "result", "outcome": lost.outcome.value, "phase": phase.value, "message": message,
                    "frame": frame, "durations": {phase.value: round(time.monotonic() - started, 6)},
                    "notes": {}}
        except BaseException:  # Ctrl-C or pytest-timeout mid-case: the worker's next answer would
            worker.kill()      # belong to this case, so it must not serve another
            self.worker = None
            raise

    def close(self) -> None:
        for worker in (self.worker, self.spare):
            if worker is not None:
                worker.kill()
        self.worker = self.spare = None

    def _current(self) -> Worker:
        if self.worker is None:
            self.worker, self.spare = self.spare or Worker(self.rootdir), None
        return self.worker

    def _recycle_if_due(self, worker: Worker) -> None:
        worker.cases += 1
        if ((self.recycle_after and worker.cases >= self.recycle_after)
                or (self.recycle_rss_mb and worker.rss_mb() > self.recycle_rss_mb)):
            self._replace()

    def _replace(self) -> None:
        """Drop the current worker; promote the spare and start a new spare in the background."""
        if self.worker is not None:
            self.worker.kill()
        self.worker, self.spare = self.spare or Worker(self.rootdir), Worker(self.rootdir)


def _tail(output: str) -> str:
    lines = output[-TAIL_BYTES:].splitlines()[-TAIL_LINES:]
    return ("\n--- last output of the worker ---\n" + "\n".join(lines)) if lines else ""


def _listed(frames: list[str]) -> str:
    more = f"\n  ... {len(frames) - NATIVE_FRAMES} more frames" if len(frames) > NATIVE_FRAMES else ""
    return "\n".join("  " + f for f in frames[:NATIVE_FRAMES]) + more
