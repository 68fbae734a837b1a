"""The JSON report, the one record of a run that every other view, tool and the history read:
written here, read and checked here (one error line for a damaged file), merged here.

Results are keyed by (backend, case); within one report that key is unique (write_report sorts by it).

merge: the nightly CI runs one job per backend x shard, so the shards of one run must partition
the matrix. The rules:
- A (backend, case) in two inputs is an error naming both files, even when the records are
  identical: overlapping shards mean the shard selection is wrong (or a file was passed twice),
  and silently picking one record would hide that.
- `complete` is true only when every input is complete.
- Top-level versions (python, torch, torch_mlir, numpy) must agree, or it is an error: a matrix
  that mixes torch versions answers no question. A version that is null (not installed in that
  job, e.g. torch-mlir in the IREE job) agrees with anything; the merged report keeps the
  installed one. The same rule holds for each backend's `versions` and `reported` values.
- `platform` may differ between CI runners (kernel builds); the distinct values are joined with
  "; ". `run_crash_set` is true only if every shard ran the crash set. A backend's `config` path is
  taken from the first shard that names it.
"""
from __future__ import annotations

import collections
import hashlib
import json
import time
import uuid
from pathlib import Path
from typing import Any, Iterable

from harness.errors import HarnessInputError
from harness.files import write_text_atomically
from harness.record import Record

TOP_VERSIONS = ("python", "torch", "torch_mlir", "numpy")
REGENERATE = "pass a file written by --report-json with this checkout"
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


def build_report(environment: dict, records: list[dict], complete: bool, run_id: str | None = None,
                 created: float | None = None) -> dict[str, Any]:
    """The JSON report: every view (Markdown, HTML, diff, merge, the history) reads this structure.
    `run_id` identifies the run (the history records a run once); a new one unless given."""
    records = sorted(records, key=lambda r: (r["backend"], r["case"]))
    return {"schema_version": SCHEMA_VERSION, "run_id": run_id or uuid.uuid4().hex, "complete": complete,
            "created": time.time() if created is None else created,
            "environment": environment, "results": records, "summary": summarise(records)}


def write_report(path: Path, environment: dict, records: list[dict], complete: bool, run_id: str | None = None,
               created: float | None = None) -> None:
    write_text_atomically(path, report_text(build_report(environment, records, complete, run_id, created)))


def report_text(report: dict) -> str:
    """The report as its file holds it (the `json` format writes this too)."""
    return json.dumps(report, indent=1) + "\n"


def merged_run_id(run_ids: list[str]) -> str:
    """The run id of a report merged from shards: the same shards give the same id, so ingesting
    the merge of a night twice records that night once."""
    return hashlib.sha256("\n".join(sorted(run_ids)).encode()).hexdigest()[:32]


# ---- reading -------------------------------------------------------------------------------

def read_report(path: Path) -> dict:
    """Load and check one report; every problem is a HarnessInputError naming the file."""
    try:
        report = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise HarnessInputError(str(path), f"cannot be read ({e.strerror or e})", REGENERATE) from None
    except ValueError as e:
        raise HarnessInputError(str(path), f"is not JSON ({e})", REGENERATE) from None
    check_report(str(path), report)
    return report


def check_report(where: str, report: object) -> None:
    """The shape diff and merge rely on, so that they never fail with a KeyError half-way."""
    if not isinstance(report, dict) or "schema_version" not in report or not isinstance(report.get("results"), list):
        raise HarnessInputError(where, "is not a harness report (no schema_version or results)", REGENERATE)
    if report["schema_version"] != SCHEMA_VERSION:
        raise HarnessInputError(where, f"has schema_version {report['schema_version']!r}, this harness reads "
                                f"{SCHEMA_VERSION}", "regenerate it with --report-json from this checkout")
    environment = report.get("environment", {})
    backends = (environment.get("backends") or {}) if isinstance(environment, dict) else None
    if not isinstance(backends, dict) or not all(isinstance(b, dict) for b in backends.values()):
        raise HarnessInputError(where, "has an environment that is not shaped like a report's", REGENERATE)
    seen = set()
    for i, r in enumerate(report["results"]):
        if not isinstance(r, dict) or not all(isinstance(r.get(k), str) for k in ("backend", "case", "outcome")):
            raise HarnessInputError(where, f"result {i} lacks backend, case or outcome", REGENERATE)
        try:
            Record.from_json(r)
        except ValueError as e:
            raise HarnessInputError(where, f"result {i}: {e}", REGENERATE) from None
        if key(r) in seen:
            raise HarnessInputError(where, f"holds {r['case']} on {r['backend']} twice", REGENERATE)
        seen.add(key(r))


def key(record: dict) -> tuple[str, str]:
    """A JSON result's key (merge passes results through as they are; diff reads Records)."""
    return record["backend"], record["case"]


# ---- merge ---------------------------------------------------------------------------------

def merge_reports(inputs: list[tuple[str, dict]]) -> dict:
    """One report from the shard reports `(path, report)`; the rules are in the module docstring.

    Returns {"environment", "results", "complete", "run_id", "created"}: what write_json takes (it
    recomputes the summary); the merged run is as old as its first shard.
    """
    owner: dict[tuple[str, str], str] = {}
    results = []
    for path, report in inputs:
        for r in report["results"]:
            if key(r) in owner:
                raise HarnessInputError(path, f"holds {r['case']} on {r['backend']}, and so does {owner[key(r)]}",
                                        "shards must not overlap: give each shard's report once")
            owner[key(r)] = path
            results.append(r)
    return {"environment": merge_environments([(p, r.get("environment", {})) for p, r in inputs]),
            "results": results, "complete": all(r.get("complete") is True for _, r in inputs),
            "run_id": merged_run_id([r.get("run_id") or f"created:{r.get('created')!r}" for _, r in inputs]),
            "created": min((r["created"] for _, r in inputs if isinstance(r.get("created"), (int, float))),
                           default=None)}


def merge_environments(envs: list[tuple[str, dict]]) -> dict:
    merged: dict = {}
    sources: dict[str, str] = {}  # which file each merged version came from, for the error line
    platforms: list = []
    for path, env in envs:
        for name, value in env.items():
            if name in TOP_VERSIONS:
                _merge_version(merged, sources, name, name, value, path)
            elif name == "backends":
                _merge_backends(merged.setdefault("backends", {}), sources, value or {}, path)
            elif name == "run_crash_set":  # true claims every crash-set case ran: only if every shard ran them
                merged[name] = merged.get(name, True) and value is True
            elif name == "platform":
                platforms += [value] if value not in platforms else []
            else:
                merged.setdefault(name, value)  # a key this version does not know: keep the first
    if platforms:
        merged["platform"] = "; ".join(map(str, platforms))
    return merged


def _merge_backends(merged: dict, sources: dict, backends: dict, path: str) -> None:
    for name, block in backends.items():
        into = merged.setdefault(name, {**block, "versions": {}, "reported": {}})  # config: the first one
        for part in ("versions", "reported"):
            for dist, version in (block.get(part) or {}).items():
                _merge_version(into[part], sources, f"backend {name} {part} {dist}", dist, version, path)


def _merge_version(into: dict, sources: dict, label: str, name: str, value, path: str) -> None:
    """null means 'not installed in that job' and agrees with anything; two versions must be equal."""
    old = into.get(name)
    if old is not None and value is not None and old != value:
        raise HarnessInputError(path, f"has {label} {value}, but {sources[label]} has {old}",
                                "merge only shards run with the same versions; rerun the odd shard")
    if old is None:
        into[name] = value
        sources[label] = path


def report_identity(report: dict) -> str:
    """What identifies a report's run (the history records a run once): its run_id, else (a report
    older than run_id) its time."""
    return report.get("run_id") or f"created:{report['created']!r}"
