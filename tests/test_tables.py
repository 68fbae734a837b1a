"""The generated tables of the docs, from JSON reports: `python -m harness table` (the backend and
lowering-path tables of docs/reference/backends.md), the model family's `python -m harness
model-table` (docs/results/models.md) and `python -m harness train-step-table`
(docs/results/training-steps.md)."""
from __future__ import annotations

from types import SimpleNamespace

from e2e_support import REPO

from harness.cli import main
from harness.families.model.table import BEGIN, END, model_table
from harness.record import Record
from harness.reports import write_report
from harness.tools.report_commands import TABLE_MARKERS
from harness.training.table import BEGIN as STEP_BEGIN
from harness.training.table import END as STEP_END
from harness.training.table import train_step_table
from harness.views.tables import backend_table, lowering_table

TABLE_BEGIN, TABLE_END = TABLE_MARKERS


def record(backend, case, outcome="passed", expected="pass", notes=None, **more):
    return Record.from_json({"backend": backend, "case": case, "outcome": outcome, "expected": expected,
                             "notes": notes or {}, **more})


RECORDS = [
    record("be", "conv_backward/2d/a", lowering={"aten.convolution_backward": "decomposed", "aten.sum": "kept"}),
    record("be", "conv_backward/2d/b", "compile_error", "xfail", lowering={"aten.convolution_backward": "kept"}),
    record("be", "conv_backward/2d/c", "not_run", "crash"),
    record("be", "conv_forward/2d/a"),
]


def test_backend_table_counts_passed_xfail_and_crash_per_family():
    table = backend_table(RECORDS, {})
    assert "| `be` |  |  | 1 / 1 / 1 | 1 / 0 / 0 |" in table
    other = backend_table(RECORDS + [record("other", "conv_forward/2d/a")], {})
    assert "| `other` |  |  | not run | 1 / 0 / 0 |" in other  # a family a backend did not run is not 0 / 0 / 0


MLIR = SimpleNamespace(class_path="harness.backends.mlir:MlirBackend")
DIRECT = [record("direct", "conv_backward/2d/a", lowering={"aten.convolution_backward": "kept", "aten.sum": "kept"}),
          record("direct", "conv_backward/2d/b", lowering={"aten.convolution_backward": "kept"})]


def test_lowering_table_shows_an_op_whose_paths_differ_between_backends_of_one_class():
    table = lowering_table(RECORDS + DIRECT, {"be": MLIR, "direct": MLIR})
    assert "| `be` | `aten.convolution_backward` | 1 (1) | 1 (0) |" in table   # decomposed once, kept once
    assert "| `direct` | `aten.convolution_backward` |  | 2 (2) |" in table
    assert "aten.sum" not in table   # kept on both: nothing to tell
    assert lowering_table(RECORDS, {"be": MLIR}) == ""   # one backend: its paths differ by program only


def test_lowering_table_compares_no_backends_of_another_class_or_without_a_config():
    inductor = SimpleNamespace(class_path="harness.backends.inductor:InductorBackend")
    assert lowering_table(RECORDS + DIRECT, {"be": MLIR, "direct": inductor}) == ""
    assert lowering_table(RECORDS + DIRECT, {}) == ""


def test_table_rewrites_only_between_the_markers(tmp_path, monkeypatch):
    report = tmp_path / "r.json"
    write_report(report, {}, [r.to_json() for r in RECORDS], complete=True)   # a report as read_report checks it
    readme = tmp_path / "README.md"
    readme.write_text(f"before\n{TABLE_BEGIN}\nold table\n{TABLE_END}\nafter\n")
    (tmp_path / "configs").mkdir()
    monkeypatch.chdir(tmp_path)
    assert main(["table", str(report), "--readme", str(readme)]) == 0
    text = readme.read_text()
    assert text.startswith("before\n") and text.endswith(f"{TABLE_END}\nafter\n")
    assert "old table" not in text and "1 / 1 / 1" in text


def test_unreadable_report_is_one_error_line(tmp_path, capsys):
    assert main(["table", str(tmp_path / "missing.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "--report-json" in err


def test_the_model_table_gives_each_failure_s_phase_and_a_numbered_signature():
    state = "Could not find state mapping for buffer"
    records = [record("a", "model/bert/tiny", "compile_error", phase="import", signature=state),
               record("a", "model/llama/tiny", "compile_error", phase="import", signature=state),
               record("a", "model/vit/tiny"), record("b", "model/vit/tiny", "crashed", signature="SIGSEGV in x|y"),
               record("b", "model/bert/tiny"), record("a", "conv_forward/2d/a")]
    table = model_table(records)
    assert table.splitlines()[:5] == ["| model | `a` | `b` |", "| --- | --- | --- |",
                                      "| `bert/tiny` | compile_error in import [1] | pass |",
                                      "| `llama/tiny` | compile_error in import [1] |  |",
                                      "| `vit/tiny` | pass | crashed [2] |"]
    assert table.splitlines()[-2:] == [f"1. import: {state}", "2. crashed: SIGSEGV in x\\|y"]


def test_model_table_rewrites_only_between_the_page_s_markers(tmp_path, monkeypatch):
    report = tmp_path / "r.json"
    records = [record("a", "model/vit/tiny"), record("a", "model/bert/tiny", "compile_error", phase="import",
                                                     signature="no state")]
    write_report(report, {}, [r.to_json() for r in records], complete=True)
    page = tmp_path / "models.md"
    page.write_text(f"before\n{BEGIN}\nold table\n{END}\nafter\n")
    (tmp_path / "configs").mkdir()
    monkeypatch.chdir(tmp_path)
    assert main(["model-table", str(report), "--page", str(page)]) == 0
    text = page.read_text()
    assert text.startswith(f"before\n{BEGIN}\n| model | `a` |") and text.endswith(f"{END}\nafter\n")
    assert "old table" not in text and "| `bert/tiny` | compile_error in import [1] |" in text


def test_a_page_without_the_model_table_s_markers_is_one_error_line(tmp_path, monkeypatch, capsys):
    report = tmp_path / "r.json"
    write_report(report, {}, [record("a", "model/vit/tiny").to_json()], complete=True)
    (tmp_path / "page.md").write_text("no markers here\n")
    (tmp_path / "configs").mkdir()
    monkeypatch.chdir(tmp_path)
    for page, problem in (("page.md", "has no table markers"), ("missing.md", "no such page")):
        assert main(["model-table", str(report), "--page", page]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {page}: {problem}") and err.count("\n") == 1
    assert (tmp_path / "page.md").read_text() == "no markers here\n"


def test_the_results_page_holds_the_model_table_between_its_markers():
    text = (REPO / "docs" / "results" / "models.md").read_text(encoding="utf-8")
    table = text.split(BEGIN, 1)[1].split(END, 1)[0]
    assert table.startswith("\n| model | `eager` |") and "\n1. " in table


STEPS = [
    record("eager", "model/resnet/tiny/train_step", params={"train_step": True}),
    record("lin", "model/resnet/tiny/train_step", params={"train_step": True},
           notes={"backward ops": "convolution_backward, native_batch_norm_backward"}),
    record("lin", "model/bert/tiny/train_step", "compile_error", "xfail", params={"train_step": True},
           phase="decompose", signature="ValueError: Cannot view a tensor", notes={"backward ops": "none"}),
    record("lin", "module/train_step_mlp_sgd", params={"train_step": True}),
    record("lin", "model/resnet/tiny", params={"train_step": False}),   # no training step: left out
]


def test_the_training_step_table_counts_the_steps_holding_the_seeds_op(tmp_path):
    table = train_step_table(STEPS)
    lines = table.splitlines()
    assert lines[0] == ("1 of 3 training steps contain `convolution_backward` (1 with no record of their joint "
                        "graph: no backend of these reports exported it).")
    assert "| training step | backward ops kept whole | `eager` | `lin` |" in lines
    kept = "convolution_backward, native_batch_norm_backward"
    assert f"| `model/resnet/tiny/train_step` | {kept} | pass | pass |" in lines
    assert "| `model/bert/tiny/train_step` | none |  | compile_error in decompose [1] |" in lines
    assert "| `module/train_step_mlp_sgd` | ? |  | pass |" in lines
    assert lines[-1] == "1. decompose: ValueError: Cannot view a tensor" and "model/resnet/tiny`" not in table
    report, page = tmp_path / "r.json", tmp_path / "steps.md"
    write_report(report, {}, [r.to_json() for r in STEPS], complete=True)
    page.write_text(f"intro\n{STEP_BEGIN}\nold\n{STEP_END}\n")
    assert main(["train-step-table", str(report), "--page", str(page)]) == 0
    assert page.read_text() == f"intro\n{STEP_BEGIN}\n{table}{STEP_END}\n"
