"""Propose edits to xfail/<backend>.yaml and crash_sets/<backend>.yaml that make a run match.

    proposals = propose(records_of_one_backend, xfail_path, crash_path)   # {path: new full text}
    apply(proposals)                                                      # write them

Goal: after applying, rerunning the same selection gives no unexpected result, and a second update
from that rerun changes nothing (the edits are idempotent: no dates, no counters).

Two parts: harness.expectations.policy decides, from the records and the entries, what changes
(drop an entry, rewrite its failure, narrow a glob, add an entry, move a case to the other file),
and harness.expectations.edit makes those changes in the YAML with ruamel.yaml's round-trip
mode, so hand-written comments, anchors, folded reasons, `when` conditions and order survive. New
entries go at the end of the file, each under a review comment, with `id` (exact), `phase` (the
failing phase), `reason` (the record's signature, else the first line of its message) and
`signature` (the record's, so that a later update sees the failure change: then it rewrites phase,
reason and signature, see the policy); nothing invents globs. A file that is `[]` gets its `[]`
replaced by the entries (comments kept); a file left with no entry becomes `[]`. The result is
loaded with harness.expectations.read.load_expectations before it is returned.
"""
from __future__ import annotations

import fnmatch
import os
import tempfile
from pathlib import Path
from typing import Iterable, Mapping

import yaml

from harness.errors import HarnessInputError
from harness.expectations.edit import ExpectationFile
from harness.expectations.policy import make_plan
from harness.expectations.read import load_expectations
from harness.files import display_path, write_text_atomically
from harness.outcomes import Expected
from harness.record import Record


def propose(records: Iterable[Record], xfail_path: Path | str, crash_path: Path | str, *,
            case_ids: Iterable[str] | None = None,
            versions: Mapping[str, str | None] | None = None, missing_families: Iterable[str] = ()) -> dict[Path, str]:
    """New full text for each of the two files that must change for the run to match.

    `records` are one backend's result records (from --report-json). `case_ids`, optional, are all
    case ids of the registry: with them a glob keeps its unexercised cases (see the policy) and the
    result is checked against them. `versions`, optional, are the `when` conditions' versions for
    that check (without them every `when` counts as not holding there). The entries of
    `missing_families` (families not installed) have no records, so they stay as they are.
    A missing file is an empty one. Raises HarnessInputError when a record's expectation_source
    names no entry of the file (it changed since the run).
    """
    records = list(records)
    backends = {r.backend for r in records}
    if len(backends) > 1:
        raise ValueError(f"records of one backend only, got {', '.join(sorted(backends))}")
    backend = backends.pop() if backends else Path(xfail_path).stem
    ids = None if case_ids is None else sorted(set(case_ids) | {r.case for r in records})
    files = {kind: ExpectationFile.read(Path(path), kind, backend)
             for kind, path in ((Expected.XFAIL, xfail_path), (Expected.CRASH, crash_path))}
    plan = make_plan(records, files, backend, ids)
    texts = {kind: file.render(plan.changes[kind], plan.added[kind], files[kind.other_file_kind])
             for kind, file in files.items()}
    _validate(backend, files, texts, ids, versions, set(missing_families))
    return {f.path: texts[kind] for kind, f in files.items() if texts[kind] != f.text or
            (not f.exists and texts[kind] != "")}


def apply(proposals: Mapping[Path | str, str]) -> None:
    """Write each proposed text to its file (atomically: a reader sees the old or the new file)."""
    for path, text in proposals.items():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        write_text_atomically(Path(path), text)


def _witness(pattern: str) -> str:
    """A string the fnmatch pattern matches (to check a file when the registry's ids are unknown)."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "*":
            i += 1
            continue
        if ch == "?":
            out.append("x")
            i += 1
            continue
        if ch == "[":
            j = i + 1
            negated = pattern[j:j + 1] == "!"
            j += negated
            j += pattern[j:j + 1] == "]"
            close = pattern.find("]", j)
            if close >= 0:
                members = pattern[i + 1 + negated:close]
                pick = next((c for c in "x0_az" if fnmatch.fnmatchcase(c, pattern[i:close + 1])), None)
                out.append((pick or "") if negated or not members else members[0])   # "": no witness
                i = close + 1
                continue
        out.append(ch)
        i += 1
    text = "".join(out)
    return text if fnmatch.fnmatchcase(text, pattern) else pattern


class _AnyVersion(Mapping):
    """Condition versions for a check without real ones: every name is known, none installed."""

    def __contains__(self, name: object) -> bool:
        return True

    def __getitem__(self, name: str) -> None:
        return None

    def __iter__(self):
        return iter(())

    def __len__(self) -> int:
        return 0


def _validate(backend: str, files: dict[Expected, ExpectationFile], texts: dict[Expected, str],
              case_ids: list[str] | None,
              versions: Mapping[str, str | None] | None, missing_families: set[str]) -> None:
    """Load the proposed files with the harness's own loader; a failure here is a bug of this module
    (unless the files as they were fail the same way: then the problem was there before)."""
    def load(candidate: dict[Expected, str]) -> str | None:
        ids = case_ids
        if ids is None:  # a string matching each entry's id stands in for the registry
            try:
                entries = [e for text in candidate.values() for e in (yaml.safe_load(text) or [])]
            except yaml.YAMLError as e:
                return str(e)
            ids = [_witness(e["id"]) for e in entries if isinstance(e, dict) and isinstance(e.get("id"), str)]
        with tempfile.TemporaryDirectory() as tmp:
            folders = {kind: Path(tmp) / f"{kind.folder}" for kind in Expected.files()}   # the kinds with a folder
            for kind, folder in folders.items():
                folder.mkdir()
                (folder / f"{backend}.yaml").write_text(candidate[kind], encoding="utf-8")
            try:
                load_expectations(backend, folders[Expected.XFAIL], folders[Expected.CRASH], ids,
                                  versions if versions is not None else _AnyVersion(), missing_families)
            except HarnessInputError as e:
                return f"{e.problem} ({e.where.replace(tmp + os.sep, '')})"
            except yaml.YAMLError as e:
                return str(e)
        return None

    if texts == {kind: f.text for kind, f in files.items()}:
        return
    problem = load(texts)
    if problem is not None and load({kind: f.text for kind, f in files.items()}) is None:
        raise RuntimeError(f"the proposed expectation files for {backend} do not load: {problem}\n"
                           + "\n".join(f"--- {display_path(f.path)}\n{texts[kind]}" for kind, f in files.items()))


def proposals_for_report(report: dict, root: Path | str, case_ids: Iterable[str] | None = None) -> dict[str, str]:
    """propose() for each backend of the report, keyed by the file paths the report shows.

    The files are environment.backends[name].xfail_file / crash_set_file, resolved against `root`.
    A backend is skipped when the report does not name them, when their directories are not found
    under `root` (a report from another checkout), or when the report no longer fits them (an
    entry it names has moved: rerun first). A missing file in a found directory is an empty one.
    `case_ids` (every case of the project, harness.project) lets a glob keep the cases the run
    did not exercise; without them a glob is narrowed to the cases the report holds.
    """
    root = Path(root)
    results = [Record.from_json(r) for r in report.get("results", [])]   # the JSON boundary
    ids = list(case_ids) if case_ids is not None else None
    found: dict[str, str] = {}
    for name, info in sorted(((report.get("environment") or {}).get("backends") or {}).items()):
        xfail_file, crash_set_file = (info or {}).get("xfail_file"), (info or {}).get("crash_set_file")
        if not (xfail_file and crash_set_file):
            continue
        shown = {Expected.XFAIL: xfail_file, Expected.CRASH: crash_set_file}
        paths = {kind: root / path for kind, path in shown.items()}
        if not all(path.parent.is_dir() for path in paths.values()):
            continue
        try:
            proposed = propose([r for r in results if r.backend == name], paths[Expected.XFAIL],
                               paths[Expected.CRASH], case_ids=ids)
        except HarnessInputError:
            continue
        for kind, path in paths.items():
            if path in proposed:
                found[shown[kind]] = proposed[path]
    return found
