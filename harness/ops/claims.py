"""A backend config's lowering claims (`lowering: {aten.convolution_backward: kept}`), checked on
each result: a case whose op took another path fails as `wrong_lowering`, in one line naming the
op, the path taken and the line that claims the other. The claims are the author's: no
expectation entry excuses a broken one, and --update-expectations never writes one."""
from __future__ import annotations

import dataclasses
from typing import Any

from harness.outcomes import Outcome, Phase
from harness.protocol import CaseResult


def claimed(result: CaseResult, config: Any) -> CaseResult:
    """The result, or a wrong_lowering one when an op of it took a path its config does not claim
    (the case's own failure, if any, on the lines after)."""
    taken = result.findings.lowering
    broken = [(op, path, taken[op]) for op, path in sorted(config.lowering.items())
              if op in taken and taken[op] != path]
    if not broken:
        return result
    line = "; ".join(f"{op} was {taken}, but {config.place(f'lowering.{op}')} claims {path}"
                     for op, path, taken in broken)
    own = "" if result.outcome is Outcome.PASSED else f"\n(the case itself: {result.outcome.value}: {result.message})"
    return dataclasses.replace(result, outcome=Outcome.WRONG_LOWERING, phase=Phase.LOWER,
                               message=f"lowering: {line}{own}")
