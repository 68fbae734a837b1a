"""--dtypes: every case at each floating dtype named, for the families that can honour it
(harness.precision.axis)."""
from __future__ import annotations

import dataclasses

import pytest

from harness.case_data import Case, parse_dtypes
from harness.families.conv import CONV_BACKWARD, conv_backward_case
from harness.families.model import MODEL
from harness.families.module import MODULE, module_case
from harness.families.onnx import ONNX_NODE
from harness.precision.axis import at_dtypes, variant_ids

FAMILIES = {f.name: f for f in (CONV_BACKWARD, MODULE, MODEL, ONNX_NODE)}
BLOCKS = "cases.models.blocks"


def conv(name="basic", **params):
    return conv_backward_case(name, input_shape=[1, 2, 6], weight_shape=[2, 2, 3], tags=["edge"], **params)


def test_without_dtypes_every_case_is_as_written():
    cases = [conv(), conv("half", dtype="float16")]
    assert at_dtypes(cases, FAMILIES, ()) == (cases, {})


def test_a_case_at_its_own_dtype_keeps_its_id_and_at_another_gets_a_suffix():
    cases, notices = at_dtypes([conv(), conv("half", dtype="float16")], FAMILIES, ("float16", "bfloat16"))
    assert notices == {}
    assert [c.id for c in cases] == ["conv_backward/1d/basic/float16", "conv_backward/1d/basic/bfloat16",
                                     "conv_backward/1d/half", "conv_backward/1d/half/bfloat16"]
    half = cases[0]
    assert half.params["dtype"] == "float16" and half.params["input_shape"] == [1, 2, 6]
    assert "float16" in half.tags and "edge" in half.tags   # derived for the new dtype, and the written tag
    assert "float16" not in cases[1].tags


def test_a_written_case_wins_over_a_variant_with_its_id():
    written = conv("basic/float16", dtype="float16", stride=2)
    cases, _ = at_dtypes([conv(), written], FAMILIES, ("float16",))
    assert [c.id for c in cases] == ["conv_backward/1d/basic/float16"] and cases[0] is written


def test_module_cases_put_their_floating_inputs_at_the_dtype_and_keep_the_others():
    case = module_case("mixed", f"{BLOCKS}:EmbeddingMean", [{"shape": [3], "dtype": "int64", "high": 5},
                                                           {"shape": [3], "values": "normal"},
                                                           {"shape": [3], "dtype": "float64"}])
    (at_bf16,), _ = at_dtypes([case], FAMILIES, ("bfloat16",))
    assert [i["dtype"] for i in at_bf16.params["inputs"]] == ["int64", "bfloat16", "float64"]
    assert at_bf16.params["dtype"] == "bfloat16"


def test_a_module_without_floating_inputs_runs_at_the_dtype_of_its_parameters():
    case = module_case("ids", f"{BLOCKS}:EmbeddingMean", [{"shape": [3, 6], "dtype": "int64", "high": 50}])
    (at_f16,), _ = at_dtypes([case], FAMILIES, ("float16",))
    assert at_f16.id == "module/ids/float16" and at_f16.params["dtype"] == "float16"


def test_a_model_at_another_dtype_takes_that_dtypes_default_accuracy_but_keeps_a_given_one():
    params = {"transformers": "BertModel", "config": {"hidden_size": 8},
              "inputs": {"input_ids": {"shape": [1, 4]}, "inputs_embeds": {"shape": [1, 4, 8]}}}
    default = MODEL.case("bert", params)
    given = MODEL.case("bert_given", {**params, "accuracy": {"multiplier": 4.0, "floor": 1e-4}})
    (a, b), _ = at_dtypes([default, given], FAMILIES, ("bfloat16",))
    assert a.params["accuracy"] == {"multiplier": 3.0, "floor": 1e-2}
    assert b.params["accuracy"] == {"multiplier": 4.0, "floor": 1e-4}
    assert a.params["inputs"]["input_ids"]["dtype"] == "int64"
    assert a.params["inputs"]["inputs_embeds"]["dtype"] == "bfloat16"


def test_a_family_without_the_axis_keeps_its_cases_and_says_so_once():
    node = Case("onnx_node/test_relu", "onnx_node", {"dtype": "float32"})
    cases, notices = at_dtypes([node, node], FAMILIES, ("float16",))
    assert cases == [node, node]
    assert notices == {"onnx_node": ["--dtypes: the onnx_node cases run at their own dtypes (the family has no "
                                     "dtype axis)"]}


def test_a_case_the_family_cannot_put_at_a_dtype_is_a_notice_naming_it():
    def refuse(params, dtype):
        raise ValueError(f"no {dtype} kernel")

    refusing = dataclasses.replace(CONV_BACKWARD, at_dtype=refuse)
    cases, notices = at_dtypes([conv(), conv("two")], {"conv_backward": refusing}, ("float32", "float16"))
    assert [c.id for c in cases] == ["conv_backward/1d/basic", "conv_backward/1d/two"]
    assert notices == {"conv_backward": ["--dtypes: 2 conv_backward cases cannot run at float16: "
                                         "conv_backward/1d/basic (no float16 kernel); "
                                         "conv_backward/1d/two (no float16 kernel)"]}


def test_every_variant_id_is_known_to_the_expectation_files():
    ids = variant_ids([conv(), conv("half", dtype="float16")], FAMILIES)
    assert "conv_backward/1d/basic/bfloat16" in ids and "conv_backward/1d/half/float32" in ids
    assert "conv_backward/1d/basic/float32" not in ids   # its own: the id as written


def test_the_option_takes_comma_lists_in_a_fixed_order_and_refuses_an_unknown_dtype():
    assert parse_dtypes(["bfloat16,float16", "float16"]) == ("float16", "bfloat16")
    with pytest.raises(ValueError, match="^int8 is not a floating dtype: use some of float32, float64, float16, "
                                         "bfloat16$"):
        parse_dtypes(["float16,int8"])


def test_the_tools_find_a_variant_the_run_did_not_name():
    """`reduce`, `isolate` and `bisect` take a variant's id without --dtypes: it is made as --dtypes
    makes it (harness.project.Project.find_case)."""
    import argparse
    from pathlib import Path

    from harness.errors import HarnessInputError
    from harness.project import Project, settings_from_args

    project = Project(settings_from_args(argparse.Namespace(), Path(__file__).resolve().parents[1]))
    case = project.find_case("conv_backward/2d/basic/float16")
    assert (case.id, case.params["dtype"]) == ("conv_backward/2d/basic/float16", "float16")
    with pytest.raises(HarnessInputError, match="did you mean conv_backward/2d/basic"):
        project.find_case("conv_backward/2d/basic/int4")
