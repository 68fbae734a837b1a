"""The stages each built-in backend's record holds after a passed case, in order: what the
self-tests expect of them. The harness has no such list: each backend class names its own
(Backend.STAGES), and a record carries them in that order."""
MLIR_STAGES = ("exported", "decomposed", "torch_ir", "torch_backend_ir", "linalg_ir", "llvm_ir")
MLIR_ONNX_STAGES = ("onnx", "torch_backend_ir", "linalg_ir", "llvm_ir")
IREE_STAGES = ("exported", "decomposed", "torch_ir", "input_ir", "vmfb")
INDUCTOR_STAGES = ("captured", "aot_graph", "inductor_code")
ONNXRUNTIME_STAGES = ("onnx",)
BACKEND_STAGES = (MLIR_STAGES, MLIR_ONNX_STAGES, IREE_STAGES, INDUCTOR_STAGES, ONNXRUNTIME_STAGES)
