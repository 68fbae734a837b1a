"""Expected failures (xfail/<backend>.yaml) and cases not to attempt (crash_sets/<backend>.yaml).

Each file is a YAML list of entries:
  - id: <family>/2d/transposed*         # exact case id or fnmatch glob
    reason: why it fails                  # required
    issue: https://...                    # optional
    phase: lower                          # optional: the phase that must fail
    when: {torch-mlir: "<=20261001"}      # optional: PEP 440 conditions on python or a distribution
                                          # (torch, torch-mlir, or one a backend config requires);
                                          # none holds for a package that is absent or whose version
                                          # is unknown (a source build), unless --assume-version says it
    timeout: 120                          # optional: per-case seconds
    nondeterministic: true                # optional, xfail only: its outcome varies from run to run
                                          # (undefined behaviour, uninitialised memory): a pass or its
                                          # failure is accepted and reported as flaky
    signature: "..."                      # optional: the failure signature the entry was written for
                                          # (--update-expectations writes it, and rewrites the reason
                                          # when a run's signature differs)

An entry for a family that is not installed (its discovery says so: ONNX's node tests without the
onnx package) does not apply and is not checked against the cases; the run's summary counts such
entries per file and family (Expectations.not_installed_lines).
"""
from __future__ import annotations

import collections
import dataclasses
import fnmatch
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from harness.case_data import is_positive_finite
from harness.errors import HarnessInputError
from harness.files import display_path, where
from harness.outcomes import Expected, Phase
from harness.project_files.yamlio import check_node_keys, load_yaml

ENTRY_KEYS = {"id", "reason", "issue", "phase", "when", "timeout", "nondeterministic", "signature"}
GLOB_CHARS = frozenset("*?[")


@dataclasses.dataclass(frozen=True)
class Entry:
    pattern: str
    reason: str
    kind: Expected                    # XFAIL or CRASH
    source: str                       # "xfail/linalg-on-tensors.yaml:12"
    phase: Phase | None = None
    issue: str | None = None
    timeout: float | None = None
    active: bool = True               # False when its `when` conditions do not hold
    unread: tuple[str, ...] = ()      # names in its `when` whose version could not be read (a source
                                      # build without metadata): such a version satisfies no condition
    missing_family: str | None = None # its family is not installed (then it is not active)
    nondeterministic: bool = False    # a pass or its failure is accepted, either reported as flaky
    signature: str | None = None      # the failure signature it was written for (harness.controller.signature)

    @property
    def family(self) -> str:
        """The family its id names (the part before the first '/'; a glob there names none)."""
        head = self.pattern.partition("/")[0]
        return "" if any(ch in head for ch in GLOB_CHARS) else head

    def matches(self, case_id: str) -> bool:
        return fnmatch.fnmatchcase(case_id, self.pattern)

    @property
    def is_glob(self) -> bool:
        return any(ch in self.pattern for ch in GLOB_CHARS)

    def matched(self, case_ids: list[str], id_set: set[str]) -> list[str]:
        """The ids this entry matches: a set lookup for an exact id, one regex scan for a glob."""
        if not self.is_glob:
            return [self.pattern] if self.pattern in id_set else []
        return fnmatch.filter(case_ids, self.pattern)


@dataclasses.dataclass
class Expectations:
    """The expectation entries of one backend, checked against the case registry."""

    backend: str
    entries: list[Entry]

    def __post_init__(self) -> None:
        # Searched on every lookup, so ordered once: active entries only, crash-set entries first.
        # Exact ids go into a dict (thousands of them are one lookup); globs are tried in order.
        order = sorted((e for e in self.entries if e.active), key=lambda e: e.kind is not Expected.CRASH)
        self._rank = {id(e): rank for rank, e in enumerate(order)}
        self._exact: dict[str, Entry] = {}
        for entry in order:
            if not entry.is_glob:
                self._exact.setdefault(entry.pattern, entry)
        self._globs = [e for e in order if e.is_glob]

    def lookup(self, case_id: str) -> Entry | None:
        """The first active entry for the case, crash-set entries first."""
        exact = self._exact.get(case_id)
        limit = self._rank[id(exact)] if exact else len(self._rank)
        return next((e for e in self._globs if self._rank[id(e)] < limit and e.matches(case_id)), exact)

    def not_installed_lines(self, why: Mapping[str, str]) -> list[str]:
        """One line per file and family not installed: how many of its entries do not apply, and why
        (`why`: family -> the reason, with the command that installs it)."""
        counts = collections.Counter((e.source.rpartition(":")[0], e.missing_family)
                                     for e in self.entries if e.missing_family)
        return [f"{path}: {n:,} {'entries' if n != 1 else 'entry'} for {family} "
                f"{'do' if n != 1 else 'does'} not apply: {why[family]}"
                for (path, family), n in counts.items()]


def load_expectations(backend: str, xfail_dir: Path, crash_dir: Path,
                      case_ids: Iterable[str] | Callable[[frozenset[str] | None], Iterable[str]],
                      versions: Mapping[str, str | None], missing_families: Iterable[str] = ()) -> Expectations:
    """The backend's entries, each checked against `case_ids` except those of `missing_families`
    (families not installed: their entries do not apply). `case_ids` may be a function, called only
    when there are entries, with the families they name (None: a glob names no family), so that
    entries for torch-mlir's suite do not wait for a listing of PyTorch's op database."""
    missing = set(missing_families)
    entries = [dataclasses.replace(e, active=False, missing_family=e.family) if e.family in missing else e
               for e in _load_file(Path(xfail_dir) / f"{backend}.yaml", Expected.XFAIL, versions)
               + _load_file(Path(crash_dir) / f"{backend}.yaml", Expected.CRASH, versions)]
    if entries:
        families = frozenset(e.family for e in entries)
        ids = list(case_ids(None if "" in families else families) if callable(case_ids) else case_ids)
        _check_disjoint(entries, _check_live(entries, ids, set(ids)))
    return Expectations(backend, entries)


def _load_file(path: Path, kind: Expected, versions: Mapping[str, str | None]) -> list[Entry]:
    if not path.exists():
        return []
    data = load_yaml(path)
    if data is None:
        return []
    if not isinstance(data, list):
        raise HarnessInputError(display_path(path), "an expectation file must be a YAML list of entries",
                                "start each entry with '- id: ...'")
    return [_parse_entry(path, node, kind, versions) for node in data]


def _parse_entry(path: Path, node: Any, kind: Expected, versions: Mapping[str, str | None]) -> Entry:
    if not isinstance(node, dict):
        raise HarnessInputError(display_path(path),
                                f"entry {node!r} is not a mapping", "write '- id: ...\\n  reason: ...'")
    at = where(path, node)
    check_node_keys(path, node, ENTRY_KEYS, required={"id", "reason"})
    for key in ("id", "reason", "signature"):
        if key in node and (not isinstance(node[key], str) or not node[key].strip()):
            raise HarnessInputError(at, f"{key!r} must be a non-empty string")
    return Entry(pattern=node["id"], reason=node["reason"].strip(), kind=kind, source=at,
                 phase=_phase(at, node.get("phase")), issue=node.get("issue"), signature=node.get("signature"),
                 timeout=_timeout(at, node.get("timeout")),
                 nondeterministic=_nondeterministic(at, node.get("nondeterministic", False), kind),
                 active=_conditions_hold(at, node.get("when"), versions),
                 unread=tuple(n for n in node.get("when") or {} if not _readable(versions.get(n))))


def _phase(at: str, value: Any) -> Phase | None:
    if value is None:
        return None
    try:
        return Phase(value)
    except ValueError:
        raise HarnessInputError(at, f"unknown phase {value!r}",
                                f"use one of {', '.join(p.value for p in Phase)}") from None


def _timeout(at: str, value: Any) -> float | None:
    if value is None:
        return None
    if not is_positive_finite(value):
        raise HarnessInputError(at, f"timeout must be a positive, finite number of seconds, not {value!r}")
    return float(value)


def _nondeterministic(at: str, value: Any, kind: Expected) -> bool:
    if not isinstance(value, bool):
        raise HarnessInputError(at, f"nondeterministic must be true or false, not {value!r}")
    if value and kind is Expected.CRASH:
        raise HarnessInputError(at, "a crash-set entry cannot be nondeterministic (its case is not run)",
                                "move the entry to the xfail file")
    return value


def _conditions_hold(at: str, when: Any, versions: Mapping[str, str | None]) -> bool:
    if when is None:
        return True
    if not isinstance(when, dict):
        raise HarnessInputError(at, "'when' must be a mapping such as {torch: '>=2.13'}")
    holds = True
    for name, spec in when.items():
        if name not in versions:  # known names map to None when not installed
            raise HarnessInputError(at, f"unknown condition {name!r}", f"use one of {', '.join(sorted(versions))}")
        try:
            specifier = SpecifierSet(str(spec))
        except InvalidSpecifier:
            raise HarnessInputError(at, f"bad version condition {name}: {spec!r}",
                                    "write a PEP 440 specifier such as '>=2.13,<2.14'") from None
        installed = versions.get(name)
        if installed is None:
            holds = False
            continue
        try:
            holds &= specifier.contains(Version(installed), prereleases=True)
        except InvalidVersion:
            holds = False
    return holds


def _readable(version: str | None) -> bool:
    """Not installed counts as readable (the condition simply does not hold); 'unknown (...)' does not."""
    try:
        return version is None or bool(Version(version))
    except InvalidVersion:
        return False


def _check_live(entries: list[Entry], case_ids: list[str], id_set: set[str]) -> dict[int, list[str]]:
    """Every entry matches some case; returns what each matches (by id() of the entry)."""
    matched = {}
    for entry in entries:
        matched[id(entry)] = [] if entry.missing_family else entry.matched(case_ids, id_set)
        if not (matched[id(entry)] or entry.missing_family):   # a missing family's entries match nothing here
            raise HarnessInputError(entry.source, f"id {entry.pattern!r} matches no case",
                                    "delete the entry or fix the id (list ids with --collect-only -q)")
    return matched


def _check_disjoint(entries: list[Entry], matched: dict[int, list[str]]) -> None:
    """No case in both files, among active entries (an xfail on one version, a crash on another is fine)."""
    crashing: dict[str, Entry] = {}
    for entry in (e for e in entries if e.kind is Expected.CRASH and e.active):
        for case_id in matched[id(entry)]:
            crashing.setdefault(case_id, entry)
    for xfail in (e for e in entries if e.kind is Expected.XFAIL and e.active):
        both = next((c for c in matched[id(xfail)] if c in crashing), None)
        if both:
            raise HarnessInputError(xfail.source, f"case {both!r} is also in the crash set at "
                                    f"{crashing[both].source}", "keep it in one of the two files")
