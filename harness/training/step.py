"""A training step as a module (worker side): the loss of a family's module, the gradient of every
parameter the loss reaches and, with SGD, the updated parameters; run eagerly by autograd.

`TrainStep` is both the program's module (eager runs it, its float64 copy gives the golden) and
`Program.train_step`: `joint_graph` is what export_program gives a backend (harness.training.joint),
and `step(loss_fn, inputs)` runs the step around another implementation of the loss (a
torch.compile'd one: autograd then runs the backward that compiler made).
"""
from __future__ import annotations

import copy
import inspect
from typing import Any, Callable, Sequence

import torch

from harness.training.params import output_names


class TrainingStepError(ValueError):
    """A training step the module cannot give (a random forward pass, no parameter to train): one line."""


class Loss(torch.nn.Module):
    """forward(*inputs) -> a scalar: output `index` of `module` as it is (`own`: the architecture's
    own loss), else its mean square error against `target`, at float32 or wider.

    A target, not the output's plain mean square: a LayerNorm'd output (every encoder's last hidden
    state) has a mean square that hardly depends on its input, so every gradient before that norm
    would be rounding noise (about 1e-10 on BERT's tiny tier), which no comparison can judge."""

    def __init__(self, module: torch.nn.Module, index: int, own: bool, target_seed: int | None = None):
        super().__init__()
        self.module, self.index, self.own, self.target_seed = module, index, own, target_seed
        self.register_buffer("target", None)   # persistent: torch-mlir's importer maps only those

    def aim(self, output: torch.Tensor) -> None:
        """The target of the mean square error: a seeded normal tensor of the output's shape and dtype."""
        if not self.own:
            self.target = seeded_target(list(output.shape), self.target_seed or 0, output.dtype)

    def forward(self, *inputs):
        output = self.module(*inputs)[self.index]
        wide = output.to(torch.promote_types(output.dtype, torch.float32))
        return wide if self.own else (wide - self.target.to(wide.dtype)).square().mean()


def seeded_target(shape: list[int], seed: int, dtype: torch.dtype) -> torch.Tensor:
    """A normal tensor drawn in float64 from `seed` (the same values at every dtype), cast to `dtype`."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=generator, dtype=torch.float64).to(dtype)


class TrainStep(torch.nn.Module):
    """forward(*inputs) -> (loss, grad of each trained parameter..., [updated parameter...]).

    `prefix` is what the family's wrapping adds to a parameter's path in the user's model
    ("module.inner."): outputs are named by the path in the model. Parameters the loss does not
    reach on `example_inputs` are frozen (`frozen` names them): a joint graph cannot give them a
    gradient (pytorch issue 101192)."""

    def __init__(self, loss: Loss, prefix: str, optimizer: str | None, lr: float, example_inputs: tuple):
        super().__init__()
        self.loss, self.prefix, self.optimizer, self.lr = loss, prefix, optimizer, lr
        self.backward_ops: list[str] | None = None   # the joint graph's, once exported (a record's notes)
        silence_dropout(loss)
        self.frozen, first = freeze_unreached(loss, example_inputs, prefix)
        if not self.trained_names():
            raise TrainingStepError("the loss reaches no parameter: there is nothing to train")
        check_deterministic(loss, example_inputs, first)

    def trained(self) -> list[tuple[str, torch.nn.Parameter]]:
        """(path in the model, parameter) of each parameter the step trains, in the module's order."""
        return [(name.removeprefix(self.prefix), p) for name, p in self.loss.named_parameters() if p.requires_grad]

    def trained_names(self) -> list[str]:
        return [name for name, _ in self.trained()]

    def output_names(self) -> list[str]:
        return output_names(self.trained_names(), self.optimizer)

    def forward(self, *inputs):
        return self.step(self.loss, inputs)

    def step(self, loss_fn: Callable[..., torch.Tensor], inputs: Sequence[Any]) -> tuple:
        """One step with `loss_fn` in place of the loss (the same parameters): autograd differentiates it."""
        parameters = [p for _, p in self.trained()]
        with torch.enable_grad():
            loss = loss_fn(*inputs)
            grads = torch.autograd.grad(loss, parameters)
        updates = [(p - self.lr * g).detach() for p, g in zip(parameters, grads)] if self.optimizer else []
        return (loss.detach(), *grads, *updates)

    def joint_graph(self, example_inputs: tuple, dynamic_shapes: Any, strict: bool = False):
        """The step as one exported program (harness.training.joint); its backward ops kept whole
        become `backward_ops`."""
        from harness.training.joint import backward_ops, joint_graph

        program = joint_graph(self, example_inputs, dynamic_shapes, strict)
        self.backward_ops = backward_ops(program)
        return program

    @property
    def input_names(self) -> list[str]:
        """The forward's inputs, by the family module's names (a bundle's input files)."""
        return list(getattr(self.loss.module, "input_names", ()))

    def repro_source(self) -> str:
        """The step as a standalone class `Model` (a bundle's model.py): the family module's own
        source as `Forward`, then the loss, the gradients and the updates by autograd."""
        family_module: Any = self.loss.module   # the family's, which offers its own source
        forward = family_module.repro_source().replace("class Model(", "class Forward(", 1)
        target = self.loss.target
        spec = {"index": self.loss.index, "own": self.loss.own, "optimizer": self.optimizer, "lr": self.lr,
                "frozen": [self.prefix + name for name in self.frozen],
                "target": None if target is None else (list(target.shape), self.loss.target_seed or 0,
                                                       str(target.dtype).removeprefix("torch."))}
        return REPRO_STEP.format(forward=forward, spec=repr(spec), seeded_target=inspect.getsource(seeded_target))

    def float64(self) -> "TrainStep":
        """A float64 copy (the golden's step), the same parameters frozen."""
        return copy.deepcopy(self).to(torch.float64)


def silence_dropout(module: torch.nn.Module) -> None:
    """Dropout modules at p=0: the step is the training-mode forward pass without its randomness
    (a family turns off what its models do otherwise, such as a config's attention dropout)."""
    for inner in module.modules():
        if isinstance(inner, torch.nn.modules.dropout._DropoutNd):
            inner.p = 0.0


def freeze_unreached(loss: Loss, inputs: tuple, prefix: str) -> tuple[list[str], torch.Tensor]:
    """Freeze the parameters the loss does not depend on: their paths in the model, and the loss."""
    named = [(name, p) for name, p in loss.named_parameters() if p.requires_grad]
    with torch.enable_grad():
        value = loss(*copies(inputs))
        grads = torch.autograd.grad(value, [p for _, p in named], allow_unused=True)
    frozen: list[str] = []
    for (name, parameter), grad in zip(named, grads):
        if grad is None:
            parameter.requires_grad_(False)
            frozen.append(name.removeprefix(prefix))
    return frozen, value.detach()


def check_deterministic(loss: Loss, inputs: tuple, first: torch.Tensor) -> None:
    """A second call of the training-mode forward pass gives the loss `first` did, else
    TrainingStepError: a step whose forward pass draws random numbers (dropout left on, masking)
    has no golden."""
    with torch.no_grad():
        second = loss(*copies(inputs))
    if not torch.allclose(first, second, rtol=0.0, atol=0.0, equal_nan=True):
        raise TrainingStepError(f"the training-mode forward pass is random (two calls gave losses {first.item():.6g} "
                                f"and {second.item():.6g}): turn off its dropout or masking in the case's params")


def copies(inputs: Sequence[Any]) -> tuple:
    """The inputs as new tensors (a module may write into its inputs)."""
    return tuple(t.clone() if isinstance(t, torch.Tensor) else t for t in inputs)


REPRO_STEP = '''\
{forward}

STEP = {spec}


{seeded_target}

class Model(torch.nn.Module):
    """forward(*inputs) -> (loss, gradients..., [updated parameters...]): one training step of
    Forward, by autograd, as the harness runs it (training mode, dropout at 0)."""

    def __init__(self):
        super().__init__()
        self.module = Forward().train()
        for inner in self.module.modules():
            if isinstance(inner, torch.nn.modules.dropout._DropoutNd):
                inner.p = 0.0
        for name, parameter in self.named_parameters():
            parameter.requires_grad_(name not in STEP["frozen"])
        shape, seed, dtype = STEP["target"] or ([], 0, "float32")
        self.register_buffer("target", seeded_target(shape, seed, getattr(torch, dtype)))

    def forward(self, *inputs):
        parameters = [p for p in self.parameters() if p.requires_grad]
        with torch.enable_grad():
            output = self.module(*inputs)[STEP["index"]]
            wide = output.to(torch.promote_types(output.dtype, torch.float32))
            loss = wide if STEP["own"] else (wide - self.target.to(wide.dtype)).square().mean()
            grads = torch.autograd.grad(loss, parameters)
        updates = [(p - STEP["lr"] * g).detach() for p, g in zip(parameters, grads)] if STEP["optimizer"] else []
        return (loss.detach(), *grads, *updates)
'''
