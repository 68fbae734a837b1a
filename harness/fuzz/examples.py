"""A family's fuzz space as examples: each generated configuration as a case, as the shortest
--cases-file entry that gives the same case, and as one line of text."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Mapping

from harness.case_data import Case
from harness.families.interface import Family, FuzzSpace
from harness.project_files.registry import case_from_entry
from harness.project_files.yamlio import flow_text, scalar_text


def canonical(params: Mapping[str, Any]) -> str:
    return json.dumps(params, sort_keys=True, separators=(",", ":"))


class Examples:
    def __init__(self, family: Family, space: FuzzSpace):
        self.family, self.space = family, space

    def strategy(self):
        return self.space.strategy()

    def name(self, params: Mapping[str, Any]) -> str:
        return "fuzz_" + hashlib.sha256(f"{self.family.name}:{canonical(params)}".encode()).hexdigest()[:10]

    def entry(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """The --cases-file entry of validated params: name, family, and every value not a default."""
        entry: dict[str, Any] = {"name": self.name(params), "family": self.family.name}
        for key, value in params.items():
            if key in self.space.per_dim and len(set(value)) == 1:
                value = value[0]
            if key not in self.space.defaults or value != self.space.defaults[key]:
                entry[key] = value
        return entry

    def case(self, params: Mapping[str, Any]) -> Case:
        """The Case a --cases-file holding `entry(params)` gives (same id, params, tags)."""
        return case_from_entry(Path("fuzz"), 0, self.entry(params), {self.family.name: self.family})

    def describe(self, params: Mapping[str, Any]) -> str:
        """One line: the entry's values without name and family."""
        return ", ".join(f"{k}={flow_text(v)}" for k, v in self.entry(params).items() if k not in ("name", "family"))

    def size_order(self, params: Mapping[str, Any]) -> tuple:
        """An order on configurations for when no shrink ran: smaller first."""
        return self.space.size(params), canonical(params)


def entry_text(entry: Mapping[str, Any], comment: str = "") -> str:
    lines = [comment] if comment else []
    for i, (key, value) in enumerate(entry.items()):
        text = flow_text(value) if isinstance(value, list) else scalar_text(value, False)
        lines.append(f"{'- ' if i == 0 else '  '}{key}: {text}")
    return "\n".join(lines) + "\n"
