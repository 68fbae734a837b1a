"""`python -m harness.ops.write_core_aten`: harness/ops/core_aten_ops.txt from the installed torch
(the only module of harness.ops that imports torch to read it; the coverage matrix reads the file)."""
from __future__ import annotations

from harness.ops.core_aten import CORE_ATEN_FILE


def installed_core_aten_ops() -> tuple[str, list[str]]:
    """torch's version and its core ATen ops, from every registered ATen operator."""
    import torch

    names = set()
    for qualified in torch._C._dispatch_get_all_op_names():
        namespace, _, rest = qualified.partition("::")
        packet, _, overload = rest.partition(".")
        if namespace != "aten":
            continue
        op = getattr(getattr(torch.ops.aten, packet), overload or "default", None)
        if op is not None and torch.Tag.core in op.tags:
            names.add(f"aten.{packet}")
    return torch.__version__, sorted(names)


def main() -> None:
    version, names = installed_core_aten_ops()
    CORE_ATEN_FILE.write_text(f"# PyTorch's core ATen ops (an overload tagged torch.Tag.core), torch {version}.\n"
                              "# Written by python -m harness.ops.write_core_aten; tests/test_ops.py checks it.\n"
                              + "\n".join(names) + "\n", encoding="utf-8")
    print(f"{CORE_ATEN_FILE}: {len(names)} core ATen ops of torch {version}")


if __name__ == "__main__":
    main()
