"""The links from a triage report's signature groups to their reduced programs: the reductions.json
that `python -m harness reduce --all` writes (harness.reduce.all_failures), read for `python -m
harness report --reductions` (a format's ReportContext.reductions)."""
from __future__ import annotations

import json
import os
from pathlib import Path

from harness.errors import HarnessInputError


def read_reductions(path: Path) -> list[dict]:
    """The reduced groups of a reductions.json, each with `model`: the absolute path of its program
    (model.py, or an ONNX model's model.onnx.txt)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        entries = data["reductions"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise HarnessInputError(str(path), f"not a reductions file ({e})",
                                "pass the reductions.json that python -m harness reduce --all wrote") from None
    return [{**e, "model": str((Path(path).parent / e["folder"] / e.get("program", "model.py")).resolve())}
            for e in entries if e.get("status") == "reduced"]


def reduction_links(path: Path, page: Path) -> dict[tuple[str, str], tuple[str, str]]:
    """(backend, signature) -> (the link to its model.py from `page`'s folder, what it holds)."""
    links = {}
    for entry in read_reductions(path):
        ops = entry["ops"]
        text = f"{len(ops)} op{'s' * (len(ops) != 1)}: {', '.join(ops[:5])}{', ...' * (len(ops) > 5)}"
        links[(entry["backend"], entry["signature"])] = (os.path.relpath(entry["model"], Path(page).resolve().parent),
                                                         text)
    return links
