"""Writing files that other processes may be reading."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


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

