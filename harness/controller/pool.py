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
which it could not create (`preload_problems`), and the run stops before its first case. A worker
that ran cases writes the stage-cache entries it still holds before it is ended or recycled
(harness.stages.writer). One worker process, its pipes and its watch: harness.controller.worker_process.
"""
from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Sequence

from harness.case_findings import Findings
from harness.controller import warm_server
from harness.controller.forks import ForkedProcess, ForkServer, ServerGone
from harness.controller.worker_process import Worker, WorkerLost
from harness.controller.worker_start import process_env
from harness.helper_process import THIS_PYTHON, Interpreter
from harness.outcomes import Outcome, Phase
from harness.protocol import CacheSettings, CaseResult, PhaseEvent, RunRequest, Start
from harness.stages.keys import BUILDS_MEMO


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
            self._replace(flush=False)   # dead or stuck: its queued entries go with it
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
                worker.flush()
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

    def _replace(self, flush: bool = True) -> None:
        """Drop the current worker (once it has written its entries, when `flush`); promote the
        spare and start a new spare in the background."""
        if self.worker is not None:
            if flush:
                self.worker.flush()
            self.worker.kill()
        self.worker, self.spare = self.spare or self._new_worker(), self._new_worker()
