"""Linalg-on-Tensors -> LLVM -> MLIR ExecutionEngine: the reusable JIT half of the MLIR backends.

`JitModule.compile(module, func_name, passes, opt_level=2)` lowers an `ir.Module` in Linalg-on-Tensors
form (in place) with a RefBackend-style pass list (LlvmModule), JIT-compiles it (EngineCode), and
`jit(inputs)` runs it on torch tensors or numpy arrays and returns numpy arrays (copies that
outlive the code's buffers), or torch.bfloat16 tensors for bf16 results, which numpy cannot
represent. The code may instead come from a shared library (harness.stages.native_code).

Calling convention (set up by the `refback-munge-calling-conventions` pass): the entry function
takes each tensor as a pointer to an unranked memref descriptor and returns nothing; it hands its
results to an external `refbackend_consume_func_return_<tokens>` function, one token per result
(`mrf32` = unranked memref of f32). We define that function to call a ctypes callback, which
copies the results out, through a pointer in the module. Result buffers are allocated by the
compiled code and never freed (they may alias inputs or constants, so freeing them is unsafe): a
small leak per call, acceptable in a worker process.

Element types: f32, f64, f16, i64, i32, i16, i8, i1 (numpy bool), complex. Linalg integers are
signless: a uint8 tensor (numpy's uint16 to uint64 too, an ONNX model's) goes in as i8 (the same
bytes; the Torch IR says ui8, so the ops are unsigned). A scalar result (a Python number the
program returns, `!torch.float` / `!torch.int` / `!torch.bool` in Torch IR) is passed to the
consume function by value and comes back as a Python float, int or bool. bfloat16: numpy has
none. The munge pass rejects bf16 arguments ("argument must be a memref of f16, f32, ...": a
compile error), and names a bf16 result `mrf16` as if it were f16; so result types are taken from
the Linalg-level signature, never from that name, and bf16 results (raw 16-bit patterns) come
back as torch.bfloat16 tensors.
"""
from __future__ import annotations

import ctypes
import dataclasses
import os
import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Protocol, Sequence

import numpy as np
import torch

# torch-mlir is imported where code is compiled: running machine code the stage cache holds
# (JitModule) never waits for its import.
if TYPE_CHECKING:
    from torch_mlir import ir

# MLIR element type -> numpy dtype that carries its bytes across the boundary.
_CARRIER = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": np.uint16,
            "i64": np.int64, "i32": np.int32, "i16": np.int16, "i8": np.int8, "i1": np.bool_,
            "complex<f32>": np.complex64, "complex<f64>": np.complex128}
_TORCH_TO_MLIR = {torch.float32: "f32", torch.float64: "f64", torch.float16: "f16",
                  torch.bfloat16: "bf16", torch.int64: "i64", torch.int32: "i32", torch.int16: "i16",
                  torch.int8: "i8", torch.uint8: "i8",   # signless in Linalg: the same bytes
                  torch.bool: "i1", torch.complex64: "complex<f32>", torch.complex128: "complex<f64>"}
_NUMPY_TO_MLIR = {np.dtype(v): k for k, v in _CARRIER.items() if k != "bf16"} | {
    np.dtype(np.uint8): "i8", np.dtype(np.uint16): "i16", np.dtype(np.uint32): "i32", np.dtype(np.uint64): "i64"}
# Scalar results, passed by value: MLIR type -> (ctypes type, Python type of the value).
_SCALAR = {"f64": (ctypes.c_double, float), "f32": (ctypes.c_float, float), "i64": (ctypes.c_int64, int),
           "i32": (ctypes.c_int32, int), "i1": (ctypes.c_bool, bool)}
_CONSUME_PREFIX = "refbackend_consume_func_return_"
# Each value of a signature: (element type, shape with None for a dynamic size; no shape: a scalar).
ValueTypes = list[tuple[str, tuple | None]]


class JitError(RuntimeError):
    """The module cannot be JIT-compiled or called with the given inputs."""


def run_pipeline(module: ir.Module, pipeline: str, description: str) -> None:
    """Run a pass pipeline on `module` in place. On failure raise TorchMlirCompilerError whose
    message starts with the MLIR diagnostics (torch-mlir's own report leaves them on fd 2)."""
    from torch_mlir.compiler_utils import TorchMlirCompilerError, run_pipeline_with_repro_report

    diagnostics: list[str] = []

    def collect(d) -> bool:
        notes = "".join(f"\n  note: {n.message}" for n in d.notes)
        diagnostics.append(f"{str(d.severity).rsplit('.', 1)[-1].lower()}: {d.message}{notes}")
        return True  # handled: nothing goes to stderr

    handler = module.context.attach_diagnostic_handler(collect)
    try:
        run_pipeline_with_repro_report(module, pipeline, description)
    except TorchMlirCompilerError as e:
        raise TorchMlirCompilerError("\n".join(diagnostics + [str(e)])) from None
    finally:
        handler.detach()


def pipeline_of(passes: Sequence[str]) -> str:
    """Join a list of pass strings (func-level ones written as `func.func(...)`)."""
    return "builtin.module(" + ",".join(p.strip() for p in passes) + ")"


def _value_types(types, what: str, scalars: bool = False) -> ValueTypes:
    """(element type, shape with None for dynamic sizes) of each ranked tensor type; with
    `scalars`, (type, None) for a scalar the JIT passes by value."""
    from torch_mlir import ir

    out: list[tuple[str, tuple[Any, ...] | None]] = []
    for t in types:
        if scalars and str(t) in _SCALAR:
            out.append((str(t), None))
            continue
        if not isinstance(t, ir.RankedTensorType):
            raise JitError(f"{what} of type {t} is not a ranked tensor")
        elem = str(t.element_type)
        if elem not in _CARRIER:
            raise JitError(f"{what} element type {elem} is not supported by the JIT invoker")
        out.append((elem, tuple(None if t.is_dynamic_dim(d) else t.shape[d] for d in range(t.rank))))
    return out


def _entry_signature(module: ir.Module, func_name: str):
    """Argument and result (element type, shape) lists of the Linalg-on-Tensors entry function."""
    from torch_mlir import ir

    for op in module.body.operations:
        op = op.operation
        if op.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == func_name:
            ftype = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
            return _value_types(ftype.inputs, "argument"), _value_types(ftype.results, "result", scalars=True)
    raise JitError(f"no function @{func_name} in the module")


def _consume_name(llvm_ir: str, result_types: ValueTypes) -> str:
    """The name of the consume function the lowered entry function calls: one token per result,
    `mr<type>` for a memref, the bare type for a scalar passed by value."""
    names = set(re.findall(_CONSUME_PREFIX + r"\w+", llvm_ir))
    if len(names) != 1:
        raise JitError(f"expected one {_CONSUME_PREFIX}* function, found {sorted(names)}")
    name = names.pop()
    tokens = name[len(_CONSUME_PREFIX):].split("_")
    memref = [shape is not None for _, shape in result_types]
    if len(tokens) != len(result_types) or any(t.startswith("mr") != m for t, m in zip(tokens, memref)):
        kinds = ", ".join("memref" if m else elem for (elem, _), m in zip(result_types, memref))
        raise JitError(f"{name} does not pass the function's results ({kinds})")
    return name


class _MemRef(ctypes.Structure):
    """Unranked memref: rank and a pointer to the ranked descriptor
    {allocated, aligned, offset, sizes[rank], strides[rank]}, all 64-bit."""
    _fields_ = [("rank", ctypes.c_int64), ("descriptor", ctypes.c_void_p)]


def _to_memref(array: np.ndarray) -> tuple[Any, list]:
    """A pointer to a pointer to an unranked memref over `array`, and the objects to keep alive."""
    rank = array.ndim
    ranked = (ctypes.c_int64 * (3 + 2 * rank))(
        array.ctypes.data, array.ctypes.data, 0,
        *array.shape, *(s // array.itemsize for s in array.strides))
    unranked = _MemRef(rank, ctypes.addressof(ranked))
    ptr = ctypes.pointer(unranked)
    return ctypes.pointer(ptr), [array, ranked, unranked, ptr]


def _from_memref(memref: _MemRef, carrier: type) -> np.ndarray:
    """A fresh numpy array holding a copy of the data `memref` describes."""
    rank = memref.rank
    desc = (ctypes.c_int64 * (3 + 2 * rank)).from_address(memref.descriptor)
    shape, strides = tuple(desc[3:3 + rank]), tuple(desc[3 + rank:])
    dtype = np.dtype(carrier)
    if 0 in shape:
        return np.empty(shape, dtype)
    extent = 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    base = desc[1] + desc[2] * dtype.itemsize  # aligned pointer + offset
    flat = np.frombuffer((ctypes.c_char * (extent * dtype.itemsize)).from_address(base), dtype)
    return np.lib.stride_tricks.as_strided(
        flat, shape, tuple(s * dtype.itemsize for s in strides)).copy()


def _to_carrier(value: Any, elem: str) -> np.ndarray:
    """A torch tensor or numpy array as a contiguous numpy array in the carrier dtype of `elem`."""
    if isinstance(value, torch.Tensor):
        t = value.detach().cpu().contiguous()
        got = _TORCH_TO_MLIR.get(t.dtype)
        array = t.view(torch.int16).numpy().view(np.uint16) if got == "bf16" else t.numpy()
    else:
        array = np.asarray(value)
        got = _NUMPY_TO_MLIR.get(array.dtype)
    if got != elem:
        raise JitError(f"input has dtype {getattr(value, 'dtype', None)}, the function expects {elem}")
    return np.require(array, requirements="C")  # not ascontiguousarray: it makes a 0-d array 1-d


# Float truncations LLVM calls from libgcc, which libgcc_s has from GCC 13 on only (Debian 12's
# has not: "Symbols not found: [ __truncsfbf2 ]"; another library the worker loaded, onnxruntime's,
# can supply them, so without these the outcome depended on the worker's history). On x86-64 the
# 16-bit result travels in the low 16 bits of xmm0: a float with those bits.
@ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_double)
def _truncate_double_to_f16(value: float) -> float:
    return float(np.uint32(np.float16(value).view(np.uint16)).view(np.float32))


@ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_float)
def _truncate_to_bf16(value: float) -> float:
    bits = int(np.float32(value).view(np.uint32))
    if (bits & 0x7FFFFFFF) > 0x7F800000:   # NaN: keep it quiet
        half = (bits >> 16) | 0x40
    else:                                  # round to nearest, ties to even
        half = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return float(np.uint32(half & 0xFFFF).view(np.float32))


LIBGCC_CONVERSIONS = {"__truncsfbf2": _truncate_to_bf16, "__truncdfhf2": _truncate_double_to_f16}


class NativeCode(Protocol):
    """Compiled code of a lowered module: the ExecutionEngine's (EngineCode) or a shared library
    the stage cache loaded (harness.stages.native_code.SharedLibrary)."""

    def packed(self, name: str) -> int: ...   # the address of `_mlir_<name>`, 0 if none


@dataclasses.dataclass(frozen=True)
class Entry:
    """The entry function of compiled code: its name and its arguments' and results' types; with
    the code, all a JitModule needs (so a module's code from the stage cache runs without it)."""

    func_name: str
    arg_types: ValueTypes
    result_types: ValueTypes

    def as_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Entry:
        def types(values: Any) -> ValueTypes:
            return [(str(elem), None if shape is None else tuple(shape)) for elem, shape in values]
        return cls(str(data["func_name"]), types(data["arg_types"]), types(data["result_types"]))


class LlvmModule:
    """A Linalg-on-Tensors module lowered in place to the LLVM dialect; `llvm_ir` holds its text as
    the pass list left it (for the fingerprint and a bundle). The consume function is then defined
    to call through a pointer the caller sets (SET_CONSUME), not left for the JIT to resolve: so
    the compiled code needs nothing registered in the engine and also runs from a shared library."""

    def __init__(self, module: ir.Module, func_name: str, passes: Sequence[str]):
        self.module, self.func_name = module, func_name
        self.entry = Entry(func_name, *_entry_signature(module, func_name))
        run_pipeline(module, pipeline_of(passes), "Lowering Linalg-on-Tensors IR -> LLVM")
        self.llvm_ir = str(module)  # needed for the consume name; cheap next to JIT compiling
        result_types = self.entry.result_types
        _consume_through_pointer(module, _consume_name(self.llvm_ir, result_types), result_types)

    def jit(self, opt_level: int = 2, shared_libs: Sequence[str] = ()) -> EngineCode:
        return EngineCode(self.module, self.func_name, opt_level, shared_libs)


SET_CONSUME = "harness_set_consume"


def _consume_through_pointer(module: ir.Module, name: str, result_types: ValueTypes) -> None:
    """Replace the declaration of `_mlir_ciface_<name>` (the consume function's C interface) by a
    definition that calls the function whose address SET_CONSUME stored."""
    from torch_mlir import ir

    interface = "_mlir_ciface_" + name
    for op in module.body.operations:
        op = op.operation
        if op.name == "llvm.func" and ir.StringAttr(op.attributes["sym_name"]).value == interface:
            op.erase()
            break
    types = ["!llvm.ptr" if shape is not None else elem for elem, shape in result_types]
    params = ", ".join(f"%a{i}: {t}" for i, t in enumerate(types))
    args = ", ".join(f"%a{i}" for i in range(len(types)))
    with module.context:
        definitions = ir.Module.parse(f"""
          llvm.mlir.global internal @harness_consume() {{addr_space = 0 : i32}} : !llvm.ptr {{
            %0 = llvm.mlir.zero : !llvm.ptr
            llvm.return %0 : !llvm.ptr
          }}
          llvm.func @{SET_CONSUME}(%function: !llvm.ptr) {{
            %0 = llvm.mlir.addressof @harness_consume : !llvm.ptr
            llvm.store %function, %0 : !llvm.ptr, !llvm.ptr
            llvm.return
          }}
          llvm.func @{interface}({params}) {{
            %0 = llvm.mlir.addressof @harness_consume : !llvm.ptr
            %1 = llvm.load %0 : !llvm.ptr -> !llvm.ptr
            llvm.call %1({args}) : !llvm.ptr, ({", ".join(types)}) -> ()
            llvm.return
          }}""")
    for op in list(definitions.body.operations):
        module.body.append(op)


class EngineCode:
    """A lowered module JIT-compiled by the MLIR ExecutionEngine, position-independent so that its
    object file links into a shared library (harness.stages.native_code)."""

    def __init__(self, module: ir.Module, func_name: str, opt_level: int, shared_libs: Sequence[str]):
        from torch_mlir.execution_engine import ExecutionEngine

        self.engine = ExecutionEngine(module, opt_level=opt_level, shared_libs=list(shared_libs), enable_pic=True)
        for name, function in LIBGCC_CONVERSIONS.items():
            self.engine.raw_register_runtime(name, ctypes.cast(function, ctypes.c_void_p))
        self._module = module  # keeps the context alive as long as the engine
        # Looking the entry up makes the JIT generate and link code now (so that counts as
        # compiling). LLVM reports link errors, such as a missing runtime symbol, only on fd 2.
        with tempfile.TemporaryFile() as err:
            saved = os.dup(2)
            os.dup2(err.fileno(), 2)
            try:
                address = self.packed("_mlir_ciface_" + func_name)
            finally:
                os.dup2(saved, 2)
                os.close(saved)
            err.seek(0)
            log = err.read().decode(errors="replace").strip()
        if not address:
            raise JitError(f"JIT could not materialize @{func_name}: {log or 'no message'}")

    def packed(self, name: str) -> int:
        return self.engine.raw_lookup(name)

    def object_file(self, path: Path) -> None:
        self.engine.dump_to_object_file(str(path))


class JitModule:
    """A lowered module's compiled code, called on torch tensors or numpy arrays.

    `JitModule.compile(module, func_name, passes)` lowers and JIT-compiles in one step; the MLIR
    backends take the code from the stage cache when it holds it. `shared_libs` go to the
    ExecutionEngine: the default pass list needs none (math functions resolve to libm, which the
    Python process has loaded).
    """

    def __init__(self, entry: Entry, code: NativeCode):
        self.func_name, self.arg_types, self.result_types = entry.func_name, entry.arg_types, entry.result_types
        self._code = code   # the machine code lives as long as this object
        self._results: list[np.ndarray] | None = None
        self._callback = self._make_callback()
        pointer = ctypes.c_void_p(ctypes.cast(self._callback, ctypes.c_void_p).value)
        _packed_function(code.packed(SET_CONSUME))((ctypes.c_void_p * 1)(ctypes.addressof(pointer)))
        self._entry = _packed_function(code.packed("_mlir_ciface_" + self.func_name))

    @classmethod
    def compile(cls, module: ir.Module, func_name: str, passes: Sequence[str], opt_level: int = 2,
                shared_libs: Sequence[str] = ()) -> JitModule:
        lowered = LlvmModule(module, func_name, passes)
        return cls(lowered.entry, lowered.jit(opt_level, shared_libs))

    def _make_callback(self):
        readers = [(lambda m, c=_CARRIER[elem]: _from_memref(m.contents, c)) if shape is not None
                   else _SCALAR[elem][1] for elem, shape in self.result_types]
        arg_types: list[Any] = [ctypes.POINTER(_MemRef) if shape is not None else _SCALAR[elem][0]
                     for elem, shape in self.result_types]

        def consume(*values):
            self._results = [read(v) for read, v in zip(readers, values)]

        return ctypes.CFUNCTYPE(None, *arg_types)(consume)

    def __call__(self, inputs: Sequence[Any]) -> list[np.ndarray]:
        if len(inputs) != len(self.arg_types):
            raise JitError(f"{len(inputs)} inputs given, @{self.func_name} takes {len(self.arg_types)}")
        args, keep_alive = [], []
        for i, (value, (elem, shape)) in enumerate(zip(inputs, self.arg_types)):
            array, dims = _to_carrier(value, elem), shape or ()   # an argument is never a scalar
            if array.ndim != len(dims) or any(w not in (None, n) for w, n in zip(dims, array.shape)):
                want = tuple("?" if w is None else w for w in dims)
                raise JitError(f"input {i} has shape {array.shape}, the function expects {want}")
            arg, alive = _to_memref(array)
            args.append(ctypes.cast(arg, ctypes.c_void_p))
            keep_alive.append(alive)
        self._results = None
        self._entry((ctypes.c_void_p * len(args))(*args))
        results, self._results = self._results, None
        if results is None:
            raise JitError(f"@{self.func_name} returned without passing its results")
        return [torch.from_numpy(r.view(np.int16)).view(torch.bfloat16) if elem == "bf16" else r
                for r, (elem, _) in zip(results, self.result_types)]


def _packed_function(address: int) -> Any:
    """A packed wrapper (its arguments as one array of pointers to them), callable."""
    if not address:
        raise JitError("the compiled code lacks a function the harness calls")
    return ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address)
