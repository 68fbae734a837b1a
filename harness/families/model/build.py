"""The model family's torch half (worker only): build a transformers model from its config class
with random weights, draw its inputs, and compute the float64 golden.

Order, so that a case reproduces anywhere from its params alone: torch is seeded with the case's
seed, the model is built, then a generator seeded the same way draws every input set in turn.
Nothing is downloaded: workers (and `python -m harness reduce`, which builds in its own process)
run with HF_HUB_OFFLINE=1 (Family.worker_env), and a model built from a config reads no file.
"""
from __future__ import annotations

import difflib
import inspect
import re
from typing import Any

import torch

from harness.backend_interface import Program
from harness.case_data import Case
from harness.draw_tensors import draw_sets
from harness.families.built import EagerGolden, GivenGolden, Golden, RatioGolden
from harness.families.interface import Built
from harness.families.quantized.pt2e import quantized_built
from harness.families.train_step.build import train_step_built
from harness.installation.extras import install_command
from harness.torch_outputs import float64_outputs, output_leaves, output_names


class ModelError(ValueError):
    """A model the params cannot build (an unknown class, a config key it does not take, an input
    its forward does not take): one line that says what to write instead."""


class ModelCase(torch.nn.Module):
    """forward(*inputs) -> the flat output leaves of the model called with the inputs by name."""

    def __init__(self, params: dict):
        super().__init__()
        self.params = params
        self.input_names = list(params["inputs"])
        self.inner = build_model(params)

    def forward(self, *inputs):
        return output_leaves(self.inner(**dict(zip(self.input_names, inputs))))

    def repro_source(self) -> str:
        p = self.params
        spec = {k: p[k] for k in ("transformers", "config", "seed", "dtype", "train", "attn_implementation",
                                  "persistent_buffers", "train_step")}
        spec["calibration"] = calibration_shapes(p)
        quiet = (f"RANDOM_IN_TRAINING = re.compile({RANDOM_IN_TRAINING.pattern!r})\n\n\n"
                 + inspect.getsource(quiet_training))
        return REPRO_MODEL.format(spec=repr(spec), names=repr(self.input_names), quiet=quiet,
                                  calibrate=inspect.getsource(calibrate_batch_norm))


def build_model(params: dict) -> torch.nn.Module:
    """The model its params describe, seeded, random weights, at its dtype and mode."""
    model_class = model_class_named(params["transformers"])
    config = make_config(model_class, params["config"], params["attn_implementation"])
    if params["train_step"]:
        quiet_training(config, params["config"])
    torch.manual_seed(params["seed"])
    model = model_class(config)
    if getattr(config, "use_cache", False):   # its cache objects' tensors become outputs (leaves) too
        from transformers.exporters.exporter_dynamo import register_cache_pytrees_for_model

        register_cache_pytrees_for_model(model)
    if params["persistent_buffers"]:
        make_buffers_persistent(model)
    check_inputs(model, params["inputs"])
    calibrate_batch_norm(model, calibration_shapes(params), params["seed"])
    return model.to(getattr(torch, params["dtype"])).train(params["train"] or params["train_step"])


# Config keys of training-mode randomness: dropout (attention_probs_dropout_prob, attn_pdrop), LayerDrop,
# stochastic depth (drop_path_rate), SpecAugment's masking (mask_time_prob).
RANDOM_IN_TRAINING = re.compile(r"drop|mask_\w*prob")


def quiet_training(config: "Any", given: dict) -> None:   # quoted: a bundle's model.py copies it
    """Every probability of training-mode randomness in the config at 0, unless the case gives it (a
    training step is deterministic: TrainStep checks it)."""
    for key, value in config.to_dict().items():
        if RANDOM_IN_TRAINING.search(key) and key not in given and isinstance(value, float):
            setattr(config, key, 0.0)


def model_class_named(name: str) -> type:
    try:
        import transformers
    except ImportError:
        raise ModelError(f"transformers is not installed ({install_command(['models'])})") from None
    model_class = getattr(transformers, name, None) if not name.startswith("_") else None
    if not (isinstance(model_class, type) and issubclass(model_class, transformers.PreTrainedModel)):
        names = [n for n in dir(transformers) if n.endswith("Model") or "For" in n]
        close = difflib.get_close_matches(name, names, n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise ModelError(f"transformers {transformers.__version__} has no model class {name!r}{hint}")
    return model_class


def make_config(model_class: type[Any], overrides: dict, attention: str | None):
    """The model class's config with `overrides`. A config class keeps any keyword as an attribute,
    read or not, so a key counts as known when the config's defaults or signature have it, or the
    model's own source reads it (DeBERTa's position_buckets); any other is an error, not ignored."""
    config_class = model_class.config_class
    unknown = sorted(set(overrides) - known_config_keys(model_class))
    if unknown:
        known = known_config_keys(model_class)
        close = {k: difflib.get_close_matches(k, known, n=1) for k in unknown}
        hints = "; ".join(f"{k}: did you mean {c[0]}?" for k, c in close.items() if c)
        raise ModelError(f"{config_class.__name__} takes no {', '.join(unknown)}" + (f" ({hints})" if hints else ""))
    extra = {"attn_implementation": attention} if attention else {}
    return config_class(**overrides, **extra)


def known_config_keys(model_class: type[Any]) -> set[str]:
    config_class = model_class.config_class
    module = inspect.getmodule(model_class)
    source = inspect.getsource(module) if module else ""
    return (set(config_class().to_dict()) | set(inspect.signature(config_class.__init__).parameters)
            | set(re.findall(r"\w+", source)))


def calibration_shapes(params: dict) -> dict[str, list[int]]:
    """The floating inputs' shapes batch norm is calibrated on; none without calibrate_batch_norm."""
    if not params["calibrate_batch_norm"]:
        return {}
    return {name: spec["shape"] for name, spec in params["inputs"].items()
            if spec["dtype"] in ("float64", "float32", "float16", "bfloat16")}


def calibrate_batch_norm(model: torch.nn.Module, shapes: dict, seed: int) -> None:
    """Batch norm weights 1 and running statistics those of one seeded normal batch (nothing with no
    shapes): a random model's activations then keep their scale through every layer."""
    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not shapes or not norms:
        return
    generator = torch.Generator().manual_seed(seed)
    batch = {name: torch.randn(shape, generator=generator) for name, shape in shapes.items()}
    momenta = [norm.momentum for norm in norms]
    with torch.no_grad():
        for norm in norms:
            norm.weight.fill_(1.0)
            norm.reset_running_stats()
            norm.momentum = None   # a cumulative average: exactly this batch's statistics
        model.train()(**batch)
    for norm, momentum in zip(norms, momenta):
        norm.momentum = momentum
    model.eval()


def make_buffers_persistent(model: torch.nn.Module) -> None:
    """llvm/torch-mlir#4744's workaround: the FX importer finds no state for a non-persistent buffer."""
    for module in model.modules():
        module._non_persistent_buffers_set.clear()


def check_inputs(model: torch.nn.Module, inputs: dict) -> None:
    """Every input is one of forward's named parameters (its **kwargs, for attention options, would
    swallow a misnamed input silently)."""
    parameters = inspect.signature(model.forward).parameters
    names = [n for n, p in parameters.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    unknown = [name for name in inputs if name not in names]
    if unknown:
        raise ModelError(f"{type(model).__name__}.forward takes no {', '.join(unknown)}; "
                         f"its inputs are {', '.join(names)}")


REPRO_MODEL = '''\
import os
import re

os.environ.setdefault("HF_HUB_OFFLINE", "1")   # built from its config: nothing to download
import transformers
from torch.utils import _pytree as pytree

SPEC = {spec}
INPUT_NAMES = {names}


class Model(torch.nn.Module):
    """forward(*inputs) -> the output leaves of the model SPEC describes, built as the harness builds it."""

    def __init__(self):
        super().__init__()
        model_class = getattr(transformers, SPEC["transformers"])
        extra = {{"attn_implementation": SPEC["attn_implementation"]}} if SPEC["attn_implementation"] else {{}}
        config = model_class.config_class(**SPEC["config"], **extra)
        if SPEC["train_step"]:
            quiet_training(config, SPEC["config"])
        torch.manual_seed(SPEC["seed"])
        self.inner = model_class(config)
        if getattr(config, "use_cache", False):
            from transformers.exporters.exporter_dynamo import register_cache_pytrees_for_model

            register_cache_pytrees_for_model(self.inner)
        if SPEC["persistent_buffers"]:
            for module in self.inner.modules():
                module._non_persistent_buffers_set.clear()
        calibrate_batch_norm(self.inner, SPEC["calibration"], SPEC["seed"])
        self.inner.to(getattr(torch, SPEC["dtype"])).train(SPEC["train"] or SPEC["train_step"])

    def forward(self, *inputs):
        return tuple(pytree.tree_leaves(self.inner(**dict(zip(INPUT_NAMES, inputs)))))


{calibrate}

{quiet}'''


def build(case: Case) -> Built:
    p = case.params
    model = ModelCase(dict(p))
    specs = dict(p["inputs"])
    own_loss = p["train_step"] and takes_labels(model, specs)
    if own_loss and "labels" not in specs:   # the labels of a language model's own loss: drawn like its tokens
        specs["labels"] = specs["input_ids"]
        model.input_names.append("labels")
    more = [shapes + [shapes[list(specs).index("input_ids")]] for shapes in p["input_sets"]] \
        if len(specs) > len(p["inputs"]) else p["input_sets"]
    input_sets = draw_sets(list(specs.values()), more, p["seed"])
    with torch.no_grad():
        nested = [model.inner(**dict(zip(model.input_names, _copies(inputs)))) for inputs in input_sets]
    outputs = [output_leaves(output) for output in nested]
    dims = tuple({d: torch.export.Dim.DYNAMIC for d in spec["dynamic"]} or None for spec in specs.values())
    dynamic = dims if any(dims) else None
    notes: dict[str, Any] = {"parameters": sum(t.numel() for t in model.inner.parameters())}
    if p["train_step"]:
        return train_step_built(case, model, output_names(nested[0]), outputs[0], input_sets, dynamic, own_loss, notes)
    if p["quantize"]:
        return quantized_built(case.id, model, output_names(nested[0]), input_sets, dynamic, notes)
    program = Program(case.id, model, input_sets[0], dynamic, output_names(nested[0]))
    try:
        values = float64_outputs(model, input_sets)
    except Exception as e:  # noqa: BLE001 - any failure: the model cannot run in float64
        notes["golden"] = f"eager at {p['dtype']}: the model does not run in float64 ({type(e).__name__}: {e})"
        values = None
    tolerance = p["tolerance"] and (p["tolerance"]["rtol"], p["tolerance"]["atol"])
    golden: Golden
    if not values:
        golden = EagerGolden()
    elif tolerance:
        golden = GivenGolden(values)
    else:
        golden = RatioGolden(values, p["accuracy"]["multiplier"], p["accuracy"]["floor"])
    return Built(program, input_sets, reference=outputs, golden=golden, tolerance=tolerance or None, notes=notes)


def takes_labels(model: ModelCase, specs: dict) -> bool:
    """Whether the model computes its own loss: its forward takes `labels`, given or drawn like `input_ids`."""
    takes = "labels" in inspect.signature(model.inner.forward).parameters
    return takes and ("labels" in specs or "input_ids" in specs)


def _copies(inputs: tuple) -> tuple:
    return tuple(t.clone() for t in inputs)
