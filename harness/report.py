"""Views of the result records: the JSON report and the lit-style terminal summary."""
from __future__ import annotations

import collections
import json
import os
import shlex
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable

from harness.executables import python_command
from harness.outcomes import Outcome, Verdict

SCHEMA_VERSION = 1


def summarise(records: Iterable[dict]) -> dict[str, Any]:
    """Counts per backend: outcomes and verdicts."""
    per_backend: dict[str, dict] = {}
    for r in records:
        entry = per_backend.setdefault(r["backend"], {"total": 0, "outcomes": collections.Counter(),
                                                       "verdicts": collections.Counter()})
        entry["total"] += 1
        entry["outcomes"][r["outcome"]] += 1
        entry["verdicts"][r["verdict"]] += 1
    return {name: {"total": e["total"], "outcomes": dict(e["outcomes"]), "verdicts": dict(e["verdicts"])}
            for name, e in sorted(per_backend.items())}


def build_report(environment: dict, records: list[dict], complete: bool) -> dict[str, Any]:
    """The JSON report: every view (Markdown, HTML, diff, merge) reads this structure."""
    records = sorted(records, key=lambda r: (r["backend"], r["case"]))
    return {"schema_version": SCHEMA_VERSION, "complete": complete, "created": time.time(),
            "environment": environment, "results": records, "summary": summarise(records)}


def write_json(path: Path, environment: dict, records: list[dict], complete: bool) -> None:
    write_text_atomically(path, json.dumps(build_report(environment, records, complete), indent=1) + "\n")


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


def repro_command(record: dict) -> str:
    """The command that runs this one result again, from the repository root (naming the
    interpreter: a shell that activated no venv runs it too)."""
    crash_set = " --run-crash-set" if record["expected"] == "crash" else ""
    return f"{python_command()} -m pytest --backend={record['backend']}{crash_set} {shlex.quote(record['nodeid'])}"


def terminal_lines(records: list[dict]) -> list[str]:
    """Per backend: counts per outcome, then each unexpected result on one line."""
    lines = []
    for backend, summary in summarise(records).items():
        counts = "  ".join(f"{o.value}={summary['outcomes'][o.value]}" for o in Outcome
                           if summary["outcomes"].get(o.value))
        lines.append(f"{backend}: {summary['total']} cases  {counts}")
        for r in sorted(records, key=lambda r: r["case"]):
            if r["backend"] == backend and r["verdict"] in (Verdict.UNEXPECTED_FAILURE.value,
                                                            Verdict.UNEXPECTED_PASS.value):
                where = f" in {r['phase']}" if r["phase"] else ""
                first = r["message"].splitlines()[0][:160] if r["message"] else ""
                lines.append(f"  {r['verdict'].upper()}: {r['case']} [{r['outcome']}{where}] {first}")
    return lines


def backend_table(records: list[dict], configs: dict) -> str:
    """Markdown: per backend, what it exercises, how to install it, and its counts per family."""
    families = sorted({r["case"].split("/")[0] for r in records})
    head = ["backend", "what it exercises", "install"] + [f"{f}: passed / xfail / crash set" for f in families]
    rows = [head, ["---"] * len(head)]
    for backend in sorted({r["backend"] for r in records}):
        config = configs.get(backend)
        row = [f"`{backend}`", config.description if config else "", f"`{config.install}`" if config else ""]
        for family in families:
            mine = [r for r in records if r["backend"] == backend and r["case"].startswith(family + "/")]
            passed = sum(r["outcome"] == Outcome.PASSED.value for r in mine)
            expected = collections.Counter(r["expected"] for r in mine)
            row.append(f"{passed} / {expected['xfail']} / {expected['crash']}")
        rows.append(row)
    return _markdown(rows)


def lowering_table(records: list[dict]) -> str:
    """Markdown: per backend and watched op, how many cases took each lowering path, and passed."""
    paths: dict[tuple[str, str], collections.Counter] = {}
    for r in records:
        for op, path in r.get("notes", {}).items():
            if path in ("direct", "decomposed"):
                counts = paths.setdefault((r["backend"], op), collections.Counter())
                counts[path] += 1
                counts[path + " passed"] += r["outcome"] == Outcome.PASSED.value
    if not paths:
        return ""
    rows = [["backend", "op", "decomposed: cases (passed)", "direct: cases (passed)"], ["---"] * 4]
    for (backend, op), c in sorted(paths.items()):
        rows.append([f"`{backend}`", f"`{op}`", f"{c['decomposed']} ({c['decomposed passed']})",
                     f"{c['direct']} ({c['direct passed']})"])
    return _markdown(rows)


def replace_between(text: str, begin: str, end: str, body: str) -> str:
    """`text` with everything between the two marker lines replaced by `body`."""
    start, stop = text.index(begin) + len(begin), text.index(end)
    return text[:start] + "\n" + body + text[stop:]


def _markdown(rows: list[list[str]]) -> str:
    return "\n".join("| " + " | ".join(cells) + " |" for cells in rows) + "\n"
