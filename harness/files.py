"""Files: paths as the user would type them, and writing files that other processes may be reading."""
from __future__ import annotations

import contextlib
import difflib
import os
import tempfile
from pathlib import Path
from typing import Any

from harness.errors import HarnessInputError


def user_cache_dir() -> Path:
    """The harness's folder of the user's cache: $TORCH_BACKEND_E2E_CACHE, else
    $XDG_CACHE_HOME/torch-backend-e2e, else ~/.cache/torch-backend-e2e."""
    if os.environ.get("TORCH_BACKEND_E2E_CACHE"):
        return Path(os.environ["TORCH_BACKEND_E2E_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "torch-backend-e2e"


def display_path(path: Path) -> str:
    """A path as the user would type it: relative to the working directory when inside it."""
    relative = os.path.relpath(path)
    return str(path) if relative.startswith("..") else relative


def where(path: Path, node: Any) -> str:
    """'file:line' for a mapping loaded by harness.project_files.yamlio.load_yaml, else just the file."""
    line = getattr(node, "line", 0)
    return f"{display_path(path)}:{line}" if line else display_path(path)


def write_text_atomically(path: Path, text: str) -> None:
    """A reader sees the old file or the new one, never half."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(tmp, path.stat().st_mode if path.exists() else 0o666 & ~_umask())  # not mkstemp's 0600
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def writing(path: Path):
    """An output that cannot be written is bad input too (a missing directory, say), not a traceback."""
    try:
        yield
    except OSError as e:
        raise HarnessInputError(str(path), f"cannot be written ({e.strerror or e})",
                                "check that its directory exists and is writable") from None


def write_between_markers(page: Path, begin: str, end: str, body: str) -> None:
    """Replace what lies between the page's two marker lines by `body`; the rest of the page stays
    (the generated tables of the docs: `python -m harness table --readme`, `model-table --page`)."""
    if not page.is_file():
        raise HarnessInputError(display_path(page), "no such page", "name the page that holds the table")
    text = page.read_text(encoding="utf-8")
    if begin not in text or end not in text:
        raise HarnessInputError(display_path(page), "has no table markers", f"add the lines {begin!r} and {end!r}")
    start, stop = text.index(begin) + len(begin), text.index(end)
    write_text_atomically(page, text[:start] + "\n" + body + text[stop:])


def git_patch(path: Path, old: str, new: str) -> str:
    """A unified diff of one file's text, as `git apply` takes it: the path relative to the
    repository that holds the file (else to its folder), under `a/` and `b/`; "" when nothing changed."""
    if old == new:
        return ""
    resolved = path.resolve()
    root = next((folder for folder in resolved.parents if (folder / ".git").exists()), resolved.parent)
    name = resolved.relative_to(root).as_posix()
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                 fromfile=f"a/{name}", tofile=f"b/{name}")
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def print_or_write(text: str, output: Path | None) -> None:
    """The text on standard output, or written to the file (atomically)."""
    if output is None:
        print(text, end="")
        return
    with writing(output):
        write_text_atomically(output, text)
