"""`python -m harness fuzz`: the strategy, the search, grouping and shrinking, determinism, the CLI.

The runs use a tiny project in a temporary directory: configs/eager.yaml from the repo, and
`fuzz-planted`, a PlantedBugBackend (tests/fuzz_backends.py, copied into the project root where
the workers import it) whose transposed convolutions fail to lower and grouped ones fail to
compile. One worker pool serves the in-process runs, so torch is imported once.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from e2e_support import REPO, python_path_env
from hypothesis import HealthCheck, given, settings

from harness.backend_interface import load_object
from harness.cli import main
from harness.controller.pool import WorkerPool
from harness.expectations import load_expectations
from harness.families.conv import fuzz_space
from harness.families.conv.fuzz_space import FUZZ_FAMILIES as FAMILIES
from harness.families.conv.params import out_channels, output_spatial
from harness.families.loader import load_families
from harness.fuzz import engine as fuzz
from harness.fuzz import text as fuzz_text
from harness.fuzz.examples import Examples
from harness.project import Project
from harness.project_files.configs import load_configs
from harness.project_files.registry import load_cases_file
from harness.settings import Settings

FAMILY_TABLE = load_families([], REPO)

PLANTED = "fuzz-planted"
GROUPED = "RuntimeError: planted: grouped convolution with N groups is not supported"
TRANSPOSED = "RuntimeError: planted: failed to legalize operation 'fake.conv_transpose'"
# What Hypothesis must shrink each planted bug to: the smallest configuration that still shows it.
MINIMAL_GROUPED = {"input_shape": [1, 2, 1], "weight_shape": [2, 1, 1], "groups": 2}
MINIMAL_TRANSPOSED = {"input_shape": [1, 1, 1], "weight_shape": [1, 1, 1], "transposed": True}
# The backends a bad-input test knows: the built-in ones and those of its configs.
KNOWN = ", ".join(sorted({"eager", PLANTED, f"{PLANTED}-copy", "needs-missing"} | set(load_configs([]))))


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("fuzz_project")
    (root / "configs").mkdir()
    shutil.copy(REPO / "configs" / "eager.yaml", root / "configs" / "eager.yaml")
    shutil.copy(REPO / "tests" / "fuzz_backends.py", root / "fuzz_backends.py")
    for name in (PLANTED, f"{PLANTED}-copy"):
        (root / "configs" / f"{name}.yaml").write_text(f"name: {name}\nclass: fuzz_backends:PlantedBugBackend\n"
                                                        "timeout: 60\n"
                                                        "tolerances: {float32: {rtol: 1.0e-6, atol: 1.0e-6}}\n")
    return root


@pytest.fixture(scope="module")
def pool(project):   # workers: the tests that take it are e2e
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", python_path_env())
        # Two compute threads whatever runs the self-tests: under -n 2 a worker gets one, and with one
        # thread eager PyTorch 2.13 computes some bfloat16 3-D convolutions wrongly (measured: input
        # [1, 3, 2, 4, 4], weight [1, 3, 1, 1, 3], stride [1, 1, 2] is off by 2.3), which eager must not
        # be here.
        patch.setenv("OMP_NUM_THREADS", "2")
        workers = WorkerPool(project)
        yield workers
        workers.close()


def fuzzed(project, pool, tmp_path, *, database: Path | None = None, family: str = "conv_backward", **options) -> dict:
    options.setdefault("seed", 0)
    where = Project(Settings(configs_dirs=[project / "configs"], rootdir=project))
    plan = fuzz.FuzzPlan(family=family, database_dir=database or tmp_path / "db", **options)
    result = fuzz.run(plan, where, pool=pool)
    json.dumps(result)  # what --out writes
    return result


def lasting(finding: dict) -> dict:
    """A finding without what depends on the clock or on the database's state."""
    return {k: v for k, v in finding.items() if k not in ("shrink_s", "shrink_runs", "found_in", "configs_seen")}


def expected(family: str, values: dict) -> dict:
    return FAMILIES[family].validate(values)


# ------------------------------------------------------------------------------------- the strategy

@pytest.mark.parametrize("family", fuzz_space.FUZZ_FAMILIES)
def test_generated_configurations_are_valid_small_and_round_trip(family):
    seen = []

    @settings(max_examples=300, database=None, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(fuzz_space.conv_configs(family))
    def check(params):
        assert FAMILIES[family].validate(params) == params  # valid, and already normalised
        n, c_in, *spatial = params["input_shape"]
        assert n <= fuzz_space.MAX_BATCH and c_in <= fuzz_space.MAX_CHANNELS and max(spatial) <= fuzz_space.MAX_SPATIAL
        assert out_channels(params) <= fuzz_space.MAX_CHANNELS and max(params["weight_shape"][2:]) <= 3
        assert min(output_spatial(params)) >= 1
        examples = Examples(FAMILIES[family], load_object(FAMILIES[family].fuzz_space))
        case = examples.case(params)
        assert case.id == f"{family}/cases_file/{examples.name(params)}" and case.params == params
        seen.append(params)

    check()
    assert len(seen) >= 250
    for rank in (1, 2, 3):  # every kind of configuration comes up
        assert any(len(p["input_shape"]) == rank + 2 for p in seen)
    for key, value in (("transposed", True), ("bias", False), ("dtype", "float16"), ("dtype", "bfloat16")):
        assert any(p[key] == value for p in seen), key
    assert any(p["groups"] == p["input_shape"][1] > 1 for p in seen)          # depthwise
    assert any(p["transposed"] and any(p["output_padding"]) for p in seen)
    assert {len(set(p["stride"])) for p in seen} >= {1, 2}  # the same stride in every dim, and not
    if family == "conv_backward":
        assert len({tuple(p["output_mask"]) for p in seen}) == 7


@pytest.mark.e2e
@pytest.mark.parametrize("family, limit", [("conv_backward", {"max_examples": 60}),
                                           ("conv_forward", {"time_budget": 15.0})])
def test_generated_configurations_run_in_eager_and_eager_finds_nothing(project, pool, tmp_path, family, limit):
    result = fuzzed(project, pool, tmp_path, backend="eager", family=family, **limit)
    assert result["findings"] == []
    assert result["examples_run"] >= 20 and result["outcomes"] == {"passed": result["examples_run"]}


# ------------------------------------------------------------------------------------- grouping and shrinking

@pytest.mark.e2e
def test_planted_bugs_are_two_findings_each_shrunk_to_the_minimal_configuration(project, pool, tmp_path):
    result = fuzzed(project, pool, tmp_path, backend=PLANTED, max_examples=40)
    findings = {f["signature"]: f for f in result["findings"]}
    assert sorted(findings) == sorted([GROUPED, TRANSPOSED]), result["findings"]
    grouped, transposed = findings[GROUPED], findings[TRANSPOSED]
    assert (grouped["outcome"], grouped["phase"]) == ("compile_error", "compile")
    assert (transposed["outcome"], transposed["phase"]) == ("compile_error", "lower")
    assert grouped["minimal_params"] == expected("conv_backward", MINIMAL_GROUPED)
    assert transposed["minimal_params"] == expected("conv_backward", MINIMAL_TRANSPOSED)
    assert grouped["shrink"] == transposed["shrink"] == "complete"
    assert grouped["hits"] >= 1 and transposed["hits"] >= 1
    assert grouped["hits"] + transposed["hits"] == result["outcomes"]["compile_error"]
    assert result["examples_run"] == 40 and sum(result["outcomes"].values()) == 40

    # The cases-file entries load as the very cases that were fuzzed ...
    cases_file = tmp_path / "bug.yaml"
    cases_file.write_text(grouped["cases_file_entry"] + transposed["cases_file_entry"])
    loaded = load_cases_file(cases_file, FAMILY_TABLE)
    assert [(c.id, dict(c.params)) for c in loaded] == [(grouped["case"], grouped["minimal_params"]),
                                                        (transposed["case"], transposed["minimal_params"])]
    assert "\n  groups: 2\n" in grouped["cases_file_entry"]
    # ... and the expectation entries name those cases, their phase, and the signature as the reason.
    assert grouped["expectation_files"] == transposed["expectation_files"] == [f"xfail/{PLANTED}.yaml"]
    (tmp_path / "xfail").mkdir()
    (tmp_path / "xfail" / f"{PLANTED}.yaml").write_text(grouped["xfail_entry"] + transposed["xfail_entry"])
    entries = load_expectations(PLANTED, tmp_path / "xfail", tmp_path / "crash_sets",
                                [c.id for c in loaded], {}).entries
    assert [(e.pattern, e.phase.value, e.reason) for e in entries] == [
        (grouped["case"], "compile", GROUPED), (transposed["case"], "lower", TRANSPOSED)]


@pytest.mark.e2e
def test_the_same_seed_gives_the_same_findings_and_a_rerun_replays_them_first(project, pool, tmp_path):
    database = tmp_path / "db"
    first = fuzzed(project, pool, tmp_path, backend=PLANTED, max_examples=30, seed=7, database=database)
    fresh = fuzzed(project, pool, tmp_path, backend=PLANTED, max_examples=30, seed=7, database=tmp_path / "db2")
    assert [lasting(f) for f in fresh["findings"]] == [lasting(f) for f in first["findings"]]
    assert (fresh["examples_run"], fresh["outcomes"], fresh["replayed"]) == (30, first["outcomes"], 0)
    assert len(first["findings"]) == 2

    rerun = fuzzed(project, pool, tmp_path, backend=PLANTED, max_examples=30, seed=7, database=database)
    assert rerun["replayed"] == 2  # the two minimal configurations, before the search
    assert [lasting(f) for f in rerun["findings"]] == [lasting(f) for f in first["findings"]]

    # A search that never meets the transposed bug still reports it, from the database.
    short = fuzzed(project, pool, tmp_path, backend=PLANTED, max_examples=1, seed=7, database=database)
    assert {f["signature"] for f in short["findings"]} == {GROUPED, TRANSPOSED}
    assert {f["found_in"] for f in short["findings"]} >= {"replay"}


@pytest.mark.e2e
def test_a_time_budget_ends_the_run(project, pool, tmp_path):
    result = fuzzed(project, pool, tmp_path, backend=PLANTED, time_budget=8.0)
    assert result["elapsed_s"] < 8.0 + 10  # one example past the budget at most (each takes milliseconds)
    # The clock, not an example count, ended the search: it ran its whole share of the budget.
    # (How many examples fit in it depends on the machine's load, so that is not asserted.)
    assert result["elapsed_s"] >= fuzz.SEARCH_SHARE * 8.0 and result["examples_run"] < fuzz.UNBOUNDED_EXAMPLES
    assert {f["signature"] for f in result["findings"]} == {GROUPED, TRANSPOSED}


@pytest.mark.e2e
def test_differential_mode_reports_where_two_backends_disagree(project, pool, tmp_path):
    result = fuzzed(project, pool, tmp_path, backend="eager", against=PLANTED, max_examples=30)
    assert result["against"] == PLANTED
    findings = {f["signature"]: f for f in result["findings"]}
    assert sorted(findings) == sorted([f"eager: passed | {PLANTED}: {GROUPED}",
                                       f"eager: passed | {PLANTED}: {TRANSPOSED}"])
    grouped = findings[f"eager: passed | {PLANTED}: {GROUPED}"]
    assert (grouped["outcome"], grouped["against"]["outcome"]) == ("passed", "compile_error")
    assert grouped["minimal_params"] == expected("conv_backward", MINIMAL_GROUPED)
    assert grouped["expectation_files"] == [f"xfail/{PLANTED}.yaml"]  # the side that failed
    assert grouped["xfail_entry"].startswith(f"# xfail/{PLANTED}.yaml: ")

    # Two backends that fail alike do not disagree.
    alike = fuzzed(project, pool, tmp_path, backend=PLANTED, against=f"{PLANTED}-copy", max_examples=15)
    assert alike["findings"] == [] and alike["outcomes"]["compile_error"] > 0


@pytest.mark.e2e
def test_an_interrupted_run_reports_what_it_found(project, pool, tmp_path):
    class InterruptedPool:
        """Delegates to the real pool until the 'user' presses Ctrl-C during the 25th run."""

        def __init__(self):
            self.runs = 0

        def run(self, *args):
            self.runs += 1
            if self.runs == 25:
                raise KeyboardInterrupt
            return pool.run(*args)

    result = fuzzed(project, InterruptedPool(), tmp_path, backend=PLANTED, max_examples=100)
    assert result["interrupted"] and result["configs_run"] == 24 and result["examples_run"] >= 24
    assert {f["signature"] for f in result["findings"]} == {GROUPED, TRANSPOSED}
    assert {f["shrink"] for f in result["findings"]} == {"none"}  # the smallest configuration seen
    assert "(interrupted)" in fuzz_text.findings_text(result).splitlines()[0]


# ------------------------------------------------------------------------------------- the command line

@pytest.mark.e2e
def test_the_command_writes_text_and_json_and_exits_1_on_findings(project, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(project)
    monkeypatch.setenv("PYTHONPATH", python_path_env())
    status = main(["fuzz", "conv_backward", f"--backend={PLANTED}", "--max-examples=25", "--seed=3",
                   f"--out={tmp_path}/f.json", f"--database-dir={tmp_path}/db"])
    out, err = capsys.readouterr()
    assert status == 1
    data = json.loads((tmp_path / "f.json").read_text())
    assert {f["signature"] for f in data["findings"]} == {GROUPED, TRANSPOSED}
    assert "2 distinct failures:" in out and "cases-file entry:" in out and f"xfail/{PLANTED}.yaml" in out
    assert err.count("new signature") == 2 and err.count("shrunk in") == 2  # progress: one line each
    assert (tmp_path / "db" / ".gitignore").read_text().endswith("*\n")  # local state, out of git


@pytest.mark.parametrize("args, message", [
    (["conv_backward", "--backend=nope"], f"error: --backend=nope: unknown backend (known: {KNOWN}); "),
    (["conv_backward", "--backend=eager", "--against=nope"], f"error: --against=nope: unknown backend (known: "
                                                             f"{KNOWN})"),
    (["conv_backward", "--backend=eager", "--against=eager"], "error: --against=eager: is the backend under test"),
    (["conv_backward", "--backend=needs-missing"], "error: --backend=needs-missing: needs the package "
     "'no-such-distribution-x', which is not installed; install it with: pip install no-such-distribution-x"),
    # The families that offer a fuzz space come from the registry (FAMILIES: those of the conv package).
    (["conv_sideways", "--backend=eager"], f"error: conv_sideways: is not an installed family; name one of: "
                                           f"{', '.join(FAMILIES)}"),
    (["opinfo", "--backend=eager"], "error: opinfo: offers no fuzz space; name one of: "),
    (["--backend=eager"], "error: python -m harness fuzz: several families offer a fuzz space; name one of: "),
    (["conv_backward", "--backend=eager", "--time-budget=0"], "error: --time-budget=0: must be a positive, finite"),
    (["conv_backward", "--backend=eager", "--max-examples=0"], "error: --max-examples=0: must be at least 1"),
    (["conv_backward", "--backend=eager", "--out=no/such/dir/f.json"], "error: no/such/dir/f.json: cannot be written"),
])
def test_bad_input_is_one_error_line_and_exit_status_2(project, tmp_path, monkeypatch, capsys, args, message):
    monkeypatch.chdir(tmp_path)
    configs = tmp_path / "configs"
    shutil.copytree(project / "configs", configs)
    (configs / "needs-missing.yaml").write_text("name: needs-missing\nclass: fuzz_backends:PlantedBugBackend\n"
                                                "requires: [no-such-distribution-x]\n"
                                                "install: pip install no-such-distribution-x\n")
    assert main(["fuzz", *args]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and err.startswith(message), err
    assert not (tmp_path / ".hypothesis-fuzz").exists()  # nothing ran, nothing written
