"""Safe YAML loading that remembers the line of every mapping and of each of its keys, for error
messages; scalars as YAML text."""
from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

import yaml

from harness import case_data
from harness.errors import HarnessInputError
from harness.files import display_path, where


class LineDict(dict):
    """A mapping from YAML that knows its 1-based line number, and that of each key."""

    line: int = 0
    key_lines: dict = {}   # key -> its 1-based line; set per mapping by the loader


def _line_mapping(loader: Any, node: yaml.MappingNode, deep: bool = False) -> LineDict:
    """A mapping as a LineDict, for either loader below (their constructor is SafeConstructor's)."""
    mapping = LineDict(yaml.constructor.SafeConstructor.construct_mapping(loader, node, deep=deep))
    mapping.line = node.start_mark.line + 1
    # after the constructor, merge keys (<<) are flattened and every key is hashable and constructed (cached)
    mapping.key_lines = {loader.construct_object(key): key.start_mark.line + 1 for key, _ in node.value}
    return mapping


class _LineLoader(yaml.SafeLoader):
    """PyYAML's Python parser: its messages are what a malformed file's error quotes."""


class _FastLineLoader(yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader):  # type: ignore[misc]
    """libyaml's parser when PyYAML has it: 5x faster on the expectation files (0.6 s against 3.5 s
    for all of them, read at every run's start); the same values and lines. Malformed YAML is
    parsed again by the Python one."""


# YAML 1.1 reads 1e-6 (no dot) as a string; tolerances are written that way, so read it as a float.
_FLOAT = re.compile(r"^[-+]?[0-9]+(?:\.[0-9]*)?[eE][-+]?[0-9]+$")
for _loader in (_LineLoader, _FastLineLoader):
    _loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _line_mapping)
    _loader.yaml_implicit_resolvers = {k: list(v) for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()}
    _loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789"))


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
        return yaml.load(text, Loader=_FastLineLoader)
    except yaml.YAMLError:
        pass   # the Python parser's message, as always
    try:
        return yaml.load(text, Loader=_LineLoader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = f":{mark.line + 1}" if mark else ""
        raise HarnessInputError(f"{display_path(path)}{line}", f"malformed YAML ({e.problem or e.context})",
                                "fix the syntax") from None
    except yaml.YAMLError as e:
        raise HarnessInputError(display_path(path), f"malformed YAML ({e})", "fix the syntax") from None


def check_node_keys(path: Path, node: dict, allowed: set[str], required: set[str] | frozenset[str] = frozenset(),
                    at_key: bool = False) -> None:
    """An unknown or missing key as one error line at the mapping's line; with `at_key`, an unknown
    key at its own line, with a "did you mean" for a typo (unknown_key_error)."""
    if at_key:
        unknown = [key for key in node if key not in allowed]
        if unknown:
            raise unknown_key_error(path, node, min(unknown, key=lambda k: key_line(node, k)), allowed)
    try:
        case_data.check_keys(node, allowed)
    except ValueError as e:
        raise HarnessInputError(where(path, node), str(e)) from None
    missing = sorted(set(required) - set(node))
    if missing:
        raise HarnessInputError(where(path, node), f"missing required key {missing[0]!r}")


def key_line(node: Any, key: Any) -> int:
    """The line of a key of a loaded mapping, else the mapping's (0: not known)."""
    key_lines: dict[Any, int] = getattr(node, "key_lines", {})
    return key_lines.get(key) or int(getattr(node, "line", 0))


def unknown_key_error(path: Path, node: Any, key: Any, allowed: Any, what: str = "key",
                      accepted: str = "allowed keys are") -> HarnessInputError:
    """`file:line: unknown key 'timout'; did you mean 'timeout'? allowed keys are ...`, at the key's line."""
    line = key_line(node, key)
    close = difflib.get_close_matches(str(key), [str(k) for k in allowed], n=1)
    guess = f"did you mean {close[0]!r}? " if close else ""
    return HarnessInputError(f"{display_path(path)}:{line}" if line else display_path(path),
                             f"unknown {what} {key!r}", f"{guess}{accepted} {', '.join(sorted(allowed))}")


def scalar_text(value: Any, in_flow: bool) -> str:
    """A scalar as YAML text that reads back as `value`, for a block or a flow context."""
    if in_flow:
        return flow_text(value)
    dumped = yaml.safe_dump({"k": value}, width=float("inf"), allow_unicode=True, default_flow_style=False)
    return dumped[len("k: "):].rstrip("\n")


def flow_text(value: Any) -> str:
    """A value as single-line flow YAML (safe inside {...} and [...])."""
    return yaml.safe_dump([value], default_flow_style=True, width=float("inf"), allow_unicode=True).strip()[1:-1]
