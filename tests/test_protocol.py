"""harness.protocol: every message survives the wire as the same typed value."""
from __future__ import annotations

import pytest

from harness.case_findings import Findings
from harness.outcomes import Outcome, Phase
from harness.protocol import (
    BundleRequest,
    CacheSettings,
    CaseResult,
    PhaseEvent,
    Ready,
    RunRequest,
    Start,
    decode,
    encode,
)


@pytest.mark.parametrize("message", [
    Start(preload=[{"name": "eager", "class": "m:C", "options": {}}], cache=CacheSettings("on", "/tmp/c", 1 << 30)),
    Start(),
    Ready(pid=42),
    RunRequest(case={"id": "a/b", "family": "conv_backward", "params": {}, "tags": [], "timeout": None},
               backend={"name": "eager", "class": "m:C", "options": {}, "tolerances": {}}),
    RunRequest(case={}, backend={}, bundle=BundleRequest(path="/tmp/b", rerun="python -m pytest x")),
    PhaseEvent(Phase.LOWER),
    CaseResult(Outcome.PASSED, None, "", Findings(phase_durations={"setup": 0.1}, notes={"note": 1}, perf={"x": 1}),
               versions={"torch": "2.13"}),
    CaseResult(Outcome.CRASHED, Phase.COMPILE, "worker killed by SIGSEGV", frame="mlir::Pass::run"),
])
def test_messages_round_trip(message):
    line = encode(message)
    assert line.endswith("\n") and "\n" not in line[:-1]
    assert decode(line) == message


def test_decoded_enums_are_the_enums():
    result = decode(encode(CaseResult(Outcome.TIMED_OUT, Phase.RUN, "hung")))
    assert result.outcome is Outcome.TIMED_OUT and result.phase is Phase.RUN and result.versions is None
