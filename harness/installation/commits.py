"""The commits a run was made at: the harness's own checkout and the tested project's."""
from __future__ import annotations

import hashlib
import shlex
import subprocess
import sys
from pathlib import Path

HARNESS_ROOT = Path(__file__).resolve().parents[2]


def git_commit(folder: Path) -> str | None:
    """HEAD of the git checkout holding `folder`, with `+dirty.<hash of the diff>` when its tracked
    files have changes (so that an edit between two runs is a change, as a commit is); None when
    it is not a checkout (a pip-installed harness) or git is missing."""
    try:
        head = subprocess.run(["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10)
        if head.returncode != 0:
            return None
        diff = subprocess.run(["git", "-C", str(folder), "diff", "HEAD", "--"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    dirty = f"+dirty.{hashlib.sha1(diff.stdout).hexdigest()[:8]}" if diff.stdout else ""
    return head.stdout.strip() + dirty


def run_identity(project_root: Path) -> dict[str, str | None]:
    """The command line and both commits, for a report's environment (and the history's runs)."""
    program = Path(sys.argv[0]).name
    program = "python -m pytest" if program == "__main__.py" else program   # the module's file, with -m
    return {"command": " ".join([program, shlex.join(sys.argv[1:])]).strip(),
            "harness_commit": git_commit(HARNESS_ROOT), "project_commit": git_commit(project_root)}
