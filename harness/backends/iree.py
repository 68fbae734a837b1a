"""The `iree-llvm-cpu` backend: torch.export -> IREE's FX importer (torch dialect) -> iree-compile
for the llvm-cpu target -> run by the IREE runtime (`local-task` driver).

Phases:
  export   torch.export.export with the program's dynamic shapes
  decompose  run_decompositions({}): functional inference IR, nothing decomposed
  import   iree.compiler.extras.fx_importer.FxImporter.import_frozen_program -> torch-dialect MLIR
  lower    iree-compile --compile-to=input: torch dialect -> IREE's input dialects (linalg, ...);
           torch-mlir's conversions, bundled in IREE, fail here
  compile  iree-compile --compile-from=input -> a VM flatbuffer, loaded into a runtime context
  run      the `main` function of that module on numpy arrays

The stage cache (harness.stages.reuse) keeps each stage's output: the export (non-strict:
an MLIR config exporting without strict_export shares its entry), the decomposition, the imported
Torch IR, the input IR and the vmfb, each keyed on its input's fingerprint, the build of what
computes it (torch, iree-base-compiler by its files, the harness's code) and the options that
change it (the targets and flags); a warm rerun loads the vmfb and runs no iree-compile at all.

iree-compile runs as a subprocess (iree.compiler.compile_str): a crash or abort of the compiler is
a compile error whose message says which signal killed it, not a crash of the worker. A hang
still costs the case its timeout (the worker's process group is killed with the compiler in it).

ONNX models (`programs: {onnx: ...}`) take IREE's ONNX front-end instead, as iree-import-onnx and
iree-test-suites' onnx_ops do:
  import   the model's opset upgraded to `onnx_opset` (17) when older, shapes inferred with data
           propagation, IREE's ONNX importer -> Torch ONNX IR
  lower    iree-compile --iree-input-type=onnx --compile-to=input
  compile, run as above; results are viewed as the types the model declares (IREE's integers are
           signless)

Options (configs/iree-llvm-cpu.yaml):
  target_backends  iree-compile targets (default [llvm-cpu])
  driver           runtime HAL driver (default local-task)
  flags            extra iree-compile flags for both steps, e.g. --iree-llvmcpu-target-cpu=host
  onnx_opset       the opset ONNX models are upgraded to before import (default 17)
"""
from __future__ import annotations

import dataclasses
import io
import re
import signal
from typing import Any, Sequence

import iree.runtime as rt
import ml_dtypes
import numpy as np
import torch
from iree.compiler import CompilerToolError, compile_str, ir
from iree.compiler.extras.fx_importer import FxImporter
from iree.compiler.passmanager import PassManager

from harness.backend_interface import (
    STANDALONE_SCRIPTS,
    Backend,
    CaseContext,
    OnnxProgram,
    Program,
    Standalone,
    export_program,
    own_outputs,
)
from harness.backends.onnx_front import as_declared
from harness.backends.sizes import mlir_ops
from harness.installation.packages import version_text
from harness.outcomes import Phase
from harness.stages.reuse import (
    HARNESS,
    Stage,
    cached,
    compiler_build,
    deferred,
    exported_ops,
    fingerprint_source,
    load_exported,
    package_builds,
    program_facts,
    program_identity,
    same_bytes,
    save_exported,
    torch_build,
)

# Its distributions and their import names: its versions, and the builds in its stages' keys
COMPILER, RUNTIME = ("iree-base-compiler", "iree.compiler"), ("iree-base-runtime", "iree.runtime")


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


def bytecode(module: Any) -> bytes:
    """The module as MLIR bytecode: its weights' resource blobs stay raw bytes (the IR text would
    print each as hex, which iree-compile then parses back: benchmarks/model_weights.py)."""
    buffer = io.BytesIO()
    module.operation.write_bytecode(buffer)
    return buffer.getvalue()


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


def _functional_facts(exported: Any) -> dict[str, Any]:
    return {**program_facts(exported), "unsigned": sorted(_unsigned_outputs(exported))}


def _unsigned_outputs(exported) -> set[int]:
    """Positions, among the program's own outputs, of its uint8 tensors."""
    from torch.export.graph_signature import OutputKind

    values = [getattr(node, "meta", {}).get("val") for node in exported.graph.output_node().args[0]]
    own = [v for v, spec in zip(values, exported.graph_signature.output_specs) if spec.kind == OutputKind.USER_OUTPUT]
    return {i for i, v in enumerate(own) if isinstance(v, torch.Tensor) and v.dtype == torch.uint8}


def import_onnx(model: Any, opset: int) -> tuple[bytes, str]:
    """IREE's ONNX front-end as iree-import-onnx runs it: Torch ONNX IR of the model and the name
    of its function."""
    import onnx
    from iree.compiler.extras import onnx_importer

    if model.opset_import and opset > _default_opset(model):
        model = onnx.version_converter.convert_version(model, opset)
    inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    info = onnx_importer.ModelInfo(inferred)
    module = info.create_module(context=ir.Context())
    onnx_importer.NodeImporter.define_function(info.main_graph, module.operation).import_all()
    return bytecode(module), ir.StringAttr(module.body.operations[0].attributes["sym_name"]).value


def _default_opset(model: Any) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)


def iree_build() -> dict[str, str]:
    """What computes the IREE stages: iree-base-compiler by its files (a rebuild under one version
    counts) and the harness's code (how it calls the importer and iree-compile)."""
    return package_builds(COMPILER, HARNESS)


def _imported(exported: Any) -> tuple[bytes, int]:
    """IREE's FX import of the functional program: Torch IR as bytecode (the weights as raw blobs,
    not hex text) and its op count. Without source locations: they name the traced files (the
    case's, torch's) by absolute path, and IREE carries them into its input IR and the vmfb, so
    one build compiled a case to other bytes, fingerprints and cache keys in another folder."""
    importer = FxImporter(context=ir.Context())
    importer.import_frozen_program(exported, func_name="main")
    module = importer.module_op
    with module.context:
        PassManager.parse("builtin.module(strip-debuginfo)").run(module.operation)
    return bytecode(module), mlir_ops(module, ir)


def _dump_imported(imported: tuple[bytes, int]) -> bytes:
    return f"{imported[1]}\n".encode() + imported[0]


def _load_imported(data: bytes) -> tuple[bytes, int]:
    ops, _, torch_ir = data.partition(b"\n")
    return torch_ir, int(ops)


@dataclasses.dataclass
class IreeArtifact:
    function: Any
    outputs: int = 0                    # how many of the results are the program's own (the last ones)
    unsigned: set[int] = dataclasses.field(default_factory=set)   # a PyTorch program's uint8 results
    declared: Sequence[Any] = ()        # an ONNX model's output types


class IreeBackend(Backend):
    LISTS_OPS = True   # from its own export; which ops iree-compile decomposes it does not say (yet)
    STAGES = ("exported", "decomposed", "torch_ir", "input_ir", "vmfb")   # an ONNX model from torch_ir
    OPTIONS = {"target_backends": "iree-compile's --iree-hal-target-backends (default [llvm-cpu])",
               "flags": "more iree-compile flags, a list",
               "driver": "the IREE runtime's driver (default local-task)",
               "onnx_opset": "ONNX models of an older opset are upgraded to it first (default 17)"}

    def __init__(self, name, options):
        super().__init__(name, options)
        self.targets = list(self.options.get("target_backends") or ["llvm-cpu"])
        self.flags = list(self.options.get("flags") or [])
        self._config = None  # the runtime driver and device: created once per worker

    def compile(self, program: Program | OnnxProgram, case: CaseContext) -> IreeArtifact:
        if isinstance(program, OnnxProgram):
            return self.compile_onnx(program, case)
        case.enter(Phase.EXPORT)   # each stage loaded only if the next is computed (harness.stages.reuse.deferred)
        exported = deferred(case, Stage("exported", lambda: program_identity(case, program), torch_build,
                                        {"strict_export": False}, save_exported, load_exported, facts=program_facts),
                            lambda: export_program(program))   # the MLIR backends' entry, when theirs is alike
        case.sizes["export_ops"] = exported.facts["ops"]
        case.ops = exported_ops(exported)

        case.enter(Phase.DECOMPOSE)
        # torch.export gives training IR, where in-place ops (masked_fill_, copy_) stay; the FX
        # importer wants a functional program. An empty table functionalises and decomposes nothing:
        # which ops to decompose is IREE's choice (its torch input pipeline), not the harness's.
        functional = deferred(case, Stage("decomposed", fingerprint_source(case, "exported"),
                                          lambda: compiler_build(HARNESS), {"decomposition_table": "none"},
                                          save_exported, load_exported, facts=_functional_facts),
                              lambda: exported.value.run_decompositions({}))
        case.sizes["decomposed_ops"] = functional.facts["ops"]

        case.enter(Phase.IMPORT)
        torch_ir, case.sizes["torch_ops"] = cached(
            case, Stage("torch_ir", fingerprint_source(case, "decomposed"), lambda: {**torch_build(), **iree_build()},
                        {"func_name": "main"}, _dump_imported, _load_imported, shown=lambda imported: imported[0]),
            lambda: _imported(functional.value))
        function = self.lower_and_load(torch_ir, "torch", case)
        return IreeArtifact(function, functional.facts["outputs"], set(functional.facts["unsigned"]))

    def compile_onnx(self, program: OnnxProgram, case: CaseContext) -> IreeArtifact:
        case.enter(Phase.IMPORT)
        torch_ir, func_name = import_onnx(program.model, int(self.options.get("onnx_opset", 17)))
        case.fingerprint("torch_ir", torch_ir)
        function = self.lower_and_load(torch_ir, "onnx", case, func_name)
        return IreeArtifact(function, declared=[o.type for o in program.model.graph.output])

    def lower_and_load(self, torch_ir: str | bytes, input_type: str, case: CaseContext, func_name: str = "main") -> Any:
        """iree-compile to its input dialects (lower), then to a VM module (compile); its function."""
        options = {"targets": self.targets, "flags": self.flags}
        case.enter(Phase.LOWER)
        input_ir = cached(case, Stage("input_ir", fingerprint_source(case, "torch_ir"), iree_build,
                                      {**options, "input_type": input_type}, same_bytes, same_bytes),
                          lambda: iree_compile(torch_ir, input_type=input_type, target_backends=self.targets,
                                               extra_args=["--compile-to=input", "--emit-mlir-bytecode", *self.flags]))

        case.enter(Phase.COMPILE)
        vmfb = cached(case, Stage("vmfb", fingerprint_source(case, "input_ir"), iree_build, options, same_bytes,
                                  same_bytes),
                      lambda: iree_compile(input_ir, target_backends=self.targets,
                                           extra_args=["--compile-from=input", *self.flags]))
        case.sizes["artifact_bytes"] = len(vmfb)
        if self._config is None:
            if case.threads:   # the task system's workers: one group per thread (--perf)
                rt.flags.parse_flags(f"--task_topology_max_group_count={case.threads}")
            self._config = rt.Config(self.options.get("driver", "local-task"))
        context = rt.SystemContext(config=self._config)
        context.add_vm_module(rt.VmModule.copy_buffer(context.instance, vmfb))
        return context.modules.module[func_name]

    def run(self, artifact: IreeArtifact, inputs: Sequence[Any], case: CaseContext) -> list:
        case.enter(Phase.RUN)
        if artifact.declared:   # an ONNX model's inputs are numpy already
            results = artifact.function(*inputs)
        else:
            results = artifact.function(*[to_numpy(t) for t in inputs])
        if results is None:   # a function without results
            results = ()
        elif not isinstance(results, (tuple, list)):
            results = (results,)
        results = [r.to_host().copy() if hasattr(r, "to_host") else r   # copies outlive the device buffers;
                   for r in own_outputs(results, artifact.outputs)]       # a scalar result is a Python number
        if artifact.declared:
            return [as_declared(r, t) for r, t in zip(results, artifact.declared)]
        # IREE's integers are signless: uint8 comes back as int8.
        return [from_numpy(r.view(np.uint8) if i in artifact.unsigned and isinstance(r, np.ndarray) else r)
                for i, r in enumerate(results)]

    def standalone(self, program: Program | OnnxProgram) -> Standalone | None:
        if not isinstance(program, OnnxProgram):
            return None
        return Standalone(STANDALONE_SCRIPTS / "iree.py", {
            "onnx_opset": int(self.options.get("onnx_opset", 17)), "target_backends": self.targets,
            "flags": self.flags, "driver": self.options.get("driver", "local-task")})

    def versions(self) -> dict[str, str]:
        iree = {d: version_text(d, m) or "unknown" for d, m in (COMPILER, RUNTIME)}
        return {"torch": torch.__version__, **iree}
