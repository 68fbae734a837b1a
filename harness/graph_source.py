"""A candidate graph as readable Python: model.py, an nn.Module `Model` whose forward is the ops
left, with constants of up to INLINE_ELEMENTS elements written out and larger ones in
constants.pt beside it, and `example_inputs()` reading inputs.pt."""
from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import torch

INLINE_ELEMENTS = 16
CONSTANTS_LINE = 'CONSTANTS = Path(__file__).with_name("constants.pt")'

TEMPLATE = '''\
"""{header}

Written by `{written_by}`. Run it alone: python model.py
"""
from pathlib import Path

import torch
from torch import device  # FX writes a device as device(type='cpu')

inf, nan = float("inf"), float("nan")
{constants_line}

class Model(torch.nn.Module):
{init}{forward}

def example_inputs():
    return tuple(torch.load(Path(__file__).with_name("inputs.pt")))


if __name__ == "__main__":
    for output in Model()(*example_inputs()):
        print(output)
'''


def literal(value: Any) -> Any:
    """A value as a graph's constant: a symbolic size (of an exported program's dynamic dims) as
    the number it stands for in this run, inside lists and tuples too."""
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return value.node.hint
    if isinstance(value, (list, tuple)):
        return type(value)(literal(v) for v in value)
    return value


def write_model(folder: Path, graph: torch.fx.Graph, constants: dict[str, torch.Tensor],
                inputs: list, header: str, written_by: str = "python -m harness reduce") -> None:
    large = {name: value for name, value in constants.items() if value.numel() > INLINE_ELEMENTS}
    if large:
        torch.save(large, folder / "constants.pt")
    init = [f"self.register_buffer({name!r}, {_tensor_source(value)})" for name, value in constants.items()
            if name not in large]
    if large:
        init.append("saved = torch.load(CONSTANTS)")
        init += [f"self.register_buffer({name!r}, saved[{name!r}])" for name in large]
    forward = graph.python_code(root_module="self").src.strip()
    text = TEMPLATE.format(header=header, written_by=written_by, constants_line=CONSTANTS_LINE + "\n" if large else "",
                           init=_init_source(init),
                           forward=textwrap.indent(forward, " " * 4))
    (folder / "model.py").write_text(text, encoding="utf-8")


def _init_source(lines: list[str]) -> str:
    if not lines:
        return ""
    body = textwrap.indent("\n".join(lines), " " * 8)
    return f"    def __init__(self):\n        super().__init__()\n{body}\n\n"


def _tensor_source(value: torch.Tensor) -> str:
    dtype = str(value.dtype)
    if value.is_complex():
        return f"torch.view_as_complex({_tensor_source(torch.view_as_real(value))}).to({dtype})"
    numbers = value.detach().to(torch.float64 if value.is_floating_point() else value.dtype).tolist()
    return f"torch.tensor({numbers!r}, dtype={dtype})"


def standalone_source(model_file: Path) -> str:
    """model.py with its constants read from where it lies (a bundle copies the source elsewhere)."""
    text = Path(model_file).read_text(encoding="utf-8")
    return text.replace(CONSTANTS_LINE, f"CONSTANTS = Path({str(Path(model_file).with_name('constants.pt'))!r})")
