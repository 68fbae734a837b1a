"""The xfail_sets.py evaluator: set arithmetic, version conditions and comments, read without running the file."""
from __future__ import annotations

import textwrap

import pytest
from packaging.version import Version

from harness.errors import HarnessInputError
from harness.families.torch_mlir.xfail_sets_import import SetsFile, expectation_text, import_sets

TORCH = Version("2.13.0")


def evaluate(tmp_path, text: str, **imports):
    path = tmp_path / "xfail_sets.py"
    path.write_text(textwrap.dedent(text))
    return SetsFile(path, TORCH, imports).evaluate()


def names(evaluation, name: str) -> list[str]:
    return sorted(evaluation.sets[name])


def test_set_operators_and_their_augmented_forms(tmp_path):
    result = evaluate(tmp_path, """\
        import sys
        print("not run")
        A = {"a", "b", "c"}
        B = A | {"d"} - {"a"}          # - binds tighter: A | {"d"}
        C = (A | {"d"}) - {"a"}
        D = A & {"b", "z"}
        E = A ^ {"c", "e"}
        F = set()
        F |= {"f"}
        F -= {"f", "g"}
        G = set(["g"]) | frozenset({"h"})
        """)
    assert names(result, "B") == ["a", "b", "c", "d"]
    assert names(result, "C") == ["b", "c", "d"]
    assert names(result, "D") == ["b"]
    assert names(result, "E") == ["a", "b", "e"]
    assert names(result, "F") == []
    assert names(result, "G") == ["g", "h"]


def test_version_conditions_are_evaluated_for_the_stated_torch(tmp_path):
    result = evaluate(tmp_path, """\
        from torch_mlir._version import torch_version_for_comparison, version
        S = {"always"}
        if torch_version_for_comparison() < version.parse("2.5.0.dev"):
            S = S | {"old"}
        else:
            S = S | {"new"}
        if not torch_version_for_comparison() >= version.parse("3.0") and (
                torch_version_for_comparison() > version.parse("2.12")):
            S |= {"between"}
        """)
    assert names(result, "S") == ["always", "between", "new"]
    assert result.decisions[0] == ("xfail_sets.py:3: torch_version_for_comparison() < version.parse('2.5.0.dev') is "
                                   "false for torch 2.13.0")


def test_each_name_keeps_the_comment_that_explains_it(tmp_path):
    result = evaluate(tmp_path, """\
        S = {
            # the group's reason
            # over two lines
            "first",
            "second",
            "own",  # its own reason

            "after_blank",
        }
        """)
    reasons = {name: result.sets["S"].first(name).reason() for name in result.sets["S"]}
    assert reasons == {"first": "the group's reason over two lines",
                       "second": "the group's reason over two lines (the comment at xfail_sets.py:2, above)",
                       "own": "its own reason",
                       "after_blank": "listed in S (xfail_sets.py:8) without a comment"}


def test_names_imported_from_the_suite_and_listed_twice(tmp_path):
    common = evaluate(tmp_path, 'COMMON = {"c"}\n').sets["COMMON"]
    result = evaluate(tmp_path, """\
        from torch_mlir_e2e_test.test_suite import COMMON
        S = COMMON | {"c", "d", "d"}
        """, COMMON=common)
    assert names(result, "S") == ["c", "d"]
    assert [o.line for o in result.sets["S"]["c"]] == [1, 2] and [o.line for o in result.sets["S"]["d"]] == [2, 2]


@pytest.mark.parametrize("text, message", [
    ("for name in []:\n    pass\n", "xfail_sets.py:1: cannot evaluate this For statement without running it"),
    ("S = T | {'a'}\n", "xfail_sets.py:1: T is not defined above this line"),
    ("S = {'a', 3}\n", "xfail_sets.py:1: 3 is not a test name (a string)"),
    ("S = sorted({'a'})\n", "xfail_sets.py:1: cannot evaluate \"sorted({'a'})\" as a set of test names"),
    ("if sys.version_info > (3,):\n    S = {'a'}\n",
     "xfail_sets.py:1: sys.version_info is neither torch_version_for_comparison() nor version.parse('X.Y')"),
    ("if S:\n    pass\n", "xfail_sets.py:1: cannot evaluate the condition 'S'"),
    ("S = {'a'\n", "cannot read it as Python"),
    ("from torch_mlir_e2e_test.test_suite import NOPE\n",
     "xfail_sets.py:1: the suite's test_suite/__init__.py defines no set NOPE"),
])
def test_what_cannot_be_evaluated_names_its_line(tmp_path, text, message):
    with pytest.raises(HarnessInputError) as info:
        evaluate(tmp_path, text)
    assert message in str(info.value)


def test_import_splits_live_dead_unimportable_and_overlapping_names(tmp_path):
    path = tmp_path / "xfail_sets.py"
    path.write_text('X = {"Live_basic", "Gone_basic", "Vision_basic", "Both_basic"}\nC = {"Both_basic"}\n')
    manifest = {"tests": [{"name": "Live_basic"}, {"name": "Both_basic"}],
                "failed_modules": [{"module": "vision", "error": "ModuleNotFoundError: No module named 'torchvision'",
                                    "declared": ["Vision_basic"]}]}
    imported = import_sets(path, "X", "C", TORCH, tmp_path, manifest)
    assert list(imported.xfail) == ["Live_basic"] and list(imported.crash) == ["Both_basic"]
    assert list(imported.dead) == ["Gone_basic"] and list(imported.unimportable) == ["Vision_basic"]
    assert imported.overlap == ["Both_basic"]
    assert expectation_text(imported.xfail, ["header"]) == (
        '# header\n- id: torch_mlir/Live_basic\n  reason: "listed in X (xfail_sets.py:1) without a comment"\n')
    with pytest.raises(HarnessInputError, match="defines no set NOPE; use one of C, X"):
        import_sets(path, "NOPE", None, TORCH, tmp_path, manifest)
