"""A case is plain data: an id, the family that builds it, JSON-able params, tags, a timeout.

Specs are created and validated in the pytest process, which never imports torch; the worker
turns a spec into a program and inputs with its family's builder (harness.families.interface).
"""
from __future__ import annotations

import dataclasses
import json
import math
import re
from typing import Any, Iterable, Mapping

_ID_PART = re.compile(r"^[A-Za-z0-9_.\-]+$")


def is_positive_finite(value: Any) -> bool:
    """A usable timeout or limit: a positive, finite number (NaN and infinity break the arithmetic)."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value) and value > 0)


@dataclasses.dataclass(frozen=True)
class Case:
    id: str                        # "<family>/<section>/<name>": slash-separated, glob-friendly
    family: str                    # the name of the Family that builds it
    params: Mapping[str, Any]      # JSON-able; the family's schema
    tags: tuple[str, ...] = ()
    timeout: float | None = None   # seconds; overrides the backend default

    def __post_init__(self) -> None:
        parts = self.id.split("/")
        if not all(_ID_PART.match(p) for p in parts):
            raise ValueError(f"case id {self.id!r}: use '/'-separated parts of letters, digits, '_', '-', '.'")
        json.dumps(dict(self.params))  # fails early on params that cannot reach a worker
        if self.timeout is not None and not is_positive_finite(self.timeout):
            raise ValueError(f"case {self.id}: timeout must be a positive, finite number of seconds, "
                             f"not {self.timeout!r}")

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "family": self.family, "params": dict(self.params),
                "tags": list(self.tags), "timeout": self.timeout}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Case":
        return cls(id=data["id"], family=data["family"], params=data["params"],
                   tags=tuple(data.get("tags", ())), timeout=data.get("timeout"))


def check_keys(given: Mapping[str, Any], allowed: Iterable[str], where: str = "", hint: str = "") -> None:
    """ValueError "[where: ]unknown key 'x'; allowed keys are a, b, c[ hint]" when `given` has a key
    not `allowed`: the one wording of every params, input, config and expectation check."""
    unknown = sorted(set(given) - set(allowed))
    if unknown:
        keys = f"key {unknown[0]!r}" if len(unknown) == 1 else "keys " + ", ".join(repr(k) for k in unknown)
        raise ValueError(f"{where + ': ' if where else ''}unknown {keys}; allowed keys are "
                         f"{', '.join(sorted(allowed))}{' ' + hint if hint else ''}")


def check_ratio(ratio: Any) -> list | None:
    """A ratio rule passed to a family that judges another's programs (isolated, reduced): RatioGolden's
    [multiplier, floor] or [multiplier, floor, relative], or None; ValueError otherwise."""
    if ratio is None or (isinstance(ratio, list) and len(ratio) in (2, 3)
                         and all(isinstance(r, (int, float)) for r in ratio)):
        return ratio
    raise ValueError(f"ratio must be [multiplier, floor], [multiplier, floor, relative] or none, not {ratio!r}")


DTYPES = ("float32", "float64", "float16", "bfloat16")   # the floating dtypes cases are written in


def parse_dtypes(values: list[str]) -> tuple[str, ...]:
    """--dtypes: DTYPE[,DTYPE...] from repeated flags or comma lists, each once, in DTYPES' order;
    ValueError names an unknown one."""
    named = {d.strip() for value in values for d in value.replace(",", " ").split()}
    unknown = sorted(named - set(DTYPES))
    if unknown:
        raise ValueError(f"{', '.join(unknown)} is not a floating dtype: use some of {', '.join(DTYPES)}")
    return tuple(d for d in DTYPES if d in named)
