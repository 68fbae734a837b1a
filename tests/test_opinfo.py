"""The OpInfo family: the manifest of op_db, selection, exclusions, building a sample, comparing it.

The manifest comes from the real op_db of the pinned torch (built once per cache directory); the
builder and the comparison run in this process, on the real eager and linalg-on-tensors backends.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from extras import needs

from harness.backend_interface import case_context, create_backend
from harness.case_data import Case
from harness.families.opinfo import OPINFO, OPINFO_GRAD
from harness.families.opinfo import params as opinfo_params
from harness.families.opinfo.params import case_id, exclusions, load_manifests, samples
from harness.outcomes import Outcome
from harness.worker.compare import Output, compare

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def manifest() -> dict:
    return load_manifests(("float32",))["float32"]


def opinfo_case(op: str, variant: str = "", index: int = 0, dtype: str = "float32") -> Case:
    return Case(case_id("opinfo", op, variant, dtype, index), "opinfo",
                {"op": op, "variant": variant, "dtype": dtype, "sample_index": index})


def run(case: Case, backend: str) -> tuple[Outcome, str, dict]:
    """One case through the worker's execute(), in this process, on a real backend (its tests: e2e)."""
    from harness.project_files.configs import load_configs
    from harness.worker.execute import execute

    config = load_configs([REPO / "configs"])[backend].to_json()
    instance = create_backend(backend, config["class"], config.get("options", {}))
    family = {f.name: f for f in (OPINFO, OPINFO_GRAD)}[case.family].worker_request(case.params)
    context = case_context(case.to_json(), lambda phase: None)
    outcome, message, _ = execute(case.to_json(), family, config, instance, context)
    return outcome, message, context.notes


# ------------------------------------------------------------------------------------ manifest

def test_the_manifest_lists_every_float32_sample_of_op_db(manifest):
    ops = manifest["ops"]
    assert len(ops) == 702 and sum("float32" in op["dtypes"] for op in ops) == 677
    # made with requires_grad for ops that support autograd, as PyTorch's gradient tests make them: a few
    # ops then give more samples than the 18,762 of requires_grad=False
    assert sum(len(op["samples"].get("float32", ())) for op in ops) == 18_835
    counts = exclusions({"float32": manifest}, "opinfo")
    assert {rule: n for rule, n in counts.items() if n["ops"]} == {
        "no_cpu": {"ops": 3, "samples": 0}, "dtype": {"ops": 22, "samples": 0},
        "cuda_only": {"ops": 5, "samples": 39}, "sparse": {"ops": 2, "samples": 24},
        "size": {"ops": 1, "samples": 12}}
    cases = list(samples({"float32": manifest}, ("opinfo",)))
    assert len({s.id for s in cases}) == len(cases) == 18_835 - 39 - 24 - 12
    assert sum(1 for _ in samples({"float32": manifest}, ("opinfo_grad",))) == 14_068


def test_selection_takes_the_first_n_samples_per_op():
    limit = {text: opinfo_params.sample_limit(opinfo_params.parse_samples(text)) for text in ("3", "first", "all")}
    assert limit == {"3": 3, "first": 1, "all": None}
    manifest = {"ops": [{"name": "abs", "variant": "", "autograd": True, "excluded": {"float32": {"1": "rule"}},
                         "no_grad_input": {}, "samples": {"float32": ["a", "b", "c", "d"]}}]}
    assert [s.index for s in samples({"float32": manifest}, ("opinfo",), 3)] == [0, 2]   # 1 is excluded
    assert [s.index for s in samples({"float32": manifest}, ("opinfo",))] == [0, 2, 3]
    with pytest.raises(ValueError, match="use first, all, or a positive number"):
        opinfo_params.parse_samples("0")


@pytest.mark.e2e   # a fresh process that lists OpInfo's samples, as a worker does (torch's op_db)
def test_a_sample_is_the_same_in_a_fresh_worker_process(manifest):
    """Workers run with PYTHONHASHSEED=0 as the manifest writer does: meshgrid's set order holds."""
    want = {(op["name"], op["variant"]): op["samples"]["float32"][1] for op in manifest["ops"]
            if op["name"] in ("meshgrid", "abs") and len(op["samples"].get("float32", ())) > 1}
    code = ("import json, sys; from harness.families.opinfo.manifest import op_table, samples, fingerprint\n"
            "keys = json.loads(sys.argv[1])\n"
            "print(json.dumps([fingerprint(next(samples(op_table()[tuple(k)], 'float32', 1))) for k in keys]))")
    done = subprocess.run([sys.executable, "-c", code, json.dumps(list(want))], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONHASHSEED="0"), timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == list(want.values())


def test_the_rules_file_names_real_ops_with_a_reason(manifest):
    rules = yaml.safe_load((REPO / "harness" / "families" / "opinfo" / "rules.yaml").read_text())
    names = [(op["name"], op["variant"]) for op in manifest["ops"]]
    import fnmatch
    for rule in rules:
        assert set(rule) <= {"family", "op", "variant", "dtype", "unchecked", "tolerance", "selects", "reason"}, rule
        assert rule["reason"] and {"unchecked", "tolerance", "selects"} & set(rule), rule
        assert any(fnmatch.fnmatchcase(n, rule["op"]) and fnmatch.fnmatchcase(v, rule.get("variant", "*"))
                   for n, v in names), f"{rule['op']} matches no OpInfo"


# ------------------------------------------------------------------------------- build and compare

@pytest.mark.e2e
def test_eager_passes_a_sample_and_the_params_name_it():
    outcome, message, _ = run(opinfo_case("topk"), "eager")
    assert (outcome, message) == (Outcome.PASSED, "")
    assert opinfo_params.validate({"op": "topk", "sample_index": 0})["fingerprint"].startswith("float32[5, 10, 5], 3 #")


@pytest.mark.e2e
def test_a_random_op_is_compared_by_shape_and_dtype_and_the_notes_say_so():
    outcome, _, notes = run(opinfo_case("normal", "number_mean"), "eager")
    assert outcome is Outcome.PASSED
    assert notes["values_not_compared"] == "*: a random op (its values after export differ from eager's)"


@pytest.mark.e2e
def test_a_measured_tolerance_is_applied_and_noted():
    outcome, _, notes = run(opinfo_case("polygamma", "polygamma_n_0"), "eager")
    assert outcome is Outcome.PASSED and "float32 polygamma" in notes["tolerance"]


@pytest.mark.e2e
def test_complex_and_sparse_outputs_are_compared_as_values():
    for op in ("fft.fft", "to_sparse"):
        assert run(opinfo_case(op), "eager")[:2] == (Outcome.PASSED, "")


@pytest.mark.e2e
@pytest.mark.parametrize("backend, ops", [
    # The JIT made 0-d inputs 1-d, took the running statistics batch norm writes into for its
    # outputs, and read uint8 results as int8.
    ("linalg-on-tensors", ("__radd__", "nn.functional.batch_norm", "byte")),
    # IREE imported training IR with its in-place ops, read uint8 as int8 and a float result as a buffer.
    pytest.param("iree-llvm-cpu", ("masked_fill", "byte", "item"), marks=needs("iree")),
    # torch.compile stopped at op_db's seeding wrapper around random ops.
    ("inductor", ("bernoulli", "nn.functional.dropout")),
])
def test_backends_take_what_opinfo_samples_give_them(tmp_path, backend, ops):
    """Harness bugs the OpInfo cases found, one backend each (in a pytest process of its own:
    torch_mlir is not imported into this one, test_packages needs it so)."""
    cases = [f"cases/opinfo.py::opinfo/{op}/default/float32/0[{backend}]" for op in ops]
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
                          f"--backend={backend}", f"--report-json={tmp_path / 'r.json'}", *cases], cwd=REPO,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:]
    results = json.loads((tmp_path / "r.json").read_text())["results"]
    assert [(r["outcome"], r["expected"]) for r in results] == [("passed", "pass")] * len(ops)
    assert sorted(r["subject"] for r in results) == sorted(ops)   # what the triage report counts failures by


def test_integer_boolean_and_scalar_outputs_are_compared_exactly():
    def out(values, dtype, scalar=False):
        return Output("out", np.asarray(values), dtype, python_scalar=scalar)

    tol = (1e-6, 1e-6)
    assert compare([out([1, 2], "int64")], [out([1, 2], "int64")], "float32", tol, {},
                   reference=[out([1, 3], "int64")]) == ("out: 1 of 2 elements differ (compared exactly); "
                                                        "first at index [1]: got 2, want 3")
    assert compare([out([True], "bool")], [out([True], "bool")], "float32", tol, {},
                   reference=[out([True], "bool")]) is None
    assert compare([out(3, "int32")], [out(3, "int64")], "float32", tol, {},
                   reference=[out(3, "int64", scalar=True)]) is None  # a Python int: any int width
    assert compare([out([1.0 + 1e-7], "float64")], [out([1.0], "float64")], "float32", tol, {},
                   reference=[out([1.0], "float64")], tolerance_of=lambda d: (1e-12, 1e-12)) is None
    assert compare([out([9.0], "float32")], [out([1.0], "float32")], "float32", tol, {},
                   unchecked=["out"]) is None


def test_index_outputs_are_compared_by_the_values_they_select():
    """Where two elements tie, either index is right; an index of a different value is wrong."""
    source = np.array([[1.0, 3.0, 3.0, np.nan], [2.0, 2.0, 0.0, np.nan]])

    def indices(values):
        return Output("indices", np.asarray(values), "int64")

    def check(got, want, dim=1):
        return compare([indices(got)], [indices(want)], "float32", (1e-6, 1e-6), {},
                       reference=[indices(want)], selections={"indices": (source, dim)})

    assert check([2, 0], [1, 1]) is None                    # the other 3.0 and the other 2.0
    assert check([3, 3], [3, 3]) is None                    # NaN selects NaN
    assert check([0, 0], [1, 1]) == ("indices: 1 of 2 elements differ (by the input's values they select, "
                                     "exactly; ties make the indices ambiguous); first at index [0]: got 1.0, "
                                     "want 3.0")
    assert check([[1, 2], [0, 1]], [[2, 1], [1, 0]]) is None   # topk/sort-shaped: same rank as the input
    assert check(5, 4, dim=None) is None                    # argmax of the flattened input: 2.0 either way
    assert "indices out of range" in check([4, 0], [1, 1])


@pytest.mark.e2e
def test_a_sort_with_ties_passes_and_its_notes_say_how_indices_were_compared(manifest):
    """Every sample of the index ops whose rules select by value passes on eager, and the notes say so."""
    ops = [("topk", ""), ("sort", ""), ("argsort", ""), ("max", "reduction_with_dim"), ("kthvalue", ""),
           ("argmax", ""), ("cummin", ""), ("median", ""), ("mode", "")]
    counts = {(op["name"], op["variant"]): len(op["samples"]["float32"]) for op in manifest["ops"]
              if (op["name"], op["variant"]) in ops}
    noted = 0
    for (op, variant), count in counts.items():
        for index in range(count):
            outcome, message, notes = run(opinfo_case(op, variant, index), "eager")
            assert (outcome, message) == (Outcome.PASSED, ""), (op, index)
            noted += "indices_compared_by_value" in notes
    assert noted >= len(ops)


@pytest.mark.e2e
@pytest.mark.parametrize("case", [pytest.param("opinfo/topk/default/float32/0", marks=pytest.mark.nightly),  # CI time
                                  "opinfo_grad/nn.functional.conv2d/default/float32/0",
                                  "opinfo_grad/chalf/default/float32/0"])  # complex32, which numpy has not
def test_the_bundle_of_an_opinfo_case_reproduces_it_without_the_harness(tmp_path, case):
    from harness.bundle_layout import bundle_path

    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", "--backend=eager",
                          f"--artifacts-dir={tmp_path}", "--artifacts=all", f"cases/opinfo.py::{case}[eager]"],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:]
    bundle = bundle_path(tmp_path, "eager", case)
    assert sorted(p.name for p in (bundle / "inputs").iterdir())[0].startswith("set0_")
    done = subprocess.run([sys.executable, "repro.py"], cwd=bundle, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "differ" not in done.stdout or " 0 of " in done.stdout, done.stdout
