"""The params of a training step, shared by every family that offers one (pure Python):

    train_step   the case is one training step, not the forward pass                  default false
    optimizer    sgd: the step's outputs end with the updated parameters              default none
    lr           sgd's learning rate                                                  default 0.01

The step's outputs, in order: `loss`, then `grad/<parameter path>` for each parameter the loss
reaches, then (with an optimizer) `param/<parameter path>`, the parameter after the update.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

KEYS = ("train_step", "optimizer", "lr")
OPTIMIZERS = ("sgd",)
DEFAULT_LR = 0.01
BACKWARD_OPS_NOTE = "backward ops"   # a record's note: the backward ops its joint graph keeps whole


def validate(params: Mapping[str, Any]) -> dict:
    """`train_step`, `optimizer` and `lr` complete; ValueError naming the key and the fix."""
    train_step = params.get("train_step", False)
    if not isinstance(train_step, bool):
        raise ValueError(f"train_step must be true or false, not {train_step!r}")
    optimizer = params.get("optimizer")
    if optimizer is not None and optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer {optimizer!r} is not one of {', '.join(OPTIMIZERS)} (or leave it out)")
    lr = params.get("lr", DEFAULT_LR)
    if not (isinstance(lr, (int, float)) and not isinstance(lr, bool) and math.isfinite(lr) and lr > 0):
        raise ValueError(f"lr must be a positive number, not {lr!r}")
    if not train_step and (optimizer is not None or lr != DEFAULT_LR):
        raise ValueError("optimizer and lr apply to a training step only: add train_step: true, or leave them out")
    return {"train_step": train_step, "optimizer": optimizer, "lr": float(lr)}


def is_train_step(params: Mapping[str, Any]) -> bool:
    return bool(params.get("train_step"))


def output_names(parameters: list[str], optimizer: str | None) -> list[str]:
    """The step's output names, for the parameters it trains (their paths in the model)."""
    updates = [f"param/{name}" for name in parameters] if optimizer else []
    return ["loss", *(f"grad/{name}" for name in parameters), *updates]
