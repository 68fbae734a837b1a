"""A backend config's lowering claims (`lowering:`, harness.ops.claims): a case whose op took another
path fails as wrong_lowering in one line, whatever the expectation files say, and
--update-expectations never writes an entry for it."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from e2e_support import python_path_env

from harness.case_findings import Findings
from harness.ops.claims import claimed
from harness.outcomes import Expected, Outcome, Phase, Verdict, decide
from harness.protocol import CaseResult

CLAIM = """name: claims-kept
extends: linalg-on-tensors
lowering:
  aten.convolution_backward: kept
"""


class Config:
    lowering = {"aten.convolution_backward": "kept"}

    def place(self, key):
        return f"configs/x.yaml:4 ({key})"


def test_a_broken_claim_is_one_line_and_keeps_the_cases_own_failure_after_it():
    passed = CaseResult(Outcome.PASSED, None, "", Findings(lowering={"aten.convolution_backward": "decomposed"}))
    wrong = claimed(passed, Config())
    assert (wrong.outcome, wrong.phase) == (Outcome.WRONG_LOWERING, Phase.LOWER)
    assert wrong.message == ("lowering: aten.convolution_backward was decomposed, but configs/x.yaml:4 "
                             "(lowering.aten.convolution_backward) claims kept")
    failed = CaseResult(Outcome.COMPILE_ERROR, Phase.COMPILE, "boom",
                        Findings(lowering={"aten.convolution_backward": "decomposed"}))
    assert claimed(failed, Config()).message.splitlines()[1] == "(the case itself: compile_error: boom)"
    kept = CaseResult(Outcome.PASSED, None, "", Findings(lowering={"aten.convolution_backward": "kept"}))
    assert claimed(kept, Config()) is kept
    other = CaseResult(Outcome.PASSED, None, "", Findings(lowering={"aten.add": "decomposed"}))
    assert claimed(other, Config()) is other   # a case without the op claims nothing


def test_no_entry_excuses_a_broken_claim():
    for expected in Expected:
        assert decide(Outcome.WRONG_LOWERING, expected, Phase.LOWER, None) is Verdict.UNEXPECTED_FAILURE


def run(project, *args):
    return subprocess.run([sys.executable, "-m", "pytest", "--pyargs", "harness.cases.conv_backward", "-n", "0",
                           "-p", "no:cacheprovider", "--report-json=r.json", *args], cwd=project,
                          capture_output=True, text=True, timeout=900,
                          env={**os.environ, "PYTHONPATH": python_path_env(), "HOME": str(project)})


@pytest.mark.e2e
def test_a_config_claiming_the_direct_lowering_fails_the_cases_that_decompose_it(tmp_path):
    """The default build decomposes 2-D basic convolution_backward and lowers a dilated one directly:
    a config claiming `kept` over it fails the first (once, in one line) and passes the second; the
    built-in direct config, whose claim holds, passes both. --update-expectations adds no entry."""
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "claims-kept.yaml").write_text(CLAIM)
    done = run(tmp_path, "--backend=claims-kept,linalg-on-tensors-direct", "--update-expectations",
               "-k", "conv_backward/2d/basic or conv_backward/2d/dil2")
    assert done.returncode == 1, done.stdout + done.stderr
    results = {(r["case"], r["backend"]): r for r in json.loads((tmp_path / "r.json").read_text())["results"]}
    basic = results[("conv_backward/2d/basic", "claims-kept")]
    assert (basic["outcome"], basic["verdict"], basic["phase"]) == ("wrong_lowering", "unexpected_failure", "lower")
    assert basic["message"] == ("lowering: aten.convolution_backward was decomposed, but configs/claims-kept.yaml:4 "
                                "claims kept")
    assert results[("conv_backward/2d/dil2", "claims-kept")]["outcome"] == "passed"
    assert {r["outcome"] for (_, b), r in results.items() if b == "linalg-on-tensors-direct"} == {"passed"}
    assert ("wrong_lowering in phase lower\nlowering: aten.convolution_backward was decomposed, but "
            "configs/claims-kept.yaml:4 claims kept\nparams:") in done.stdout   # its one line, then its parameters
    assert not (tmp_path / "xfail").exists()   # the claim is the author's: no entry written


@pytest.mark.e2e
def test_a_claim_in_a_word_the_backend_never_reports_is_one_error_line(tmp_path):
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "claims-kept.yaml").write_text(CLAIM.replace(": kept", ": direct"))
    done = run(tmp_path, "--backend=claims-kept", "-k", "conv_backward/2d/basic")
    assert done.returncode != 0
    assert ("configs/claims-kept.yaml:4: lowering.aten.convolution_backward: 'direct' is not a path "
            "harness.backends.mlir:MlirBackend reports; it reports kept, decomposed") in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
