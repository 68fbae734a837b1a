"""Propose edits to xfail/<backend>.yaml and crash_sets/<backend>.yaml that make a run match.

    proposals = propose(records_of_one_backend, xfail_path, crash_path)   # {path: new full text}
    apply(proposals)                                                      # write them

Goal: after applying, rerunning the same selection gives no unexpected result, and a second update
from that rerun changes nothing (the edits are idempotent: no dates, no counters).

The files are edited as TEXT, never re-dumped, so hand-written comments, anchors, folded reasons,
`when` conditions and order survive. Each top-level list item gets a line span from the YAML event
marks: from its `- ` line to its last content line, plus
  - the comment lines directly above its `- ` line (no blank line between): they belong to it and
    go when it goes. A comment block that starts on the file's first line is the file's header,
    never an entry's;
  - comment lines right after it that are indented deeper than its `- `: its trailing notes.
Blank lines and other comments between entries stay where they are. The result is checked by
loading it with harness.inputs.expectations.load_expectations before it is returned.

Which entries change: an entry is judged only by the records whose `expectation_source` names it
(the file and the line of its first key). Entries with no such record (their cases were
deselected, their `when` does not hold, or they are crash-set entries that were not run because
--run-crash-set was off: outcome not_run) are left exactly as they are. For each record of an entry:
  - passed: the case leaves the entry;
  - an xfail case that crashed or timed out: it moves to the crash set (the crash set is the list of
    cases not to attempt; the entry's `issue` and `when` go with it);
  - a crash-set case that failed without crashing: it moves to the xfail file, with its phase;
  - still failing the same way: it stays; if the entry has a `phase` and the case failed in another
    one, it stays with the new phase.
An exact-id entry is then kept, removed, or gets its `phase` value replaced in place.

Glob entries. fnmatch has no "all but these", so a glob that must stop matching some cases is
replaced, in place, by entries that match exactly the cases that must stay, each a copy of the
glob's own text (same reason, issue, when, inline comments; an anchor stays on the first copy and
later copies refer to it with an alias) with only `id`, and `phase` where it changed, rewritten.
When there are several copies, the first one's reason gets a new anchor named after the glob and
the others refer to it (`reason: *conv_backward_transposed`), as the hand-written files do.
A comment above the first copy records the glob it came from. The cases that must stay are the
still-failing cases of the run, plus, when `case_ids` (every case id of the registry) is given,
the glob's cases the run did not exercise: they keep the glob's phase, because the run says
nothing about them. Where such cases share a directory (`conv_backward/3d/...`), the glob's last
path segment under that directory (`conv_backward/3d/*transposed*`) replaces their exact ids when
the registry shows that it matches only cases that stay (and at least two). Without `case_ids`
the copies are exact ids of the exercised cases only: right after a full run, but after a `-k`
selection a glob's unselected cases lose their expectation, so pass `case_ids` then. A glob all
of whose exercised cases changed to one new phase (and no unexercised case) keeps its id and gets
the new phase.

New entries go at the end of the file, each under a review comment:
  - an unexpected mismatch, compile_error or runtime_error of a case expected to pass: xfail file;
  - an unexpected crash or hang: crash set;
with `id` (exact), `phase` (the failing phase) and `reason` (the record's signature, else the first
line of its message), one entry per case (ids are exact; nothing invents globs). A file that is
`[]` gets its `[]` replaced by the entries (comments kept); a file left with no entry becomes `[]`.
When an entry that defines an anchor goes, the anchor moves to the first alias of it that stays.
"""
from __future__ import annotations

import bisect
import collections
import dataclasses
import fnmatch
import itertools
import os
import re
import tempfile
import textwrap
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

import yaml

from harness.errors import HarnessInputError
from harness.files import write_text_atomically
from harness.inputs.expectations import load_expectations
from harness.inputs.yamlio import shown
from harness.outcomes import Outcome

FAILED = frozenset(o.value for o in Outcome if o.is_failure and not o.is_crash)  # an xfail entry's business
CRASHED = frozenset(o.value for o in Outcome if o.is_crash)                      # a crash set's
GLOB_CHARS = frozenset("*?[")
LINE_WIDTH = 100         # reasons longer than this become folded `>-` blocks
REASON_LIMIT = 240       # a reason taken from a message's first line is cut here
KEEP = object()          # a version keeps the entry's phase as written

FILE_HEADERS = {"xfail": "# Expected failures of {backend}; see README.md, Expectations.\n",
                "crash": "# Cases {backend} must not attempt (they crash or hang); see README.md, Expectations.\n"}
FILE_NAMES = {"xfail": "the xfail file", "crash": "the crash set"}


# ----------------------------------------------------------------------------------- public API

def propose(records: Iterable[dict], xfail_path: Path | str, crash_path: Path | str, *,
            case_ids: Iterable[str] | None = None,
            versions: Mapping[str, str | None] | None = None) -> dict[Path, str]:
    """New full text for each of the two files that must change for the run to match.

    `records` are one backend's result records (from --report-json). `case_ids`, optional, are all
    case ids of the registry: with them a glob keeps its unexercised cases (see the module text)
    and the result is checked against them. `versions`, optional, are the `when` conditions'
    versions for that check (without them every `when` counts as not holding there).
    A missing file is an empty one. Raises HarnessInputError when a record's expectation_source
    names no entry of the file (it changed since the run).
    """
    records = list(records)
    backends = {r["backend"] for r in records}
    if len(backends) > 1:
        raise ValueError(f"records of one backend only, got {', '.join(sorted(backends))}")
    backend = backends.pop() if backends else Path(xfail_path).stem
    ids = None if case_ids is None else sorted(set(case_ids) | {r["case"] for r in records})
    files = {"xfail": _File.read(Path(xfail_path), "xfail", backend),
             "crash": _File.read(Path(crash_path), "crash", backend)}

    judged: dict[tuple[str, int], list[dict]] = collections.defaultdict(list)
    for r in sorted(records, key=lambda r: r["case"]):
        if r["outcome"] == "not_run":
            continue  # a crash-set case that was not attempted says nothing
        kind = {"xfail": "xfail", "crash": "crash"}.get(r["expected"])
        if kind is None or not r.get("expectation_source"):
            if r["outcome"] in FAILED:
                files["xfail"].new.append(NewEntry.from_record(r, backend))
            elif r["outcome"] in CRASHED:
                files["crash"].new.append(NewEntry.from_record(r, backend))
            continue
        item = files[kind].entry_for(r)
        if item is not None:
            judged[(kind, item.index)].append(r)

    for (kind, index), recs in judged.items():
        other = files["crash" if kind == "xfail" else "xfail"]
        files[kind].judge(files[kind].items[index], recs, other, ids)

    texts = {kind: f.render() for kind, f in files.items()}
    _validate(backend, files, texts, ids, versions)
    return {f.path: texts[kind] for kind, f in files.items() if texts[kind] != f.text or
            (not f.exists and texts[kind] != "")}


def apply(proposals: Mapping[Path | str, str]) -> None:
    """Write each proposed text to its file (atomically: a reader sees the old or the new file)."""
    for path, text in proposals.items():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        write_text_atomically(Path(path), text)


# ------------------------------------------------------------------------------- YAML text model

@dataclasses.dataclass
class _Node:
    kind: str                 # scalar, alias, map, seq
    start: int                # character offsets into the text; start includes an anchor
    end: int                  # just past the last non-blank character
    anchor: str | None        # the anchor it defines, or for an alias the anchor it names
    in_flow: bool             # inside a flow collection ({...} or [...])
    indent: int               # column of the enclosing block collection's entries
    flow: bool = False        # a flow collection itself
    children: list["_Node"] = dataclasses.field(default_factory=list)
    value: Any = None         # a scalar's value

    def walk(self) -> Iterator["_Node"]:
        yield self
        for child in self.children:
            yield from child.walk()

    def value_of(self, key: str) -> "_Node | None":
        for k, v in zip(self.children[::2], self.children[1::2]):
            if k.kind == "scalar" and k.value == key:
                return v
        return None

    def key_of(self, key: str) -> "_Node | None":
        for k in self.children[::2]:
            if k.kind == "scalar" and k.value == key:
                return k
        return None


class _Parser:
    """A tree of _Node from PyYAML's events, which (unlike composed nodes) keep aliases apart."""

    def __init__(self, text: str):
        self.text = text
        self.events = list(yaml.parse(text))
        self.i = 0

    def root(self) -> _Node | None:
        documents = [e for e in self.events if isinstance(e, yaml.DocumentStartEvent)]
        if len(documents) > 1:
            raise ValueError("more than one YAML document")
        if not documents:
            return None
        self.i = self.events.index(documents[0]) + 1
        return self._node(False, 0)

    def _node(self, in_flow: bool, indent: int) -> _Node:
        e = self.events[self.i]
        self.i += 1
        if isinstance(e, yaml.AliasEvent):
            return _Node("alias", e.start_mark.index, e.end_mark.index, e.anchor, in_flow, indent)
        if isinstance(e, yaml.ScalarEvent):
            node = _Node("scalar", e.start_mark.index, self._trim(e.start_mark.index, e.end_mark.index),
                         e.anchor, in_flow, indent)
            node.value = e.value
            return node
        kind = "map" if isinstance(e, yaml.MappingStartEvent) else "seq"
        flow = bool(e.flow_style)
        node = _Node(kind, e.start_mark.index, e.end_mark.index, e.anchor, in_flow, indent, flow)
        child_indent = indent
        while not isinstance(self.events[self.i], (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            if not node.children and not flow:
                child_indent = self._column(self.events[self.i].start_mark.index)
            node.children.append(self._node(in_flow or flow, child_indent))
        end = self.events[self.i]
        self.i += 1
        if flow:
            node.end = end.end_mark.index
        elif node.children:  # a block collection ends with its last child (its end event is the next token)
            node.end = max(c.end for c in node.children)
        return node

    def _trim(self, start: int, end: int) -> int:
        return start + len(self.text[start:end].rstrip())

    def _column(self, offset: int) -> int:
        return offset - self.text.rfind("\n", 0, offset) - 1


@dataclasses.dataclass
class _Version:
    """One entry that an item becomes: its own text with at most `id` and `phase` rewritten."""

    id: str | None = None     # None: the id as written
    phase: Any = KEEP         # KEEP, a phase name, or None to drop the key
    note: str | None = None   # a comment line put above it


@dataclasses.dataclass
class _Item:
    index: int
    node: _Node
    data: dict                # the entry as loaded
    line: int                 # 1-based line of its first key: what expectation_source names
    first: int                # 0-based lines: first attached comment, `- ` line, last content, last
    dash: int
    content_last: int
    last: int
    versions: list[_Version] = dataclasses.field(default_factory=lambda: [_Version()])
    shared_anchor: str | None = None  # copies share the reason: an anchor added on the first, aliases after

    @property
    def changed(self) -> bool:
        return self.versions != [_Version()]


@dataclasses.dataclass
class NewEntry:
    """An entry to append; `entry_lines` writes it (also used by the fuzzer for its xfail entries)."""

    case: str
    phase: str | None
    reason: str
    comment: str
    issue: Any = None
    when: Any = None

    @classmethod
    def from_record(cls, r: dict, backend: str, moved_from: str | None = None, item: _Item | None = None):
        if moved_from is None:
            comment = f"# review: added by --update-expectations from a run on {backend}; check the reason"
        else:
            how = "it crashed or hung" if r["outcome"] in CRASHED else "it failed without crashing"
            comment = (f"# review: moved from {FILE_NAMES[moved_from]} by --update-expectations ({how}); "
                       "check the reason")
        data = item.data if item is not None else {}
        return cls(r["case"], r.get("phase"), _reason(r), comment, data.get("issue"), data.get("when"))


class _File:
    """One expectation file: its text, its entries' line spans, and the edits planned for it."""

    def __init__(self, path: Path, kind: str, backend: str, text: str, exists: bool):
        self.path, self.kind, self.backend, self.text, self.exists = path, kind, backend, text, exists
        self.lines = text.splitlines(keepends=True)
        self.line_starts = [0]
        for line in self.lines:
            self.line_starts.append(self.line_starts[-1] + len(line))
        self.new: list[NewEntry] = []
        try:
            self.root = _Parser(text).root()
            data = yaml.safe_load(text) if text.strip() else None
        except (yaml.YAMLError, ValueError) as e:
            raise HarnessInputError(shown(path), f"cannot be updated: {e}".splitlines()[0], "fix the YAML") from None
        if self.root is not None and not (self.root.kind == "seq" or (self.root.kind == "scalar" and data is None)):
            raise HarnessInputError(shown(path), "cannot be updated: not a YAML list of entries")
        if self.root is not None and self.root.kind == "scalar":
            if self.text[self.root.start:self.root.end].strip():
                raise HarnessInputError(shown(path), "cannot be updated: write [] for an empty list")
            self.root = None
        if self.root is not None and self.root.flow and self.root.children:
            raise HarnessInputError(shown(path), "cannot be updated: a flow list [...] of entries",
                                    "write one '- id: ...' block per entry")
        self.items = self._items(data or [])
        self.by_line = {item.line: item for item in self.items}

    @classmethod
    def read(cls, path: Path, kind: str, backend: str) -> "_File":
        if not path.exists():
            return cls(path, kind, backend, "", exists=False)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise HarnessInputError(shown(path), f"cannot read: {e.strerror}") from None
        return cls(path, kind, backend, text, exists=True)

    # ------------------------------------------------------------------ spans

    def _line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.line_starts, offset) - 1

    def _items(self, data: list) -> list[_Item]:
        if self.root is None or self.root.flow:
            return []
        nodes = self.root.children
        if len(nodes) != len(data) or not all(n.kind == "map" for n in nodes):
            raise HarnessInputError(shown(self.path), "cannot be updated: every entry must be a mapping")
        items: list[_Item] = []
        lower = 0
        for index, (node, entry) in enumerate(zip(nodes, data)):
            start = self._line_of(node.start)
            dash = start
            while dash > lower and not self.lines[dash].lstrip().startswith("-"):
                dash -= 1
            content_last = self._line_of(node.end - 1)
            items.append(_Item(index, node, entry, self._line_of(node.start) + 1, dash, dash,
                               content_last, content_last))
            lower = content_last + 1
        for this, after in zip(items, items[1:] + [None]):
            limit = after.dash if after else len(self.lines)
            column = _indent(self.lines[this.dash])
            k = this.content_last + 1
            while k < limit and _is_comment(self.lines[k]) and _indent(self.lines[k]) > column:
                k += 1
            this.last = k - 1
        for before, this in zip([None] + items, items):
            lower = before.last + 1 if before else 0
            first = this.dash
            while first > lower and _is_comment(self.lines[first - 1]):
                first -= 1
            this.first = this.dash if (first == 0 and before is None) else first  # the file's header
        return items

    def entry_for(self, record: dict) -> _Item | None:
        """The entry a record's expectation_source names; None when it names another file."""
        source = record["expectation_source"]
        path, _, line = source.rpartition(":")
        if not line.isdigit():
            raise HarnessInputError(source, "expectation_source is not 'file:line'")
        if not _same_file(path, self.path):
            return None
        item = self.by_line.get(int(line))
        if item is None or not fnmatch.fnmatchcase(record["case"], str(item.data.get("id"))):
            raise HarnessInputError(source, f"names no entry for {record['case']} in {shown(self.path)}",
                                    "the file changed since the run: run again, then update")
        return item

    # --------------------------------------------------------------- judging

    def judge(self, item: _Item, records: list[dict], other: "_File", case_ids: list[str] | None) -> None:
        """Plan what becomes of one entry, from the records that name it."""
        phase0 = item.data.get("phase")
        has_phase = "phase" in item.data
        stay: dict[str, Any] = {}
        left = collections.Counter()
        for r in records:
            outcome = r["outcome"]
            if outcome == "passed":
                left["now pass"] += 1
            elif (self.kind == "xfail" and outcome in CRASHED) or (self.kind == "crash" and outcome in FAILED):
                left[f"moved to {FILE_NAMES[other.kind]}"] += 1
                other.new.append(NewEntry.from_record(r, self.backend, moved_from=self.kind, item=item))
            else:
                stay[r["case"]] = r.get("phase") if has_phase and r.get("phase") != phase0 else phase0
        if not left and all(p == phase0 for p in stay.values()):
            return
        pattern = str(item.data["id"])
        if not any(ch in GLOB_CHARS for ch in pattern):
            item.versions = [_Version(phase=_changed(p, phase0)) for p in list(stay.values())[:1]]
            return
        exercised = {r["case"] for r in records}
        unexercised = [] if case_ids is None else [c for c in case_ids
                                                   if fnmatch.fnmatchcase(c, pattern) and c not in exercised]
        phases = set(stay.values())
        if not left and not unexercised and len(phases) == 1:
            item.versions = [_Version(phase=_changed(phases.pop(), phase0))]
            return
        keep = {**stay, **{c: phase0 for c in unexercised}}
        narrowed = _narrow(pattern, keep, phase0, case_ids)
        item.versions = [_Version(id=p, phase=_changed(ph, phase0)) for p, ph in narrowed]
        reason = item.node.value_of("reason")
        if len(item.versions) > 1 and reason is not None and reason.kind == "scalar" and not reason.anchor:
            item.shared_anchor = self._new_anchor(pattern)
        if item.versions:
            changed = sum(p != phase0 for p in stay.values())
            why = [f"{n} {what}" for what, n in sorted(left.items())]
            why += [f"{changed} failed in another phase"] if changed else []
            item.versions[0].note = (f"# review: narrowed from {flow_text(pattern)} by --update-expectations "
                                     f"({', '.join(why)})")

    def _new_anchor(self, pattern: str) -> str:
        taken = {n.anchor for item in self.items for n in item.node.walk() if n.anchor}
        taken |= {item.shared_anchor for item in self.items if item.shared_anchor}
        base = "_".join(re.findall(r"[A-Za-z0-9]+", pattern)) or "reason"
        return next(name for name in (base if n == 1 else f"{base}_{n}" for n in itertools.count(1))
                    if name not in taken)

    # ------------------------------------------------------------- rendering

    def render(self) -> str:
        if not self.new and not any(item.changed for item in self.items):
            return self.text
        blocks = [[""] + [entry.comment] + entry_lines(entry, self._pad()) for entry in
                  sorted(self.new, key=lambda e: e.case)]
        new_lines = [line + "\n" for block in blocks for line in block]
        if self.root is None:
            head = self.text if self.exists else FILE_HEADERS[self.kind].format(backend=self.backend)
            if head and not head.endswith("\n"):
                head += "\n"
            body = new_lines if head.strip() else new_lines[1:]
            return head + "".join(body)
        if self.root.flow:  # `[]`: replace it by the entries, keep what surrounds it
            first, last = self._line_of(self.root.start), self._line_of(self.root.end - 1)
            before, after = self.lines[:first], self.lines[last + 1:]
            rest = self.lines[last][self._column(self.root.end):]
            kept = [rest.lstrip()] if rest.strip() else []
            if not before or not before[-1].strip():
                new_lines = new_lines[1:]
            return "".join(before + new_lines + kept + after)
        return self._render_items(new_lines)

    def _render_items(self, new_lines: list[str]) -> str:
        promotions = self._promotions()
        out: list[str | None] = list(self.lines[:self.items[0].first])  # None marks a removed entry
        survivors = sum(len(item.versions) for item in self.items) + len(self.new)
        for item, after in zip(self.items, self.items[1:] + [None]):
            if not item.versions:  # an entry-less file becomes `[]`, where its first entry was
                out.append(None if survivors or item.index > 0 else "[]\n")
            for k, version in enumerate(item.versions):
                out += self._version_lines(item, k, version, promotions)
            end = after.first if after else item.last + 1
            if after is None:
                out += new_lines
            out += self.lines[item.last + 1:end]
        out += self.lines[self.items[-1].last + 1:]
        text = "".join(_drop_double_blanks(out))
        return text if text.endswith("\n") or not text else text + "\n"

    def _version_lines(self, item: _Item, k: int, version: _Version,
                       promotions: dict[tuple[int, int, int], str]) -> list[str]:
        body_start = self.line_starts[item.dash]
        body_end = self.line_starts[item.content_last + 1]
        edits: list[tuple[int, int, str]] = []
        node = item.node
        if version.id is not None:
            id_node = node.value_of("id")
            edits.append((id_node.start, id_node.end, scalar_text(version.id, id_node.in_flow)))
        if version.phase is not KEEP:
            edits += self._phase_edits(item, version.phase)
        for alias in (n for n in node.walk() if n.kind == "alias"):
            text = promotions.get((item.index, k, alias.start))
            if text is not None:
                edits.append((alias.start, alias.end, text))
        if k > 0:  # later copies refer to the first copy's anchors
            edits += [(n.start, n.end, "*" + n.anchor) for child in node.children for n in child.walk()
                      if n.anchor and n.kind != "alias"]
        if item.shared_anchor:
            reason = node.value_of("reason")
            edits.append((reason.start, reason.start if k == 0 else reason.end,
                          f"&{item.shared_anchor} " if k == 0 else f"*{item.shared_anchor}"))
        text = _apply_edits(self.text, body_start, body_end, edits)
        lines = text.splitlines(keepends=True)
        note = [version.note + "\n"] if version.note else []
        if k == 0:
            return self.lines[item.first:item.dash] + note + lines + self.lines[item.content_last + 1:item.last + 1]
        return note + lines

    def _phase_edits(self, item: _Item, phase: str | None) -> list[tuple[int, int, str]]:
        node = item.node
        value, key = node.value_of("phase"), node.key_of("phase")
        if phase is None:  # the key goes
            if value is None:
                return []
            if node.flow:
                before = self.text.rfind(",", node.start, key.start)
                return [(before if before >= 0 else key.start, value.end, "")]
            first, last = self._line_of(key.start), self._line_of(value.end - 1)
            if self.text[self.line_starts[first]:key.start].strip():
                raise HarnessInputError(f"{shown(self.path)}:{item.line}",
                                        "cannot drop 'phase': put it on a line of its own")
            return [(self.line_starts[first], self.line_starts[last + 1], "")]
        if value is not None:
            return [(value.start, value.end, scalar_text(phase, value.in_flow))]
        id_node = node.value_of("id")
        if node.flow:
            return [(id_node.end, id_node.end, f", phase: {scalar_text(phase, True)}")]
        line_end = self.line_starts[self._line_of(id_node.end - 1) + 1] - 1
        key_column = id_node.indent
        return [(line_end, line_end, "\n" + " " * key_column + f"phase: {scalar_text(phase, False)}")]

    def _promotions(self) -> dict[tuple[int, int, int], str]:
        """Anchors whose definition goes: the text that replaces the first alias of each that stays."""
        found: dict[tuple[int, int, int], str] = {}
        defs = [(item, n) for item in self.items for child in item.node.children for n in child.walk()
                if n.anchor and n.kind != "alias"]
        aliases = [(item, n) for item in self.items for n in item.node.walk() if n.kind == "alias"]
        for d_index, (item, anchor) in enumerate(defs):
            if item.versions and not self._overridden(item, item.versions[0], anchor.start):
                continue
            later = [n.start for _, n in defs[d_index + 1:] if n.anchor == anchor.anchor]
            scope_end = later[0] if later else len(self.text)
            for j_item, alias in aliases:
                if alias.anchor != anchor.anchor or not anchor.start < alias.start < scope_end:
                    continue
                k = next((k for k, v in enumerate(j_item.versions) if not self._overridden(j_item, v, alias.start)),
                         None)
                if k is not None:
                    found[(j_item.index, k, alias.start)] = self._moved_anchor(anchor, alias)
                    break
        return found

    def _overridden(self, item: _Item, version: _Version, offset: int) -> bool:
        spans = []
        if version.id is not None:
            spans.append(item.node.value_of("id"))
        if version.phase is not KEEP:
            spans.append(item.node.value_of("phase"))
        return any(n is not None and n.start <= offset < n.end for n in spans)

    def _moved_anchor(self, anchor: _Node, alias: _Node) -> str:
        text = self.text[anchor.start:anchor.end]
        rest = self.text[alias.end:self.text.find("\n", alias.end) % (len(self.text) + 1)]
        if not alias.in_flow and ("\n" not in text or not rest.strip()):
            delta = alias.indent - anchor.indent
            lines = text.split("\n")
            return "\n".join(lines[:1] + [_shift(line, delta) for line in lines[1:]])
        try:
            value = yaml.safe_load(text[len(anchor.anchor) + 1:])
        except yaml.YAMLError:
            raise HarnessInputError(shown(self.path), f"cannot move anchor &{anchor.anchor}: edit by hand") from None
        return f"&{anchor.anchor} {flow_text(value)}"

    def _pad(self) -> str:
        if self.items:
            return " " * _indent(self.lines[self.items[0].dash])
        return ""

    def _column(self, offset: int) -> int:
        return offset - self.line_starts[self._line_of(offset)]


# ------------------------------------------------------------------------------------- helpers

def _narrow(pattern: str, keep: dict[str, Any], phase0: Any, case_ids: list[str] | None) -> list[tuple[str, Any]]:
    """Entries matching exactly the cases in `keep` (case -> phase): directory globs where safe, else ids."""
    chosen: list[tuple[str, Any]] = []
    remaining = dict(keep)
    if case_ids is not None and "/" in pattern:
        tail = pattern.rsplit("/", 1)[1]
        directories = sorted({c.rsplit("/", 1)[0] for c, p in keep.items() if p == phase0 and "/" in c})
        for directory in directories:
            candidate = f"{directory}/{tail}"
            if candidate == pattern or any(ch in directory for ch in GLOB_CHARS | {"]"}):
                continue
            matched = [c for c in case_ids if fnmatch.fnmatchcase(c, candidate)]
            if (len(matched) >= 2 and all(c in remaining and remaining[c] == phase0 for c in matched)
                    and all(fnmatch.fnmatchcase(c, pattern) for c in matched)):
                chosen.append((candidate, phase0))
                for c in matched:
                    del remaining[c]
    chosen += [(_exact(c), p) for c, p in remaining.items()]
    return sorted(chosen)


def _exact(case_id: str) -> str:
    """An fnmatch pattern that matches this id only (ids with glob characters get them bracketed)."""
    return "".join(f"[{ch}]" if ch in GLOB_CHARS else ch for ch in case_id)


def _changed(phase: Any, phase0: Any) -> Any:
    return KEEP if phase == phase0 else phase


def _reason(r: dict) -> str:
    text = r.get("signature") or next((line for line in (r.get("message") or "").splitlines() if line.strip()), "")
    text = " ".join(str(text).split())
    if len(text) > REASON_LIMIT:
        text = text[:REASON_LIMIT - 4].rstrip() + " ..."
    if not text:
        text = f"{r['outcome']} in phase {r.get('phase')}"
    return text


def entry_lines(entry: NewEntry, pad: str) -> list[str]:
    lines = [f"{pad}- id: {scalar_text(_exact(entry.case), False)}"]
    if entry.phase:
        lines.append(f"{pad}  phase: {scalar_text(entry.phase, False)}")
    lines += _key_lines("reason", entry.reason, pad + "  ")
    if entry.issue is not None:
        lines.append(f"{pad}  issue: {scalar_text(entry.issue, False)}")
    if entry.when is not None:
        lines.append(f"{pad}  when: {_when_text(entry.when)}")
    return lines


def _key_lines(key: str, value: str, pad: str) -> list[str]:
    """`key: value` in a block mapping at `pad`: a safe plain/quoted scalar, or `>-` when long."""
    line = f"{pad}{key}: {scalar_text(value, False)}"
    if len(line) <= LINE_WIDTH:
        return [line]
    wrapped = textwrap.wrap(value, width=LINE_WIDTH - len(pad) - 2, break_long_words=False,
                            break_on_hyphens=False)
    folded = [f"{pad}{key}: >-"] + [f"{pad}  {w}" for w in wrapped]
    try:
        if yaml.safe_load(textwrap.dedent("\n".join(folded)))[key] == value:
            return folded
    except (yaml.YAMLError, TypeError, KeyError):
        pass
    return [line]


def scalar_text(value: Any, in_flow: bool) -> str:
    """A scalar as YAML text that reads back as `value`, for a block or a flow context."""
    if in_flow:
        return flow_text(value)
    dumped = yaml.safe_dump({"k": value}, width=float("inf"), allow_unicode=True, default_flow_style=False)
    return dumped[len("k: "):].rstrip("\n")


def flow_text(value: Any) -> str:
    """A value as single-line flow YAML (safe inside {...} and [...])."""
    return yaml.safe_dump([value], default_flow_style=True, width=float("inf"), allow_unicode=True).strip()[1:-1]


def _when_text(when: Any) -> str:
    if not isinstance(when, dict):
        return flow_text(when)
    return "{" + ", ".join(f"{flow_text(str(k))}: \"{_double_quoted(str(v))}\"" for k, v in when.items()) + "}"


def _double_quoted(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _apply_edits(text: str, start: int, end: int, edits: list[tuple[int, int, str]]) -> str:
    """text[start:end] with non-overlapping edits applied (an edit inside an earlier one is dropped)."""
    out, at = [], start
    for e_start, e_end, replacement in sorted(edits, key=lambda e: (e[0], -e[1])):
        if e_start < at:
            continue
        out += [text[at:e_start], replacement]
        at = e_end
    out.append(text[at:end])
    return "".join(out)


def _drop_double_blanks(lines: list[str | None]) -> list[str]:
    """Drop removed entries (None), and the blank line that would double up where one was."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        if lines[i] is None:
            j = i
            while j < len(lines) and lines[j] is None:
                j += 1
            following = lines[j] if j < len(lines) else None
            previous_blank = not out or not out[-1].strip()
            if following is None:
                while out and not out[-1].strip():
                    out.pop()
            elif previous_blank and not following.strip():
                j += 1
            i = j
            continue
        out.append(lines[i])
        i += 1
    return out


def _is_comment(line: str) -> bool:
    return line.lstrip().startswith("#")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _shift(line: str, delta: int) -> str:
    if delta >= 0 or not line.strip():
        return " " * delta + line if line.strip() else line
    return line[min(-delta, _indent(line)):]


def _same_file(source_path: str, path: Path) -> bool:
    """Whether a record's source path names `path`: the same file, else the same last two parts."""
    source = Path(source_path)
    try:
        if source.exists() and path.exists() and source.samefile(path):
            return True
    except OSError:
        pass
    return Path(os.path.normpath(source)).parts[-2:] == Path(os.path.normpath(path)).parts[-2:]


def _witness(pattern: str) -> str:
    """A string the fnmatch pattern matches (to check a file when the registry's ids are unknown)."""
    out, i = [], 0
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
                out.append(pick if negated or not members else members[0])
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


def _validate(backend: str, files: dict[str, _File], texts: dict[str, str], case_ids: list[str] | None,
              versions: Mapping[str, str | None] | None) -> None:
    """Load the proposed files with the harness's own loader; a failure here is a bug of this module
    (unless the files as they were fail the same way: then the problem was there before)."""
    def load(candidate: dict[str, str]) -> str | None:
        ids = case_ids
        if ids is None:  # a string matching each entry's id stands in for the registry
            try:
                entries = [e for text in candidate.values() for e in (yaml.safe_load(text) or [])]
            except yaml.YAMLError as e:
                return str(e)
            ids = [_witness(e["id"]) for e in entries if isinstance(e, dict) and isinstance(e.get("id"), str)]
        with tempfile.TemporaryDirectory() as tmp:
            for kind, sub in (("xfail", "xfail"), ("crash", "crash_sets")):
                (Path(tmp) / sub).mkdir()
                (Path(tmp) / sub / f"{backend}.yaml").write_text(candidate[kind], encoding="utf-8")
            try:
                load_expectations(backend, Path(tmp) / "xfail", Path(tmp) / "crash_sets", ids,
                                  versions if versions is not None else _AnyVersion())
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
                           + "\n".join(f"--- {shown(f.path)}\n{texts[kind]}" for kind, f in files.items()))


def proposals_for_report(report: dict, root: Path | str, case_ids: Iterable[str] | None = None) -> dict[str, str]:
    """propose() for each backend of the report, keyed by the file paths the report shows.

    The files are environment.backends[name].xfail_file / crash_set_file, resolved against `root`.
    A backend is skipped when the report does not name them, when their directories are not found
    under `root` (a report from another checkout), or when the report no longer fits them (an
    entry it names has moved: rerun first). A missing file in a found directory is an empty one.
    `case_ids` (every case of the registry) lets a glob keep the cases the run did not exercise;
    by default they are read from `root`/cases when it exists.
    """
    root = Path(root)
    results = report.get("results", [])
    ids = list(case_ids) if case_ids is not None else _registry_ids(root)
    found: dict[str, str] = {}
    for name, info in sorted(((report.get("environment") or {}).get("backends") or {}).items()):
        shown = {"xfail": (info or {}).get("xfail_file"), "crash": (info or {}).get("crash_set_file")}
        if not all(shown.values()):
            continue
        paths = {kind: root / path for kind, path in shown.items()}
        if not all(path.parent.is_dir() for path in paths.values()):
            continue
        try:
            proposed = propose([r for r in results if r["backend"] == name], paths["xfail"], paths["crash"],
                               case_ids=ids)
        except HarnessInputError:
            continue
        for kind, path in paths.items():
            if path in proposed:
                found[shown[kind]] = proposed[path]
    return found


def _registry_ids(root: Path) -> list[str] | None:
    """Every case id of `root`/cases (no torch is imported), or None when it cannot be read."""
    cases = root / "cases"
    if not cases.is_dir():
        return None
    try:
        from harness.inputs.registry import case_modules, load_case_module
        return [case.id for module in case_modules([cases]) for case in load_case_module(module)]
    except Exception:  # noqa: BLE001 - a registry that does not load only costs the narrowing its precision
        return None
