"""The case registry: case modules and --cases-file (unit), and --cases-file end to end."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from e2e_support import REPO, TINY_IDS

from harness.case_data import Case
from harness.errors import HarnessInputError
from harness.families.conv import conv_backward_case
from harness.families.conv.params import validate_backward, validate_forward
from harness.families.loader import load_families
from harness.project_files.cases_by_file import CasesByFile
from harness.project_files.registry import case_modules, load_case_module, load_cases_file

FAMILY_TABLE = load_families([], REPO)


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def error(path) -> str:
    with pytest.raises(HarnessInputError) as info:
        load_cases_file(path, FAMILY_TABLE)
    return str(info.value)


# ------------------------------------------------------------------------------------- case modules

def test_repo_case_modules_load_with_unique_ids():
    modules = case_modules([REPO / "cases"])
    assert [p.name for p in modules] == ["conv_backward.py", "conv_forward.py", "model.py", "module.py",
                                         "onnx_node.py", "opinfo.py"]
    cases = [c for module_cases in CasesByFile(modules, load_case_module).values() for c in module_cases]
    assert len(cases) > 700
    assert all(c.id.startswith(("conv_backward/", "conv_forward/", "model/", "module/", "onnx_node/", "opinfo/",
                                "opinfo_grad/"))
               for c in cases)


def test_case_modules_skip_underscore_files(tmp_path):
    (tmp_path / "_helpers.py").write_text("")
    (tmp_path / "b.py").write_text("CASES = []\n")
    (tmp_path / "a.py").write_text("CASES = []\n")
    assert [p.name for p in case_modules([tmp_path])] == ["a.py", "b.py"]


def test_case_module_without_cases_list(tmp_path):
    path = write(tmp_path, "nocases.py", "X = 1\n")
    with pytest.raises(HarnessInputError) as info:
        load_case_module(path)
    assert str(info.value) == (f"{path}: a case module must define CASES, a list of harness.api.Case, "
                               "or a function cases(options) that returns one")


def test_case_module_with_a_bad_declaration_names_the_file_and_the_case(tmp_path):
    path = write(tmp_path, "bad.py", """\
        from harness.families.conv import conv_backward_case
        CASES = [conv_backward_case("odd", input_shape=[1, 3, 4, 4], weight_shape=[2, 1, 3, 3], groups=2)]
        """)
    with pytest.raises(HarnessInputError) as info:
        load_case_module(path)
    message = str(info.value)
    assert message.startswith(f"{path}: conv_backward/2d/odd: groups=2 does not divide the 3 input channels")


def test_a_file_loads_when_asked_for_and_an_id_two_files_share_is_one_error_line():
    case = conv_backward_case("a", input_shape=[1, 2, 4, 4], weight_shape=[2, 2, 3, 3])
    asked: list = []
    files = {Path("one.py"): [case], Path("two.py"): [case], Path("same.py"): [case, case]}
    by_file = CasesByFile(files, lambda path: asked.append(path) or files[path])
    assert by_file[Path("one.py")] == [case] and asked == [Path("one.py")]   # the others not loaded
    assert Path("two.py") in by_file and asked == [Path("one.py")] and len(by_file) == 3
    with pytest.raises(HarnessInputError, match="conv_backward/2d/a: two cases share this id"):
        by_file[Path("two.py")]
    with pytest.raises(HarnessInputError, match="conv_backward/2d/a: two cases share this id"):
        CasesByFile(files, files.__getitem__)[Path("same.py")]


@pytest.mark.parametrize("timeout", [-1, 0, "60", True])
def test_case_timeout_must_be_a_positive_number(timeout):
    with pytest.raises(ValueError, match="timeout must be a positive, finite number of seconds"):
        conv_backward_case("t", input_shape=[1, 2, 4, 4], weight_shape=[2, 2, 3, 3], timeout=timeout)
    assert conv_backward_case("t", input_shape=[1, 2, 4, 4], weight_shape=[2, 2, 3, 3], timeout=0.5).timeout == 0.5


def test_case_ids_must_be_glob_friendly():
    with pytest.raises(ValueError, match="case id"):
        Case(id="conv_backward/2d/has space", family="conv_backward", params={})


# ------------------------------------------------------------------------------------- cases files

def test_yaml_cases_file(tmp_path):
    path = write(tmp_path, "bug.yaml", """\
        - name: grouped_from_issue
          input_shape: [2, 4, 8, 8]
          weight_shape: [6, 2, 3, 3]
          groups: 2
          tags: [from_issue]
          timeout: 30
        - family: conv_forward
          input_shape: [1, 2, 5]
          weight_shape: [3, 2, 3]
        """)
    first, second = load_cases_file(path, FAMILY_TABLE)
    assert first.id == "conv_backward/cases_file/grouped_from_issue"
    assert first.family == "conv_backward"
    assert first.params == validate_backward({"input_shape": [2, 4, 8, 8], "weight_shape": [6, 2, 3, 3],
                                              "groups": 2})
    assert "from_issue" in first.tags and "cases_file" in first.tags
    assert first.timeout == 30
    assert second.id == "conv_forward/cases_file/bug_1"  # default name: file stem and index
    assert second.params == validate_forward({"input_shape": [1, 2, 5], "weight_shape": [3, 2, 3]})


def test_json_cases_file(tmp_path):
    path = tmp_path / "sets.json"
    path.write_text(json.dumps([{"name": "j", "input_shape": [1, 2, 4, 4], "weight_shape": [2, 2, 3, 3],
                                 "output_mask": [True, False, False]}]))
    (case,) = load_cases_file(path, FAMILY_TABLE)
    assert case.id == "conv_backward/cases_file/j"
    assert case.params["output_mask"] == [True, False, False]


def test_names_are_slugged_into_one_id_part(tmp_path):
    path = write(tmp_path, "s.yaml", "- {name: 'a/b c', input_shape: [1, 2, 4, 4], weight_shape: [2, 2, 3, 3]}\n")
    assert load_cases_file(path, FAMILY_TABLE)[0].id == "conv_backward/cases_file/a_b_c"


def test_a_json_report_is_a_cases_file(tmp_path):
    fwd = validate_forward({"input_shape": [1, 2, 4, 4], "weight_shape": [2, 2, 3, 3]})
    bwd = validate_backward({"input_shape": [1, 2, 5, 5], "weight_shape": [2, 2, 3, 3], "stride": 2})
    report = {"schema_version": 1, "results": [
        {"case": "conv_forward/2d/tiny", "backend": "eager", "params": fwd},
        {"case": "conv_forward/2d/tiny", "backend": "other", "params": fwd},  # one case, two backends
        {"case": "conv_backward/2d/tiny_stride2", "backend": "eager", "params": bwd}]}
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    cases = load_cases_file(path, FAMILY_TABLE)
    assert [(c.id, c.family, c.params) for c in cases] == [
        ("conv_forward/cases_file/2d_tiny", "conv_forward", fwd),
        ("conv_backward/cases_file/2d_tiny_stride2", "conv_backward", bwd)]


@pytest.mark.parametrize("text, problem", [
    ("- {input_shape: [1, 3, 4, 4], weight_shape: [2, 1, 3, 3], groups: 2}\n",
     "groups=2 does not divide the 3 input channels"),
    ("- {input_shape: [1, 2, 4, 4], weight_shape: [2, 2, 3, 3], strides: 2}\n",
     "unknown key 'strides'; allowed keys are bias,"),
    ("- {input_shape: [1, 2, 4, 4]}\n", "weight_shape is missing"),
    ("- {family: conv_sideways, input_shape: [1, 2, 4, 4], weight_shape: [2, 2, 3, 3]}\n",
     "unknown family 'conv_sideways'"),
    ("- {input_shape: [1, 2, 4, 4], weight_shape: [2, 2, 3, 3], dtype: int8}\n", "dtype 'int8' is not supported"),
])
def test_bad_entry_names_file_line_and_problem(tmp_path, text, problem):
    path = write(tmp_path, "bad.yaml", "- {input_shape: [1, 2, 4, 4], weight_shape: [2, 2, 3, 3]}\n" + text)
    message = error(path)
    assert message.startswith(f"{path}:2: "), message
    assert problem in message, message


@pytest.mark.parametrize("text, problem", [
    ("[]\n", "a cases file must be a non-empty list of parameter sets"),
    ("input_shape: [1, 2, 4, 4]\n", "a cases file must be a non-empty list of parameter sets"),
    ("- [1, 2]\n", "entry 1: each entry must be a mapping of parameters"),
    ("- {input_shape: [1, 2, 4, 4\n", "malformed YAML"),
])
def test_bad_file(tmp_path, text, problem):
    path = write(tmp_path, "bad.yaml", text)
    assert problem in error(path)


def test_bad_json(tmp_path):
    path = write(tmp_path, "bad.json", '[{"input_shape": [1, 2]')
    assert error(path).startswith(f"{path}: cannot read JSON")


def test_missing_file(tmp_path):
    assert error(tmp_path / "nope.yaml") == f"{tmp_path / 'nope.yaml'}: cannot read: No such file or directory"


@pytest.mark.parametrize("value", ["abc", "-1", "0", "true"])
def test_bad_timeout_in_cases_file(tmp_path, value):
    path = write(tmp_path, "t.yaml", f"- {{input_shape: [1, 2, 4, 4], weight_shape: [2, 2, 3, 3], timeout: {value}}}\n")
    message = error(path)
    assert message.startswith(f"{path}:1: ") and "timeout must be a positive, finite number of seconds" in message


@pytest.mark.parametrize("value", [".nan", ".inf"])
def test_non_finite_timeout_in_cases_file(tmp_path, value):
    path = write(tmp_path, "t.yaml", f"- {{input_shape: [1, 2, 4, 4], weight_shape: [2, 2, 3, 3], timeout: {value}}}\n")
    assert "timeout" in error(path)


def test_tags_must_be_a_list(tmp_path):
    path = write(tmp_path, "t.yaml", "- {input_shape: [1, 2, 4, 4], weight_shape: [2, 2, 3, 3], tags: slow}\n")
    assert "tags" in error(path)


def test_cases_file_cases_get_the_structural_tags(tmp_path):
    path = write(tmp_path, "t.yaml", "- {input_shape: [1, 2, 5, 5], weight_shape: [2, 2, 3, 3], stride: 2, "
                                     "tags: [mine]}\n")
    (case,) = load_cases_file(path, FAMILY_TABLE)
    module_case = conv_backward_case("x", input_shape=[1, 2, 5, 5], weight_shape=[2, 2, 3, 3], stride=2)
    assert {"rank2", "strided", "static"} <= set(module_case.tags)
    assert case.tags == module_case.tags + ("mine", "cases_file")


# ======================================================================================= end to end

def test_cases_files_run_end_to_end(e2e_project):
    e2e_project.write("mine.yaml", """\
        # one parameter set, default family and name
        - input_shape: [1, 2, 6, 6]
          weight_shape: [4, 2, 3, 3]
          padding: 1
        """)
    e2e_project.write("sets.json", json.dumps([{"name": "from_json", "family": "conv_forward",
                                                "input_shape": [2, 4, 5, 5], "weight_shape": [4, 2, 3, 3],
                                                "groups": 2}]))
    result = e2e_project.run("--backend=eager", "--cases-file=mine.yaml", "--cases-file=sets.json", "-v")
    assert result.ret == 0, result.output[-3000:]
    yaml_case = result.record("eager", "conv_backward/cases_file/mine_0")
    json_case = result.record("eager", "conv_forward/cases_file/from_json")
    for record in (yaml_case, json_case):
        assert (record["outcome"], record["verdict"]) == ("passed", "ok")
        assert {"cases_file", "rank2", "static"} <= set(record["tags"])
    assert yaml_case["params"]["padding"] == [1, 1]
    assert json_case["params"]["groups"] == 2
    # Cases-file cases join the case module of their family.
    assert yaml_case["nodeid"] == "cases/tiny.py::conv_backward/cases_file/mine_0[eager]"
    assert "cases/tiny.py::conv_forward/cases_file/from_json[eager] PASSED" in result.stdout
    assert sorted(r["case"] for r in result.results) == sorted(
        TINY_IDS + ["conv_backward/cases_file/mine_0", "conv_forward/cases_file/from_json"])

    # The report just written is a cases file too: its params come back unchanged.
    again = load_cases_file(e2e_project.path / "report.json", FAMILY_TABLE)
    assert sorted(json.dumps(c.params, sort_keys=True) for c in again) == \
        sorted(json.dumps(r["params"], sort_keys=True) for r in result.results)


def test_cases_file_selected_with_k(e2e_project):
    e2e_project.write("mine.yaml", "- {input_shape: [1, 2, 4, 4], weight_shape: [2, 2, 3, 3]}\n")
    result = e2e_project.run("--cases-file=mine.yaml", "-k", "cases_file", "--collect-only", "-q", report=None)
    assert result.ret == 0, result.output
    assert "cases/tiny.py::conv_backward/cases_file/mine_0[eager]" in result.stdout
    assert "1/4 tests collected" in result.stdout


def test_cases_file_family_without_a_case_module_joins_the_first_module(e2e_project):
    e2e_project.write("cases/tiny.py", "from harness.families.conv import conv_backward_case\n"
                      "CASES = [conv_backward_case('only', input_shape=[1, 2, 4, 4], weight_shape=[2, 2, 3, 3])]\n")
    e2e_project.write("fwd.yaml", "- {family: conv_forward, input_shape: [1, 2, 4, 4], weight_shape: [2, 2, 3, 3]}\n")
    result = e2e_project.run("--cases-file=fwd.yaml", "--collect-only", "-q", report=None)
    assert result.ret == 0, result.output
    assert "cases/tiny.py::conv_forward/cases_file/fwd_0[eager]" in result.stdout


def test_a_cases_file_without_any_case_module_is_collected_itself(e2e_project, tmp_path):
    """A reduced program's folder (python -m harness reduce) has a cases file and no case module;
    a cases file outside the paths pytest collects is collected all the same."""
    (e2e_project.path / "cases" / "tiny.py").unlink()
    entry = "- {family: conv_forward, input_shape: [1, 2, 4, 4], weight_shape: [2, 2, 3, 3]}\n"
    e2e_project.write("fwd.yaml", entry)
    (tmp_path / "elsewhere.yaml").write_text(entry.replace("4, 4]", "5, 5]"))
    result = e2e_project.run("--cases-file=fwd.yaml", f"--cases-file={tmp_path / 'elsewhere.yaml'}",
                             "--backend=eager")
    assert result.ret == 0, result.output
    assert {r["case"] for r in result.results} == {"conv_forward/cases_file/fwd_0",
                                                   "conv_forward/cases_file/elsewhere_0"}


def test_duplicate_names_across_cases_files(e2e_project):
    e2e_project.write("a.yaml", "- {name: same, input_shape: [1, 2, 4, 4], weight_shape: [2, 2, 3, 3]}\n")
    e2e_project.write("b.yaml", "- {name: same, input_shape: [1, 2, 5, 5], weight_shape: [2, 2, 3, 3]}\n")
    result = e2e_project.run("--cases-file=a.yaml", "--cases-file=b.yaml", report=None)
    assert result.ret == 4
    assert result.error_lines() == ["ERROR: conv_backward/cases_file/same: two cases share this id; "
                                    "rename one (ids must be unique)"]
