"""The backend configs' classes checked in a process of their own (harness.worker.backend_check):
`python -m harness check` checks every config this way (a pytest run checks the selected ones on
its case workers: harness.plugin.lifecycle). The controller imports no backend: a class imports
torch and its compiler."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

from harness.errors import HarnessInputError
from harness.helper_process import start_helper
from harness.project_files.configs import BackendConfig, backend_problem

TAIL_LINES = 5   # of a check process that died, the last lines of its output shown


class BackendCheck:
    """Started at once (it imports torch and the compilers meanwhile); `wait` raises the first problem."""

    def __init__(self, configs: Iterable[BackendConfig], rootdir: Path):
        self.configs = {c.name: c for c in configs}
        specs = [c.to_json() for c in self.configs.values()]
        # the rootdir first on its path, as a worker has it: the project's own classes import
        self.proc = start_helper("harness.worker.backend_check", rootdir=rootdir, text=True)
        self.specs = json.dumps(specs)

    def wait(self) -> None:
        """Raise the first config's problem as one HarnessInputError line (the config's file and line)."""
        out, err = self.proc.communicate(self.specs)
        last = None
        for line in out.splitlines():
            reply = json.loads(line)
            last = reply["name"]
            if reply.get("problem"):
                raise backend_problem(self.configs[last], reply["problem"])
            if "problem" in reply:
                last = None
        if self.proc.returncode or last is not None:
            tail = " | ".join(err.strip().splitlines()[-TAIL_LINES:])
            culprit = self.configs.get(last) if last is not None else None
            where = culprit.place("class") if culprit else "backend configs"
            raise HarnessInputError(where, f"checking the backend classes: the process exited with status "
                                    f"{self.proc.returncode}{f' importing {culprit.class_path}' if culprit else ''}"
                                    f"{f' ({tail})' if tail else ''}", "fix the class or its package")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


def check_backends(configs: Iterable[BackendConfig], rootdir: Path) -> None:
    """Every config's class imports, takes its options and creates a backend; else one error line."""
    check = BackendCheck(configs, rootdir)
    try:
        check.wait()
    finally:
        check.stop()
