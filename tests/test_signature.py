"""harness.controller.signature: one bug gives one short signature across cases, shapes and backends.

The compiler messages below are verbatim from a real run (conv_backward / conv_forward cases on
linalg-on-tensors, tosa, stablehlo and iree-llvm-cpu), cut after the first diagnostic and the start
of its op dump where the rest adds nothing. The Python exceptions are torch's real errors as
harness.errors.describe_error formats them; mismatch messages come from harness.worker.compare itself; crash and
timeout messages follow harness.controller.pool's wording. Messages changed by hand to make a second bug are
marked as derived.
"""
from __future__ import annotations

import numpy as np
import pytest

from harness.controller.signature import MAX_LENGTH, signature
from harness.errors import describe_error
from harness.worker.compare import Output, compare

# ------------------------------------------------------------------- real compiler messages

# linalg-on-tensors, conv_backward/1d/transposed_stride2 (first 640 of 1513 characters)
LINALG_CONV_BWD_1D = (
    "TorchMlirCompilerError: error: failed to legalize operation "
    "'torch.aten.convolution_backward' that was explicitly marked illegal: %11:3 = "
    "\"torch.aten.convolution_backward\"(%arg0, %arg1, %arg2, %5, %6, %7, %8, %0, %9, %1, %10) "
    ": (!torch.vtensor<[2,4,17],f32>, !torch.vtensor<[2,3,8],f32>, "
    "!torch.vtensor<[3,4,3],f32>, !torch.list<int>, !torch.list<int>, !torch.list<int>, "
    "!torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool>) -> "
    "(!torch.vtensor<[2,3,8],f32>, !torch.vtensor<[3,4,3],f32>, !torch.vtensor<[4],f32>)\n"
    "  note: see current operation: %11:3 = \"torch.aten.convolution_backward\"(%arg0, %arg1, "
    "%arg2, %5, %6, "
)

# iree-llvm-cpu, conv_backward/1d/transposed_stride2 (first 660 of 2359 characters)
IREE_CONV_BWD_1D = (
    "IreeCompileError: <stdin>:19:36: error: failed to legalize operation "
    "'torch.aten.convolution_backward' that was explicitly marked illegal: %11:3 = "
    "\"torch.aten.convolution_backward\"(%arg0, %arg1, %arg2, %5, %6, %7, %8, %0, %9, %1, %10) "
    ": (!torch.vtensor<[2,4,17],f32>, !torch.vtensor<[2,3,8],f32>, "
    "!torch.vtensor<[3,4,3],f32>, !torch.list<int>, !torch.list<int>, !torch.list<int>, "
    "!torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool>) -> "
    "(!torch.vtensor<[2,3,8],f32>, !torch.vtensor<[3,4,3],f32>, !torch.vtensor<[4],f32>) "
    "loc(\"<stdin>\":19:36)\n"
    "\n"
    "Error invoking IREE compiler tool iree-compile\n"
    "Error code: 1\n"
    "Diagnostics:\n"
    "<stdin>:19:36: er"
)

# iree-llvm-cpu, conv_backward/2d/dynamic_batch_transposed_stride2 (first 660 of 2392 characters)
IREE_CONV_BWD_2D_DYNAMIC = (
    "IreeCompileError: <stdin>:23:36: error: failed to legalize operation "
    "'torch.aten.convolution_backward' that was explicitly marked illegal: %11:3 = "
    "\"torch.aten.convolution_backward\"(%arg0, %arg1, %arg2, %5, %6, %7, %8, %0, %9, %1, %10) "
    ": (!torch.vtensor<[?,3,13,13],f32>, !torch.vtensor<[?,4,6,6],f32>, "
    "!torch.vtensor<[4,3,3,3],f32>, !torch.list<int>, !torch.list<int>, !torch.list<int>, "
    "!torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool>) -> "
    "(!torch.vtensor<[?,4,6,6],f32>, !torch.vtensor<[4,3,3,3],f32>, !torch.vtensor<[3],f32>) "
    "loc(\"<stdin>\":23:36)\n"
    "\n"
    "Error invoking IREE compiler tool iree-compile\n"
    "Error code: 1\n"
    "Diagnostics:\n"
    "<stdin"
)

# iree-llvm-cpu, conv_backward/3d/transposed_stride2_outpad1 (first 680 of 2425 characters)
IREE_CONV_BWD_3D = (
    "IreeCompileError: <stdin>:27:36: error: failed to legalize operation "
    "'torch.aten.convolution_backward' that was explicitly marked illegal: %11:3 = "
    "\"torch.aten.convolution_backward\"(%arg0, %arg1, %arg2, %5, %6, %7, %8, %0, %9, %1, %10) "
    ": (!torch.vtensor<[2,3,10,10,10],f32>, !torch.vtensor<[2,2,4,4,4],f32>, "
    "!torch.vtensor<[2,3,3,3,3],f32>, !torch.list<int>, !torch.list<int>, !torch.list<int>, "
    "!torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool>) -> "
    "(!torch.vtensor<[2,2,4,4,4],f32>, !torch.vtensor<[2,3,3,3,3],f32>, "
    "!torch.vtensor<[3],f32>) loc(\"<stdin>\":27:36)\n"
    "\n"
    "Error invoking IREE compiler tool iree-compile\n"
    "Error code: 1\n"
    "Diagnostics:\n"
    "<stdin>:27:36: "
)

# tosa, conv_backward/1d/depthwise_mult2 (first 640 of 1479 characters)
TOSA_CONV_BWD_1D_DEPTHWISE = (
    "TorchMlirCompilerError: error: failed to legalize operation "
    "'torch.aten.convolution_backward' that was explicitly marked illegal: %12:3 = "
    "\"torch.aten.convolution_backward\"(%arg0, %arg1, %arg2, %6, %7, %8, %9, %2, %10, %1, "
    "%11) : (!torch.vtensor<[2,6,14],f32>, !torch.vtensor<[2,3,16],f32>, "
    "!torch.vtensor<[6,1,3],f32>, !torch.list<int>, !torch.list<int>, !torch.list<int>, "
    "!torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool>) -> "
    "(!torch.vtensor<[2,3,16],f32>, !torch.vtensor<[6,1,3],f32>, !torch.vtensor<[6],f32>)\n"
    "  note: see current operation: %12:3 = \"torch.aten.convolution_backward\"(%arg0, %arg1, "
    "%arg2, %6, %"
)

# tosa, conv_backward/2d/bfloat16_depthwise (first 500 of 1223 characters)
TOSA_CONV_2D_BF16 = (
    "TorchMlirCompilerError: error: failed to legalize operation 'torch.aten.convolution' that "
    "was explicitly marked illegal: %13 = \"torch.aten.convolution\"(%arg0, %arg2, %3, %8, %9, "
    "%10, %2, %12, %7) : (!torch.vtensor<[2,4,6,6],bf16>, !torch.vtensor<[4,1,3,3],bf16>, "
    "!torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, "
    "!torch.list<int>, !torch.int) -> !torch.vtensor<[2,4,8,8],bf16>\n"
    "  note: see current operation: %13 = \"torch.aten.convolution\"(%arg0, %arg2, %3, %8, %9, "
    "%10, "
)

# tosa, conv_backward/2d/groups2 (first 500 of 1204 characters)
TOSA_CONV_2D_F32 = (
    "TorchMlirCompilerError: error: failed to legalize operation 'torch.aten.convolution' that "
    "was explicitly marked illegal: %12 = \"torch.aten.convolution\"(%arg0, %arg2, %2, %7, %8, "
    "%9, %1, %11, %3) : (!torch.vtensor<[2,6,6,6],f32>, !torch.vtensor<[6,2,3,3],f32>, "
    "!torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, "
    "!torch.list<int>, !torch.int) -> !torch.vtensor<[2,4,8,8],f32>\n"
    "  note: see current operation: %12 = \"torch.aten.convolution\"(%arg0, %arg2, %2, %7, %8, "
    "%9, %1, %"
)

# linalg-on-tensors, conv_backward/2d/groups2 (first 400 of 1496 characters)
LINALG_CONV_GROUPS_OPERAND_1 = (
    "TorchMlirCompilerError: error: 'linalg.conv_2d_ngchw_gfchw' op inferred input/output "
    "operand #1 has shape's dimension #2 to be 1, but found 2\n"
    "  note: see current operation: \n"
    "%247 = \"linalg.conv_2d_ngchw_gfchw\"(%244, %245, %246) <{dilations = dense<1> : "
    "vector<2xi64>, operandSegmentSizes = array<i32: 2, 1>, strides = dense<1> : "
    "vector<2xi64>}> ({\n"
    "^bb0(%arg9: f32, %arg10: f32, %arg11: f32):\n"
    "  %279 ="
)

# linalg-on-tensors, conv_backward/2d/bfloat16_depthwise (first 400 of 838 characters)
LINALG_COLLAPSE_SHAPE = (
    "TorchMlirCompilerError: error: 'tensor.collapse_shape' op expected reassociation map #0 "
    "to have size equal to the expanded rank (5), but it is  4.\n"
    "  note: see current operation: %136 = \"tensor.collapse_shape\"(%67) <{reassociation = "
    "[[0, 1], [2], [3]]}> : (tensor<4x1x1x3x3xbf16>) -> tensor<4x1x3xbf16>\n"
    "Lowering Torch Backend IR -> Linalg-on-Tensors, stage 1 of 1 failed with the following "
    "diagnostics"
)

# linalg-on-tensors, conv_backward/2d/dynamic_batch_groups2 (first 400 of 787 characters)
LINALG_TENSOR_CAST = (
    "TorchMlirCompilerError: error: 'tensor.cast' op operand type 'tensor<4x6x3x3xf32>' and "
    "result type 'tensor<2x6x3x3xf32>' are cast incompatible\n"
    "  note: see current operation: %262 = \"tensor.cast\"(%261) : (tensor<4x6x3x3xf32>) -> "
    "tensor<2x6x3x3xf32>\n"
    "Lowering Torch Backend IR -> Linalg-on-Tensors, stage 1 of 1 failed with the following "
    "diagnostics:\n"
    "\n"
    "\n"
    "python exception: Failure while executing pass pip"
)

# linalg-on-tensors, conv_backward/2d/groups4_out8 (first 400 of 857 characters)
LINALG_EXPAND_SHAPE = (
    "TorchMlirCompilerError: error: 'tensor.expand_shape' op expected dimension 1 of collapsed "
    "type to be static value of 0\n"
    "  note: see current operation: %245 = \"tensor.expand_shape\"(%215) <{reassociation = "
    "[[0], [1, 2], [3], [4]], static_output_shape = array<i64: 4, 4, 0, 8, 8>}> : "
    "(tensor<4x2x8x8xf32>) -> tensor<4x4x0x8x8xf32>\n"
    "Lowering Torch Backend IR -> Linalg-on-Tensors, stage 1 of 1 failed with "
)

# stablehlo, conv_backward/2d/bfloat16_depthwise
STABLEHLO_FEATURE_GROUP_MULTIPLE = (
    "TorchMlirCompilerError: error: expects input feature dimension (2) to be a multiple of "
    "feature_group_count. Got feature_group_count = 4.\n"
    "Lowering Torch Backend IR -> Linalg-on-Tensors, stage 1 of 3 failed with the following "
    "diagnostics:\n"
    "\n"
    "\n"
    "python exception: Failure while executing pass pipeline\n"
    "\n"
    "For Torch-MLIR developers, the error can be reproduced with:\n"
    "$ torch-mlir-opt "
    "-pass-pipeline='builtin.module(torch-backend-to-stablehlo-backend-pipeline{allow-non-finites=true})' "
    "/tmp/conv_backward_2d_bfloat16_depthwise.mlir\n"
    "Add '-mlir-print-ir-after-all -mlir-disable-threading' to get the IR dump for debugging "
    "purpose. (at /work/main/harness/backends/mlir_jit.py:61)"
)

# stablehlo, conv_backward/2d/groups2 (first 400 of 673 characters)
STABLEHLO_FEATURE_GROUP_KERNEL = (
    "TorchMlirCompilerError: error: expects input feature dimension (2) / feature_group_count "
    "= kernel input feature dimension (2). Got feature_group_count = 2.\n"
    "Lowering Torch Backend IR -> Linalg-on-Tensors, stage 1 of 3 failed with the following "
    "diagnostics:\n"
    "\n"
    "\n"
    "python exception: Failure while executing pass pipeline\n"
    "\n"
    "For Torch-MLIR developers, the error can be reproduced with:\n"
    "$ torch-mlir-opt -pass-p"
)

# stablehlo, conv_backward/1d/depthwise_mult2 (first 400 of 772 characters)
STABLEHLO_CONSTANT_INT_6 = (
    "TorchMlirCompilerError: error: failed to legalize operation 'torch.constant.int': %0 = "
    "\"torch.constant.int\"() <{value = 6 : i64}> : () -> !torch.int\n"
    "  note: see current operation: %0 = \"torch.constant.int\"() <{value = 6 : i64}> : () -> "
    "!torch.int\n"
    "Lowering Torch Backend IR -> Linalg-on-Tensors, stage 1 of 3 failed with the following "
    "diagnostics:\n"
    "\n"
    "\n"
    "python exception: Failure while executing pass pipe"
)

# stablehlo, conv_backward/2d/transposed (first 400 of 767 characters)
STABLEHLO_CONSTANT_INT_3 = (
    "TorchMlirCompilerError: error: failed to legalize operation 'torch.constant.int': %0 = "
    "\"torch.constant.int\"() <{value = 3 : i64}> : () -> !torch.int\n"
    "  note: see current operation: %0 = \"torch.constant.int\"() <{value = 3 : i64}> : () -> "
    "!torch.int\n"
    "Lowering Torch Backend IR -> Linalg-on-Tensors, stage 1 of 3 failed with the following "
    "diagnostics:\n"
    "\n"
    "\n"
    "python exception: Failure while executing pass pipe"
)

# stablehlo, conv_backward/2d/dynamic_batch_groups2 (first 400 of 660 characters)
STABLEHLO_INFERRED_SHAPE = (
    "TorchMlirCompilerError: error: inferred shape '[4, 6, 3, 3]' is incompatible with return "
    "type of operation 'tensor<2x6x3x3xf32>'\n"
    "Lowering Torch Backend IR -> Linalg-on-Tensors, stage 1 of 3 failed with the following "
    "diagnostics:\n"
    "\n"
    "\n"
    "python exception: Failure while executing pass pipeline\n"
    "\n"
    "For Torch-MLIR developers, the error can be reproduced with:\n"
    "$ torch-mlir-opt -pass-pipeline='builtin.module(tor"
)

# stablehlo, conv_backward/2d/depthwise_stride2_pad1 (first 400 of 747 characters)
STABLEHLO_FROM_BUILTIN_TENSOR = (
    "TorchMlirCompilerError: error: operand and result must have the same size and dtype\n"
    "  note: see current operation: %142 = \"torch_c.from_builtin_tensor\"(%141) : "
    "(tensor<4x4x3x3xf32>) -> !torch.vtensor<[4,1,3,3],f32>\n"
    "Lowering Torch Backend IR -> Linalg-on-Tensors, stage 1 of 3 failed with the following "
    "diagnostics:\n"
    "\n"
    "\n"
    "python exception: Failure while executing pass pipeline\n"
    "\n"
    "For Torch-MLIR developers,"
)

# stablehlo, conv_forward/2d/dynamic_batch_transposed_stride2 (first 560 of 1542 characters)
STABLEHLO_CONVOLUTION = (
    "TorchMlirCompilerError: error: failed to legalize operation 'stablehlo.convolution': %9 = "
    "\"stablehlo.convolution\"(%arg0, %8) <{batch_group_count = 1 : i64, dimension_numbers = "
    "#stablehlo.conv<[b, f, 0, 1]x[0, 1, o, i]->[b, f, 0, 1]>, feature_group_count = 1 : i64, "
    "lhs_dilation = array<i64: 2, 2>, padding = dense<2> : tensor<2x2xi64>, rhs_dilation = "
    "array<i64: 1, 1>, window_strides = array<i64: 1, 1>}> : (tensor<?x4x6x6xf32>, "
    "tensor<3x3x3x4xf32>) -> tensor<?x3x13x13xf32>\n"
    "  note: see current operation: %9 = \"stablehlo.convolution\"(%arg0, %8) <{batch_group_"
)

# derived from LINALG_CONV_GROUPS_OPERAND_1: the same op, a different operand (a different bug)
LINALG_CONV_GROUPS_OPERAND_2 = LINALG_CONV_GROUPS_OPERAND_1.replace("operand #1 has shape's dimension #2",
                                                                    "operand #2 has shape's dimension #2")
# derived: the same operand, a different dimension
LINALG_CONV_GROUPS_DIMENSION_3 = LINALG_CONV_GROUPS_OPERAND_1.replace("dimension #2", "dimension #3")
# derived from LINALG_COLLAPSE_SHAPE: another reassociation map
LINALG_COLLAPSE_SHAPE_MAP_1 = LINALG_COLLAPSE_SHAPE.replace("map #0", "map #1")

# ------------------------------------------------------------- real Python exceptions (describe)

_SITE = "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages"
TORCH_CHANNELS_2D = ("RuntimeError: Given groups=1, weight of size [4, 3, 3, 3], expected input[2, 6, 8, 8] "
                     f"to have 3 channels, but got 6 channels instead (at {_SITE}/torch/nn/modules/conv.py:560)")
TORCH_CHANNELS_2D_OTHER = ("RuntimeError: Given groups=1, weight of size [8, 2, 5, 5], expected input[1, 4, 16, 16] "
                           f"to have 2 channels, but got 4 channels instead (at {_SITE}/torch/nn/modules/conv.py:560)")
IREE_KILLED = ("IreeCompileError: iree-compile was killed by SIGSEGV\n\nError invoking IREE compiler tool "
               "iree-compile\nError code: -11\nDiagnostics:\n\nInvoked with:\n iree-compile --iree-input-type=torch "
               "(at /work/main/harness/backends/iree.py:53)")
EMPTY_ASSERTION = "AssertionError:  (at /work/main/harness/backends/mlir_jit.py:61)"

# ------------------------------------------------------------------------ crashes and hangs

PATTERN = "mlir::(anonymous namespace)::ConvolutionBackwardPattern::matchAndRewrite"
PASS = "mlir::(anonymous namespace)::FakeLoweringPass::runOnOperation"
SEGV_IN_PATTERN = (f"worker killed by SIGSEGV in {PATTERN} during phase lower\n"
                   "--- last output of the worker ---\nFatal Python error: Segmentation fault\n\n"
                   "Current thread 0x00007f3a2b1c0740 (most recent call first):\n"
                   '  File "/work/main/harness/backends/mlir.py", line 85 in compile\n'
                   "--- native stack at the crash (py-spy) ---\n"
                   f"  {PATTERN} (_mlir.so)\n  mlir::PatternApplicator::matchAndRewrite (_mlir.so)")
HUNG_IN_PATTERN = (f"timed out after 60 s in phase lower; hung in {PATTERN}\n"
                   "--- native stack of the stuck worker (py-spy) ---\n"
                   f"  pthread_mutex_lock (libc.so.6)\n  {PATTERN} (_mlir.so)")

# ----------------------------------------------------------------------- mismatch messages


def out(values, name="grad_input", dtype="float32"):
    return Output(name, np.asarray(values, dtype=np.float64), dtype)


def mismatch_message(shape, bad, name="grad_input", seed=0):
    """compare()'s message for `bad` elements off by 1 in a golden of `shape`."""
    want = np.random.default_rng(seed).uniform(-1, 1, size=shape)
    got = want.copy()
    got.reshape(-1)[:bad] += 1.0
    return compare([out(got, name)], [out(want, name)], "float32", (1e-6, 1e-6), {name: 1})


def non_finite_message(shape, name="output"):
    want = np.ones(shape)
    got = want.copy()
    got.reshape(-1)[0] = np.nan
    return compare([out(got, name)], [out(want, name)], "float32", (1e-6, 1e-6), {name: 1})


MISMATCH_VALUES = mismatch_message((2, 3, 8, 8), 3)
MISMATCH_NAN = non_finite_message((2, 4, 6, 6))
MISMATCH_SHAPE = compare([out(np.zeros((2, 2, 4, 4)))], [out(np.zeros((1, 2, 4, 4)))], "float32", (1e-6, 1e-6), {})
MISMATCH_DTYPE = compare([out(np.zeros((2, 2)), dtype="float64")], [out(np.zeros((2, 2)))], "float32", (1e-6, 1e-6), {})
MISMATCH_COUNT = compare([out(np.zeros(2))], [out(np.zeros(2), n) for n in ("grad_input", "grad_weight", "grad_bias")],
                         "float32", (1e-6, 1e-6), {})

CONV_BWD_ILLEGAL = "failed to legalize operation 'torch.aten.convolution_backward' that was explicitly marked illegal"
CONV_ILLEGAL = "failed to legalize operation 'torch.aten.convolution' that was explicitly marked illegal"

# (outcome, phase, message, frame, expected signature)
EXPECTED = {
    # MLIR diagnostics: the first error, location and op dump cut, numbers and sizes normalised
    "linalg convolution_backward": ("compile_error", "lower", LINALG_CONV_BWD_1D, None, CONV_BWD_ILLEGAL),
    "iree convolution_backward (<stdin>:L:C: prefix)":
        ("compile_error", "lower", IREE_CONV_BWD_2D_DYNAMIC, None, CONV_BWD_ILLEGAL),
    "tosa convolution_backward": ("compile_error", "lower", TOSA_CONV_BWD_1D_DEPTHWISE, None, CONV_BWD_ILLEGAL),
    "tosa convolution": ("compile_error", "lower", TOSA_CONV_2D_BF16, None, CONV_ILLEGAL),
    "linalg conv_2d_ngchw_gfchw operand #1": (
        "compile_error", "lower", LINALG_CONV_GROUPS_OPERAND_1, None,
        "'linalg.conv_2d_ngchw_gfchw' op inferred input/output operand #1 has shape's dimension #2 to be N, "
        "but found N"),
    "linalg collapse_shape": (
        "compile_error", "lower", LINALG_COLLAPSE_SHAPE, None,
        "'tensor.collapse_shape' op expected reassociation map #0 to have size equal to the expanded rank (N), "
        "but it is N."),
    "linalg tensor.cast": (
        "compile_error", "lower", LINALG_TENSOR_CAST, None,
        "'tensor.cast' op operand type 'tensor<...xf32>' and result type 'tensor<...xf32>' "
        "are cast incompatible"),
    "linalg expand_shape": (
        "compile_error", "lower", LINALG_EXPAND_SHAPE, None,
        "'tensor.expand_shape' op expected dimension N of collapsed type to be static value of N"),
    "stablehlo feature_group_count multiple": (
        "compile_error", "lower", STABLEHLO_FEATURE_GROUP_MULTIPLE, None,
        "expects input feature dimension (N) to be a multiple of feature_group_count. Got feature_group_count = N."),
    "stablehlo feature_group_count kernel": (
        "compile_error", "lower", STABLEHLO_FEATURE_GROUP_KERNEL, None,
        "expects input feature dimension (N) / feature_group_count = kernel input feature dimension (N). "
        "Got feature_group_count = N."),
    "stablehlo torch.constant.int": (
        "compile_error", "lower", STABLEHLO_CONSTANT_INT_6, None, "failed to legalize operation 'torch.constant.int'"),
    "stablehlo inferred shape": (
        "compile_error", "lower", STABLEHLO_INFERRED_SHAPE, None,
        "inferred shape '[N, N, N, N]' is incompatible with return type of operation 'tensor<...xf32>'"),
    "stablehlo from_builtin_tensor (dump only in the note)": (
        "compile_error", "lower", STABLEHLO_FROM_BUILTIN_TENSOR, None,
        "operand and result must have the same size and dtype"),
    "stablehlo.convolution": (
        "compile_error", "lower", STABLEHLO_CONVOLUTION, None, "failed to legalize operation 'stablehlo.convolution'"),
    # Python exceptions: type kept, "(at file.py:12)" dropped
    "python exception with (at ...)": (
        "runtime_error", "run", TORCH_CHANNELS_2D, None,
        "RuntimeError: Given groups=N, weight of size [N, N, N, N], expected input[N, N, N, N] to have N channels, "
        "but got N channels instead"),
    "iree-compile killed": ("compile_error", "compile", IREE_KILLED, None,
                            "IreeCompileError: iree-compile was killed by SIGSEGV"),
    "exception without a message": ("compile_error", "lower", EMPTY_ASSERTION, None, "AssertionError:"),
    "empty message": ("compile_error", "lower", "", None, "compile_error in phase lower"),
    "blank message before start": ("runtime_error", None, " \n\n ", None, "runtime_error in start-up"),
    # mismatches: the output and what differs, numbers normalised, details after ";" dropped
    "mismatch values": ("mismatch", "compare", MISMATCH_VALUES, None,
                        "mismatch: grad_input: N of N elements differ beyond tolerance"),
    "mismatch NaN": ("mismatch", "compare", MISMATCH_NAN, None,
                     "mismatch: output: N NaN and N Inf where the golden value is finite, N finite where it is not, "
                     "N Inf of the wrong sign"),
    "mismatch shape": ("mismatch", "compare", MISMATCH_SHAPE, None,
                       "mismatch: grad_input: shape [N, N, N, N] differs from expected [N, N, N, N]"),
    "mismatch dtype": ("mismatch", "compare", MISMATCH_DTYPE, None,
                       "mismatch: grad_input: dtype float64 differs from expected float32"),
    "mismatch output count": ("mismatch", "compare", MISMATCH_COUNT, None,
                              "mismatch: expected N outputs (grad_input, grad_weight, grad_bias), got N"),
    # crashes: the signal or exit status, and the culprit frame when there is one
    "SIGSEGV no frame": ("crashed", "run", "worker killed by SIGSEGV during phase run", None,
                         "SIGSEGV during phase run"),
    "exit status no frame": ("crashed", "import", "worker exited with status 3 during phase import", None,
                             "exit status 3 during phase import"),
    "SIGSEGV in a pattern": ("crashed", "lower", SEGV_IN_PATTERN, PATTERN, f"SIGSEGV in {PATTERN}"),
    "SIGABRT in a Python frame": (
        "crashed", "compile", "worker killed by SIGABRT in <lambda> (fake_backends.py) during phase compile",
        "<lambda> (fake_backends.py)", "SIGABRT in <lambda> (fake_backends.py)"),
    "SIGSEGV in JIT code": ("crashed", "run", "worker killed by SIGSEGV in JIT-compiled code during phase run",
                            "JIT-compiled code", "SIGSEGV in JIT-compiled code"),
    "crash whose output names another exit": (
        "crashed", "compile",
        "worker killed by SIGKILL during phase compile\n--- last output of the worker ---\n"
        "subprocess exited with status 1", None, "SIGKILL during phase compile"),
    "crash of unknown kind": ("crashed", "run", "worker lost during phase run", None, "crash during phase run"),
    "crash before start": ("crashed", None, "worker exited with status 1 during start-up", None,
                           "exit status 1 during start-up"),
    # timeouts: the culprit frame when py-spy found one
    "hang in a pattern": ("timed_out", "lower", HUNG_IN_PATTERN, PATTERN, f"hang in {PATTERN} during phase lower"),
    "hang in a Python frame": (
        "timed_out", "lower", "timed out after 3 s in phase lower; hung in hang_in_native_code (fake_backends.py)",
        "hang_in_native_code (fake_backends.py)", "hang in hang_in_native_code (fake_backends.py) during phase lower"),
    "timeout no frame": ("timed_out", "compile", "timed out after 120 s in phase compile", None,
                         "timeout in phase compile"),
    "timeout before start": ("timed_out", None, "no answer within the timeout during start-up", None,
                             "timeout in start-up"),
    # results that did not fail have no signature, whatever their message
    "passed": ("passed", None, "", None, None),
    "passed with a message": ("passed", "compare", "error: left over", None, None),
    "not_run": ("not_run", None, "in the crash set (xfail/iree.yaml): segfaults; run it with --run-crash-set",
                None, None),
}


@pytest.mark.parametrize("outcome, phase, message, frame, expected", list(EXPECTED.values()), ids=list(EXPECTED))
def test_signature(outcome, phase, message, frame, expected):
    assert signature(outcome, phase, message, frame) == expected


def test_op_dump_is_in_the_message_but_not_in_the_signature():
    """The real messages above really carry an op dump (else the cut would test nothing)."""
    for message in (LINALG_CONV_BWD_1D, IREE_CONV_BWD_1D, TOSA_CONV_2D_BF16, STABLEHLO_CONVOLUTION):
        first_line = message.splitlines()[0]
        assert '" : (' in first_line or '"(%' in first_line
        assert "%" not in signature("compile_error", "lower", message)
        assert "vtensor" not in signature("compile_error", "lower", message)


def test_an_unknown_op_keeps_its_name_in_the_signature():
    """torch-mlir wraps ops it has no definition of in `torch.operator`: the name is the bug."""
    message = ("TorchMlirCompilerError: error: failed to legalize operation 'torch.operator' that was explicitly "
               "marked illegal: %2:6 = \"torch.operator\"(%arg0, %arg1) <{name = \"torch.aten._segment_reduce\"}> "
               ": (!torch.vtensor<[5,5,5],f32>, !torch.vtensor<[5],f32>) -> (!torch.vtensor<[5],f32>)\n  note: ...")
    assert signature("compile_error", "lower", message) == (
        "failed to legalize operation 'torch.operator' that was explicitly marked illegal (torch.aten._segment_reduce)")


def test_location_prefix_and_python_location_are_dropped():
    assert "<stdin>" not in signature("compile_error", "lower", IREE_CONV_BWD_3D)
    assert "mlir_jit.py" not in signature("compile_error", "lower", STABLEHLO_FEATURE_GROUP_MULTIPLE)
    assert "conv.py" not in signature("runtime_error", "run", TORCH_CHANNELS_2D)


def _raise_here(text):
    raise RuntimeError(text)


@pytest.mark.parametrize("text", ["injected compiler failure: 'fake.op' failed to legalize at 0x7f3a2b1c0740",
                                  "injected compiler failure: 'fake.op' failed to legalize at 0x55d0c3e1a2f0"])
def test_describe_output_of_a_live_exception(text):
    """What the worker really records for an exception: its location and address are normalised."""
    try:
        _raise_here(text)
    except RuntimeError as e:
        message = describe_error(e)
    assert f"(at {__file__}:" in message
    assert signature("compile_error", "lower", message) == (
        "RuntimeError: injected compiler failure: 'fake.op' failed to legalize at 0xN")


# -------------------------------------------------------------- property 1: one bug, one signature

SAME_BUG = {
    "linalg vs iree, same case": (LINALG_CONV_BWD_1D, IREE_CONV_BWD_1D),
    "iree 1d vs 2d dynamic batch": (IREE_CONV_BWD_1D, IREE_CONV_BWD_2D_DYNAMIC),
    "iree 2d dynamic batch vs 3d": (IREE_CONV_BWD_2D_DYNAMIC, IREE_CONV_BWD_3D),
    "linalg vs tosa, other SSA numbers and shapes": (LINALG_CONV_BWD_1D, TOSA_CONV_BWD_1D_DEPTHWISE),
    "tosa bf16 vs f32": (TOSA_CONV_2D_BF16, TOSA_CONV_2D_F32),
    "stablehlo constant 6 vs 3": (STABLEHLO_CONSTANT_INT_6, STABLEHLO_CONSTANT_INT_3),
    "torch channel error, other sizes and line": (TORCH_CHANNELS_2D, TORCH_CHANNELS_2D_OTHER.replace(":560)", ":548)")),
}


@pytest.mark.parametrize("first, second", list(SAME_BUG.values()), ids=list(SAME_BUG))
def test_same_bug_gives_same_signature(first, second):
    assert first != second
    assert signature("compile_error", "lower", first) == signature("compile_error", "lower", second)


def test_same_mismatch_on_other_shapes_gives_same_signature():
    first, second = mismatch_message((2, 3, 8, 8), 3), mismatch_message((4, 6, 5), 17, seed=1)
    assert first != second
    assert signature("mismatch", "compare", first) == signature("mismatch", "compare", second)
    assert (signature("mismatch", "compare", non_finite_message((2, 4, 6, 6)))
            == signature("mismatch", "compare", non_finite_message((3, 7))))


def test_same_crash_with_other_output_gives_same_signature():
    other = SEGV_IN_PATTERN.replace("0x00007f3a2b1c0740", "0x00007f0011223344").replace("line 85", "line 90")
    assert signature("crashed", "lower", SEGV_IN_PATTERN, PATTERN) == signature("crashed", "lower", other, PATTERN)


def test_same_hang_with_other_timeout_gives_same_signature():
    other = HUNG_IN_PATTERN.replace("after 60 s", "after 300 s")
    assert signature("timed_out", "lower", HUNG_IN_PATTERN, PATTERN) == signature("timed_out", "lower", other, PATTERN)


# ------------------------------------------------------- property 2: different bugs, different signatures

ONE_BUG_EACH = {
    "operand #1 vs operand #2": (("compile_error", "lower", LINALG_CONV_GROUPS_OPERAND_1, None),
                                 ("compile_error", "lower", LINALG_CONV_GROUPS_OPERAND_2, None)),
    "dimension #2 vs dimension #3": (("compile_error", "lower", LINALG_CONV_GROUPS_OPERAND_1, None),
                                     ("compile_error", "lower", LINALG_CONV_GROUPS_DIMENSION_3, None)),
    "reassociation map #0 vs #1": (("compile_error", "lower", LINALG_COLLAPSE_SHAPE, None),
                                   ("compile_error", "lower", LINALG_COLLAPSE_SHAPE_MAP_1, None)),
    "convolution vs convolution_backward": (("compile_error", "lower", TOSA_CONV_2D_F32, None),
                                            ("compile_error", "lower", TOSA_CONV_BWD_1D_DEPTHWISE, None)),
    "two feature_group_count checks": (("compile_error", "lower", STABLEHLO_FEATURE_GROUP_MULTIPLE, None),
                                       ("compile_error", "lower", STABLEHLO_FEATURE_GROUP_KERNEL, None)),
    "RuntimeError vs ValueError": (("runtime_error", "run", TORCH_CHANNELS_2D, None),
                                   ("runtime_error", "run", "Value" + TORCH_CHANNELS_2D.removeprefix("Runtime"), None)),
    "grad_input vs grad_weight mismatch": (("mismatch", "compare", mismatch_message((4, 4), 2), None),
                                           ("mismatch", "compare", mismatch_message((4, 4), 2, "grad_weight"), None)),
    "wrong values vs NaN": (("mismatch", "compare", mismatch_message((4, 4), 2, "output"), None),
                            ("mismatch", "compare", non_finite_message((4, 4)), None)),
    "SIGSEGV vs SIGABRT in one frame": (
        ("crashed", "lower", SEGV_IN_PATTERN, PATTERN),
        ("crashed", "lower", SEGV_IN_PATTERN.replace("SIGSEGV", "SIGABRT"), PATTERN)),
    "SIGSEGV in two frames": (("crashed", "lower", SEGV_IN_PATTERN, PATTERN),
                              ("crashed", "lower", SEGV_IN_PATTERN.replace(PATTERN, PASS), PASS)),
    "crash in run vs in compile": (("crashed", "run", "worker killed by SIGSEGV during phase run", None),
                                   ("crashed", "compile", "worker killed by SIGSEGV during phase compile", None)),
    "exit status 3 vs 1": (("crashed", "import", "worker exited with status 3 during phase import", None),
                           ("crashed", "import", "worker exited with status 1 during phase import", None)),
    "crash vs hang in one frame": (("crashed", "lower", SEGV_IN_PATTERN, PATTERN),
                                   ("timed_out", "lower", HUNG_IN_PATTERN, PATTERN)),
    "hang in lower vs in compile": (("timed_out", "lower", HUNG_IN_PATTERN, PATTERN),
                                    ("timed_out", "compile", HUNG_IN_PATTERN, PATTERN)),
    "empty compile vs runtime error": (("compile_error", "lower", "", None), ("runtime_error", "lower", "", None)),
}


@pytest.mark.parametrize("first, second", list(ONE_BUG_EACH.values()), ids=list(ONE_BUG_EACH))
def test_different_bugs_give_different_signatures(first, second):
    assert signature(*first) != signature(*second)


# ------------------------------------------------ property 3: short, one line, never longer than MAX_LENGTH

LONG_LINE = "TorchMlirCompilerError: error: 'tosa.conv2d' op " + "operand type mismatch: tensor<2x3xf32> " * 200
STRESS = {
    "long diagnostic": ("compile_error", "lower", LONG_LINE, None),
    "long Python exception": ("runtime_error", "run", "ValueError: " + "shape [2, 3] " * 500, None),
    "long mismatch": ("mismatch", "compare", "output_with_a_long_name: " * 100 + "; rest", None),
    "one long word": ("compile_error", "lower", "x" * 5000, None),
    "many lines": ("runtime_error", "run", "\n".join(f"line {i}" for i in range(1000)), None),
    "tabs and carriage returns": ("compile_error", "lower", "RuntimeError: a\tb\r\nc\rd", None),
    "only newlines": ("compile_error", "lower", "\n" * 50, None),
    "long crash output": ("crashed", "run", "worker killed by SIGSEGV during phase run\n" + "x" * 10000, None),
}
ALL_INPUTS = {**{k: v[:4] for k, v in EXPECTED.items()}, **STRESS}


@pytest.mark.parametrize("outcome, phase, message, frame", list(ALL_INPUTS.values()), ids=list(ALL_INPUTS))
def test_signature_is_short_and_one_line(outcome, phase, message, frame):
    result = signature(outcome, phase, message, frame)
    if outcome in ("passed", "not_run"):
        assert result is None
        return
    assert result and len(result) <= MAX_LENGTH
    assert "\n" not in result and "\r" not in result and "\t" not in result


def test_long_diagnostic_is_cut_to_exactly_max_length():
    assert len(signature("compile_error", "lower", LONG_LINE)) == MAX_LENGTH


def test_signature_starts_without_blanks():
    assert signature("compile_error", "lower", "\n\n   RuntimeError:   spaced   out  ") == "RuntimeError: spaced out"


# ------------------------------------------------------------------- bugs found by these tests, fixed
# Each of these failed against the first version of harness/signature.py.

LONG_FRAME = ("llvm::function_ref<void (mlir::Operation*)>::callback_fn<std::enable_if<!llvm::is_one_of<"
              "mlir::torch::Torch::AtenConvolutionBackwardOp, mlir::Operation*, mlir::Region*, mlir::Block*>::value, "
              "void>::type mlir::detail::walk<mlir::ForwardIterator>(mlir::Operation*)::{lambda(mlir::Operation*)#1}>")


@pytest.mark.parametrize("outcome", ["crashed", "timed_out"])
def test_long_frame_is_cut_to_max_length(outcome):
    message = f"worker killed by SIGSEGV in {LONG_FRAME} during phase lower"
    assert len(signature(outcome, "lower", message, LONG_FRAME)) <= MAX_LENGTH


@pytest.mark.parametrize("problem", [MISMATCH_SHAPE, MISMATCH_DTYPE, MISMATCH_COUNT])
def test_mismatch_on_a_later_input_set_has_the_same_signature(problem):
    later = problem + f" (input set 2: shapes {[[2, 3, 8, 8], [4, 3, 3, 3]]})"  # harness.worker.execute's wording
    assert signature("mismatch", "compare", later) == signature("mismatch", "compare", problem)


BACKWARD_OUTPUTS = ("grad_input", "grad_weight", "grad_bias")


def several_outputs_message(bad_names, index=0):
    """compare()'s message for the three backward outputs with `bad_names` off by 1, and the note
    harness.worker.execute adds on a later input set."""
    want = [out(np.random.default_rng(i).uniform(-1, 1, (4, 4)), name) for i, name in enumerate(BACKWARD_OUTPUTS)]
    got = [out(w.values + (w.name in bad_names), w.name) for w in want]
    message = compare(got, want, "float32", (1e-6, 1e-6), {})
    first, newline, rest = message.partition("\n")
    return f"{first} (input set {index + 1}: shapes [[4, 4]]){newline}{rest}" if index else message


@pytest.mark.parametrize("index", [0, 1])
def test_a_bug_in_one_output_keeps_its_signature_when_other_outputs_fail_too(index):
    alone = signature("mismatch", "compare", several_outputs_message({"grad_input"}, index))
    assert alone == "mismatch: grad_input: N of N elements differ beyond tolerance"
    for others in ({"grad_weight"}, {"grad_bias"}, {"grad_weight", "grad_bias"}):
        message = several_outputs_message({"grad_input"} | others, index)
        assert message.startswith(f"{len(others) + 1} of 3 outputs differ: grad_input, ")
        assert signature("mismatch", "compare", message) == alone
    both = signature("mismatch", "compare", several_outputs_message({"grad_weight", "grad_bias"}, index))
    assert both == alone.replace("grad_input", "grad_weight")   # the first output that fails leads


def test_only_a_mismatch_skips_the_outputs_line():
    text = "2 of 3 outputs differ: a, b\nsomething else"
    assert signature("runtime_error", "run", text) == "N of N outputs differ: a, b"


def test_cut_signature_does_not_end_in_a_blank():
    result = signature("runtime_error", "run", "ValueError: " + "shape [2, 3] " * 500)
    assert result == result.rstrip()


# An op without results is dumped without "%N = ", so _OP_DUMP does not cut it (derived message:
# the wording MLIR uses for an illegal op, on an op that has no results).
ZERO_RESULT_OP = ("TorchMlirCompilerError: error: failed to legalize operation 'torch.overwrite.tensor.contents' "
                  "that was explicitly marked illegal: \"torch.overwrite.tensor.contents\"(%3, %arg0) : "
                  "(!torch.vtensor<[2,3,8,8],f32>, !torch.tensor<[2,3,8,8],f32>) -> ()\n  note: see current operation")


def test_dump_of_an_op_without_results_is_cut():
    assert signature("compile_error", "lower", ZERO_RESULT_OP) == (
        "failed to legalize operation 'torch.overwrite.tensor.contents' that was explicitly marked illegal")


def test_the_rank_of_a_type_is_normalised_like_its_sizes():
    """The bf16 argument bug on a 1-D, 2-D and 3-D case, and dynamic batches: one signature."""
    messages = [f"JitError: error: argument must be a memref of f16, f32, f64, but got 'memref<{dims}xbf16>'"
                for dims in ("2x3x8", "2x3x8x8", "?x3x8x8x8")]
    assert len({signature("compile_error", "compile", m) for m in messages}) == 1
    assert signature("compile_error", "compile", messages[0]).endswith("but got 'memref<...xbf16>'")
