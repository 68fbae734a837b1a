"""A kind of golden is one subclass of harness.api.Golden: a project's own kind runs end to end with
nothing else to register, and what a kind needs of the Built is said, in one line, when the Built
is made (harness/families/built.py)."""
from __future__ import annotations

import pytest
import torch

from harness.api import (
    Built,
    EagerGolden,
    FamilyGolden,
    Float64Golden,
    GivenGolden,
    Golden,
    OnnxProgram,
    Program,
    RatioGolden,
)

# A family whose outputs come in no particular order, with its own kind of golden: numpy's sorted
# values, and the backend's outputs sorted before the harness's own rule judges them.
UNORDERED_FAMILY = '''\
from harness.api import Family


def validate(params):
    return {"size": int(params.get("size", 6)), "dtype": "float32"}


FAMILY = Family("unordered", validate, builder="unordered_torch:build")
'''
UNORDERED_TORCH = '''\
import numpy as np
import torch

from harness.api import Built, Golden, Program


class SortedNumpyGolden(Golden):
    """Twice the input's values, sorted, from numpy in float64; outputs compared in sorted order."""

    kind = "sorted_numpy"

    def compute(self, built, context):
        return [(torch.from_numpy(np.sort(2 * inputs[0].double().numpy())),) for inputs in built.input_sets]

    def judge(self, got, want, index, context):
        return context.compare((torch.sort(got[0]).values,), want, index)


class Doubled(torch.nn.Module):
    def forward(self, x):
        return (torch.flip(x, [0]) * 2,)   # the order is the module's business, not the golden's

    def repro_source(self):
        return "class Model(torch.nn.Module):\\n    def forward(self, x):\\n        return (torch.flip(x, [0]) * 2,)\\n"


def build(case):
    x = torch.randn(case.params["size"], generator=torch.Generator().manual_seed(0))
    return Built(Program(case.id, Doubled(), (x,), None, ["output"]), [(x,)], golden=SortedNumpyGolden())
'''
UNORDERED_CASES = '''\
from families.unordered import FAMILY

CASES = [FAMILY.case("six", {"size": 6})]
'''


def test_a_projects_own_kind_of_golden_is_one_class_and_catches_a_wrong_result(e2e_project):
    e2e_project.write("pytest.ini", "[pytest]\ntestpaths = cases\ne2e_backends = eager\n"
                      "e2e_families = families/unordered.py:FAMILY\n")
    e2e_project.write("families/unordered.py", UNORDERED_FAMILY)
    e2e_project.write("unordered_torch.py", UNORDERED_TORCH)
    e2e_project.write("cases/unordered.py", UNORDERED_CASES)
    wrong = e2e_project.add_fake("wrong", "wrong_values", phase="run")
    result = e2e_project.run(f"--backend=eager,{wrong}")
    assert result.ret == 1, result.output
    assert result.record("eager", "unordered/six")["outcome"] == "passed"
    failed = result.record(wrong, "unordered/six")
    assert failed["outcome"] == "mismatch", failed
    assert failed["message"].startswith("output: 6 of 6 elements differ beyond tolerance"), failed["message"]


def _program() -> Program:
    x = torch.ones(3)
    return Program("t", torch.nn.Identity(), (x,), None, ["output"])


@pytest.mark.parametrize("golden", [EagerGolden(), RatioGolden([(torch.ones(3, dtype=torch.float64),)], 3.0, 1e-5)])
def test_a_kind_that_compares_with_eager_says_so_when_the_built_has_no_reference(golden):
    with pytest.raises(ValueError, match=rf"^{golden.kind} golden: compares with eager's outputs .* "
                                         r"Built.reference is None: give them as Built\(reference=...\)$"):
        Built(_program(), [(torch.ones(3),)], golden=golden)
    Built(_program(), [(torch.ones(3),)], reference=[(torch.ones(3),)], golden=golden)   # given: fine


def test_a_given_golden_has_one_entry_per_input_set():
    with pytest.raises(ValueError, match="^given golden: 1 input sets' values for 2 input sets"):
        Built(_program(), [(torch.ones(3),), (torch.zeros(3),)], golden=GivenGolden([(torch.ones(3),)]))


def test_an_onnx_program_has_no_module_to_run_in_float64():
    onnx = OnnxProgram("t", None, None, ["x"], ["y"])
    with pytest.raises(ValueError, match="^float64 golden: runs the program's PyTorch module, and an OnnxProgram"):
        Built(onnx, [()])
    Built(onnx, [()], golden=FamilyGolden([()], lambda got, want: None))
    assert isinstance(Built(_program(), [(torch.ones(3),)]).golden, Float64Golden)   # the default


def test_a_kind_without_its_values_is_refused_when_it_is_made():
    class Incomplete(Golden):
        kind = "incomplete"

    with pytest.raises(TypeError, match="compute"):
        Incomplete()
