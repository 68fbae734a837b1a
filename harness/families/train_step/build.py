"""A training step as a family's builder makes it (worker side; harness.training has the rest): the
family's module wrapped in a TrainStep, the eager outputs at the case's dtype (the reference, whose
error scales the tolerance) and the float64 ones (the golden), as a Built."""
from __future__ import annotations

from typing import Any, Mapping

import torch

from harness.backend_interface import Program
from harness.case_data import Case
from harness.families.built import RATIO_FLOORS, RATIO_MULTIPLIER, Built, EagerGolden, GivenGolden, Golden, RatioGolden
from harness.training.step import Loss, TrainStep, copies

PREFIX = "module.inner."   # a family module's `inner` (the user's model), inside the Loss's `module`


def train_step_built(case: Case, module: torch.nn.Module, names: list[str], outputs: tuple, input_sets: list[tuple],
                     dynamic_shapes: Any, own_loss: bool, notes: dict[str, Any]) -> Built:
    """The step of `module` (a family's module, its user model at `module.inner`, its outputs
    `names`, their eager values on the first input set `outputs`) on the input sets. `own_loss`: its
    output `loss` is the loss (the architecture's own); else the mean square error of its first
    floating output against a seeded target. The params' `accuracy` (RatioGolden, its floor relative
    to each output's RMS: gradients are often far below 1) or `tolerance` judge it."""
    p = case.params
    index = names.index("loss") if own_loss else first_floating(outputs)
    loss = Loss(module, index, own_loss, target_seed=p["seed"] + 1)   # not the inputs' stream
    loss.aim(outputs[index])
    step = TrainStep(loss, PREFIX, p["optimizer"], p["lr"], input_sets[0])
    reference = [step(*copies(inputs)) for inputs in input_sets]
    program = Program(case.id, step, input_sets[0], dynamic_shapes, step.output_names(), train_step=step)
    notes.update({"trained parameters": len(step.trained_names()),
                  "loss": "the architecture's own `loss`" if own_loss
                  else f"the mean square error of `{names[index]}` against a seeded normal target"})
    if step.frozen:
        notes["frozen"] = f"the loss does not reach {', '.join(step.frozen)}: not trained"
    golden: Golden
    try:
        wide = step.float64()
        values = [wide(*(t.to(torch.float64) if t.is_floating_point() else t.clone() for t in inputs))
                  for inputs in input_sets]
    except Exception as e:  # noqa: BLE001 - any failure: the model cannot run in float64
        notes["golden"] = f"eager at {p['dtype']}: the step does not run in float64 ({type(e).__name__}: {e})"
        golden = EagerGolden()
    else:
        golden = GivenGolden(values) if p.get("tolerance") else RatioGolden(values, *ratio_rule(p), relative=True)
    tolerance = p.get("tolerance") and (p["tolerance"]["rtol"], p["tolerance"]["atol"])
    return Built(program, input_sets, reference=reference, golden=golden, tolerance=tolerance or None, notes=notes)


def ratio_rule(params: Mapping[str, Any]) -> tuple[float, float]:
    """(multiplier, floor): the params' `accuracy`, else RatioGolden's defaults at the case's dtype."""
    accuracy = params.get("accuracy") or {}
    return (accuracy.get("multiplier", RATIO_MULTIPLIER), accuracy.get("floor", RATIO_FLOORS[params["dtype"]]))


def first_floating(outputs: tuple) -> int:
    """The index of the first floating output (the mean square error's)."""
    for index, output in enumerate(outputs):
        if isinstance(output, torch.Tensor) and output.is_floating_point():
            return index
    raise ValueError("the module has no floating output to take a loss of")
