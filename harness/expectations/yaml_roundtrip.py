"""Round-trip YAML lists with ruamel.yaml, and the whole-line comments it cannot place.

ruamel keeps what a person wrote inside a list item: end-of-line comments, anchors and aliases (an
anchor whose item goes is written at the first alias that stays), flow maps, quoting, folded
scalars. What it does not keep is which item a whole-line comment belongs to: it hangs such a line
on whatever token came before it (the previous item's last key, a block scalar, the list itself),
so deleting an item would delete the comment above the next one and keep its own. So `Layout`
finds each item's lines, `keep_end_of_line_comments` takes every whole-line comment out of the
tree, the caller decides where those lines go, and `dump_list` hands them back to ruamel as the
list's comments before each item and at its end, which it writes verbatim.
"""
from __future__ import annotations

import dataclasses
import io
from typing import Any, Iterable, Iterator

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedBase, CommentedMap, CommentedSeq
from ruamel.yaml.error import CommentMark
from ruamel.yaml.scalarstring import FoldedScalarString, LiteralScalarString, PlainScalarString
from ruamel.yaml.tokens import CommentToken


def round_trip_yaml() -> YAML:
    yaml = YAML()               # round-trip mode
    yaml.width = 4096           # never fold a line on output: the file's own line breaks are kept
    yaml.preserve_quotes = True
    return yaml


@dataclasses.dataclass
class Span:
    """0-based lines of one item: its first attached comment, `- ` line, last content, last note."""

    first: int
    dash: int
    content_last: int
    last: int


@dataclasses.dataclass
class ListItem:
    """An item to dump: a mapping and the comment at the end of its `- ` line, if any."""

    node: CommentedMap
    eol: CommentToken | None = None


class Layout:
    """Each item's line span, from ruamel's positions and the lines its comment tokens cover."""

    def __init__(self, lines: list[str], root: CommentedSeq):
        self.lines, self.root = lines, root
        self.column = root.lc.col  # of every `- `
        self.comment_lines = {n for token in _tokens(root) for n in self._whole_lines(token)}

    def _whole_lines(self, token: CommentToken) -> list[int]:
        line = token.start_mark.line
        count = token.value.count("\n") + (not token.value.endswith("\n"))
        end_of_line = bool(self.lines[line][:token.column].strip())
        # A token can open with the line break before it ('\n# note\n' above a `- {...}` that follows a
        # block item), so its count overshoots by a line: a line with content is never a comment line.
        return [n for n in range(line + end_of_line, line + count) if not self._has_content(n)]

    def _has_content(self, n: int) -> bool:
        text = self.lines[n].strip() if n < len(self.lines) else ""
        return bool(text) and not text.startswith("#")

    def _is_content(self, n: int) -> bool:
        return bool(self.lines[n].strip()) and n not in self.comment_lines

    def _dash(self, start: int) -> int:
        """The `- ` line of the item whose node starts on line `start` (a lone `-` may stand above it)."""
        n = start
        while n > 0 and not (self.lines[n][self.column:self.column + 1] == "-"
                             and not self.lines[n][:self.column].strip()):
            n -= 1
        return n

    def spans(self) -> list[Span]:
        dashes = [self._dash(self.root.lc.item(i)[0]) for i in range(len(self.root))]
        spans: list[Span] = []
        for index, dash in enumerate(dashes):
            limit = dashes[index + 1] if index + 1 < len(dashes) else len(self.lines)
            content_last = max(n for n in range(dash, limit) if self._is_content(n))
            last = content_last
            while (last + 1 < limit and self.lines[last + 1].strip()
                   and _indent(self.lines[last + 1]) > self.column):
                last += 1   # trailing notes: comment lines, since no content line follows the last one
            lower = spans[-1].last + 1 if spans else 0
            first = dash
            while first > lower and self.lines[first - 1].strip():
                first -= 1  # comment lines right above (content lines cannot be there)
            spans.append(Span(dash if first == 0 and index == 0 else first, dash, content_last, last))
        return spans


def _tokens(node: Any) -> Iterator[CommentToken]:
    """Every comment token ruamel attached anywhere in `node`'s tree."""
    if isinstance(node, CommentedBase):
        ca = node.ca
        yield from _flat_tokens([ca.comment, list(ca.items.values()), ca.end])
        for child in children(node):
            yield from _tokens(child)


def _flat_tokens(slot: Any) -> Iterator[CommentToken]:
    if isinstance(slot, CommentToken):
        yield slot
    elif isinstance(slot, list):
        for part in slot:
            yield from _flat_tokens(part)


def keep_end_of_line_comments(node: Any, lines: list[str]) -> None:
    """Cut every token in the tree to the comment at the end of its own line; drop whole-line ones."""
    def cut(slot: Any, nested: bool) -> Any:
        if isinstance(slot, CommentToken):
            line = slot.start_mark.line
            if not lines[line][:slot.column].strip() or not slot.value.lstrip(" ").startswith("#"):
                return None
            slot.value = slot.value.split("\n", 1)[0] + "\n"  # in place: ruamel may hold it twice
            return slot
        if isinstance(slot, list):
            parts = [cut(part, True) for part in slot]
            if nested:  # a list of tokens, not a list of positions
                parts = [p for p in parts if p is not None]
                return parts or None
            return parts
        return slot

    if isinstance(node, CommentedBase):
        ca = node.ca
        ca.comment = cut(ca.comment, False)
        kept = {key: cut(slot, False) for key, slot in ca.items.items()}
        ca.items.clear()
        ca.items.update(kept)
        ca.end = []
        for child in children(node):
            keep_end_of_line_comments(child, lines)


def dump_list(pieces: list) -> str:
    """Text lines and ListItems as one YAML list; the lines become the comments before and after items."""
    items: list[ListItem] = []
    befores: list[str] = []
    text: list[str] = []
    for piece in pieces:
        if isinstance(piece, ListItem):
            items.append(piece)
            befores.append("".join(text))
            text = []
        else:
            text.append(piece)
    if not items:
        return "".join(text)
    seq = CommentedSeq(item.node for item in items)  # comments after: append() would shift them
    if befores[0]:
        seq.ca.comment = [None, [_token(befores[0])]]
    for index, (item, before) in enumerate(zip(items, befores)):
        seq.ca.items[index] = [item.eol, [_token(before)] if index and before else None, None, None]
    if text:
        seq.ca.end = [_token("".join(text))]
    _no_block_scalars_in_flow(seq)
    out = io.StringIO()
    round_trip_yaml().dump(seq, out)
    return out.getvalue()


def _token(text: str) -> CommentToken:
    return CommentToken(text, CommentMark(0))


def _no_block_scalars_in_flow(seq: CommentedSeq) -> None:
    """An anchored `>-` reason whose entry went may be written first inside `{...}` (its alias was
    there), where a block scalar cannot stand: make it a plain or quoted scalar, at every reference."""
    first_in_flow: dict[int, bool] = {}

    def visit(node: Any, in_flow: bool) -> None:
        if isinstance(node, (FoldedScalarString, LiteralScalarString)):
            first_in_flow.setdefault(id(node), in_flow)
        elif isinstance(node, CommentedBase):
            flow = in_flow or bool(node.fa.flow_style())
            for child in children(node):
                visit(child, flow)

    visit(seq, False)
    replaced: dict[int, PlainScalarString] = {}
    for node in _collections(seq):
        for key in (list(node) if isinstance(node, CommentedMap) else range(len(node))):
            value = node[key]
            if first_in_flow.get(id(value)):
                if id(value) not in replaced:
                    replaced[id(value)] = PlainScalarString(str(value))
                    if anchor_of(value):
                        replaced[id(value)].yaml_set_anchor(anchor_of(value), always_dump=True)
                node[key] = replaced[id(value)]


def children(node: Any) -> Iterable[Any]:
    """A loaded collection's values: a mapping's, or a sequence's items."""
    return node.values() if isinstance(node, CommentedMap) else node


def _collections(node: Any) -> Iterator[Any]:
    if isinstance(node, CommentedBase):
        yield node
        for child in children(node):
            yield from _collections(child)


def anchor_of(value: Any) -> str | None:
    anchor = getattr(value, "anchor", None)
    return getattr(anchor, "value", None)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))
