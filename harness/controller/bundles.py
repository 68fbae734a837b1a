"""The controller's part of a repro bundle (layout: harness.bundle_layout): its README, written once
the verdict is known, and the clean-up of bundles of results that were as expected."""
from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from harness.bundle_layout import last_stage_command
from harness.installation.executables import python_command


def write_readme(path: Path, record: dict[str, Any], rerun: str, project: Path) -> None:
    """What happened and how to reproduce it: written by the controller once the verdict is known.
    `rerun` (harness.rerun) changes to `project`, the rootdir of the run, so it runs from anywhere."""
    lines = [f"# {record['case']} on {record['backend']}", "",
             f"- outcome: {record['outcome']}" + (f" in phase {record['phase']}" if record["phase"] else ""),
             f"- verdict: {record['verdict']} (expected {record['expected']})"]
    if record.get("signature"):
        lines.append(f"- signature: `{record['signature']}`")
    lines += ["", f"Reproduce (from any folder: the first command runs in the project, {project}):", "", "```sh",
              f"{rerun}          # through the harness, with the project's configs and ini",
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

