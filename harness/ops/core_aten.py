"""PyTorch's core ATen ops (the operator set every backend of torch.export is asked to support: an
op with an overload tagged `torch.Tag.core`), kept as a file so that `coverage` reads them without
importing torch. `python -m harness.ops.write_core_aten` writes the file from the torch installed;
tests/test_ops.py checks that it is still that torch's list."""
from __future__ import annotations

from pathlib import Path

CORE_ATEN_FILE = Path(__file__).with_name("core_aten_ops.txt")


def core_aten_ops() -> list[str]:
    """The list in the file: `aten.<packet>` names, sorted."""
    lines = CORE_ATEN_FILE.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line and not line.startswith("#")]
