"""The `iree-llvm-cpu` backend: torch.export -> IREE's FX importer (torch dialect) -> iree-compile
for the llvm-cpu target -> run by the IREE runtime (`local-task` driver).

Phases:
  export   torch.export.export with the program's dynamic shapes, then run_decompositions({}): functional
           inference IR, nothing decomposed
  import   iree.compiler.extras.fx_importer.FxImporter.import_frozen_program -> torch-dialect MLIR
  lower    iree-compile --compile-to=input: torch dialect -> IREE's input dialects (linalg, ...);
           torch-mlir's conversions, bundled in IREE, fail here
  compile  iree-compile --compile-from=input -> a VM flatbuffer, loaded into a runtime context
  run      the `main` function of that module on numpy arrays

iree-compile runs as a subprocess (iree.compiler.compile_str): a crash or abort of the compiler is
a compile error whose message says which signal killed it, not a crash of the worker. A hang
still costs the case its timeout (the worker's process group is killed with the compiler in it).

Options (configs/iree-llvm-cpu.yaml):
  target_backends  iree-compile targets (default [llvm-cpu])
  driver           runtime HAL driver (default local-task)
  flags            extra iree-compile flags for both steps, e.g. --iree-llvmcpu-target-cpu=host
"""
from __future__ import annotations

import re
import signal
from typing import Any, Sequence

import iree.runtime as rt
import ml_dtypes
import numpy as np
import torch
from iree.compiler import CompilerToolError, compile_str, ir
from iree.compiler.extras.fx_importer import FxImporter

from harness.backend import Backend, CaseContext, Program, export_program, own_outputs, user_output_count
from harness.installation.packages import version_text
from harness.outcomes import Phase


class IreeCompileError(RuntimeError):
    """iree-compile failed; the message starts with its error diagnostics."""


def iree_compile(source: str | bytes, **kwargs) -> bytes:
    """compile_str, with the compiler's `error:` lines (or the killing signal) first in the message."""
    try:
        return compile_str(source, **kwargs)
    except CompilerToolError as e:
        text = str(e)
        errors = [line.strip() for line in text.splitlines() if "error:" in line]
        code = re.search(r"Error code: (-?\d+)", text)
        if code and int(code.group(1)) < 0:
            errors.insert(0, f"iree-compile was killed by {signal.Signals(-int(code.group(1))).name}")
        raise IreeCompileError("\n".join(errors + ["", text])) from None


def to_numpy(value: torch.Tensor) -> np.ndarray:
    t = value.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    if t.dtype == torch.complex32:
        raise TypeError("a complex32 input cannot be passed to the IREE runtime: numpy has no complex32")
    return t.numpy()


def from_numpy(array: Any) -> Any:
    """A result as the comparison takes it: bfloat16 (which numpy has not) as a torch tensor."""
    if isinstance(array, np.ndarray) and array.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(array.view(np.int16).copy()).view(torch.bfloat16)
    return array


def _unsigned_outputs(exported) -> set[int]:
    """Positions, among the program's own outputs, of its uint8 tensors."""
    from torch.export.graph_signature import OutputKind

    values = [getattr(node, "meta", {}).get("val") for node in exported.graph.output_node().args[0]]
    own = [v for v, spec in zip(values, exported.graph_signature.output_specs) if spec.kind == OutputKind.USER_OUTPUT]
    return {i for i, v in enumerate(own) if isinstance(v, torch.Tensor) and v.dtype == torch.uint8}


class IreeBackend(Backend):

    def __init__(self, name, options):
        super().__init__(name, options)
        self.targets = list(self.options.get("target_backends") or ["llvm-cpu"])
        self.flags = list(self.options.get("flags") or [])
        self._config = None  # the runtime driver and device: created once per worker

    def compile(self, program: Program, case: CaseContext):
        case.enter(Phase.EXPORT)
        # torch.export gives training IR, where in-place ops (masked_fill_, copy_) stay; the FX
        # importer wants a functional program. An empty table functionalises and decomposes nothing:
        # which ops to decompose is IREE's choice (its torch input pipeline), not the harness's.
        exported = export_program(program).run_decompositions({})

        case.enter(Phase.IMPORT)
        importer = FxImporter(context=ir.Context())
        importer.import_frozen_program(exported, func_name="main")
        torch_ir = str(importer.module_op)

        case.enter(Phase.LOWER)
        input_ir = iree_compile(torch_ir, input_type="torch", target_backends=self.targets,
                                extra_args=["--compile-to=input", *self.flags])

        case.enter(Phase.COMPILE)
        vmfb = iree_compile(input_ir, target_backends=self.targets,
                            extra_args=["--compile-from=input", *self.flags])
        if self._config is None:
            self._config = rt.Config(self.options.get("driver", "local-task"))
        context = rt.SystemContext(config=self._config)
        context.add_vm_module(rt.VmModule.copy_buffer(context.instance, vmfb))
        return context.modules.module["main"], user_output_count(exported), _unsigned_outputs(exported)

    def run(self, artifact, inputs: Sequence[Any], case: CaseContext) -> list:
        case.enter(Phase.RUN)
        function, count, unsigned = artifact
        results = function(*[to_numpy(t) for t in inputs])
        if results is None:   # a function without results
            results = ()
        elif not isinstance(results, (tuple, list)):
            results = (results,)
        results = [r.to_host().copy() if hasattr(r, "to_host") else r   # copies outlive the device buffers;
                   for r in own_outputs(results, count)]                   # a scalar result is a Python number
        # IREE's integers are signless: uint8 comes back as int8.
        return [from_numpy(r.view(np.uint8) if i in unsigned and isinstance(r, np.ndarray) else r)
                for i, r in enumerate(results)]

    def versions(self) -> dict[str, str]:
        iree = {d: version_text(d, m) for d, m in (("iree-base-compiler", "iree.compiler"),
                                                    ("iree-base-runtime", "iree.runtime"))}
        return {"torch": torch.__version__, **iree}
