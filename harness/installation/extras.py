"""How to install one of the harness's extras, said the way this installation was made: from a
checkout (`pip install -e ".[onnx]"`, the checkout's path when it is not the working directory)
or as a package in another project (`pip install "torch-backend-e2e[onnx]"`)."""
from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Iterable

from harness.entry_points import DISTRIBUTION

CHECKOUT = Path(__file__).resolve().parents[2]   # the folder above harness/: a checkout's root, or site-packages


def install_command(extras: Iterable[str] = ()) -> str:
    """The pip command that installs the harness with `extras` (none: the harness alone)."""
    wanted = ",".join(extras)
    suffix = f"[{wanted}]" if wanted else ""
    if not _from_checkout():
        return f'pip install "{DISTRIBUTION}{suffix}"'
    here = Path.cwd().resolve()
    place = "." if here == CHECKOUT else os.path.relpath(CHECKOUT, here) if CHECKOUT in here.parents else str(CHECKOUT)
    return f'pip install -e "{place}{suffix}"'


@functools.cache
def _from_checkout() -> bool:
    """True when the harness runs from a source tree (an editable install, or the tree on sys.path)."""
    project = CHECKOUT / "pyproject.toml"
    return project.is_file() and f'name = "{DISTRIBUTION}"' in project.read_text(encoding="utf-8")
