"""The model family's pure half: a case is a transformers architecture built from its config class,
with random weights, plus its inputs as data. Read in the pytest process, which imports neither
torch nor transformers; harness.families.model.build builds the model in a worker.

The params, all JSON-able (a registry entry's tier or variant and a `--cases-file` entry with
`family: model` take the same keys):

    transformers        the model class, e.g. BertModel (its config class is the one it declares)
    config              keyword arguments of the config class (the architecture's sizes)     default {}
    inputs              forward()'s keyword arguments, by name, each a tensor input
                        (harness.families.tensor_inputs). Defaults by name: `*input_ids` are int64
                        token ids below config's vocab_size (100 without one), `*attention_mask`
                        all ones, `token_type_ids` zeros, any other input floats of the case's dtype
                        drawn from a normal distribution
    input_sets          more shapes to run on, one list of shapes per set in the order of `inputs`
    seed                seeds the weights and the inputs                                      default 0
    dtype               the model's floating dtype (float32, bfloat16, ...)                   default float32
    train               training mode (batch norm's batch statistics; set dropout to 0)       default false
    attn_implementation transformers' attention: sdpa or eager; none: the model's default     default none
    persistent_buffers  make non-persistent buffers (position_ids, RoPE's inv_freq) persistent
                        before export: the workaround of llvm/torch-mlir#4744                default false
    calibrate_batch_norm  give batch norm the statistics of a seeded normal batch of the floating
                        inputs' shapes (weights 1), so that random weights do not shrink every
                        activation to nothing (MobileNetV2's outputs are 1e-26 without)     default false
    accuracy            {multiplier, floor}: an output passes when its RMS error against the float64
                        model is at most multiplier x eager's own at `dtype`, plus floor x its
                        RMS (PyTorch's dynamo benchmarks' rule)                       default {3.0, by dtype}
    tolerance           {rtol, atol}: the element-wise comparison instead of `accuracy`      default none
    tier                the size tier a registry case is (tiny, small): a tag             default none
    train_step          one training step instead of the forward pass (harness.training.params:
                        with optimizer and lr): in training mode with every dropout and masking
                        probability of the config at 0, the loss the architecture's own where its
                        forward takes labels (drawn like input_ids), else the mean square error of
                        its first floating output against a seeded target; compared by `accuracy`
                        against float64 autograd                                        default false

Outputs are the leaves of the model's output (a ModelOutput, tuples of caches), each compared on
its own and named by its path (`last_hidden_state`, `logits`). Ids read `model/<name>`.
"""
from __future__ import annotations

from typing import Any, Mapping

from harness import quantization
from harness.case_data import check_keys
from harness.families.built import RATIO_FLOORS, RATIO_MULTIPLIER
from harness.families.tensor_inputs import (
    FLOAT_DTYPES,
    flag,
    input_at_dtype,
    input_sets,
    input_spec,
    is_int,
    keyword_mapping,
    seed_of,
    tolerance,
)
from harness.training import params as training

FAMILY = "model"
PARAM_KEYS = ("transformers", "config", "inputs", "input_sets", "seed", "dtype", "train", "attn_implementation",
              "persistent_buffers", "calibrate_batch_norm", "accuracy", "tolerance", "tier", *training.KEYS,
              quantization.KEY)
ATTENTION = ("sdpa", "eager")
TIERS = ("tiny", "small")
UNSEEN_VOCABULARY = 100   # token ids stay below it when the config names no vocab_size


def validate(params: Mapping[str, Any]) -> dict:
    """The complete params (every key present); ValueError naming the key and the fix."""
    check_keys(params, PARAM_KEYS)
    name = params.get("transformers")
    if not (isinstance(name, str) and name.isidentifier()):
        raise ValueError(f"transformers must name a model class such as BertModel, not {name!r}")
    config, seed = keyword_mapping(params, "config", "the config class's keyword arguments"), seed_of(params)
    dtype = params.get("dtype", "float32")
    if dtype not in FLOAT_DTYPES:
        raise ValueError(f"dtype {dtype!r} is not one of {', '.join(FLOAT_DTYPES)}")
    inputs = _inputs(params.get("inputs"), config, dtype)
    attention = params.get("attn_implementation")
    if attention is not None and attention not in ATTENTION:
        raise ValueError(f"attn_implementation {attention!r} is not one of {', '.join(ATTENTION)} (or leave it out)")
    tier = params.get("tier")
    if tier is not None and tier not in TIERS:
        raise ValueError(f"tier {tier!r} is not one of {', '.join(TIERS)}")
    fixed = tolerance(params.get("tolerance"))
    return {
        "transformers": name, "config": config, "inputs": inputs,
        "input_sets": input_sets(params.get("input_sets", []), list(inputs.values())),
        "seed": seed, "dtype": dtype, "train": flag(params, "train"), "attn_implementation": attention,
        "persistent_buffers": flag(params, "persistent_buffers"),
        "calibrate_batch_norm": flag(params, "calibrate_batch_norm"),
        "accuracy": None if fixed else _accuracy(params.get("accuracy"), dtype), "tolerance": fixed, "tier": tier,
        **training.validate(params),
        **quantization.validate(params),
    }


def at_dtype(params: Mapping[str, Any], dtype: str) -> dict:
    """The model at another floating dtype (--dtypes): its floating inputs at the model's dtype take
    it, and an accuracy rule left to its default takes the new dtype's."""
    if params["quantize"]:
        raise ValueError(f"an {params['quantize']} program is quantized from its float32 one")
    own = params["dtype"]
    accuracy = params["accuracy"]
    if accuracy is not None and accuracy == _accuracy(None, own):
        accuracy = None   # the default: validate gives the new dtype's
    inputs = {name: input_at_dtype(spec, own, dtype) for name, spec in params["inputs"].items()}
    return {**params, "inputs": inputs, "dtype": dtype, "accuracy": accuracy}


def _inputs(raw: Any, config: Mapping[str, Any], dtype: str) -> dict[str, dict]:
    if not isinstance(raw, dict) or not raw or not all(isinstance(k, str) and k.isidentifier() for k in raw):
        raise ValueError("inputs must be a non-empty mapping of forward()'s argument names to inputs, "
                         "like {input_ids: {shape: [2, 16]}}")
    return {name: input_spec(f"inputs.{name}", _with_defaults(name, spec, config, dtype)) for name, spec in raw.items()}


def _with_defaults(name: str, spec: Any, config: Mapping[str, Any], dtype: str) -> Any:
    """The input as given, over what its name says about it; a given dtype or distribution drops
    the name's (a float `input_ids` is the user's to describe)."""
    spec = {} if spec is None else spec
    if not isinstance(spec, dict):
        return spec   # input_spec says what it must be
    defaults = _by_name(name, config, dtype)
    if "dtype" in spec or "values" in spec:
        defaults = {"dtype": dtype} if "dtype" not in spec else {}
    return {**defaults, **spec}


def _by_name(name: str, config: Mapping[str, Any], dtype: str) -> dict:
    if name.endswith("input_ids"):
        vocabulary = config.get("vocab_size")
        return {"dtype": "int64", "values": "integers", "low": 0,
                "high": vocabulary if is_int(vocabulary) and vocabulary > 0 else UNSEEN_VOCABULARY}
    if name.endswith("attention_mask"):
        return {"dtype": "int64", "values": "integers", "low": 1, "high": 2}
    if name == "token_type_ids":
        return {"dtype": "int64", "values": "integers", "low": 0, "high": 1}
    return {"dtype": dtype, "values": "normal"}


def _accuracy(raw: Any, dtype: str) -> dict:
    raw = {} if raw is None else raw
    if not isinstance(raw, dict):
        raise ValueError(f"accuracy must be {{multiplier: M, floor: F}}, not {raw!r}")
    check_keys(raw, ("multiplier", "floor"), "accuracy")
    result = {"multiplier": raw.get("multiplier", RATIO_MULTIPLIER), "floor": raw.get("floor", RATIO_FLOORS[dtype])}
    for key, value in result.items():
        if not (isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0):
            raise ValueError(f"accuracy.{key} must be a non-negative number, not {value!r}")
    return {key: float(value) for key, value in result.items()}


def derive_tags(params: Mapping[str, Any]) -> list[str]:
    tags = [FAMILY, params["transformers"], params["dtype"]]
    tags += [params["tier"]] if params["tier"] else []
    if any(spec["dynamic"] for spec in params["inputs"].values()):
        tags.append("dynamic")
    if params["train"]:
        tags.append("train")
    if params["train_step"]:
        tags.append("train_step")
    if params["attn_implementation"]:
        tags.append(f"attention_{params['attn_implementation']}")
    if params["persistent_buffers"]:
        tags.append("workaround")
    return tags + quantization.tags(params)


def subject(params: Mapping[str, Any]) -> str:
    """The architecture: a triage report counts a failure's models by class."""
    return params["transformers"]


def parse_tiers(text: str) -> tuple[str, ...]:
    """--model-tiers: a comma list of tiers."""
    tiers = tuple(dict.fromkeys(t.strip() for t in str(text).split(",") if t.strip()))
    unknown = [t for t in tiers if t not in TIERS]
    if unknown or not tiers:
        raise ValueError(f"{', '.join(unknown) or 'no tier'}: give a comma list of {', '.join(TIERS)}")
    return tiers
