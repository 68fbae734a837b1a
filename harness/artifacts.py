"""Repro bundles: one folder per (backend, case) that lets an engineer reproduce a result alone.

    <DIR>/<backend>/<case>-<hash>/
        README.md           what happened, and the commands that reproduce it (written last)
        case.json           the case as the harness ran it
        inputs/set0_<name>.npy ...   every input set (bfloat16 stored as float32: exact)
        repro.py            torch and the backend alone, outside the harness
        ir/NN-<stage>.mlir  the IR each compiler stage started from (MLIR backends)
        stages.txt          per stage: the torch-mlir-opt command that runs its pass pipeline on
                            the saved IR (or, where torch-mlir-opt lacks passes, the pipeline)

The worker writes as it goes, so a hang or a crash still leaves the inputs and the IR the failing
stage started from; the controller then writes README.md, or deletes the folder when the result
was as expected and only unexpected ones are kept.
"""
from __future__ import annotations

import re
import shlex
import shutil
import zlib
from pathlib import Path
from typing import Any

from harness.executables import find_tool, python_command

STAGES_FILE = "stages.txt"


def torch_mlir_opt() -> str | None:
    """torch-mlir-opt beside the torch_mlir the worker imports (wheel or source build), else on PATH."""
    return find_tool("torch-mlir-opt", distribution="torch-mlir", module="torch_mlir")


def bundle_path(root: Path, backend: str, case_id: str) -> Path:
    """A folder under root for the pair, whatever the names contain: sanitised and collision-free
    (a name that sanitising changes gets a hash of the original), never outside root."""
    return Path(root) / _safe(backend) / _safe(case_id)


def _safe(name: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:80]
    return safe if safe == name and safe.strip(".") else f"{safe}-{zlib.crc32(name.encode()):08x}"


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


def last_stage_command(path: Path) -> str | None:
    """The torch-mlir-opt command of the last stage that started (the one that failed, if one
    did), or None when there is none or torch-mlir-opt cannot run that stage."""
    stages = Path(path) / STAGES_FILE
    if not stages.exists():
        return None
    last = stages.read_text(encoding="utf-8").splitlines()[-1]
    return None if last.startswith("#") else last


def write_readme(path: Path, record: dict[str, Any], rerun: str) -> None:
    """What happened and how to reproduce it: written by the controller once the verdict is known."""
    lines = [f"# {record['case']} on {record['backend']}", "",
             f"- outcome: {record['outcome']}" + (f" in phase {record['phase']}" if record["phase"] else ""),
             f"- verdict: {record['verdict']} (expected {record['expected']})"]
    if record.get("signature"):
        lines.append(f"- signature: `{record['signature']}`")
    lines += ["", "Reproduce:", "", "```sh", f"{rerun}          # through the harness, from the repository root",
              f"cd {shlex.quote(str(path))} && {python_command()} repro.py     # torch and the backend alone"]
    command = last_stage_command(path)
    if command and record["phase"] in ("lower", "compile"):
        lines.append(f"(cd {shlex.quote(str(path))} && {command})   # the failing stage, from the saved IR")
    lines += ["```", "", "Message:", "", "```", record["message"], "```", ""]
    (Path(path) / "README.md").write_text("\n".join(lines), encoding="utf-8")


def remove_empty_folders(root: Path) -> None:
    """Drop the per-backend folders left empty when every bundle in them was as expected."""
    for folder in Path(root).iterdir():
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
