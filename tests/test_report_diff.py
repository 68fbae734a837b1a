"""`python -m harness diff` and `python -m harness merge`: comparing and combining JSON reports."""
from __future__ import annotations

import json

import pytest

from harness.cli import main
from harness.installation.executables import python_command
from harness.reports import merge_reports
from harness.tools.report_diff import diff_markdown, diff_reports, diff_text


def rec(case, outcome="passed", signature=None, backend="be", phase=None, expected="pass"):
    failed = outcome not in ("passed", "not_run")
    return {"case": case, "backend": backend, "nodeid": f"cases/fam.py::test[{backend}-{case}]", "params": {},
            "tags": [], "outcome": outcome, "phase": phase or ("lower" if failed else None), "expected": expected,
            "verdict": "ok", "duration_s": 0.1, "message": "", "expectation_source": None,
            "phase_durations": {}, "notes": {}, "signature": signature, "artifacts": None}


def env(torch="2.13.0", torch_mlir="20261001", platform="Linux-x86_64", backends=None, crash_set=False):
    return {"python": "3.11.9", "torch": torch, "torch_mlir": torch_mlir, "numpy": "2.1.0", "platform": platform,
            "backends": backends if backends is not None else
            {"be": {"config": "configs/be.yaml", "versions": {"torch-mlir": torch_mlir}, "reported": {}}},
            "run_crash_set": crash_set}


def report(results, complete=True, environment=None):
    return {"schema_version": 1, "complete": complete, "created": 0.0, "environment": environment or env(),
            "results": results, "summary": {}}


def write(path, data):
    path.write_text(json.dumps(data))
    return str(path)


# One old/new pair with exactly one case in each diff section (plus one unchanged failure).
OLD = report([
    rec("fam/regressed"),
    rec("fam/crashes_now"),
    rec("fam/progressed", "compile_error", "failed to legalize operation 'torch.aten.foo'"),
    rec("fam/hangs_now", "mismatch", "grad_input differs"),
    rec("fam/new_signature", "compile_error", "failed to legalize operation 'torch.aten.a'"),
    rec("fam/other_failure", "compile_error", "failed to legalize operation 'torch.aten.b'"),
    rec("fam/crash_set", "not_run", expected="crash"),
    rec("fam/stopped_running"),
    rec("fam/removed"),
    rec("fam/same", "runtime_error", "segfault-free failure"),
    rec("fam/old_signature_unknown", "compile_error", None),
])
NEW = report([
    rec("fam/regressed", "compile_error", "failed to legalize operation 'torch.aten.convolution_backward'"),
    rec("fam/crashes_now", "crashed", "SIGSEGV in phase run", phase="run"),
    rec("fam/progressed"),
    rec("fam/hangs_now", "timed_out", "timeout in phase lower"),
    rec("fam/new_signature", "compile_error", "failed to legalize operation 'torch.aten.c'"),
    rec("fam/other_failure", "mismatch", "grad_weight differs", phase="compare"),
    rec("fam/crash_set", "crashed", "SIGABRT in phase compile", phase="compile", expected="crash"),
    rec("fam/stopped_running", "not_run"),
    rec("fam/added", "mismatch", "output differs", phase="compare"),
    rec("fam/same", "runtime_error", "segfault-free failure"),
    rec("fam/old_signature_unknown", "compile_error", "failed to legalize operation 'torch.aten.d'"),
], environment=env(torch_mlir="20261101"))


def cases(changes):
    return [c.case for c in changes]


def test_every_change_lands_in_its_section():
    d = diff_reports(OLD, NEW)
    assert cases(d.regressions) == ["fam/crashes_now", "fam/regressed"]
    assert cases(d.progressions) == ["fam/progressed"]
    # whatever it was before: passed, a failure, or not run
    assert cases(d.new_crashes) == ["fam/crash_set", "fam/crashes_now", "fam/hangs_now"]
    assert cases(d.signature_changes) == ["fam/new_signature"]  # a null old signature is no change
    assert cases(d.outcome_changes) == ["fam/other_failure"]
    assert cases(d.run_changes) == ["fam/stopped_running"]
    assert cases(d.added) == ["fam/added"] and cases(d.removed) == ["fam/removed"]
    assert d.failing


def test_environment_changes_name_top_level_and_backend_versions():
    d = diff_reports(OLD, NEW)
    assert d.environment == [("torch_mlir", "20261001", "20261101"), ("be: torch-mlir", "20261001", "20261101")]
    assert diff_reports(OLD, OLD).environment == []


def test_signature_missing_from_old_reports_is_read_as_null():
    old = report([{k: v for k, v in rec("fam/a", "mismatch").items() if k != "signature"}])
    d = diff_reports(old, report([rec("fam/a", "mismatch", "grad_input differs")]))
    assert d.signature_changes == [] and not d.failing


def test_text_has_counts_first_then_sections_with_rerun_commands():
    text = diff_text(diff_reports(OLD, NEW))
    first = text.splitlines()[0]
    assert first.startswith("regressions: 2, progressions: 1, new crashes and hangs: 3,")
    assert "  torch_mlir: 20261001 → 20261101" in text
    assert ("  fam/regressed [be]  passed → compile_error in lower  "
            "failed to legalize operation 'torch.aten.convolution_backward'") in text
    assert f"    rerun: {python_command()} -m pytest --backend=be 'cases/fam.py::test[be-fam/regressed]'" in text
    assert ("  fam/new_signature [be]  compile_error in lower → compile_error in lower  "
            "failed to legalize operation 'torch.aten.a' → failed to legalize operation 'torch.aten.c'") in text
    assert "  fam/added [be]  (absent) → mismatch in compare  output differs" in text
    assert "  fam/removed [be]  passed → (absent)" in text
    assert "incomplete" not in text


def test_markdown_has_a_counts_table_and_one_table_per_section():
    md = diff_markdown(diff_reports(OLD, NEW))
    assert "| regressions | progressions | new crashes and hangs |" in md
    assert "| 2 | 1 | 3 | 1 | 1 | 1 | 1 | 1 |" in md
    assert "### Regressions (2)" in md and "### Environment changed" in md
    assert ("| `fam/progressed` | `be` | compile_error in lower → passed | "
            "`failed to legalize operation 'torch.aten.foo'` |") in md
    assert "<details><summary>rerun commands</summary>" in md
    assert ("| `fam/new_signature` | `be` | compile_error in lower → compile_error in lower | "
            "`failed to legalize operation 'torch.aten.a'` → `failed to legalize operation 'torch.aten.c'` |") in md


def test_markdown_escapes_pipes_and_backticks():
    d = diff_reports(report([rec("fam/a")]), report([rec("fam/a", "mismatch", "a|b `c`")]))
    assert r"| `` a\|b `c` `` |" in diff_markdown(d)


def test_a_backend_in_one_report_only_is_one_line_per_section():
    old = report([rec("fam/a"), rec("fam/b", backend="gone")])
    new = report([rec("fam/a"), rec("fam/c"), rec("fam/a", backend="fresh"), rec("fam/b", "mismatch", "d", "fresh")])
    d = diff_reports(old, new)
    assert len(d.added) == 3 and d.added_backends == ["fresh"] and d.removed_backends == ["gone"]
    text = diff_text(d)
    assert ("added (3):\n  fam/c [be]  (absent) → passed\n"
            "  (all 2 cases) [fresh]  (absent) → mismatch 1, passed 1\n") in text
    assert "removed (1):\n  (all 1 case) [gone]  passed 1 → (absent)\n" in text
    assert "| (all 2 cases) | `fresh` | (absent) → mismatch 1, passed 1 |  |" in diff_markdown(d)


def test_incomplete_report_is_noted():
    d = diff_reports(OLD, report(NEW["results"][:3], complete=False))
    assert "note: the new report is incomplete (the run was interrupted): cases missing from it show as removed" \
        in diff_text(d)
    assert "> **Note:** the new report is incomplete" in diff_markdown(d)


@pytest.mark.parametrize(("old", "new", "status"), [
    ([rec("fam/a")], [rec("fam/a", "mismatch", "x")], 1),                  # regression
    ([rec("fam/a", "mismatch", "x")], [rec("fam/a", "crashed", "y")], 1),  # new crash of a failing case
    ([rec("fam/a", "crashed", "y")], [rec("fam/a", "timed_out", "z")], 1),  # a crash became a hang
    ([rec("fam/a", "not_run")], [rec("fam/a", "crashed", "y")], 0),        # the crash set run for the first time
    ([rec("fam/a", "mismatch", "x")], [rec("fam/a")], 0),                  # progression
    ([rec("fam/a")], [rec("fam/a", "not_run")], 0),                        # passed -> not run: no result lost
    ([rec("fam/a")], [rec("fam/b", "mismatch", "x")], 0),                  # added and removed
    ([rec("fam/a", "mismatch", "x")], [rec("fam/a", "compile_error", "y")], 0),
])
def test_diff_exit_status(tmp_path, capsys, old, new, status):
    args = ["diff", write(tmp_path / "old.json", report(old)), write(tmp_path / "new.json", report(new))]
    assert main(args) == status
    assert capsys.readouterr().err == ""


def test_diff_writes_markdown_to_a_file(tmp_path, capsys):
    out = tmp_path / "diff.md"
    old, new = write(tmp_path / "old.json", OLD), write(tmp_path / "new.json", NEW)
    assert main(["diff", old, new, "--markdown", "-o", str(out)]) == 1
    assert capsys.readouterr().out == ""
    assert out.read_text().startswith("## Run diff\n")


def test_diff_of_a_report_with_itself_is_empty_and_passes(tmp_path, capsys):
    path = write(tmp_path / "r.json", OLD)
    assert main(["diff", path, path]) == 0
    out = capsys.readouterr().out
    first, note = out.splitlines()
    assert first.startswith("regressions: 0, progressions: 0,") and first.endswith("IR changed: 0")
    # these hand-made records carry no stage fingerprints: said, not counted as unchanged
    assert note.startswith(f"note: {len(OLD['results'])} result(s) could not be compared")


# ---- merge ---------------------------------------------------------------------------------

def shard_envs():
    """One job per backend: each installs only what its backend needs, so other versions are null."""
    a = env(backends={"be": {"config": "configs/be.yaml", "versions": {"torch-mlir": "20261001"},
                             "reported": {"mlir": "1"}}}, crash_set=True, platform="Linux-a")
    b = env(torch_mlir=None, backends={"iree": {"config": "configs/iree.yaml",
                                                "versions": {"iree-base-compiler": "3.13.0"}, "reported": {}}},
            crash_set=True, platform="Linux-b")
    return a, b


def test_merge_of_two_shards(tmp_path):
    a_env, b_env = shard_envs()
    a = write(tmp_path / "a.json", report([rec("fam/x"), rec("fam/y", "mismatch", "d")], environment=a_env))
    b = write(tmp_path / "b.json", report([rec("fam/x", backend="iree")], environment=b_env))
    out = tmp_path / "all.json"
    assert main(["merge", a, b, "-o", str(out)]) == 0
    merged = json.loads(out.read_text())
    assert merged["schema_version"] == 1 and merged["complete"] is True
    assert [(r["backend"], r["case"]) for r in merged["results"]] == [("be", "fam/x"), ("be", "fam/y"),
                                                                        ("iree", "fam/x")]
    assert merged["summary"]["be"] == {"total": 2, "outcomes": {"passed": 1, "mismatch": 1}, "verdicts": {"ok": 2}}
    environment = merged["environment"]
    assert environment["torch_mlir"] == "20261001"  # null in the IREE job: not installed there, no conflict
    assert set(environment["backends"]) == {"be", "iree"}
    assert environment["backends"]["be"]["reported"] == {"mlir": "1"}
    assert environment["platform"] == "Linux-a; Linux-b" and environment["run_crash_set"] is True


def test_merge_of_shards_of_one_backend_merges_its_block():
    a = report([rec("fam/x")], environment=env(backends={"be": {"config": "c", "versions": {"d": "1"},
                                                                  "reported": {}}}))
    b = report([rec("fam/y")], environment=env(backends={"be": {"config": "c", "versions": {"d": "1"},
                                                                  "reported": {"r": "2"}}}))
    merged = merge_reports([("a.json", a), ("b.json", b)])
    assert merged["environment"]["backends"] == {"be": {"config": "c", "versions": {"d": "1"},
                                                        "reported": {"r": "2"}}}


def test_merge_propagates_incomplete_and_crash_set(tmp_path):
    a = report([rec("fam/x")], environment=env(crash_set=True))
    b = report([rec("fam/y")], complete=False)
    merged = merge_reports([("a.json", a), ("b.json", b)])
    assert merged["complete"] is False and merged["environment"]["run_crash_set"] is False
    assert merge_reports([("a.json", a)])["complete"] is True


def test_merge_duplicate_key_is_one_error_line_naming_both_files(tmp_path, capsys):
    a = write(tmp_path / "a.json", report([rec("fam/x")]))
    b = write(tmp_path / "b.json", report([rec("fam/y"), rec("fam/x")]))
    assert main(["merge", a, b, "-o", str(tmp_path / "all.json")]) == 2
    err = capsys.readouterr().err
    assert err == (f"error: {b}: holds fam/x on be, and so does {a}; "
                   "shards must not overlap: give each shard's report once\n")
    assert not (tmp_path / "all.json").exists()


@pytest.mark.parametrize(("a_env", "b_env", "what"), [
    (env(torch="2.13.0"), env(torch="2.13.1"), "has torch 2.13.1, but"),
    (env(torch_mlir="20261001"), env(torch_mlir="20261101"), "has torch_mlir 20261101, but"),
    (env(), env(backends={"be": {"config": "c", "versions": {"torch-mlir": "2"}, "reported": {}}}),
     "has backend be versions torch-mlir 2, but"),
])
def test_merge_version_mismatch_is_an_error(tmp_path, capsys, a_env, b_env, what):
    a = write(tmp_path / "a.json", report([rec("fam/x")], environment=a_env))
    b = write(tmp_path / "b.json", report([rec("fam/y")], environment=b_env))
    assert main(["merge", a, b, "-o", str(tmp_path / "all.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {b}: {what} {a} has") and err.count("\n") == 1
    assert "rerun the odd shard" in err


# ---- bad input ---------------------------------------------------------------------------

BAD_INPUTS = {
    "missing": (None, "cannot be read"),
    "not JSON": ("{oops", "is not JSON"),
    "not a report": (json.dumps({"results": []}), "is not a harness report"),
    "a list": (json.dumps([1, 2]), "is not a harness report"),
    "wrong schema": (json.dumps(report([]) | {"schema_version": 2}), "has schema_version 2, this harness reads 1"),
    "bad environment": (json.dumps(report([]) | {"environment": {"backends": {"be": 1}}}), "has an environment"),
    "bad record": (json.dumps(report([{"case": "fam/x"}])), "result 0 lacks backend, case or outcome"),
    "duplicate in one file": (json.dumps(report([rec("fam/x"), rec("fam/x")])), "holds fam/x on be twice"),
}


@pytest.mark.parametrize("command", ["diff", "merge"])
@pytest.mark.parametrize("kind", list(BAD_INPUTS))
def test_bad_input_is_one_error_line_naming_the_file(tmp_path, capsys, command, kind):
    content, problem = BAD_INPUTS[kind]
    bad = tmp_path / "bad.json"
    if content is not None:
        bad.write_text(content)
    good = write(tmp_path / "good.json", report([rec("fam/y")]))
    args = ["diff", good, str(bad)] if command == "diff" else ["merge", good, str(bad), "-o", str(tmp_path / "o.json")]
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"error: {bad}: {problem}") and captured.err.count("\n") == 1
    assert "Traceback" not in captured.err and captured.out == ""
    assert "--report-json" in captured.err  # the fix


def test_unwritable_output_is_one_error_line(tmp_path, capsys):
    good = write(tmp_path / "good.json", report([rec("fam/y")]))
    out = tmp_path / "no" / "such" / "dir" / "all.json"
    assert main(["merge", good, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {out}: cannot be written") and err.count("\n") == 1
