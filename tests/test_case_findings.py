"""harness.case_findings: what a case's run found out travels as one object, from the backend's
CaseContext through the worker's message to the record, and its JSON keys are the ones reports
have always had."""
from __future__ import annotations

import dataclasses
import json

import pytest

from harness.backend_interface import CaseContext
from harness.case_findings import Findings
from harness.outcomes import Outcome
from harness.protocol import CaseResult, decode, encode
from harness.record import Record

# A result of a report written before Findings existed, with every key it holds.
OLDER_RESULT = {
    "case": "conv_backward/2d/x", "backend": "be", "outcome": "passed",
    "phase_durations": {"setup": 0.1, "lower": 1.4}, "phase_cpu_s": {"lower": 1.2}, "phase_peak_mb": {"lower": 900.0},
    "sizes": {"torch_ops": 12}, "fingerprints": {"exported": "0123456789abcdef"}, "cache": {"exported": "hit"},
    "cache_saved_s": 0.5, "notes": {"path": "direct"}, "margins": {"grad_input": 0.25},
    "ulps": {"grad_input": {"max": 3.0, "p99": 1.0}}, "ops": {"aten.convolution_backward": 1},
    "lowering": {"aten.convolution_backward": "kept"}, "decomposed_into": {"aten.convolution": 2},
    "perf": {"speedup": {"value": 1.1, "low": 1.0, "high": 1.2}},
}
FINDING_KEYS = [field.name for field in dataclasses.fields(Findings)]


def test_an_older_reports_keys_are_the_findings_and_write_back_flat():
    record = Record.from_json(OLDER_RESULT)
    assert record.findings.ops == {"aten.convolution_backward": 1} and record.findings.cache_saved_s == 0.5
    data = record.to_json()
    assert "findings" not in data and {key: data[key] for key in FINDING_KEYS} == \
        {key: OLDER_RESULT[key] for key in FINDING_KEYS}
    assert list(data).index("phase_durations") < list(data).index("signature")   # where they always were


def test_a_report_without_the_keys_reads_as_empty_findings():
    assert Record.from_json({"case": "c", "backend": "be", "outcome": "passed"}).findings == Findings()


def test_a_damaged_finding_names_its_result_and_key():
    with pytest.raises(ValueError, match="result 'c': its lowering is not an object of words"):
        Record.from_json({"case": "c", "backend": "be", "outcome": "passed", "lowering": {"aten.add": 1}})


def test_what_a_backend_notes_travels_to_the_record_as_one_object():
    context = CaseContext(lambda phase: None, id="f/c")
    context.ops, context.sizes["torch_ops"] = {"aten.add": 2}, 7
    context.notes["path"] = "direct"
    findings = Findings.of(context)
    assert type(findings) is Findings and findings.ops == {"aten.add": 2}   # not the context's other fields
    sent = decode(encode(CaseResult(Outcome.PASSED, None, "", findings)))
    assert isinstance(sent, CaseResult) and sent.findings == findings
    record = Record.from_json(json.loads(json.dumps({"case": "f/c", "backend": "be", "outcome": "passed",
                                                     **sent.findings.to_json()})))
    assert record.findings == findings
