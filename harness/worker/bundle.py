"""The worker's writer of a repro bundle (layout: harness.bundle_layout): files and, per compiler
stage, the IR it starts from and the torch-mlir-opt command that runs it."""
from __future__ import annotations

import shlex
import shutil
from pathlib import Path

from harness.bundle_layout import STAGES_FILE
from harness.installation.executables import torch_mlir_opt


class Bundle:
    """The worker's writer for one case's folder."""

    def __init__(self, path: Path):
        self.path = Path(path)
        shutil.rmtree(self.path, ignore_errors=True)  # a previous run's bundle would mislead
        for folder in ("ir", "inputs"):
            (self.path / folder).mkdir(parents=True)
        self.stages = 0

    def write(self, relpath: str, text: str) -> Path:
        target = self.path / relpath
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        return target

    def stage(self, name: str, ir_text: str, pipeline: str | None = None, opt_runs_it: bool = True) -> None:
        """Record the IR a stage starts from, its pass pipeline, and (when torch-mlir-opt registers
        all of its passes) the torch-mlir-opt command that runs the stage on the saved IR."""
        self.stages += 1
        ir_file = self.write(f"ir/{self.stages:02d}-{name}.mlir", ir_text).relative_to(self.path)
        if pipeline is None:
            return
        opt = torch_mlir_opt()
        if opt_runs_it and opt:
            how = f"{shlex.quote(opt)} {shlex.quote('--pass-pipeline=' + pipeline)} {ir_file}"
        elif opt_runs_it:
            how = f"# torch-mlir-opt not found (see the run's summary); the pipeline: {pipeline}"
        else:
            how = f"# torch-mlir-opt lacks some of these passes; repro.py runs them: {pipeline}"
        with open(self.path / STAGES_FILE, "a", encoding="utf-8") as out:
            out.write(f"# {self.stages:02d} {name}\n{how}\n")

