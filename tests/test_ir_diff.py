"""What a compiler change changed: the first stage whose fingerprint changed, in the report diff
(`python -m harness diff`, `--expect-same-ir`) and in the run history (`history show`)."""
from __future__ import annotations

import json

import pytest
from builtin_stages import MLIR_STAGES

from harness.cli import main
from harness.perf.stats import summary
from harness.stages.changes import comparable, first_changed_stage

SAME = {stage: f"{i:016x}" for i, stage in enumerate(MLIR_STAGES)}
LOWERED_DIFFERENTLY = {**SAME, "linalg_ir": "a" * 16, "llvm_ir": "b" * 16}   # a lowering pattern changed


def test_a_stage_one_side_did_not_reach_is_no_change_and_no_stage_in_common_is_not_compared():
    failed_in_lower = {s: SAME[s] for s in MLIR_STAGES[:4]}
    assert comparable(SAME, failed_in_lower) and first_changed_stage(SAME, failed_in_lower) is None
    assert not comparable({}, SAME) and first_changed_stage({}, SAME) is None


# ---- the report diff, on hand-made reports ---------------------------------------------------

def rec(case, fingerprints, outcome="passed", perf=None):
    failed = outcome != "passed"
    return {"case": case, "backend": "be", "nodeid": "", "params": {}, "tags": [], "outcome": outcome,
            "phase": "lower" if failed else None, "expected": "pass", "verdict": "ok", "duration_s": 0.1,
            "message": "", "signature": "broke" if failed else None, "fingerprints": fingerprints, "perf": perf}


def timed(compiled: float) -> dict:
    """--perf's figures: 30 eager and compiled samples, interleaved, around the given centres."""
    wobble = [1 + 0.01 * ((i * 7) % 5 - 2) for i in range(30)]
    return {"eager": summary(wobble), "compiled": summary([compiled * w for w in wobble])}


def report(results):
    return {"schema_version": 1, "complete": True, "created": 0.0, "results": results,
            "environment": {"torch": "2.13.0", "backends": {"be": {"versions": {}, "reported": {}}}}}


OLD = report([rec("fam/same", SAME), rec("fam/lowered", SAME, perf=timed(1.0)), rec("fam/old_report", {}),
              rec("fam/now_fails", SAME)])
NEW = report([rec("fam/same", SAME), rec("fam/lowered", LOWERED_DIFFERENTLY, perf=timed(2.0)),
              rec("fam/old_report", SAME),
              rec("fam/now_fails", {s: SAME[s] for s in MLIR_STAGES[:4]}, outcome="compile_error")])


def diff(tmp_path, capsys, old, new, *flags):
    (tmp_path / "old.json").write_text(json.dumps(old))
    (tmp_path / "new.json").write_text(json.dumps(new))
    status = main(["diff", str(tmp_path / "old.json"), str(tmp_path / "new.json"), *flags])
    out, err = capsys.readouterr()
    return status, out, err


def test_the_diff_names_the_first_changed_stage_beside_the_outcome_and_the_speed(tmp_path, capsys):
    status, out, err = diff(tmp_path, capsys, OLD, NEW)
    assert status == 1 and err == ""   # fam/now_fails regressed: the diff's own exit status
    assert out.splitlines()[0].endswith("IR changed: 1")
    assert "note: 1 result(s) could not be compared: no stage fingerprinted in both reports" in out
    section = out.split("IR changed, at the first stage whose fingerprint did (1: linalg_ir 1):\n")[1].splitlines()
    assert section[0].startswith("  fam/lowered [be]  first changed: linalg_ir  passed (unchanged)  time x2")
    assert "slower" in section[0]
    assert "speed changes (--perf, as perf compare judges them) (1):\n  fam/lowered [be]  time x2" in out
    _, markdown, _ = diff(tmp_path, capsys, OLD, NEW, "--format=markdown")
    assert "### IR changed (1: linalg_ir 1)" in markdown
    assert "| `fam/lowered` | `be` | first changed: linalg_ir" in markdown


def test_the_json_diff_lists_ir_changed_with_the_sections_it_had(tmp_path, capsys):
    _, out, _ = diff(tmp_path, capsys, OLD, NEW, "--format=json")
    data = json.loads(out)
    assert data["ir_changed"] == [{"case": "fam/lowered", "backend": "be", "stage": "linalg_ir"}]
    assert (data["ir_compared"], data["ir_not_compared"]) == (3, 1)
    assert [c["case"] for c in data["regressions"]] == ["fam/now_fails"]
    assert data["regressions"][0]["new"] == {"outcome": "compile_error", "phase": "lower", "signature": "broke"}
    assert data["failing"] is True and data["counts"]["regressions"] == 1
    assert [(s["case"], s["ratio"] > 1.5, s["ir"]) for s in data["speed_changes"]] == [("fam/lowered", True, "changed")]


def test_a_speed_change_with_the_same_ir_is_said_to_be_the_machines(tmp_path, capsys):
    """Two runs of one build on a loaded machine: a time that changed while no stage's output did
    is not the compiler's doing, and the diff says so beside it."""
    old, new = report([rec("fam/same", SAME, perf=timed(1.0))]), report([rec("fam/same", SAME, perf=timed(0.5))])
    _, out, _ = diff(tmp_path, capsys, old, new)
    assert "fam/same [be]  time x0.5 (faster)" in out and "with the same IR in every stage" in out
    _, out, _ = diff(tmp_path, capsys, old, new, "--format=json")
    assert [s["ir"] for s in json.loads(out)["speed_changes"]] == ["same"]


def test_expect_same_ir_fails_on_a_changed_stage_with_a_line_each_and_passes_on_the_same(tmp_path, capsys):
    old, new = report(OLD["results"][:3]), report(NEW["results"][:3])   # no regression: only the IR changed
    assert diff(tmp_path, capsys, old, new)[0] == 0
    status, _, err = diff(tmp_path, capsys, old, new, "--expect-same-ir")
    assert status == 1
    assert err.splitlines() == ["ir changed: fam/lowered [be] at linalg_ir",
                                "1 result(s) changed IR, expected none (--expect-same-ir); 2 compared"]
    status, out, err = diff(tmp_path, capsys, old, old, "--expect-same-ir", "--format=json")
    assert (status, err, json.loads(out)["ir_changed"]) == (0, "", [])
    unfingerprinted = report([rec("fam/same", {})])   # reports older than fingerprints: a pass that says so
    status, _, err = diff(tmp_path, capsys, unfingerprinted, unfingerprinted, "--expect-same-ir")
    assert (status, err) == (0, "warning: --expect-same-ir compared nothing: no result has a stage fingerprinted "
                                "in both reports\n")


# ---- a real pair of runs ---------------------------------------------------------------------

def test_two_runs_of_one_build_change_no_ir(e2e_project):
    pytest.importorskip("torch_mlir")
    paths = []
    for run in ("a", "b"):   # both cold: each its own empty stage cache, so equal IR is not read back from the first
        result = e2e_project.run("--backend=linalg-on-tensors", "-k", "conv_backward", f"--cache-dir={run}-stages",
                                 report=f"{run}.json")
        assert len(result.results) == 2, result.output
        assert not [r["case"] for r in result.results if "hit" in r["cache"].values()], "a stage was read, not computed"
        paths.append(str(e2e_project.path / f"{run}.json"))
    out = e2e_project.path / "diff.json"
    assert main(["diff", *paths, "--expect-same-ir", "--format=json", "-o", str(out)]) == 0
    data = json.loads(out.read_text())
    assert (data["ir_changed"], data["ir_compared"], data["ir_not_compared"]) == ([], 2, 0)
    assert main(["diff", *paths, "-o", str(out)]) == 0
    assert out.read_text().splitlines()[0].endswith("IR changed: 0")


# ---- the history -----------------------------------------------------------------------------

def night(tmp_path, number, fingerprints_x, outcome_x="passed"):
    data = report([rec("fam/x", fingerprints_x, outcome=outcome_x), rec("fam/y", SAME)])
    data.update(run_id=f"night-{number}", created=1000.0 + number)
    data["environment"]["backends"]["be"]["versions"] = {"torch-mlir": "1" if number < 2 else "2"}   # a rebuild
    path = tmp_path / f"night{number}.json"
    path.write_text(json.dumps(data))
    return str(path)


MOVED_IMPORT = {**SAME, "torch_ir": "c" * 16, "torch_backend_ir": "d" * 16, "linalg_ir": "e" * 16}


@pytest.mark.parametrize("order", [(1, 2, 3), (3, 1, 2)], ids=["in order", "a late report rebuilds the state"])
def test_the_history_says_since_which_run_the_ir_changed_and_at_which_stage(tmp_path, capsys, order):
    reports = {1: night(tmp_path, 1, SAME), 2: night(tmp_path, 2, MOVED_IMPORT, "mismatch"),
               3: night(tmp_path, 3, MOVED_IMPORT, "mismatch")}
    db = str(tmp_path / "history.db")
    for number in order:
        assert main(["history", "ingest", db, reports[number]]) == 0
    capsys.readouterr()
    assert main(["history", "show", db, "--format=json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(c["case"], c["since"], c["stage"], c["status"], c["last_outcome"]) for c in data["ir_changes"]] == [
        ("fam/x", 2, "torch_ir", "failing", "mismatch")]
    assert [(c["case"], c["ir_changed"]) for c in data["cases"]] == [("fam/x", {"since": 2, "stage": "torch_ir"})]
    assert main(["history", "show", db]) == 0
    text = capsys.readouterr().out
    assert "IR changed since run 2 at torch_ir" in text   # beside its failure
    section = text.split("IR changed, at the first stage that did (stage fingerprints) (1)\n")[1]
    assert section.split()[:6] == ["since", "run", "2", "be", "fam/x", "at"]


def test_fingerprints_are_stored_where_they_change_and_a_late_report_between_two_runs_is_dated_right(tmp_path):
    from harness.history.status import ir_changes
    from harness.history.store import open_history

    reports = {1: night(tmp_path, 1, SAME), 2: night(tmp_path, 2, MOVED_IMPORT), 3: night(tmp_path, 3, SAME)}
    with open_history(tmp_path / "in_order.db", write=True) as store:
        store.ingest_all([reports[1], reports[2], reports[3]])
        # fam/x at runs 1, 2 and 3 (each differs from the one before), fam/y at run 1 alone
        assert store.db.execute("SELECT count(*) FROM ir_fingerprints").fetchall() == [(4,)]
        in_order = ir_changes(store)
    with open_history(tmp_path / "late.db", write=True) as store:
        store.ingest(reports[1])
        store.ingest(reports[3])   # the same IR as run 1: no row
        assert store.db.execute("SELECT count(*) FROM ir_fingerprints").fetchall() == [(2,)]
        store.ingest(reports[2])   # between them: its IR, and run 3's again after it
        assert ir_changes(store) == in_order
    assert [(c["case"], c["since"], c["stage"]) for c in in_order] == [("fam/x", 3, "torch_ir")]
