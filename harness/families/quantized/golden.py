"""The golden of an int8 program (worker only): the quantized program itself, run by eager
(`Built.reference`), each output judged in quantization steps. An output's step is its range over
255, the step an 8-bit quantization of it would have: a backend that rounds one activation the
other way (half to even or away from zero, a fused requantization) moves an output by about a
step, so a fixed float tolerance would be either far too tight or blind."""
from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import numpy as np
import torch

from harness.families.built import Built, Golden, GoldenContext

LEVELS = 255        # an 8-bit quantization's steps across an output's range
STEPS = 2.0         # the tolerance, in steps of each output


@dataclasses.dataclass(frozen=True)
class QuantizedGolden(Golden):
    """Eager's run of the quantized program (`Built.reference`), each output (named by `names`,
    the program's output names) within `steps` of its quantization steps; its margin (error over
    that) is noted."""

    names: tuple[str, ...] = ()
    steps: float = STEPS
    kind: ClassVar[str] = "quantized"

    def check(self, built: Built) -> None:
        """`Built.reference` must be given, one entry per input set."""
        self._needs_reference(built)

    def compute(self, built: Built, context: GoldenContext) -> list:
        """`Built.reference`, as given."""
        return list(built.reference or ())

    def judge(self, got: Any, want: Any, index: int, context: GoldenContext) -> str | None:
        got, want = _arrays(got), _arrays(want)
        names = list(self.names) + [f"output{i}" for i in range(len(self.names), len(want))]
        if len(got) != len(want):
            return f"expected {len(want)} outputs ({', '.join(names)}), got {len(got)}"
        problems = []
        for name, g, w in zip(names, got, want):
            problem = self._output(name, g, w, context)
            if problem:
                problems.append(f"{name}: {problem}")
        suffix = f" (input set {index + 1})" if index and problems else ""
        return "\n".join(problems) + suffix if problems else None

    def _output(self, name: str, got: np.ndarray, want: np.ndarray, context: GoldenContext) -> str | None:
        if got.shape != want.shape:
            return f"shape {list(got.shape)} differs from expected {list(want.shape)}"
        if got.dtype != want.dtype:
            return f"dtype {got.dtype} differs from expected {want.dtype}"
        if want.dtype.kind not in "fc" or not want.size:
            bad = got != want
            return f"{int(bad.sum())} of {bad.size} elements differ (compared exactly)" if bad.any() else None
        g, w = got.astype(np.float64), want.astype(np.float64)
        finite = np.isfinite(w)
        step = max(float(np.ptp(w[finite])) / LEVELS if finite.any() else 0.0, np.finfo(np.float64).tiny)
        err = np.where(np.isnan(g) & np.isnan(w), 0.0, np.abs(g - w))
        err = np.nan_to_num(err, nan=np.inf)
        allowed = self.steps * step
        context.note_margin(name, float(err.max() / allowed))
        bad = err > allowed
        if not bad.any():
            return None
        worst = np.unravel_index(int(np.argmax(err)), err.shape)
        return (f"{int(bad.sum())} of {bad.size} elements differ by more than {self.steps:g} quantization steps "
                f"(step {step:.3g}: the output's range / {LEVELS}); max error {float(err.max()):.3g} = "
                f"{float(err.max()) / step:.3g} steps; worst at index {list(map(int, worst))}: got {g[worst]:.6g}, "
                f"want {w[worst]:.6g}")


def _arrays(values: Any) -> list[np.ndarray]:
    if isinstance(values, (torch.Tensor, np.ndarray)):
        values = (values,)
    out = []
    for value in values:
        if isinstance(value, torch.Tensor):
            value = value.detach().cpu()
            value = value.float() if value.dtype == torch.bfloat16 else value
            value = value.numpy()
        out.append(np.asarray(value))
    return out
