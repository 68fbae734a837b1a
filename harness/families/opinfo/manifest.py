"""Worker-side half of the OpInfo manifest: PyTorch's op_db, its samples, their fingerprints.

`python -m harness.families.opinfo.manifest DIR KEY DTYPE...` writes DIR/KEY-DTYPE.json for each
dtype: every op's properties and the fingerprint of each sample, which the pytest process
(harness.families.opinfo.params) collects from without importing torch. Sample k is taken alone
with `itertools.islice` (op_db reseeds before each sample, so it is the same values in every
process run with PYTHONHASHSEED=0), made with requires_grad for an op that supports autograd, as
PyTorch's gradient tests make it.
"""
from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
import sys
from pathlib import Path
from typing import Any

import torch
from torch.utils import _pytree as pytree

from harness import case_data
from harness.families.opinfo import params as opinfo_params

DTYPES = {name: getattr(torch, name) for name in case_data.DTYPES}
SIZE_CAP = opinfo_params.SIZE_CAP


@functools.cache
def op_table() -> dict[tuple[str, str], Any]:
    from torch.testing._internal.common_methods_invocations import op_db  # needs `expecttest`

    return {(op.name, op.variant_test_name or ""): op for op in op_db}


def cpu_dtypes(op) -> list[str]:
    return sorted(str(d).removeprefix("torch.") for d in op.supported_dtypes("cpu"))


def samples(op, dtype: str, start: int = 0, stop: int | None = None, requires_grad: bool = False):
    return itertools.islice(op.sample_inputs("cpu", DTYPES[dtype], requires_grad=requires_grad), start, stop)


def leaves_of(sample) -> tuple[list, Any]:
    return pytree.tree_flatten((sample.input, list(sample.args), dict(sample.kwargs)))


def fingerprint(sample) -> str:
    """Shapes, dtypes and strides of the sample's tensors, its other arguments, and a hash of it all."""
    leaves, _ = leaves_of(sample)
    digest, parts = hashlib.sha256(), []
    for leaf in leaves:
        if isinstance(leaf, torch.Tensor):
            text = f"{str(leaf.dtype).removeprefix('torch.')}{list(leaf.shape)}"
            if leaf.layout == torch.strided and not leaf.is_contiguous():
                text += f"s{list(leaf.stride())}"
            digest.update(text.encode())
            if leaf.layout == torch.strided:
                flat = leaf.detach().resolve_conj().resolve_neg().contiguous().reshape(-1)
                digest.update(flat.view(torch.uint8).numpy().tobytes())
        else:
            text = _constant_text(leaf)
            digest.update(text.encode())
        parts.append(text)
    summary = ", ".join(parts)
    if len(summary) > 120:
        summary = summary[:116] + " ..."
    return f"{summary} #{digest.hexdigest()[:12]}"


def _constant_text(value: Any) -> str:
    text = repr(value)
    return type(value).__name__ if " at 0x" in text else text


def exclusion(sample) -> str | None:
    """The rule that keeps a sample out of the cases (harness.families.opinfo.params.RULES), if any."""
    tensors = [leaf for leaf in leaves_of(sample)[0] if isinstance(leaf, torch.Tensor)]
    if any(t.layout != torch.strided for t in tensors):
        return "sparse"
    if sum(t.numel() for t in tensors) > SIZE_CAP:
        return "size"
    return None


def is_random(op, sample) -> bool:
    """Whether running the sample dispatches an aten op tagged nondeterministic_seeded."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Tags(TorchDispatchMode):
        seen = False

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            Tags.seen = Tags.seen or torch.Tag.nondeterministic_seeded in getattr(func, "tags", ())
            return func(*args, **(kwargs or {}))

    try:
        with Tags(), torch.no_grad():
            op.op(sample.input, *sample.args, **sample.kwargs)
    except Exception:  # noqa: BLE001 - an op that raises on its own sample is judged when the case runs
        pass
    return Tags.seen


# ------------------------------------------------------------------------------------ manifest

def write_manifests(directory: Path, key: str, dtypes: list[str]) -> None:
    """Every op's samples, one manifest per dtype (directory/<key>-<dtype>.json), as
    harness.families.opinfo.params reads them."""
    ops: list[dict[str, Any]] = []
    for (name, variant), op in op_table().items():
        entry: dict[str, Any] = {"name": name, "variant": variant, "autograd": bool(op.supports_autograd),
                 "inplace": op.get_inplace() is not None, "random": False, "dtypes": cpu_dtypes(op),
                 "cuda_only": _only_cuda(op), "samples": {}, "excluded": {}, "no_grad_input": {}, "errors": {}}
        for dtype in (d for d in dtypes if d in entry["dtypes"]):
            prints: list[str] = []
            excluded: dict[str, str] = {}
            no_grad_input: list[int] = []
            try:
                for k, sample in enumerate(samples(op, dtype, requires_grad=entry["autograd"])):
                    prints.append(fingerprint(sample))
                    rule = "cuda_only" if entry["cuda_only"] else exclusion(sample)
                    if rule:
                        excluded[str(k)] = rule
                    if entry["autograd"] and not any(getattr(leaf, "requires_grad", False)
                                                     for leaf in leaves_of(sample)[0]):
                        no_grad_input.append(k)
                    if k == 0 and not rule:
                        entry["random"] = entry["random"] or is_random(op, sample)
            except Exception as e:  # noqa: BLE001 - an op whose samples cannot be made on CPU is reported
                entry["errors"][dtype] = f"{type(e).__name__}: {e}".splitlines()[0][:200]
            entry["samples"][dtype], entry["excluded"][dtype] = prints, excluded
            entry["no_grad_input"][dtype] = no_grad_input
        ops.append(entry)
    for dtype in dtypes:
        manifest = {"format": opinfo_params.MANIFEST_FORMAT, "torch": torch.__version__, "dtype": dtype,
                    "ops": [{**op, "samples": {dtype: op["samples"].get(dtype, [])},
                             "excluded": {dtype: op["excluded"].get(dtype, {})},
                             "no_grad_input": {dtype: op["no_grad_input"].get(dtype, [])},
                             "errors": {d: e for d, e in op["errors"].items() if d == dtype}} for op in ops]}
        path = directory / f"{key}-{dtype}.json"
        partial = path.with_name(path.name + f".{os.getpid()}.tmp")
        partial.write_text(json.dumps(manifest), encoding="utf-8")
        os.replace(partial, path)


def _only_cuda(op) -> bool:
    """The OpInfo is decorated onlyCUDA (jiterator ops, a cuDNN-free batch_norm): it lists CPU dtypes,
    but PyTorch's own tests never run it on CPU."""
    from torch.testing._internal.common_device_type import onlyCUDA

    return onlyCUDA in op.decorators


if __name__ == "__main__":  # python -m harness.families.opinfo.manifest DIRECTORY KEY DTYPE...
    write_manifests(Path(sys.argv[1]), sys.argv[2], sys.argv[3:])
