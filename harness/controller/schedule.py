"""Longest cases first, from the durations of an earlier run, so that parallel workers finish together.

pytest-xdist hands out cases in collection order: a long case collected last keeps one worker
busy after the others have stopped. Ordered by the last run's durations, longest first, the
long ones start early and the short ones fill the gaps at the end. Cases the earlier run did not
have go first (nothing says they are short).

Durations come from a JSON report of this harness (`results[*].nodeid`, `duration_s`; merged
reports too) or from a pytest-split durations file (`{nodeid: seconds}`), which
`python -m harness durations` writes from a report.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Sequence, TypeVar

from harness.errors import HarnessInputError

T = TypeVar("T")


def read_durations(path: Path, shown: str | None = None) -> dict[str, float]:
    """{nodeid: seconds} from a harness JSON report or a pytest-split durations file."""
    where = shown or str(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise HarnessInputError(where, f"cannot read it ({e.strerror})",
                                "pass a JSON report or a durations file") from None
    except ValueError as e:
        raise HarnessInputError(where, f"not JSON ({e})",
                                "pass a JSON report (--report-json) or a durations file") from None
    if isinstance(data, dict) and isinstance(data.get("results"), list):
        return durations_of(data)
    if isinstance(data, dict) and all(isinstance(v, (int, float)) for v in data.values()):
        return {str(k): float(v) for k, v in data.items()}
    raise HarnessInputError(where, "neither a JSON report nor a durations file",
                            "pass a --report-json file or what python -m harness durations writes")


def durations_of(report: dict[str, Any]) -> dict[str, float]:
    """{nodeid: seconds} of a report's results (a later record of a nodeid wins, as in a rerun)."""
    return {r["nodeid"]: float(r["duration_s"]) for r in report["results"]
            if isinstance(r, dict) and r.get("nodeid") and isinstance(r.get("duration_s"), (int, float))}


def longest_first(items: Sequence[T], durations: dict[str, float], nodeid=lambda item: item.nodeid) -> list[T]:
    """Items without a duration first (in their order), then the others, longest first (stable)."""
    unknown = [item for item in items if nodeid(item) not in durations]
    known = sorted((item for item in items if nodeid(item) in durations), key=lambda item: -durations[nodeid(item)])
    return unknown + known


def write_durations(reports: Iterable[dict[str, Any]], path: Path) -> int:
    """A pytest-split durations file from reports (later ones win); returns the number of nodeids."""
    durations: dict[str, float] = {}
    for report in reports:
        durations.update(durations_of(report))
    path.write_text(json.dumps(dict(sorted(durations.items())), indent=1) + "\n", encoding="utf-8")
    return len(durations)
