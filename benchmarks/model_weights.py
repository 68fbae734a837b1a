"""How a real model's weights reach the compiler: as IR text, or as MLIR bytecode (issue 33, item 4).

ResNet-18 (transformers' ResNetModel with ResNet-18's sizes, random weights, 11.2M parameters) is
exported and imported by IREE's FX importer as iree-llvm-cpu does, frozen: each weight becomes a
`dense_resource` blob.
The module then goes to iree-compile two ways; what differs is the transport, timed here as
serialising it and parsing it back into a fresh context (iree-compile's first step):
  text      str(module): every blob printed as hex inside the IR text, parsed back by iree-compile
            (how harness/backends/iree.py handed it on before)
  bytecode  write_bytecode(): the blobs as raw bytes (how it hands it on now)
Each way's size and its time (serialise + iree-compile's first step) are measured --repeat times,
the two ways interleaved; medians and ranges are printed. torch-mlir's own backends keep the
imported module in memory (no text); their import is timed too, with torch-mlir's own way of
reading the weights and with the MLIR backends' (harness/backends/literals.py), and the two IRs compared.

    python benchmarks/model_weights.py [--repeat 3]
"""
from __future__ import annotations

import argparse
import io
import statistics
import sys
import time

import torch
import torch_mlir.fx
import transformers
from iree.compiler import ir
from iree.compiler.extras.fx_importer import FxImporter

from harness.backends.literals import BufferLiterals

RESNET18 = {"embedding_size": 64, "hidden_sizes": [64, 128, 256, 512], "depths": [2, 2, 2, 2],
            "layer_type": "basic"}


def as_text(module) -> bytes:
    return str(module).encode()


def as_bytecode(module) -> bytes:
    buffer = io.BytesIO()
    module.operation.write_bytecode(buffer)
    return buffer.getvalue()


def timed(function, *args, **kwargs):
    started = time.perf_counter()
    value = function(*args, **kwargs)
    return time.perf_counter() - started, value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = transformers.ResNetModel(transformers.ResNetConfig(**RESNET18)).eval()
    pixels = torch.randn(1, 3, 224, 224)
    parameters = sum(p.numel() for p in model.parameters())
    seconds, exported = timed(torch.export.export, model, (pixels,))
    print(f"ResNet-18: {parameters / 1e6:.1f}M parameters; torch.export {seconds:.1f} s")
    seconds, own = timed(torch_mlir.fx.export_and_import, exported, output_type="raw")
    print(f"torch-mlir's FX importer (the module stays in memory): {seconds:.1f} s")
    seconds, hooked = timed(torch_mlir.fx.export_and_import, exported, output_type="raw", hooks=BufferLiterals())
    print(f"the same with the MLIR backends' hook, harness.backends.literals.BufferLiterals: {seconds:.1f} s; "
          f"the same IR: {str(own) == str(hooked)}")
    importer = FxImporter(context=ir.Context())
    seconds, _ = timed(importer.import_frozen_program, exported.run_decompositions({}))   # as the backend does
    print(f"IREE's FX importer, frozen: {seconds:.1f} s")
    results = {"text": [], "bytecode": []}
    sizes = {}
    for _ in range(args.repeat):
        for name, serialise in (("text", as_text), ("bytecode", as_bytecode)):   # interleaved
            started = time.perf_counter()
            source = serialise(importer.module_op)
            ir.Module.parse(source, context=ir.Context())   # what iree-compile does first with it
            results[name].append(time.perf_counter() - started)
            sizes[name] = len(source)
    for name, times in results.items():
        print(f"{name:9} {sizes[name] / 2**20:7.1f} MiB; serialise and parse: median "
              f"{statistics.median(times):.2f} s (range {min(times):.2f} to {max(times):.2f}, {len(times)} runs)")
    ratio = statistics.median(results["text"]) / statistics.median(results["bytecode"])
    print(f"text / bytecode: {sizes['text'] / sizes['bytecode']:.2f}x the bytes, {ratio:.2f}x the time (medians)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
