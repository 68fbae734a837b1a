"""Bad input, end to end: pytest prints one `ERROR:` line (file:line and the fix), exits 4, no traceback."""
from __future__ import annotations

import dataclasses

import pytest


@dataclasses.dataclass
class Bad:
    id: str
    files: dict[str, str]      # relative path -> text, written into the project
    args: tuple[str, ...]
    where: str                 # what the ERROR line starts with after "ERROR: "; files are named relative
    problem: str               # to the directory pytest runs in (the project)


BAD = [
    Bad("xfail-malformed-yaml", {"xfail/eager.yaml": "- id: conv_backward/2d/tiny\n  reason: [x\n"}, (),
        "xfail/eager.yaml:3:", "malformed YAML"),
    Bad("xfail-unknown-key", {"xfail/eager.yaml": "- id: conv_backward/2d/tiny\n  reason: x\n  bogus: 1\n"}, (),
        "xfail/eager.yaml:1:", "unknown key 'bogus'; allowed keys are"),
    Bad("xfail-missing-reason", {"xfail/eager.yaml": "- id: conv_backward/2d/tiny\n"}, (),
        "xfail/eager.yaml:1:", "missing required key 'reason'"),
    Bad("crash-set-id-matches-no-case", {"crash_sets/eager.yaml": "- id: conv_backward/2d/nope*\n  reason: x\n"}, (),
        "crash_sets/eager.yaml:1:", "id 'conv_backward/2d/nope*' matches no case; delete the entry or fix the id"),
    Bad("case-in-both-sets", {"xfail/eager.yaml": "- id: conv_backward/2d/tiny\n  reason: x\n",
                              "crash_sets/eager.yaml": "- id: conv_backward/*\n  reason: x\n"}, (),
        "xfail/eager.yaml:1:", "case 'conv_backward/2d/tiny' is also in the crash set at"),
    Bad("bad-version-condition", {"xfail/eager.yaml": "- id: conv_backward/2d/tiny\n  reason: x\n"
                                                      "  when: {torch: \">>2\"}\n"}, (),
        "xfail/eager.yaml:1:", "bad version condition torch: '>>2'; write a PEP 440 specifier"),
    Bad("unknown-backend", {}, ("--backend=eager,nope",),
        "--backend=nope:", "unknown backend (known: eager, inductor, iree-llvm-cpu, linalg-on-tensors, "
        "linalg-on-tensors-direct, onnx-linalg-on-tensors, onnxruntime, "
        "stablehlo, tosa); add configs/<name>.yaml or pass --configs-dir=DIR"),
    Bad("config-bad-class", {"configs/broken.yaml": "name: broken\nclass: fake_backends.FaultyBackend\n"}, (),
        "configs/broken.yaml:", "class 'fake_backends.FaultyBackend' is not of the form 'module:Class'"),
    Bad("config-name-differs-from-file", {"configs/broken.yaml": "name: brokn\nclass: fake_backends:FaultyBackend\n"},
        (), "configs/broken.yaml:", "name 'brokn' differs from the file name"),
    Bad("cases-file-groups", {"extra.yaml": "- {input_shape: [1, 2, 4, 4], weight_shape: [2, 2, 3, 3]}\n"
                                            "- {input_shape: [1, 3, 4, 4], weight_shape: [2, 1, 3, 3], groups: 2}\n"},
        ("--cases-file=extra.yaml",), "extra.yaml:2:", "groups=2 does not divide the 3 input channels"),
    Bad("case-module-bad-declaration",
        {"cases/broken.py": "from harness.families.conv import conv_forward_case\n"
                            "CASES = [conv_forward_case('x', input_shape=[1, 2, 4, 4], weight_shape=[2, 2, 9, 9])]\n"},
        (), "cases/broken.py:", "conv_forward/2d/x: input_shape [1, 2, 4, 4] with kernel [9, 9]"),
    Bad("report-json-unwritable", {"afile": "not a directory\n"}, ("--report-json=afile/report.json",),
        "--report-json=afile/report.json:", "cannot write there"),
    Bad("report-json-missing-dir", {}, ("--report-json=no/such/dir/report.json",),
        "--report-json=no/such/dir/report.json:", "cannot write there"),
    Bad("case-timeout-negative", {}, ("--case-timeout=-1",), "--case-timeout=-1:", "must be a positive, finite number"),
    Bad("case-timeout-zero", {}, ("--case-timeout=0",), "--case-timeout=0:", "must be a positive, finite number"),
]


def check_usage_error(result, where: str, problem: str) -> None:
    assert result.ret == 4, result.output
    lines = result.error_lines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith(f"ERROR: {where}"), lines[0]
    assert problem in lines[0], lines[0]
    assert "Traceback" not in result.output and "INTERNALERROR" not in result.output, result.output
    assert result.report is None


@pytest.mark.parametrize("bad", BAD, ids=[b.id for b in BAD])
def test_bad_input_is_one_error_line_and_exit_4(e2e_project, bad):
    for relpath, text in bad.files.items():
        e2e_project.write(relpath, text)
    reported = any(a.startswith("--report-json") for a in bad.args)
    args = bad.args if reported else ("--report-json=report.json", *bad.args)
    result = e2e_project.run(*args, report=None)
    check_usage_error(result, bad.where, bad.problem)


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_non_finite_case_timeout_is_a_usage_error(e2e_project, value):
    result = e2e_project.run(f"--case-timeout={value}", "--collect-only", report=None)
    check_usage_error(result, f"--case-timeout={value}:", "must be a positive, finite number")


def test_a_class_that_does_not_import_stops_the_run_before_any_case(e2e_project):
    """A well-formed class string that does not import is one line at the config's `class:` (the
    first worker imports it; the controller never does), not a failure per case."""
    e2e_project.write("configs/ghost.yaml", "name: ghost\nclass: fake_backends:NoSuchBackend\n")
    result = e2e_project.run("--backend=ghost", "-k", "conv_forward")
    check_usage_error(result, "configs/ghost.yaml:2:", "class fake_backends:NoSuchBackend does not import "
                      "(AttributeError: module 'fake_backends' has no attribute 'NoSuchBackend')")
