"""The JIT's machine code as a shared library (harness.stages.native_code): linked from the
ExecutionEngine's object file, loaded back, it gives the engine's results; a linker that fails or
is missing raises, so the stage is computed and not cached; `-z defs` refuses an object with an
unresolved symbol; the stage's key changes with the host CPU and opt_level, and shared_libs make
it uncacheable."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

torch = pytest.importorskip("torch")
fx = pytest.importorskip("torch_mlir.fx")

import harness  # noqa: E402
from harness.backend_interface import CaseContext  # noqa: E402
from harness.backends.mlir import MlirBackend  # noqa: E402
from harness.backends.mlir_jit import JitModule, LlvmModule  # noqa: E402
from harness.protocol import CacheSettings  # noqa: E402
from harness.stages import native_code, reuse  # noqa: E402


class Scaled(torch.nn.Module):
    """Two results of two element types, so the consume function takes two memrefs."""

    def forward(self, x, w):
        y = torch.nn.functional.conv2d(x, w, padding=1).relu()
        return y, y.argmax(dim=1)


CONFIG = Path(harness.__file__).parent / "configs" / "linalg-on-tensors.yaml"


def lowered() -> LlvmModule:
    passes = yaml.safe_load(CONFIG.read_text())["options"]["llvm_lowering_passes"]
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
    computed, loaded = JitModule(llvm.entry, engine)(inputs), JitModule(llvm.entry, library)(inputs)
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


class ObjectFromC:
    """An object file compiled by the C compiler from `source` (what the JIT's object file is to the linker)."""

    def __init__(self, source: str):
        self.source = source

    def object_file(self, path: Path) -> None:
        c = path.with_suffix(".c")
        c.write_text(self.source)
        subprocess.run([native_code.linker(), "-c", "-fPIC", "-o", str(path), str(c)], check=True)


def test_an_object_that_calls_an_undefined_function_does_not_link(compiler):
    compiler("cc")
    if native_code.linker() is None:
        pytest.skip("no C compiler here")
    assert native_code.shared_library(ObjectFromC("double f(double x) { return x * 2; }\n"))[:4] == b"\x7fELF"
    with pytest.raises(subprocess.CalledProcessError) as raised:
        native_code.shared_library(ObjectFromC("int nowhere(int);\nint f(int x) { return nowhere(x); }\n"))
    assert re.search(r"undefined (reference|symbol).*nowhere", raised.value.stderr.decode()), raised.value.stderr


def machine_code_status(options: dict) -> str:
    """The `machine_code` stage's cache status when linalg-on-tensors' lower_to_jit compiles `Scaled`
    with these options over the config's, in a worker whose stage cache is on."""
    module = fx.export_and_import(Scaled(), torch.ones(1, 2, 5, 5), torch.ones(3, 2, 3, 3), output_type="torch",
                                  func_name="scaled")
    case = CaseContext(lambda phase: None)
    backend = MlirBackend("linalg-on-tensors", {**yaml.safe_load(CONFIG.read_text())["options"], **options})
    backend.lower_to_jit(case, module, "scaled")
    return case.cache["machine_code"]


@pytest.fixture
def stage_cache(monkeypatch, tmp_path, compiler):
    reuse.use_cache(CacheSettings("on", str(tmp_path / "stages"), 1 << 30))
    compiler("cc")
    if native_code.linker() is None:
        pytest.skip("no C compiler here")
    yield
    reuse.use_cache(None)
    native_code.host_cpu.cache_clear()


def another_cpu(monkeypatch, tmp_path) -> None:
    """host_cpu() reads a /proc/cpuinfo whose first CPU lacks the last of this one's features."""
    first = Path("/proc/cpuinfo").read_text().split("\n\n")[0]
    fewer = re.sub(r"^((?:flags|Features)\s*:.*) \S+$", r"\1", first, count=1, flags=re.M)
    assert fewer != first, "no feature list in /proc/cpuinfo"
    (tmp_path / "cpuinfo").write_text(fewer)
    monkeypatch.setattr(native_code, "Path", lambda *parts: tmp_path / "cpuinfo" if parts == ("/proc/cpuinfo",)
                        else Path(*parts))
    native_code.host_cpu.cache_clear()


def test_the_machine_codes_key_changes_with_the_cpu_and_opt_level_and_shared_libs_are_not_cached(
        stage_cache, monkeypatch, tmp_path):
    if not native_code.host_cpu():
        pytest.skip("this machine's CPU cannot be read")
    assert machine_code_status({}) == "miss"
    assert machine_code_status({}) == "hit"
    assert machine_code_status({"opt_level": 3}) == "miss"
    assert machine_code_status({"opt_level": 3}) == "hit"
    assert machine_code_status({"shared_libs": ["libm.so.6"]}) == "uncacheable"
    another_cpu(monkeypatch, tmp_path)
    assert machine_code_status({}) == "miss"


def test_the_mlir_backend_imports_torch_mlir_only_where_it_compiles():
    """A warm rerun runs machine code the stage cache holds: creating the backend and running that
    code import no torch-mlir (the fork server imports it for the workers after the first)."""
    probe = ("import sys; import harness.backends.mlir, harness.backends.mlir_jit; "
             "print(sorted(m for m in sys.modules if m.startswith('torch_mlir')))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr
    assert "torch_mlir.execution_engine" in MlirBackend.COMPILER_MODULES
