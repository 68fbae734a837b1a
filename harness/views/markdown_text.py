"""Markdown cells and blocks that hold any text: code spans, fenced blocks, escaped text, table rows."""
from __future__ import annotations

import re
from typing import Iterable


def code(text: object) -> str:
    """An inline code span holding `text` on one line, whatever backticks it contains."""
    text = " ".join(str(text).split())
    if not text:
        return "(empty)"
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def fenced(text: str, language: str = "") -> list[str]:
    """A fenced code block longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + language, *text.rstrip("\n").splitlines(), fence]


def escape_text(text: object) -> str:
    """Plain text that Markdown and HTML leave alone: one line, inline syntax escaped (`|` is left to row)."""
    text = " ".join(str(text).split())
    return re.sub(r"([\\`*_{}\[\]<>#~!])", r"\\\1", text)


def row(cells: Iterable[str]) -> str:
    """A table row: each cell on one line, `|` escaped (also inside code spans, as GFM requires)."""
    return "| " + " | ".join(" ".join(str(c).split()).replace("|", "\\|") for c in cells) + " |"


def bold_if(n: int) -> str:
    return f"**{n}**" if n else "0"


