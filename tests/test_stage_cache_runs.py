"""The stage cache in real runs (linalg-on-tensors, tosa, stablehlo: the MLIR backends cache the
exported, decomposed and imported programs and the JIT's machine code; iree-llvm-cpu those, its input IR and its vmfb;
onnxruntime torch.onnx's export): a warm rerun hits every cached stage and gives the outcomes and
fingerprints of an uncached run; a rebuilt torch-mlir (a comment added to one of its files) still
hits the export and misses from the decomposition on; the direct lowering after the decomposition
on one warm cache gives its uncached outcomes, and the diff of the two names the IR it changed;
entries cut in half are recomputed with one warning line."""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from e2e_support import python_path_env

# Three cases: a convolution and two MLPs (-k "module/mlp" alone also takes their int8, float64 and
# dynamic variants: seven cases, over twice the time).
SELECTION = "(conv_backward/1d/basic or module/mlp) and not int8 and not float64 and not dynamic"
DIRECT_BUILD = Path(__file__).resolve().parents[1] / "examples" / "direct-lowering" / "configs"
CACHED = ("exported", "decomposed", "torch_ir")
IREE_CACHED = (*CACHED, "input_ir", "vmfb")
LINKS = shutil.which("cc", path="/usr/bin:/bin") is not None   # the JIT's code is cached where cc links it


def run(project: Path, backend: str, cache: str, *more: str, python_path: str = "", selection: str = SELECTION) -> dict:
    """The run's records by case, and its summary as "summary"."""
    done = subprocess.run([sys.executable, "-m", "pytest", "--pyargs", "harness.cases", f"--backend={backend}",
                           "-k", selection, "-n", "0", f"--cache={cache}", "--cache-dir=stages", "--report-json=r.json",
                           "-p", "no:cacheprovider", *more], cwd=project, capture_output=True, text=True, timeout=900,
                          env={"PYTHONPATH": os.pathsep.join(filter(None, [python_path, python_path_env()])),
                               "PATH": "/usr/bin:/bin", "HOME": str(project),
                               # the collection's own caches (ONNX node tests: 30 s), built once a session
                               "TORCH_BACKEND_E2E_CACHE": os.environ["TORCH_BACKEND_E2E_CACHE"]})
    assert done.returncode in (0, 1), done.stdout + done.stderr
    records = {(r["case"], r["backend"]): r for r in json.loads((project / "r.json").read_text())["results"]}
    return {**records, "summary": done.stdout}


def outcomes(records: dict) -> dict:
    return {key: (r["outcome"], r["phase"], r["fingerprints"], r["sizes"]) for key, r in records.items()
            if key != "summary"}


def statuses(records: dict, stage: str, outcome: str = "passed") -> set[str]:
    return {r["cache"].get(stage) for key, r in records.items() if key != "summary" and r["outcome"] == outcome}


def remembered(records: dict) -> tuple[set, set]:
    """The cache statuses of the failures in export, and of those after it (in the lowering)."""
    failed = [r for key, r in records.items() if key != "summary" and r["outcome"] == "compile_error"]
    return ({r["cache"].get("export_failure") for r in failed if r["phase"] == "export"},
            {r["cache"].get("lowering_failure") for r in failed if r["phase"] != "export"})


def findings(record: dict) -> tuple:
    return tuple(record[field] for field in ("notes", "ops", "lowering", "decomposed_into", "sizes", "margins"))


def of_backend(records: dict, backend: str) -> dict:
    return {key: r for key, r in records.items() if key != "summary" and key[1] == backend}


@pytest.mark.e2e
def test_a_warm_rerun_hits_every_cached_stage_with_the_uncached_outcomes(tmp_path):
    """And a lowering that fails (grouped convolution_backward's decomposition, on all three) and an
    export that fails (an unsized grad_bias) fail again from their remembered failures, with the
    messages, notes and fingerprints they had."""
    backend = "linalg-on-tensors,tosa,stablehlo"   # one run of each kind for the three: CI's time
    selection = (f"{SELECTION} or (conv_backward/2d/groups2 and not groups2_) "
                 "or (parity/ConvolutionBackwardModule2D and not Padded)")
    uncached = run(tmp_path, backend, "off", selection=selection)
    assert statuses(uncached, "exported") == {"off"}
    cold = run(tmp_path, backend, "on", selection=selection)
    assert outcomes(cold) == outcomes(uncached)
    assert "miss" in statuses(cold, "exported")   # the three backends export one program alike: it hits after
    exports, lowerings = remembered(cold)
    assert "miss" in exports and lowerings == {"miss"}   # the three share an export, and its failure
    warm = run(tmp_path, backend, "on", selection=selection)
    assert outcomes(warm) == outcomes(uncached)
    assert all(statuses(warm, stage) == {"hit"} for stage in CACHED), warm["summary"]
    assert statuses(warm, "machine_code") == {"hit" if LINKS else "uncacheable"}
    goldens = [{r["cache"].get("golden") for key, r in records.items() if key != "summary" and "conv" in key[0]}
               for records in (uncached, cold, warm)]   # the module family's cases give their goldens
    assert goldens == [{"off"}, {"miss", "hit"}, {"hit"}]   # the three backends' cold runs share each
    # a lowering that went well, remembered with its machine code: nothing of it computed again
    lowered = (statuses(cold, "lowering"), statuses(warm, "lowering"))
    assert lowered == (({"miss"}, {"hit"}) if LINKS else ({None}, {None}))
    assert all(findings(warm[key]) == findings(uncached[key]) for key in warm if key != "summary")
    assert remembered(warm) == ({"hit"}, {"hit"}), warm["summary"]
    failed = [key for key in warm if key != "summary" and warm[key]["outcome"] == "compile_error"]
    assert ("conv_backward/2d/groups2", "linalg-on-tensors") in failed   # 1d/basic fails on tosa and stablehlo
    assert all((warm[key]["message"], warm[key]["notes"]) == (uncached[key]["message"], uncached[key]["notes"])
               for key in failed)
    assert "stage cache: hits golden " in warm["summary"] and "s of stage work saved" in warm["summary"]


@pytest.mark.e2e
@pytest.mark.extra("iree", "onnx")
@pytest.mark.nightly   # CI time: CI keeps the MLIR backends' warm rerun (above)
def test_a_warm_rerun_loads_the_vmfb_and_the_onnx_export_with_the_computed_outcomes(tmp_path):
    backend = "iree-llvm-cpu,onnxruntime"
    selection = "(conv_backward/1d/basic or module/mlp_normal_inputs) and not int8"
    computed = run(tmp_path, backend, "write", selection=selection)   # every stage computed, and written
    assert statuses(of_backend(computed, "iree-llvm-cpu"), "vmfb") == {"miss"}
    warm = run(tmp_path, backend, "on", selection=selection)
    assert outcomes(warm) == outcomes(computed) and len(outcomes(warm)) == 4
    assert all(statuses(of_backend(warm, "iree-llvm-cpu"), stage) == {"hit"} for stage in IREE_CACHED), warm["summary"]
    assert statuses(of_backend(warm, "onnxruntime"), "onnx") == {"hit"}   # torch.onnx fails on conv_backward


def source_build_of_torch_mlir(folder: Path) -> Path:
    """torch-mlir as a source build on PYTHONPATH: the installed files linked, one of them copied."""
    installed = Path(next(iter(importlib.util.find_spec("torch_mlir").submodule_search_locations)))
    package = folder / "torch_mlir"
    package.mkdir(parents=True)
    for entry in installed.iterdir():
        if entry.name not in ("__pycache__", "compiler_utils.py"):
            (package / entry.name).symlink_to(entry)
    (package / "compiler_utils.py").write_text((installed / "compiler_utils.py").read_text())
    return package


@pytest.mark.e2e
def test_a_rebuilt_torch_mlir_hits_the_export_and_misses_from_the_decomposition(tmp_path):
    build = source_build_of_torch_mlir(tmp_path / "build")
    first = run(tmp_path, "linalg-on-tensors", "on", python_path=str(build.parent))
    (build / "compiler_utils.py").write_text((build / "compiler_utils.py").read_text() + "# rebuilt\n")
    rebuilt = run(tmp_path, "linalg-on-tensors", "on", python_path=str(build.parent))
    assert outcomes(rebuilt) == outcomes(first)
    assert statuses(rebuilt, "exported") == {"hit"}
    assert "miss" in statuses(rebuilt, "decomposed")   # cases sharing a program share its decomposition
    assert statuses(rebuilt, "torch_ir") == {"miss"}   # named for its case: one entry per case
    assert statuses(rebuilt, "machine_code") == {"miss" if LINKS else "uncacheable"}   # torch-mlir's LLVM compiled it


@pytest.mark.e2e
def test_the_direct_lowering_on_a_warm_cache_gives_its_uncached_outcomes_and_changes_the_ir(tmp_path):
    """The direct lowering as a build of linalg-on-tensors (examples/direct-lowering: its options under
    the built-in's name): it reuses the decomposition's import, gives its uncached outcomes, and
    `diff --expect-same-ir` names the case whose Torch backend IR it changed."""
    selection, direct_build = "conv_backward/1d/basic or conv_backward/2d/basic", f"--configs-dir={DIRECT_BUILD}"
    run(tmp_path, "linalg-on-tensors", "on", selection=selection)
    (tmp_path / "r.json").rename(tmp_path / "decomposition.json")
    direct = run(tmp_path, "linalg-on-tensors", "on", direct_build, selection=selection)
    assert statuses(direct, "torch_ir") == {"hit"}   # the same program, imported the same way
    decomposition = {(r["case"], r["backend"]): r for r in json.loads((tmp_path / "decomposition.json").read_text())
                     ["results"]}
    basic = ("conv_backward/2d/basic", "linalg-on-tensors")   # the records say which path the op took
    assert decomposition[basic]["lowering"] == {"aten.convolution_backward": "decomposed"}
    assert set(decomposition[basic]["decomposed_into"]) >= {"aten.convolution"}
    assert direct[basic]["lowering"] == {"aten.convolution_backward": "kept"} and not direct[basic]["decomposed_into"]
    assert direct[basic]["ops"] == decomposition[basic]["ops"] == {"aten.convolution_backward": 1}
    diff = subprocess.run([sys.executable, "-m", "harness", "diff", "decomposition.json", "r.json", "--expect-same-ir"],
                          cwd=tmp_path, capture_output=True, text=True, env={"PYTHONPATH": python_path_env()})
    assert diff.returncode == 1, diff.stdout + diff.stderr
    assert diff.stderr.splitlines()[0] == "ir changed: conv_backward/2d/basic [linalg-on-tensors] at torch_backend_ir"
    assert "1d/basic" not in diff.stderr   # the decomposition takes the direct lowering there too
    assert outcomes(direct) == outcomes(run(tmp_path, "linalg-on-tensors", "off", direct_build, selection=selection))


@pytest.mark.e2e
def test_entries_cut_in_half_are_recomputed_with_one_warning(tmp_path):
    cold = run(tmp_path, "linalg-on-tensors", "on")
    entries = [p for p in (tmp_path / "stages" / "entries").rglob("*") if p.is_file()]
    for entry in entries:
        entry.write_bytes(entry.read_bytes()[:entry.stat().st_size // 2])
    cut = run(tmp_path, "linalg-on-tensors", "on")
    assert outcomes(cut) == outcomes(cold)
    warnings = [line for line in cut["summary"].splitlines() if line.startswith("WARNING: stage cache:")]
    assert len(warnings) == 1 and "is damaged" in warnings[0] and "more like it" in warnings[0], cut["summary"]
    assert all(p.stat().st_size > 0 for p in entries)   # written again whole
