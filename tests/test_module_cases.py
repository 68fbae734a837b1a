"""Module cases: an nn.Module by import path plus its inputs as data (harness.families.module.params).

Unit tests of the params and of the worker-side build, then a bug report written as a --cases-file
entry, run end to end on eager and on a backend that gets one output wrong.
"""
from __future__ import annotations

import math
import subprocess
import sys

import pytest
import torch
from e2e_support import Project

from harness.case_data import Case
from harness.families.module import module_case
from harness.families.module.build import build
from harness.families.module.params import validate

MODELS = '''\
import torch
from torch import nn


class Nested(nn.Module):
    """A tensor, a Python int, and a dict holding a list: every output shape the family promises."""

    def __init__(self, scale: float = 2.0):
        super().__init__()
        self.weight = nn.Parameter(torch.full((3,), scale))

    def forward(self, x, ids):
        return x * self.weight, x.shape[0], {"picked": [x[:, 0] + ids.to(x.dtype), ids.sum()]}


class Float32Only(nn.Module):
    """A forward that fixes its own dtype: no float64 golden is possible."""

    def forward(self, x):
        return x.to(torch.float32) * 3


class Identity(nn.Module):
    def forward(self, *inputs):
        return inputs
'''


def nested_params(**extra):
    return {"module": "models:Nested", "inputs": [{"shape": [2, 3]}, {"shape": [2], "dtype": "int64"}], **extra}


# ------------------------------------------------------------------------------------- params

def test_validate_fills_every_default_and_is_idempotent():
    params = validate(nested_params())
    assert params == {
        "module": "models:Nested", "init": {}, "train": False, "seed": 0,
        "inputs": [{"shape": [2, 3], "dtype": "float32", "values": "uniform", "low": 0.0, "high": 1.0, "dynamic": []},
                   {"shape": [2], "dtype": "int64", "values": "integers", "low": 0, "high": 10, "dynamic": []}],
        "input_sets": [], "tolerance": None, "dtype": "float32", "train_step": False, "optimizer": None, "lr": 0.01,
        "quantize": None}
    assert validate(params) == params


def test_module_case_ids_and_tags():
    case = module_case("nested", "models:Nested", [{"shape": [2, 3], "dynamic": [-2], "nan": 0.5}],
                       input_sets=[[[5, 3]]], tags=["mine"])
    assert case.id == "module/nested" and case.family == "module"
    assert case.tags == ("Nested", "float32", "dynamic", "nonfinite", "mine")
    assert case.params["inputs"][0]["dynamic"] == [0]


@pytest.mark.parametrize("change, message", [
    ({"module": "models.Nested"}, "module must be 'package.module:attr'"),
    ({"colour": 1}, "unknown key 'colour'; allowed keys are dtype, init,"),
    ({"inputs": []}, "inputs must be a non-empty list"),
    ({"inputs": [{"shape": [2, -1]}]}, "inputs[0]: shape must be a list of non-negative ints"),
    ({"inputs": [{"shape": [2], "dtype": "float8"}]}, "inputs[0]: dtype 'float8' is not one of"),
    ({"inputs": [{"shape": [2], "dtype": "int32", "values": "normal"}]},
     "inputs[0]: values 'normal' cannot fill a int32 tensor; use 'integers'"),
    ({"inputs": [{"shape": [2], "values": "normal", "low": 1}]},
     "inputs[0]: low do not apply to values 'normal' (it takes mean, std)"),
    ({"inputs": [{"shape": [2], "low": 1, "high": 1}]}, "inputs[0]: low (1.0) must be below high (1.0)"),
    ({"inputs": [{"shape": [2], "nan": [[2]]}]}, "inputs[0].nan: give a fraction in (0, 1] or a list of indices"),
    ({"inputs": [{"shape": [2], "dtype": "int64", "inf": 0.5}]}, "inputs[0]: inf needs a floating dtype"),
    ({"inputs": [{"shape": [2], "dynamic": [1]}]}, "inputs[0]: dynamic must be a list of dims of its 1-d shape"),
    ({"inputs": [{"shape": [2, 3]}], "input_sets": [[[4, 3]]]},
     "input_sets[0][0]: dim(s) [0] differ from inputs[0].shape [2, 3] but are not dynamic"),
    ({"inputs": [{"shape": [2, 3], "dynamic": [0]}], "input_sets": [[[4]]]},
     "input_sets[0][0]: [4] is not a 2-d shape"),
    ({"inputs": [{"shape": [4], "dynamic": [0], "nan": [[3]]}], "input_sets": [[[2]]]},
     "input_sets[0][0] (nan): give a fraction in (0, 1] or a list of indices within [2]"),
    ({"tolerance": {"rtol": 1e-3}}, "tolerance must be {rtol: R, atol: A}"),
    ({"dtype": "float16"}, "dtype 'float16' is not the first floating input's (float32)"),
    ({"train": "yes"}, "train must be true or false"),
])
def test_bad_params_say_what_to_change(change, message):
    with pytest.raises(ValueError) as info:
        validate({**nested_params(), **change})
    assert message in str(info.value)


# ------------------------------------------------------------------------------------- worker side

@pytest.fixture
def models(tmp_path, monkeypatch):
    (tmp_path / "models.py").write_text(MODELS)
    monkeypatch.syspath_prepend(str(tmp_path))


def make(params) -> Case:
    return Case(id="module/t", family="module", params=validate(params))


def test_build_names_nested_outputs_and_computes_a_float64_golden(models):
    built = build(make(nested_params(init={"scale": 0.5}, seed=3)))
    assert built.program.output_names == ["output0", "output1", "output2.picked.0", "output2.picked.1"]
    assert built.program.module.input_names == ["x", "ids"]
    x, ids = built.input_sets[0]
    assert x.dtype == torch.float32 and ids.dtype == torch.int64 and 0 <= ids.min() and ids.max() < 10
    assert built.golden.kind == "given"
    golden = built.golden.values[0]
    assert golden[0].dtype == torch.float64 and torch.equal(golden[0], x.double() * 0.5)
    assert golden[1] == 2 and built.reference[0][1] == 2   # a Python int output
    assert torch.equal(built.reference[0][0], x * 0.5)


def test_the_seed_decides_the_inputs_and_the_weights(models):
    first, again = build(make(nested_params(seed=7))), build(make(nested_params(seed=7)))
    other = build(make(nested_params(seed=8)))
    assert torch.equal(first.input_sets[0][0], again.input_sets[0][0])
    assert not torch.equal(first.input_sets[0][0], other.input_sets[0][0])


def test_distributions_and_nonfinite_placements(models):
    inputs = [{"shape": [200], "values": "normal", "mean": 5.0, "std": 0.1, "nan": [[0], [7]], "-inf": [[1]]},
              {"shape": [4, 5], "dtype": "float16", "low": -2, "high": -1, "inf": 0.5},
              {"shape": [1000], "dtype": "bool", "p": 0.25}]
    built = build(make({"module": "models:Identity", "inputs": inputs}))
    normal, uniform, flags = built.input_sets[0]
    assert math.isnan(normal[0]) and math.isnan(normal[7]) and normal[1] == float("-inf")
    assert abs(normal[2:].nanmean().item() - 5.0) < 0.05
    assert uniform.dtype == torch.float16 and 0 < int(uniform.isinf().sum()) < 20
    finite = uniform[~uniform.isinf()]
    assert (finite >= -2).all() and (finite <= -1).all()
    assert flags.dtype == torch.bool and 150 < int(flags.sum()) < 350


def test_more_input_sets_take_their_shapes(models):
    params = nested_params(inputs=[{"shape": [2, 3], "dynamic": [0]}, {"shape": [2], "dynamic": [0], "dtype": "int64"}],
                           input_sets=[[[5, 3], [5]]])
    built = build(make(params))
    assert [tuple(t.shape) for t in built.input_sets[1]] == [(5, 3), (5,)]
    assert built.program.dynamic_shapes == ({0: torch.export.Dim.DYNAMIC}, {0: torch.export.Dim.DYNAMIC})


def test_the_module_is_cast_to_the_case_dtype(models):
    built = build(make(nested_params(inputs=[{"shape": [2, 3], "dtype": "float16"}, {"shape": [2], "dtype": "int64"}])))
    assert built.program.module.inner.weight.dtype == torch.float16
    assert built.reference[0][0].dtype == torch.float16


def test_a_module_that_cannot_run_in_float64_falls_back_and_says_so(models):
    built = build(make({"module": "models:Float32Only", "inputs": [{"shape": [2]}]}))
    assert built.golden.kind == "eager" and built.reference is not None
    assert built.notes["golden"].startswith("eager at float32: the module does not run in float64")


def test_a_factory_that_returns_no_module_is_an_error(models, tmp_path):
    (tmp_path / "factories.py").write_text("def not_a_module():\n    return 3\n")
    with pytest.raises(TypeError, match=r"factories:not_a_module\(\*\*init\) returned int 3, not an nn.Module"):
        build(make({"module": "factories:not_a_module", "inputs": [{"shape": [2]}]}))


# ------------------------------------------------------------------------------------- end to end

BUG_REPORT = '''\
# A bug report: this module, these inputs; no new code in the harness.
- family: module
  name: nested_outputs
  module: models:Nested
  init: {scale: 1.5}
  inputs:
    - {shape: [2, 3], values: normal, dynamic: [0], nan: [[1, 2]]}
    - {shape: [2], dtype: int64, low: 0, high: 4, dynamic: [0]}
  input_sets: [[[5, 3], [5]]]
  tolerance: {rtol: 1.0e-5, atol: 1.0e-6}
'''


def test_a_cases_file_bug_report_runs_end_to_end(pytester):
    project = Project(pytester.path, pytester)
    project.write("models.py", MODELS)
    project.write("bug.yaml", BUG_REPORT)
    wrong = project.add_fake("wrong", "wrong_values", phase="run")
    result = project.run("--cases-file=bug.yaml", f"--backend=eager,{wrong}", "-k", "nested_outputs",
                         "--artifacts-dir=art", "--artifacts=all")
    assert result.ret == 1, result.output
    good = result.record("eager", "module/cases_file/nested_outputs")
    assert good["outcome"] == "passed", good
    assert good["params"]["inputs"][0]["nan"] == [[1, 2]] and good["tags"][:3] == ["Nested", "float32", "dynamic"]
    bad = result.record(wrong, "module/cases_file/nested_outputs")
    assert bad["outcome"] == "mismatch" and bad["message"].startswith("output0: "), bad

    # The bundle's repro.py rebuilds the module from its import path, from any directory.
    repro = next((project.path / "art" / "eager").glob("module_cases_file_nested_outputs-*/repro.py"))
    done = subprocess.run([sys.executable, str(repro)], cwd="/", capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("input set")]
    assert len(lines) == 8 and all("0 of" in line for line in lines), done.stdout   # 2 input sets x 4 outputs


def test_a_dataclass_output_is_named_by_paths_even_when_its_leaves_match_its_fields():
    import dataclasses

    from harness.torch_outputs import output_names

    @dataclasses.dataclass
    class Output:   # like transformers' ModelOutput: fields, some None, one holding several tensors
        logits: torch.Tensor
        cache: list

    from torch.utils import _pytree as pytree
    pytree.register_dataclass(Output)
    assert output_names(Output(torch.ones(1), [torch.ones(1)])) == ["logits", "cache.0"]
    assert output_names(torch.max(torch.ones(2, 2), 1)) == ["values", "indices"]   # a structseq: its fields
