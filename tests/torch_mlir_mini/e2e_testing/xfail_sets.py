# In the shape of torch-mlir's projects/pt1/e2e_testing/xfail_sets.py: Python sets of test names,
# combined with |, - and -=, an `if` on the torch version, and upstream's kind of mistakes (a name
# no test has any more, a name listed twice). Measured with torch 2.13 and torch-mlir 20261001 on
# the harness's linalg-on-tensors backend (tests/test_torch_mlir_suite.py checks every entry).

from torch_mlir._version import torch_version_for_comparison, version
from torch_mlir_e2e_test.test_suite import COMMON_TORCH_MLIR_LOWERING_XFAILS

print("TORCH_VERSION_FOR_COMPARISON =", torch_version_for_comparison())

LINALG_XFAIL_SET = COMMON_TORCH_MLIR_LOWERING_XFAILS | {
    # control flow on a tensor's value: torch.export cannot trace it
    "DataDependentIf_basic",
    # renamed long ago; no test has this name any more
    "AddModuleOld_basic",
}

if torch_version_for_comparison() < version.parse("2.5.0.dev"):
    LINALG_XFAIL_SET = LINALG_XFAIL_SET | {
        # dynamic batch dims need torch 2.5
        "MatmulDynamicBatch_basic",
    }

LINALG_CRASHING_SET = {
    # SIGSEGV in DecomposeAtenNonzeroOp on a 0-d input
    "NonzeroCrash_basic",
}

FX_IMPORTER_XFAIL_SET = LINALG_XFAIL_SET | {
    "DataDependentIf_basic",  # branches on x.sum()
    # torch-mlir's FX importer has no sym_float (an int made a float): strict export records one
    "FloatIntAdd_basic",
    "TupleOutput_basic",
} - {"TupleOutput_basic"}

FX_IMPORTER_CRASHING_SET = LINALG_CRASHING_SET | {
    "NativeHang_basic",  # hangs in native code while torch.export traces it
    # needs torchvision
    "VisionIdentity_basic",
}

FX_IMPORTER_CRASHING_SET -= {"AddModuleOld_basic"}
