"""The harness's plugin groups as entry points (the families, the report formats): every installed
package's, the built-in ones first, the built-in ones' absence one error line (an install older
than its groups, or the source tree on the path alone)."""
from __future__ import annotations

import importlib.metadata

from harness.errors import HarnessInputError

DISTRIBUTION = "torch-backend-e2e"   # whose entry points are the built-in ones


def installed_entry_points(group: str, what: str) -> list[tuple[importlib.metadata.EntryPoint, str]]:
    """(entry point, where: the words an error about it names it by) of the group, the built-in
    ones first; `what` names what the group holds in that error ("families")."""
    points = sorted(importlib.metadata.entry_points(group=group),
                    key=lambda p: (distribution(p) != DISTRIBUTION, distribution(p), p.name))
    if not any(distribution(p) == DISTRIBUTION for p in points):
        raise HarnessInputError(f"entry points of group {group}", f"none of {DISTRIBUTION}'s built-in {what} is "
                                "installed (an install older than them, or the source tree on the path alone)",
                                "pip install -e . again in the checkout (or install the package)")
    return [(p, f"entry point {p.name} = {p.value} of {distribution(p)} (group {group})") for p in points]


def distribution(point: importlib.metadata.EntryPoint) -> str:
    return point.dist.name if point.dist is not None else ""
