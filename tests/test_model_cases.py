"""The model family: transformers' architectures built from their configs (harness.families.model).

Unit tests of the params and of the registry (pure Python), of the ratio rule, of the worker-side
build on a tiny BERT (transformers needed: the `models` extra), then a model given in a cases file,
run end to end with the network cut.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from e2e_support import DISTILBERT_CASE, NO_NETWORK, Project
from extras import needs

from harness.errors import HarnessInputError
from harness.families.model import MODEL
from harness.families.model.params import parse_tiers, validate
from harness.families.model.registry import merged, registry_cases, registry_ids
from harness.worker.compare import Output, within_ratio

BERT_TINY = {"vocab_size": 64, "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
             "intermediate_size": 32, "max_position_embeddings": 32}


def bert(**extra):
    return {"transformers": "BertModel", "config": dict(BERT_TINY),
            "inputs": {"input_ids": {"shape": [2, 8]}, "attention_mask": {"shape": [2, 8]}}, **extra}


# ------------------------------------------------------------------------------------- params

def test_inputs_take_their_defaults_from_their_names():
    params = validate(bert(inputs={"input_ids": {"shape": [2, 8]}, "attention_mask": {"shape": [2, 8]},
                                   "token_type_ids": {"shape": [2, 8]}, "pixel_values": {"shape": [2, 3]}}))
    ids, mask, types, pixels = params["inputs"].values()
    assert (ids["dtype"], ids["low"], ids["high"]) == ("int64", 0, 64)      # below the config's vocab_size
    assert (mask["low"], mask["high"]) == (1, 2)                            # all ones
    assert (types["low"], types["high"]) == (0, 1)
    assert (pixels["dtype"], pixels["values"]) == ("float32", "normal")
    assert params["accuracy"] == {"multiplier": 3.0, "floor": 1e-5} and params["tolerance"] is None
    assert validate(params) == params


def test_a_given_dtype_or_distribution_replaces_the_name_s_defaults():
    params = validate(bert(dtype="bfloat16", inputs={"input_ids": {"shape": [2], "dtype": "float32"},
                                                     "features": {"shape": [3]}}))
    assert params["inputs"]["input_ids"]["values"] == "uniform"
    assert params["inputs"]["features"]["dtype"] == "bfloat16"


def test_a_fixed_tolerance_replaces_the_ratio_rule():
    params = validate(bert(tolerance={"rtol": 1e-4, "atol": 1e-4}))
    assert params["accuracy"] is None and params["tolerance"] == {"rtol": 1e-4, "atol": 1e-4}


@pytest.mark.parametrize("change, message", [
    ({"transformers": "bert-base"}, "transformers must name a model class"),
    ({"inputs": {}}, "inputs must be a non-empty mapping"),
    ({"inputs": {"input_ids": {"shape": [2], "hight": 3}}}, "hight"),
    ({"attn_implementation": "flash"}, "attn_implementation 'flash' is not one of sdpa, eager"),
    ({"tier": "huge"}, "tier 'huge' is not one of tiny, small"),
    ({"accuracy": {"multiplier": -1}}, "accuracy.multiplier must be a non-negative number"),
    ({"accuracy": {"slack": 1}}, "slack"),
    ({"weights": "bert.bin"}, "weights"),
])
def test_bad_params_say_what_to_change(change, message):
    with pytest.raises(ValueError, match=message):
        validate({**bert(), **change})


def test_model_tiers_option():
    assert parse_tiers("small, tiny,small") == ("small", "tiny")
    with pytest.raises(ValueError, match="huge: give a comma list of tiny, small"):
        parse_tiers("tiny,huge")


# ------------------------------------------------------------------------------------- registry

REGISTRY = """\
timeout: 300
shared:
  - &sizes {hidden_size: 16, num_hidden_layers: 1}
models:
  - name: bert
    transformers: BertModel
    kind: encoder
    inputs: {input_ids: {shape: [2, 8]}}
    config: {num_attention_heads: 2}
    tiers: {tiny: {config: *sizes}, small: {config: {<<: *sizes, hidden_size: 64}}}
    variants:
      fixed: {persistent_buffers: true, tags: [workaround]}
      half: {dtype: bfloat16, tiers: [tiny]}
"""


def test_a_registry_entry_becomes_a_case_per_tier_and_variant(tmp_path):
    path = tmp_path / "models.yaml"
    path.write_text(REGISTRY)
    tiny = registry_cases(MODEL, path, ["tiny"])
    assert [c.id for c in tiny] == ["model/bert/tiny", "model/bert/tiny/fixed", "model/bert/tiny/half"]
    assert tiny[0].params["config"] == {"num_attention_heads": 2, "hidden_size": 16, "num_hidden_layers": 1}
    assert tiny[0].tags[:4] == ("model", "BertModel", "float32", "tiny") and "encoder" in tiny[0].tags
    assert {"fixed", "workaround"} <= set(tiny[1].tags) and tiny[1].params["persistent_buffers"]
    assert tiny[2].params["dtype"] == "bfloat16"
    assert {c.timeout for c in tiny} == {300}   # the registry's, as each case's
    small = registry_cases(MODEL, path, ["small"])
    assert [c.params["config"]["hidden_size"] for c in small] == [64, 64]   # the variant `half` is tiny's only
    assert registry_ids(MODEL, path) == [c.id for c in tiny + small]


@pytest.mark.parametrize("entry, message", [
    ("tiers: {huge: {}}", "tiers must map some of tiny, small"),
    ("tiers: {tiny: {}}\n    weights: x", "weights"),
    ("tiers: {tiny: {attn_implementation: flash}}", "model/bert/tiny: attn_implementation 'flash'"),
    ("tiers: {tiny: {}}\n    timeout: soon", "timeout must be a positive number of seconds, not 'soon'"),
])
def test_a_bad_registry_entry_is_one_line_naming_its_line(tmp_path, entry, message):
    path = tmp_path / "models.yaml"
    path.write_text(f"models:\n  - name: bert\n    transformers: BertModel\n"
                    f"    inputs: {{input_ids: {{shape: [2]}}}}\n    {entry}\n")
    with pytest.raises(HarnessInputError, match=message) as error:
        registry_cases(MODEL, path, ["tiny"])
    assert error.value.where.endswith("models.yaml:2")


def test_patches_merge_mappings_and_replace_the_rest():
    assert merged({"config": {"a": 1, "b": {"c": 2}}, "seed": 0}, {"config": {"b": {"d": 3}}, "seed": 1}) == \
        {"config": {"a": 1, "b": {"c": 2, "d": 3}}, "seed": 1}


def test_the_built_in_registry_covers_twenty_architectures_in_both_tiers():
    from pathlib import Path

    cases = registry_cases(MODEL, Path(__file__).parents[1] / "cases/models/transformers.yaml", ["tiny", "small"])
    architectures = {c.params["transformers"] for c in cases}
    assert len(architectures) >= 20, architectures
    kinds = {tag for c in cases for tag in c.tags} & {"encoder", "decoder", "encoder_decoder", "vision", "audio"}
    assert len(kinds) == 5
    for tier in ("tiny", "small"):
        assert {c.params["transformers"] for c in cases if c.params["tier"] == tier} == architectures


# ------------------------------------------------------------------------------------- the ratio rule

def _output(values):
    return Output("logits", np.asarray(values, dtype=np.float64), "float32")


def test_the_ratio_rule_measures_a_backend_against_eager_s_own_error():
    golden = _output([1.0, 2.0, 3.0, 4.0])
    eager = _output([1.0 + 1e-3, 2.0, 3.0, 4.0])                      # RMS error 5e-4
    assert within_ratio(_output([1.0, 2.0 + 1e-3, 3.0, 4.0]), golden, eager, 3.0, 0.0) is None
    problem = within_ratio(_output([1.0, 2.0 + 1e-2, 3.0, 4.0]), golden, eager, 3.0, 0.0)
    assert problem == ("RMS error 0.005 against the float64 model (10x eager's 0.0005) exceeds "
                       "3 x eager's + 0 x max(1, rms 2.74) = 0.0015")
    # eager exact: the floor (relative to the output's RMS) is what a backend may add
    assert within_ratio(_output([1.0, 2.0 + 1e-5, 3.0, 4.0]), golden, golden, 3.0, 1e-5) is None
    assert "NaN" in within_ratio(_output([np.nan, 2, 3, 4]), golden, eager, 3.0, 1e-5)


# ------------------------------------------------------------------------------------- the worker side

@needs("models")
def test_build_names_the_model_s_outputs_and_judges_by_the_ratio_rule():
    from harness.families.model.build import build

    built = build(MODEL.case("bert", bert()))
    assert list(built.program.output_names) == ["last_hidden_state", "pooler_output"]
    assert built.golden.kind == "ratio" and built.golden.rule == (3.0, 1e-5, False)
    assert built.golden.values[0][0].dtype.is_floating_point and str(built.golden.values[0][0].dtype) == "torch.float64"
    assert built.notes["parameters"] > 0
    again = build(MODEL.case("bert", bert()))
    assert (again.input_sets[0][0] == built.input_sets[0][0]).all()   # the seed decides inputs and weights
    assert (again.reference[0][0] == built.reference[0][0]).all()


@needs("models")
@pytest.mark.parametrize("change, message", [
    ({"transformers": "BertModle"}, "has no model class 'BertModle' .did you mean BertModel"),
    ({"config": {**BERT_TINY, "hiden_size": 8}},
     "BertConfig takes no hiden_size .hiden_size: did you mean hidden_size"),
    ({"inputs": {"input_ids": {"shape": [2, 8]}, "pixel_values": {"shape": [2, 3]}}},
     "BertModel.forward takes no pixel_values; its inputs are input_ids, attention_mask, token_type_ids"),
])
def test_what_cannot_be_built_is_one_line(change, message):
    from harness.families.model.build import ModelError, build

    with pytest.raises(ModelError, match=message):
        build(MODEL.case("bert", {**bert(), **change}))


@needs("models")
def test_the_workaround_makes_non_persistent_buffers_persistent():
    from harness.families.model.build import build_model

    plain = build_model(validate(bert()))
    fixed = build_model(validate(bert(persistent_buffers=True)))
    assert "embeddings.position_ids" not in plain.state_dict()
    assert "embeddings.position_ids" in fixed.state_dict()


@needs("models")
def test_a_cases_file_model_runs_offline_with_the_network_cut(pytester, tmp_path, monkeypatch):
    project = Project(pytester.path, pytester)
    project.write("models.yaml", DISTILBERT_CASE)
    project.write("nonet/sitecustomize.py", NO_NETWORK)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(project.path / "nonet"),
                                                                          os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty-hf-home"))
    result = project.run("--cases-file=models.yaml", "--backend=eager", "-k", "distilbert", "--artifacts-dir=art",
                         "--artifacts=all")
    assert result.ret == 0, result.output
    record = result.record("eager", "model/cases_file/distilbert_tiny")
    assert record["outcome"] == "passed" and record["subject"] == "DistilBertModel"
    assert set(record["notes"]["accuracy"]["last_hidden_state"]) == {"error", "eager_error", "ratio"}
    check = subprocess.run([sys.executable, "-c", textwrap.dedent("""\
        import socket
        try:
            socket.create_connection(("huggingface.co", 443), timeout=5)
        except OSError as e:
            print(e)
        """)], capture_output=True, text=True, env={"PYTHONPATH": str(project.path / "nonet")})
    assert "the network is cut" in check.stdout   # the cut is real in a child interpreter

    # The bundle's repro.py rebuilds the model from its config and seed, not from a pickle.
    repro = next((project.path / "art" / "eager").glob("model_cases_file_distilbert_tiny-*/repro.py"))
    assert "DistilBertModel" in (repro.parent / "model.py").read_text()
    done = subprocess.run([sys.executable, str(repro)], cwd="/", capture_output=True, text=True, timeout=240,
                          env={**os.environ, "HF_HOME": str(tmp_path / "empty-hf-home")})
    assert done.returncode == 0, done.stderr
    assert "input set 0: last_hidden_state: max abs error" in done.stdout, done.stdout


@needs("models")
def test_calibrated_batch_norm_keeps_a_random_cnn_s_outputs_from_vanishing():
    from harness.families.model.build import build

    params = {"transformers": "MobileNetV2Model",
              "config": {"depth_multiplier": 0.25, "min_depth": 8, "image_size": 32},
              "inputs": {"pixel_values": {"shape": [2, 3, 32, 32]}}}
    plain = build(MODEL.case("mobilenet", params)).reference[0][0]
    calibrated = build(MODEL.case("mobilenet", {**params, "calibrate_batch_norm": True}))
    assert plain.abs().mean() < 1e-10 < 0.1 < calibrated.reference[0][0].abs().mean()
    assert "calibrate_batch_norm" in calibrated.program.module.repro_source()


VIT_BFLOAT16 = """\
- family: model
  name: vit_bf16
  transformers: ViTModel
  dtype: bfloat16
  config: {image_size: 16, patch_size: 8, hidden_size: 16, num_hidden_layers: 1, num_attention_heads: 2,
           intermediate_size: 32}
  inputs: {pixel_values: {shape: [1, 3, 16, 16]}}
"""


@needs("models")
@pytest.mark.e2e
def test_a_failing_model_reduces_to_a_few_ops(tmp_path):
    """A real failure (linalg-on-tensors' JIT takes no bfloat16 argument, measured in xfail/), cut
    from the whole ViT down to a program of a few ops."""
    pytest.importorskip("torch_mlir")
    (tmp_path / "cases.yaml").write_text(VIT_BFLOAT16)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    run = subprocess.run([sys.executable, "-m", "harness", "reduce", "model/cases_file/vit_bf16",
                          "--backend=linalg-on-tensors", "--cases-file=cases.yaml", "--out=out", "-n", "1"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads((tmp_path / "out" / "reduce.json").read_text())
    assert "bf16" in result["signature"] and result["phase"] == "compile", result
    assert result["original_ops"] > 30 >= 3 >= result["reduced_ops"], result


BIG_BERT = """\
- family: model
  name: big_bert
  transformers: BertModel
  config: {hidden_size: 1024, num_hidden_layers: 8, num_attention_heads: 16, intermediate_size: 4096,
           vocab_size: 30000}
  inputs: {input_ids: {shape: [1, 8]}}
"""


@needs("models")
def test_a_model_too_big_for_the_memory_limit_costs_that_case_alone(pytester):
    project = Project(pytester.path, pytester)
    project.write("models.yaml", BIG_BERT + DISTILBERT_CASE)
    result = project.run("--cases-file=models.yaml", "--backend=eager", "--memory-limit=900", "-k", "cases_file")
    assert result.ret == 1, result.output
    big = result.record("eager", "model/cases_file/big_bert")
    assert big["outcome"] == "crashed" and big["phase"] == "setup", big
    assert big["message"].startswith("worker killed by the harness: memory limit of 900 MiB exceeded"), big
    assert result.record("eager", "model/cases_file/distilbert_tiny")["outcome"] == "passed"


def test_without_transformers_a_model_case_is_one_line_naming_the_extra(monkeypatch):
    pytest.importorskip("torch")
    from harness.families.model.build import ModelError, model_class_named

    monkeypatch.setitem(sys.modules, "transformers", None)   # import transformers raises ImportError
    with pytest.raises(ModelError, match=r"^transformers is not installed \(pip install .*\[models\]"):
        model_class_named("BertModel")


def test_without_transformers_the_registry_is_not_collected_and_says_why(monkeypatch):
    import harness.families.model as family

    monkeypatch.setattr(family, "transformers_installed", lambda: False)
    found = family.discover({})
    assert found.cases == {} and "model" in found.missing
    assert found.notices == [f"model: the registry's models are not collected: {family.not_installed()}"]
    assert "[models]" in family.not_installed()


@needs("models")
def test_a_decoder_s_cache_is_compared_leaf_by_leaf():
    from harness.families.model.build import build

    params = {"transformers": "LlamaForCausalLM", "inputs": {"input_ids": {"shape": [2, 8]}},
              "config": {"vocab_size": 64, "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2,
                         "num_attention_heads": 2, "num_key_value_heads": 1, "use_cache": True}}
    built = build(MODEL.case("llama", params))
    assert list(built.program.output_names) == ["logits", "cache.0", "cache.1", "cache.2", "cache.3"]
    assert len(built.golden.values[0]) == 5 and len(built.reference[0]) == 5
