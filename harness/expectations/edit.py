"""One expectation file, edited with ruamel.yaml's round-trip mode: a Plan's operations carried out.

    file = ExpectationFile.read(path, Expected.XFAIL, backend)
    file.entries                                  # what the policy reads (the harness loader's view)
    text = file.render(changes, added, origins)   # origins: the file that moved entries come from

Whole-line comments and blank lines are placed by position (harness.expectations.yaml_roundtrip says why
ruamel needs that help):
  - the comment lines directly above an entry's `- ` line (no blank line between) belong to it and go
    when it goes, except a comment block that starts on the file's first line: the file's header;
  - comment lines right after it, indented deeper than its `- `: its trailing notes, which follow its
    last copy when a glob is narrowed;
  - blank lines and other comments stay where they are, between the same neighbours.
A file with no entry (empty, comments only, or `[]`) is edited as text.
"""
from __future__ import annotations

import copy
import re
import textwrap
from pathlib import Path
from typing import Any, Iterator

from ruamel.yaml import YAMLError
from ruamel.yaml.comments import CommentedBase, CommentedMap, CommentedSeq
from ruamel.yaml.error import CommentMark
from ruamel.yaml.scalarstring import (
    DoubleQuotedScalarString,
    FoldedScalarString,
    PlainScalarString,
    ScalarString,
    SingleQuotedScalarString,
)
from ruamel.yaml.tokens import CommentToken

from harness.errors import HarnessInputError
from harness.expectations.policy import Drop, MarkNondeterministic, Narrow, NewEntry, Operation, Rewrite, exact
from harness.expectations.yaml_roundtrip import (
    Layout,
    ListItem,
    Span,
    anchor_of,
    children,
    dump_list,
    keep_end_of_line_comments,
    round_trip_yaml,
)
from harness.files import display_path
from harness.outcomes import Expected
from harness.project_files.yamlio import parse_yaml, scalar_text

LINE_WIDTH = 100   # reasons longer than this become folded `>-` blocks
FILE_HEADERS = {
    Expected.XFAIL: "# Expected failures of {backend}; see docs/reference/expectations.md.\n",
    Expected.CRASH: "# Cases {backend} must not attempt (they crash or hang); see docs/reference/expectations.md.\n",
}


class ExpectationFile:
    def __init__(self, path: Path, kind: Expected, backend: str, text: str, exists: bool):
        self.path, self.kind, self.backend, self.text, self.exists = path, kind, backend, text, exists
        self.lines = text.splitlines(keepends=True)
        self.entries = self._entries()
        try:
            self.root: CommentedSeq | None = round_trip_yaml().load(text) if self.entries else None
        except YAMLError as e:
            raise HarnessInputError(display_path(path),
                                    f"cannot be updated: {e}".splitlines()[0], "fix the YAML") from None
        self.spans: list[Span] = []
        if self.root is not None:
            if self.root.fa.flow_style():
                raise HarnessInputError(display_path(path), "cannot be updated: a flow list [...] of entries",
                                        "write one '- id: ...' block per entry")
            self.spans = Layout(self.lines, self.root).spans()
            keep_end_of_line_comments(self.root, self.lines)
        self.anchors = set(_anchors(self.root))

    @classmethod
    def read(cls, path: Path, kind: Expected, backend: str) -> "ExpectationFile":
        if not path.exists():
            return cls(path, kind, backend, "", exists=False)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise HarnessInputError(display_path(path), f"cannot read: {e.strerror}") from None
        return cls(path, kind, backend, text, exists=True)

    def _entries(self) -> list:
        data = parse_yaml(self.text, self.path) if self.text.strip() else None
        if data is None and any(line.strip() and not line.lstrip().startswith("#") for line in self.lines):
            raise HarnessInputError(display_path(self.path), "cannot be updated: write [] for an empty list")
        if data is not None and not isinstance(data, list):
            raise HarnessInputError(display_path(self.path), "cannot be updated: not a YAML list of entries")
        if not all(isinstance(entry, dict) for entry in data or []):
            raise HarnessInputError(display_path(self.path), "cannot be updated: every entry must be a mapping")
        return data or []

    # ----------------------------------------------------------------------------------- rendering

    def render(self, changes: dict[int, Operation], added: list[NewEntry], origins: "ExpectationFile") -> str:
        """The file's text with `changes` made and `added` appended (their issue and when from `origins`)."""
        if not changes and not added:
            return self.text
        new = [piece for entry in added
               for piece in ("\n", entry.comment + "\n", ListItem(_new_node(entry, origins.entry_node(entry.origin))))]
        if self.root is None:
            return self._text_with(new)
        out: list[Any] = list(self.lines[:self.spans[0].first])   # lines, ListItems, None for a removed entry
        survivors = len(added) + sum(not isinstance(changes.get(i), Drop) for i in range(len(self.spans)))
        for index, (span, after) in enumerate(zip(self.spans, self.spans[1:] + [None])):
            versions = self._versions(index, changes.get(index))
            if not versions:  # an entry-less file becomes `[]`, where its first entry was
                out.append(None if survivors or index > 0 else "[]\n")
            else:
                out += self.lines[span.first:span.dash]
                out += versions
                out += self.lines[span.content_last + 1:span.last + 1]
            out += new if after is None else []
            out += self.lines[span.last + 1:after.first if after else span.last + 1]
        out += self.lines[self.spans[-1].last + 1:]
        return dump_list(_drop_double_blanks(out))

    def _versions(self, index: int, operation: Operation | None) -> list:
        """What entry `index` becomes: its note line and ListItems, nothing when it goes."""
        assert self.root is not None, "only a file with entries has entries to change"
        node = self.root[index]
        eol = (self.root.ca.items.get(index) or [None])[0]
        if isinstance(operation, Drop):
            return []
        if isinstance(operation, Rewrite):
            self._rewrite(node, node, node.get("phase"), operation)
            return [operation.note + "\n", ListItem(node, eol)]
        if isinstance(operation, MarkNondeterministic):
            node["nondeterministic"] = True
            return [operation.note + "\n", ListItem(node, eol)]
        if not isinstance(operation, Narrow):
            return [ListItem(node, eol)]
        reason = node.get("reason")
        keeping = sum(failure is None for _, failure in operation.copies)   # copies that share the reason
        if keeping > 1 and isinstance(reason, str) and not anchor_of(reason):
            if not isinstance(reason, ScalarString):
                node["reason"] = reason = PlainScalarString(reason)
            reason.yaml_set_anchor(self._new_anchor(str(node["id"])), always_dump=True)
        phase0 = node.get("phase")   # as written: the first copy may be rewritten before the others
        nodes = [node] + [_copy(node) for _ in operation.copies[1:]]
        for copied, (pattern, failure) in zip(nodes, operation.copies):
            self._replace(copied, node, "id", pattern)
            if failure is not None:
                self._rewrite(copied, node, phase0, failure)
        items = [ListItem(n, eol if n is node else copy.deepcopy(eol)) for n in nodes]
        return [operation.note + "\n", *items]

    def _rewrite(self, target: CommentedMap, source: CommentedMap, phase0: Any, failure: Rewrite) -> None:
        """The entry's new failure: phase, reason and signature (the other keys and comments stay)."""
        self._set_phase(target, source, phase0, failure.phase)
        self._set_text(target, source, "reason", failure.reason)
        if failure.signature is None:
            target.pop("signature", None)   # the one it names is no longer this failure's
        else:
            self._set_text(target, source, "signature", failure.signature)

    def _set_text(self, target: CommentedMap, source: CommentedMap, key: str, text: str) -> None:
        """A reason or signature: folded (`>-`) when long, outside a flow mapping; a new key follows the reason."""
        if key not in target:
            target.insert(list(target).index("reason") + 1, key, None)
        folded = _reason_scalar(text)
        if isinstance(folded, FoldedScalarString) and not target.fa.flow_style():
            target[key] = folded
        else:
            self._replace(target, source, key, text)   # keeps an end-of-line comment where it was

    def _set_phase(self, target: CommentedMap, source: CommentedMap, written: Any, phase: str | None) -> None:
        if phase == written:
            return
        if phase is None:
            del target["phase"]
        elif "phase" in target:
            self._replace(target, source, "phase", phase)
        else:
            target.insert(list(target).index("id") + 1, "phase", _scalar(phase, target.fa.flow_style()))

    def _replace(self, target: CommentedMap, source: CommentedMap, key: str, value: str) -> None:
        """target[key] = value; a comment at the end of its line keeps its distance from the value."""
        in_flow = bool(target.fa.flow_style())
        target[key] = _scalar(value, in_flow)
        slot = target.ca.items.get(key)
        if not slot or slot[2] is None:
            return
        line, column = source.lc.value(key)
        if slot[2].start_mark is None or slot[2].start_mark.line != line:
            return
        written = len(self.lines[line][column:slot[2].column].rstrip())
        shift = len(scalar_text(value, in_flow)) - written
        slot[2] = CommentToken(slot[2].value, CommentMark(max(0, slot[2].column + shift)))

    def _new_anchor(self, pattern: str) -> str:
        base = "_".join(re.findall(r"[A-Za-z0-9]+", pattern)) or "reason"
        name = next(f"{base}_{n}" if n > 1 else base for n in range(1, len(self.anchors) + 2)
                    if (f"{base}_{n}" if n > 1 else base) not in self.anchors)
        self.anchors.add(name)
        return name

    def entry_node(self, index: int | None) -> CommentedMap | dict:
        return self.root[index] if index is not None and self.root is not None else {}

    def _text_with(self, new: list) -> str:
        """The text of a file with no entry, with the new entries in: in place of its `[]`, else at its end."""
        block = dump_list(new)
        flow = next((i for i, line in enumerate(self.lines) if line.strip() and not line.lstrip().startswith("#")),
                    None)
        if flow is None:  # empty, or comments only
            head = self.text if self.exists else FILE_HEADERS[self.kind].format(backend=self.backend)
            head += "" if not head or head.endswith("\n") else "\n"
            return head + (block if head.strip() else block[1:])
        before, after = self.lines[:flow], self.lines[flow + 1:]
        rest = self.lines[flow][self.lines[flow].index("]") + 1:]
        kept = [rest.lstrip()] if rest.strip() else []
        if not before or not before[-1].strip():
            block = block[1:]
        return "".join(before + [block] + kept + after)


# ------------------------------------------------------------------------------------- helpers

def new_entries_text(entries: list[NewEntry]) -> str:
    """New entries as the text `render` appends (each under its comment, when it has one)."""
    return dump_list([piece for entry in entries for piece in ([entry.comment + "\n"] if entry.comment else [])
                  + [ListItem(_new_node(entry, {}))]])


def _new_node(entry: NewEntry, origin: CommentedMap | dict) -> CommentedMap:
    """An entry's mapping; a moved case takes the issue and when of the entry it leaves."""
    node = CommentedMap()
    node["id"] = _scalar(exact(entry.case), False)
    if entry.phase:
        node["phase"] = _scalar(entry.phase, False)
    node["reason"] = _reason_scalar(entry.reason)
    if entry.signature:
        node["signature"] = _reason_scalar(entry.signature)
    for key in ("issue", "when"):
        if key in origin:
            node[key] = copy.deepcopy(origin[key])
    if entry.nondeterministic:
        node["nondeterministic"] = True
    return node


def _copy(node: CommentedMap) -> CommentedMap:
    """A copy of an entry that refers to its anchored values (aliases) and copies the others."""
    new = CommentedMap()
    for key, value in node.items():
        new[key] = value if anchor_of(value) or not isinstance(value, CommentedBase) else copy.deepcopy(value)
    new.ca.items.update(copy.deepcopy(node.ca.items))
    if node.fa.flow_style():
        new.fa.set_flow_style()
    return new


def _anchors(node: Any) -> Iterator[str]:
    if anchor := anchor_of(node):
        yield anchor
    if isinstance(node, CommentedBase):
        for child in children(node):
            yield from _anchors(child)


def _scalar(value: Any, in_flow: bool) -> Any:
    """A string quoted as PyYAML (the harness's loader) needs it, so that it reads back the same.
    Always a ScalarString: assigning a plain str would take the quoting of the value it replaces."""
    text = scalar_text(value, in_flow)
    if not isinstance(value, str):
        return value
    if text == value:
        return PlainScalarString(value)
    return SingleQuotedScalarString(value) if text.startswith("'") else DoubleQuotedScalarString(value)


def _reason_scalar(reason: str) -> Any:
    """A reason; one longer than the line width is folded at spaces (`>-`)."""
    if len(f"  reason: {scalar_text(reason, False)}") <= LINE_WIDTH or reason != " ".join(reason.split()):
        return _scalar(reason, False)
    folded = FoldedScalarString(reason)
    lines = textwrap.wrap(reason, width=LINE_WIDTH - 4, break_long_words=False, break_on_hyphens=False)
    folded.fold_pos = [sum(len(line) + 1 for line in lines[:k]) - 1 for k in range(1, len(lines))]
    return folded


def _drop_double_blanks(pieces: list) -> list:
    """Drop removed entries (None), and the blank line that would double up where one was."""
    out: list = []
    i = 0
    while i < len(pieces):
        if pieces[i] is not None:
            out.append(pieces[i])
            i += 1
            continue
        j = i
        while j < len(pieces) and pieces[j] is None:
            j += 1
        following = pieces[j] if j < len(pieces) else None
        if following is None:
            while out and isinstance(out[-1], str) and not out[-1].strip():
                out.pop()
        elif (not out or _blank(out[-1])) and _blank(following):
            j += 1
        i = j
    return out


def _blank(piece: Any) -> bool:
    return isinstance(piece, str) and not piece.strip()


