"""Under pytest-xdist, the selected backends are checked by the workers, not by a process of the
controller's own: each xdist worker's first case worker creates them before it says ready (as
with `-n 0`), and the xdist worker passes the answer to the controller through a folder named in
its `workerinput`. The controller waits for the first answer before any case is scheduled, and a
problem stops the run with its one error line. A process of its own would import torch and the
compilers a third time while the two workers do, on the cores they start on (about 3 s of CPU).
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from harness.controller.runner import Runner
from harness.controller.worker_process import STARTUP_TIMEOUT
from harness.errors import HarnessInputError

FOLDER_KEY = "torch_backend_e2e_backend_check"   # in an xdist worker's workerinput
POLL_INTERVAL = 0.05


class WorkersCheck:
    """The controller's side: the folder the workers answer in; `wait` raises the first problem."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="torch-backend-e2e-check-"))

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[FOLDER_KEY] = str(self.folder)

    def wait(self, session: pytest.Session) -> None:
        """Until the first worker answers; a problem raises pytest.UsageError. Gives up when every
        worker went down first (xdist then reports why) or after the workers' start-up timeout."""
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while time.monotonic() < deadline and not _workers_down(session):
            answers = sorted(self.folder.glob("*.answer"))
            if answers:
                problem = answers[0].read_text()
                if problem:
                    raise pytest.UsageError(problem)
                return
            time.sleep(POLL_INTERVAL)

    def stop(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def answer(config: pytest.Config, runner: Runner) -> None:
    """An xdist worker's side: check the backends on its case worker, write the problem ("" when
    none) where the controller looks."""
    folder = config.workerinput.get(FOLDER_KEY)   # type: ignore[attr-defined]
    if folder is None:   # a controller without this plugin: it checks nothing
        return
    problem = ""
    try:
        runner.check_backends()
    except HarnessInputError as e:
        problem = str(e)
    finally:   # whatever else went wrong here, xdist reports it: the controller must not wait on
        name = config.workerinput["workerid"]   # type: ignore[attr-defined]
        written = Path(folder, f"{name}.tmp")
        written.write_text(problem)
        os.replace(written, Path(folder, f"{name}.answer"))


def _workers_down(session: pytest.Session) -> bool:
    """Whether every xdist worker went down (its `errordown` event waits in xdist's queue)."""
    dsession = session.config.pluginmanager.getplugin("dsession")
    nodes = len(getattr(dsession, "_active_nodes", ()) or ())
    events = list(getattr(getattr(dsession, "queue", None), "queue", ()))
    return nodes > 0 and sum(1 for name, _ in events if name == "errordown") >= nodes
