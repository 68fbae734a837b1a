"""The JIT's machine code as a shared library (harness.stages.native_code): linked from the
ExecutionEngine's object file, loaded back, it gives the engine's results; a linker that fails or
is missing raises, so the stage is computed and not cached."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

torch = pytest.importorskip("torch")
fx = pytest.importorskip("torch_mlir.fx")

import harness  # noqa: E402
from harness.backends.mlir_jit import JitModule, LlvmModule  # noqa: E402
from harness.stages import native_code  # noqa: E402


class Scaled(torch.nn.Module):
    """Two results of two element types, so the consume function takes two memrefs."""

    def forward(self, x, w):
        y = torch.nn.functional.conv2d(x, w, padding=1).relu()
        return y, y.argmax(dim=1)


def lowered() -> LlvmModule:
    config = Path(harness.__file__).parent / "configs" / "linalg-on-tensors.yaml"
    passes = yaml.safe_load(config.read_text())["options"]["llvm_lowering_passes"]
    module = fx.export_and_import(Scaled(), torch.ones(1, 2, 5, 5), torch.ones(3, 2, 3, 3),
                                  output_type="linalg-on-tensors", func_name="scaled")
    return LlvmModule(module, "scaled", passes)


@pytest.fixture
def compiler(monkeypatch):
    """Sets $CC for `native_code.linker`, whose answer is remembered per process."""
    def use(command: str) -> None:
        monkeypatch.setenv("CC", command)
        native_code.linker.cache_clear()

    yield use
    native_code.linker.cache_clear()


def test_the_shared_library_gives_the_engines_results(compiler):
    compiler("cc")
    if native_code.linker() is None:
        pytest.skip("no C compiler here")
    llvm = lowered()
    engine = llvm.jit()
    library = native_code.SharedLibrary(native_code.shared_library(engine))
    inputs = [torch.randn(1, 2, 5, 5), torch.randn(3, 2, 3, 3)]
    computed, loaded = JitModule(llvm, engine)(inputs), JitModule(llvm, library)(inputs)
    assert [r.dtype for r in loaded] == [np.float32, np.int64]
    assert all(np.array_equal(a, b) for a, b in zip(computed, loaded))
    want = Scaled()(*inputs)
    assert np.allclose(loaded[0], want[0].numpy(), atol=1e-5) and np.array_equal(loaded[1], want[1].numpy())


@pytest.mark.parametrize("command, error", [("false", "CalledProcessError"),
                                            ("/nonexistent/cc", "FileNotFoundError")])
def test_code_that_does_not_link_raises(compiler, command, error):
    compiler(command)
    with pytest.raises(Exception) as raised:
        native_code.shared_library(lowered().jit())
    assert type(raised.value).__name__ == error


def test_the_host_cpu_is_named_the_same_each_time():
    named = native_code.host_cpu()
    native_code.host_cpu.cache_clear()
    assert named and native_code.host_cpu() == named
