"""Safe YAML loading that remembers the line of every mapping, for error messages; scalars as YAML text."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from harness import spec
from harness.errors import HarnessInputError
from harness.files import display_path, where


class LineDict(dict):
    """A mapping from YAML that knows its 1-based line number."""

    line: int = 0


class _LineLoader(yaml.SafeLoader):
    def construct_mapping(self, node, deep=False):
        mapping = LineDict(super().construct_mapping(node, deep=deep))
        mapping.line = node.start_mark.line + 1
        return mapping


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _LineLoader.construct_mapping)
# YAML 1.1 reads 1e-6 (no dot) as a string; tolerances are written that way, so read it as a float.
_LineLoader.yaml_implicit_resolvers = {k: list(v) for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_LineLoader.add_implicit_resolver("tag:yaml.org,2002:float",
                                  re.compile(r"^[-+]?[0-9]+(?:\.[0-9]*)?[eE][-+]?[0-9]+$"), list("-+0123456789"))


def load_yaml(path: Path) -> Any:
    """Parse a YAML file safely; malformed YAML becomes one HarnessInputError with its line."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise HarnessInputError(display_path(path), f"cannot read: {e.strerror}") from None
    return parse_yaml(text, path)


def parse_yaml(text: str, path: Path) -> Any:
    """load_yaml for a text that `path` holds (or will hold)."""
    try:
        return yaml.load(text, Loader=_LineLoader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = f":{mark.line + 1}" if mark else ""
        raise HarnessInputError(f"{display_path(path)}{line}", f"malformed YAML ({e.problem or e.context})",
                                "fix the syntax") from None
    except yaml.YAMLError as e:
        raise HarnessInputError(display_path(path), f"malformed YAML ({e})", "fix the syntax") from None


def check_node_keys(path: Path, node: dict, allowed: set[str], required: set[str] = frozenset()) -> None:
    try:
        spec.check_keys(node, allowed)
    except ValueError as e:
        raise HarnessInputError(where(path, node), str(e)) from None
    missing = sorted(set(required) - set(node))
    if missing:
        raise HarnessInputError(where(path, node), f"missing required key {missing[0]!r}")


def scalar_text(value: Any, in_flow: bool) -> str:
    """A scalar as YAML text that reads back as `value`, for a block or a flow context."""
    if in_flow:
        return flow_text(value)
    dumped = yaml.safe_dump({"k": value}, width=float("inf"), allow_unicode=True, default_flow_style=False)
    return dumped[len("k: "):].rstrip("\n")


def flow_text(value: Any) -> str:
    """A value as single-line flow YAML (safe inside {...} and [...])."""
    return yaml.safe_dump([value], default_flow_style=True, width=float("inf"), allow_unicode=True).strip()[1:-1]
