"""The path each of a program's ops took through a backend, from the op counts before and after
the backend's decomposition: an op still there reached the backend whole (`kept`), one that is gone
was decomposed into others (`decomposed`); the ops the decomposition made that the program did not
hold are what the decomposed ones became."""
from __future__ import annotations

from typing import Mapping

KEPT, DECOMPOSED = "kept", "decomposed"
DECOMPOSING_PATHS = (KEPT, DECOMPOSED)   # Backend.LOWERING_PATHS of a backend that decomposes first


def decomposition_paths(before: Mapping[str, int], after: Mapping[str, int]) -> dict[str, str]:
    """{op of `before`: kept | decomposed}."""
    return {op: KEPT if op in after else DECOMPOSED for op in sorted(before)}


def new_ops(before: Mapping[str, int], after: Mapping[str, int]) -> dict[str, int]:
    """The ops of `after` that `before` did not hold, with their counts."""
    return {op: count for op, count in sorted(after.items()) if op not in before}
