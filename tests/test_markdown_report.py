"""harness.views.markdown: the triage report in GitHub-flavoured Markdown."""
from __future__ import annotations

import copy
import re

import yaml

from harness.expectations import proposals_for_report
from harness.installation.executables import python_command
from harness.views.markdown import render_markdown

ENVIRONMENT = {"python": "3.11.7", "torch": "2.13.0+cpu", "torch_mlir": "20261001", "platform": "Linux",
               "backends": {"be": {"config": "configs/be.yaml", "versions": {"torch-mlir": "20261001"},
                                   "reported": {}, "xfail_file": "xfail/be.yaml",
                                   "crash_set_file": "crash_sets/be.yaml"}},
               "run_crash_set": False}


def record(case, outcome="passed", phase=None, expected="pass", verdict="ok", source=None, message="",
           signature=None, artifacts=None, backend="be"):
    return {"case": case, "backend": backend, "nodeid": f"cases/conv.py::{case}[{backend}]", "params": {},
            "tags": [], "outcome": outcome, "phase": phase, "expected": expected, "verdict": verdict,
            "duration_s": 0.1, "message": message, "expectation_source": source, "phase_durations": {},
            "notes": {}, "signature": signature, "artifacts": artifacts}


def report(results, complete=True, **environment):
    return {"schema_version": 1, "complete": complete, "environment": {**copy.deepcopy(ENVIRONMENT), **environment},
            "results": results}


def section(text: str, title: str) -> str:
    """The body of the `## title...` section (up to the next `## `)."""
    start = text.index("\n## " + title)
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def problems() -> list[dict]:
    segv = "SIGSEGV in mlir::Operation::verify"
    return [
        record("conv_backward/2d/a", "crashed", "lower", verdict="unexpected_failure", signature=segv,
               message="worker killed by SIGSEGV during phase lower", artifacts="repro/be/conv_backward_2d_a"),
        record("conv_backward/2d/b", "crashed", "lower", verdict="unexpected_failure", signature=segv,
               message="worker killed by SIGSEGV during phase lower"),
        record("conv_backward/2d/c", "timed_out", "lower", expected="crash", verdict="ok",
               source="crash_sets/be.yaml:3", signature="hang in phase lower", message="timed out after 5 s"),
        record("conv_backward/2d/d", "compile_error", "lower", verdict="unexpected_failure",
               signature="failed to legalize 'torch.aten.convolution'", message="error: failed to legalize\nmore"),
        record("conv_backward/2d/e", "compile_error", "lower", verdict="unexpected_failure",
               signature="failed to legalize 'torch.aten.convolution'", message="error: failed to legalize"),
        record("conv_backward/2d/f", "mismatch", "compare", verdict="unexpected_failure",
               signature="grad_input: N of N elements differ", message="grad_input: 3 of 72 elements differ"),
        record("conv_backward/2d/g", expected="xfail", verdict="unexpected_pass", source="xfail/be.yaml:12"),
        record("conv_backward/2d/h", expected="xfail", verdict="unexpected_pass", source="xfail/be.yaml:12"),
        record("conv_backward/2d/i", "compile_error", "compile", expected="xfail", verdict="unexpected_failure",
               source="xfail/be.yaml:20", signature="bf16 rejected"),
        record("conv_backward/2d/j", "not_run", expected="crash", verdict="skipped", source="crash_sets/be.yaml:7"),
        record("conv_backward/2d/k"),
    ]


def test_sections_come_worst_first():
    text = render_markdown(report(problems()), {"xfail/be.yaml": "[]\n"})
    titles = re.findall(r"^## (.+?)(?: \(\d+\))?$", text, re.M)
    assert titles == ["Crashes and hangs", "Unexpected failures", "Unexpected passes",
                      "Crash-set entries that now pass", "Stale expectations",
                      "Expectation files that would make this run match"]
    assert text.startswith("# E2E results: be\n")
    assert "complete run" in text and "PARTIAL" not in text


def test_summary_table_counts_outcomes_and_unexpected_results():
    text = render_markdown(report(problems()))
    head = next(line for line in text.splitlines() if line.startswith("| backend"))
    cells = [c.strip() for c in head.strip("|").split("|")]
    assert cells[:3] == ["backend", "cases", "passed"] and cells[-2:] == ["unexpected failures", "unexpected passes"]
    assert "not_run" in cells and "runtime_error" not in cells  # only outcomes that occurred
    row = next(line for line in text.splitlines() if line.startswith("| `be`"))
    values = dict(zip(cells, (c.strip() for c in row.strip("|").split("|"))))
    assert values["cases"] == "11" and values["passed"] == "3" and values["crashed"] == "2"
    assert values["unexpected failures"] == "**6**" and values["unexpected passes"] == "**2**"
    assert "**6 unexpected failures and 2 unexpected passes** among 11 results." in text


def test_crashes_are_grouped_by_signature_with_repro_commands_and_bundles():
    crashes = section(render_markdown(report(problems())), "Crashes and hangs")
    assert crashes.startswith("\n## Crashes and hangs (3)")
    headings = re.findall(r"^### (.+)$", crashes, re.M)
    assert headings == ["`SIGSEGV in mlir::Operation::verify` — crashed, 2 cases",
                        "`hang in phase lower` — timed\\_out, 1 case"]
    assert f"rerun: `{python_command()} -m pytest --backend=be 'cases/conv.py::conv_backward/2d/a[be]'`" in crashes
    assert "repro bundle: `repro/be/conv_backward_2d_a`" in crashes
    assert crashes.count("repro bundle") == 1
    assert "expected by `crash_sets/be.yaml:3`" in crashes  # an expected hang is marked as such
    assert "--run-crash-set 'cases/conv.py::conv_backward/2d/c[be]'" in crashes


def test_unexpected_failures_are_grouped_by_signature_without_the_crashes():
    failures = section(render_markdown(report(problems())), "Unexpected failures")
    headings = re.findall(r"^### (.+)$", failures, re.M)
    assert headings == ["`failed to legalize 'torch.aten.convolution'` — compile\\_error, 2 cases",
                        "`grad_input: N of N elements differ` — mismatch, 1 case"]
    assert "conv_backward/2d/a" not in failures and "conv_backward/2d/i" not in failures
    assert "<details><summary>message of conv_backward/2d/d on be</summary>" in failures


def test_a_group_without_signature_uses_the_first_line_of_its_message():
    results = [record(f"conv_backward/2d/x{n}", "runtime_error", "run", verdict="unexpected_failure",
                      message="\nRuntimeError: boom\n  at frame") for n in range(2)]
    assert "### `RuntimeError: boom` — runtime\\_error, 2 cases" in render_markdown(report(results))


def test_long_groups_are_collapsed():
    results = [record(f"conv_backward/2d/x{n}", "mismatch", "compare", verdict="unexpected_failure",
                      signature="same") for n in range(9)]
    failures = section(render_markdown(report(results)), "Unexpected failures")
    visible, folded = failures.split("<details><summary>6 more cases</summary>")
    assert visible.count("\n- `conv_backward") == 3 and folded.count("\n- `conv_backward") == 6
    assert folded.rstrip().endswith("</details>")


def test_a_group_counts_its_cases_per_op_and_lists_a_bounded_number(monkeypatch):
    """At OpInfo scale one signature can cover hundreds of cases: the group says how many per op,
    and lists LISTED_CASES of them."""
    import harness.views.markdown as markdown

    monkeypatch.setattr(markdown, "LISTED_CASES", 8)
    results = []
    for op, n in (("topk", 5), ("sort", 3), ("abs", 1)):
        for k in range(n):
            r = record(f"opinfo/{op}/default/float32/{k}", "compile_error", "lower", verdict="unexpected_failure",
                       signature="failed to legalize 'torch.operator'")
            r["params"] = {"op": op, "variant": "", "dtype": "float32", "sample_index": k}
            r["subject"] = op   # the OpInfo family's subject (Family.subject), kept by the runner
            results.append(r)
    failures = section(render_markdown(report(results)), "Unexpected failures")
    assert "By op (3): `topk` 5 · `sort` 3 · `abs` 1" in failures
    assert failures.count("\n- `opinfo/") == 8
    assert "- and 1 more: every case is in the JSON report and the HTML matrix" in failures
    assert "<details><summary>6 more cases</summary>" in failures
    single = section(render_markdown(report(results[:2])), "Unexpected failures")
    assert "By op" not in single                        # one op: nothing to count


def test_unexpected_passes_name_the_entry_to_delete():
    passes = section(render_markdown(report(problems())), "Unexpected passes")
    assert "- `xfail/be.yaml:12`: 2 cases now pass" in passes
    assert "`conv_backward/2d/g`" in passes and "`conv_backward/2d/h`" in passes


def test_crash_set_line_when_it_was_not_run():
    crash = section(render_markdown(report(problems())), "Crash-set entries")
    assert "1 crash-set case was not attempted; `--run-crash-set` re-checks them." in crash


def test_crash_set_entries_that_now_pass_or_fail_when_it_was_run():
    results = [record("conv_backward/2d/p", expected="crash", verdict="unexpected_pass", source="crash_sets/be.yaml:2"),
               record("conv_backward/2d/q", "compile_error", "lower", expected="crash", verdict="ok",
                      source="crash_sets/be.yaml:5", signature="no longer hangs")]
    text = render_markdown(report(results, run_crash_set=True))
    crash = section(text, "Crash-set entries")
    assert "not attempted" not in crash
    assert "- `crash_sets/be.yaml:2`: 1 case" in crash and "- `crash_sets/be.yaml:5`: 1 case" in crash
    assert "move them to the xfail file" in crash
    assert "## Unexpected passes" not in text  # a crash-set pass has its own section


def test_stale_expectations_list_entries_failing_in_another_phase():
    stale = section(render_markdown(report(problems())), "Stale expectations")
    assert ("| `xfail/be.yaml:20` | `conv_backward/2d/i` | `be` | compile\\_error in compile | `bf16 rejected` |"
            in stale)


def test_pipes_and_backticks_are_escaped():
    sig = "bad `x | y` and ``z``"
    results = [record("conv_backward/2d/i", "compile_error", "run", expected="xfail", verdict="unexpected_failure",
                      source="xfail/be.yaml:20", signature=sig, message="```\nfenced? | no\n````"),
               record("conv_backward/2d/j", "compile_error", "lower", verdict="unexpected_failure", signature=sig,
                      message="line one ``` with | pipe\n````\nstill inside")]
    text = render_markdown(report(results))
    stale_row = next(line for line in text.splitlines() if line.startswith("| `xfail/be.yaml:20`"))
    assert "``` bad `x \\| y` and ``z`` ```" in stale_row  # a longer fence, padded, and the pipe escaped
    assert stale_row.count(" | ") == 4  # five cells: no cell was split
    heading = next(line for line in text.splitlines() if line.startswith("### "))
    assert heading.startswith("### ``` bad `x | y` and ``z`` ``` —")
    body = section(text, "Unexpected failures")
    assert "`````\nline one ``` with | pipe\n````\nstill inside\n`````" in body  # fence longer than any run


def test_partial_run_is_marked():
    text = render_markdown(report([record("conv_backward/2d/k")], complete=False))
    head = text.split("\n\n")[1]
    assert head.endswith("**PARTIAL**")
    assert "> **PARTIAL report:**" in text


def test_no_problems_reads_all_as_expected():
    results = [record("conv_backward/2d/k"), record("conv_backward/2d/l", "compile_error", "lower",
                                                     expected="xfail", source="xfail/be.yaml:3")]
    text = render_markdown(report(results), {})
    assert "**All 2 results as expected**." in text
    assert re.findall(r"^## (.+)$", text, re.M) == ["Expectation files that would make this run match"]
    assert "The expectation files need no change." in text
    assert "## " not in render_markdown(report(results))  # no proposals asked: no sections at all


def test_proposals_are_ready_to_paste_yaml_with_an_optional_diff():
    proposed = "# header\n\n# review: added\n- id: conv_backward/2d/d\n  phase: lower\n  reason: 'x: ```y```'\n"
    text = render_markdown(report(problems()), {"xfail/be.yaml": proposed},
                           originals={"xfail/be.yaml": "# header\n[]\n"})
    block = section(text, "Expectation files")
    assert "### `xfail/be.yaml`" in block
    diff = re.search(r"^(`{3,})diff\n(.*?)^\1$", block, re.M | re.S).group(2)
    assert "-[]" in diff and "+- id: conv_backward/2d/d" in diff
    pasted = re.search(r"^(`{3,})yaml\n(.*?)^\1$", block, re.M | re.S)
    assert pasted.group(1) == "````" and pasted.group(2) == proposed
    assert yaml.safe_load(pasted.group(2))[0]["reason"] == "x: ```y```"
    undiffed = section(render_markdown(report(problems()), {"xfail/be.yaml": proposed}), "Expectation files")
    assert "Replace `xfail/be.yaml` with (6 lines):" in undiffed and "<details>" not in undiffed


def test_proposals_for_report_uses_the_files_the_report_names(tmp_path):
    (tmp_path / "xfail").mkdir()
    (tmp_path / "crash_sets").mkdir()
    (tmp_path / "xfail" / "be.yaml").write_text("# be\n[]\n")
    results = [record("conv_backward/2d/d", "compile_error", "lower", verdict="unexpected_failure",
                      signature="failed to legalize"),
               record("conv_backward/2d/a", "crashed", "run", verdict="unexpected_failure", signature="SIGSEGV"),
               record("conv_backward/2d/k")]
    proposals = proposals_for_report(report(results), tmp_path, case_ids=[r["case"] for r in results])
    assert set(proposals) == {"xfail/be.yaml", "crash_sets/be.yaml"}
    assert "- id: conv_backward/2d/d\n  phase: lower\n  reason: failed to legalize\n" in proposals["xfail/be.yaml"]
    assert proposals["xfail/be.yaml"].startswith("# be\n\n# review:")
    assert "reason: SIGSEGV" in proposals["crash_sets/be.yaml"]
    assert "### `crash_sets/be.yaml`" in render_markdown(report(results), proposals)


def test_proposals_for_report_skips_backends_whose_files_are_not_found(tmp_path):
    results = [record("conv_backward/2d/d", "compile_error", "lower", verdict="unexpected_failure")]
    assert proposals_for_report(report(results), tmp_path) == {}  # no xfail/ or crash_sets/ under root
    older = report(results)
    older["environment"]["backends"]["be"] = {"config": "configs/be.yaml", "versions": {}, "reported": {}}
    (tmp_path / "xfail").mkdir()
    (tmp_path / "crash_sets").mkdir()
    assert proposals_for_report(older, tmp_path) == {}  # a report without the file keys
    assert set(proposals_for_report(report(results), tmp_path)) == {"xfail/be.yaml"}


def test_a_family_with_flat_ids_and_subjects_gets_a_table_by_subject():
    def node(test, op, backend, outcome="passed", phase=None):
        return dict(record(f"onnx_node/{test}", outcome, phase, backend=backend), subject=op)

    results = [node("test_add", "Add", "ort"), node("test_add_bcast", "Add", "ort"),
               node("test_add", "Add", "mlir", "compile_error", "import"), node("test_add_bcast", "Add", "mlir"),
               node("test_abs", "Abs", "ort"), record("module/mlp", backend="ort")]
    text = render_markdown(report(results))
    table = section(text, "`onnx_node` by subject")
    assert "| subject | `mlir` | `ort` |" in table
    assert "| `Abs` |  | 1/1 |" in table and "| `Add` | 1/2 (import) | 2/2 |" in table
    assert "module by subject" not in text   # its subject is not named: no table
