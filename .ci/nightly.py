"""The nightly workflow's steps (.github/workflows/nightly.yml keeps only the wiring):

    python3 .ci/nightly.py plan | install | shard | shard-result | merge | diff | history | triage |
                           summary | keep | verdict | local-upload | local-download | perf | perf-history |
                           suite-checkout | suite-import | suite-run | suite-stale | suite-summary | suite-result |
                           self-tests

Each step reads what the workflow gives it from the environment (inputs, matrix values, earlier
steps' outputs), runs the harness's commands, and writes its outputs to $GITHUB_OUTPUT and its
Markdown to $GITHUB_STEP_SUMMARY, as a workflow step does. `plan` runs before anything is
installed (standard library only); the others run where the harness is installed. Verdict names
come from harness.outcomes. tests/test_workflow.py runs these steps; CI runs the whole workflow
under act (`act workflow_dispatch ...`, docs/how-to/nightly.md).

Under act (ACT=true), the steps that would download an action (artifacts) run here instead:
`local-upload` and `local-download` keep a job's files in NIGHTLY_LOCAL (default: a folder under
the system's temporary directory, emptied by `plan`), where a later job finds them.
"""
from __future__ import annotations

import fnmatch
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

DEFAULT_SHARDS = "6"
DEFAULT_SELECTION = "--opinfo-samples=all"   # every case, OpInfo's every sample: about 30,000 per backend
PERF_MARKERS = "conv_backward or model"       # what the perf job times: the flagship family, the models
                                              # (their training steps, tiny tier, among them)
MODEL_TIERS = "--model-tiers=tiny,small"       # both of the registry's tiers
PRECISIONS = ("-m", "conv_backward or conv_forward or module or (model and not train_step)",
              "--dtypes=float16,bfloat16")    # the precisions job: the families with a dtype axis whose
                                              # half-precision entries are measured (the tiny models)
SET_BY_THE_WORKFLOW = ("--backend", "--splits", "--group", "-n", "--numprocesses", "--report-json", "--report-md",
                       "--report-html", "--junitxml", "--artifacts-dir", "--durations-path", "--durations-from",
                       "--splitting-algorithm", "--torch-mlir-suite", "--run-crash-set")
PYTEST_STATUS = {"0": "all verdicts ok or skipped", "1": "unexpected failures or passes", "2": "interrupted",
                 "3": "an internal error", "4": "bad input (a usage error)", "5": "no tests collected"}


class StepError(Exception):
    """One `::error::` line, and the step fails."""


# ----------------------------------------------------------------------------- workflow plumbing

def env(name: str, default: str = "") -> str:
    return os.environ.get(name, default) or default


def output(**values: object) -> None:
    """Step outputs: appended to $GITHUB_OUTPUT (printed too, for the log)."""
    lines = [f"{key}={value}" for key, value in values.items()]
    print("\n".join(lines))
    path = os.environ.get("GITHUB_OUTPUT")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write("".join(line + "\n" for line in lines))


def summary(text: str) -> None:
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(text)
    else:
        print(text)


def sh(*argv: str, cwd: str | None = None, check: bool = True) -> int:
    print("+ " + shlex.join(argv), flush=True)
    status = subprocess.run(argv, cwd=cwd).returncode
    if check and status:
        raise StepError(f"{shlex.join(argv)} exited with status {status}")
    return status


def harness(*argv: str, cwd: str | None = None, check: bool = True) -> int:
    return sh(sys.executable, "-m", "harness", *argv, cwd=cwd, check=check)


def selection(text: str) -> list[str]:
    """The `selection` input as pytest arguments (empty: the nightly's default selection)."""
    try:
        args = shlex.split(text)
    except ValueError as e:
        raise StepError(f"selection {text!r} is not valid shell words ({e}); quote it as for a shell") from None
    taken = [a for a in args if a.split("=")[0] in SET_BY_THE_WORKFLOW]
    if taken:
        raise StepError(f"selection {text!r} sets {taken[0].split('=')[0]}, which the workflow sets itself; "
                        "give only what picks the cases (-k, -m, paths, --opinfo-samples)")
    return args or shlex.split(DEFAULT_SELECTION)


def local_store() -> Path:
    return Path(env("NIGHTLY_LOCAL") or Path(tempfile.gettempdir()) / f"nightly-act-{env('GITHUB_RUN_ID', '0')}")


# ------------------------------------------------------------------------------------- the plan

def plan() -> None:
    """Backends (the names of configs/*.yaml: a new config joins without an edit here), shards, the selection."""
    known = sorted(p.stem for p in Path("configs").glob("*.yaml"))
    requested = [b for b in env("REQUESTED").replace(",", " ").split() if b]
    unknown = [b for b in requested if b not in known]
    if unknown:
        raise StepError(f"unknown backend(s) {', '.join(unknown)}; known: {', '.join(known)}")
    backends = list(dict.fromkeys(requested)) or known
    shards = env("SHARDS", DEFAULT_SHARDS).strip()
    if not shards.isdigit() or not 1 <= int(shards) <= 10:
        raise StepError(f"shards must be a whole number from 1 to 10, not {shards!r}")
    chosen = selection(env("SELECTION"))
    splits = int(shards)
    if env("ACT"):
        shutil.rmtree(local_store(), ignore_errors=True)   # a fresh store for this run's jobs
    output(backends=json.dumps(backends), shards=json.dumps(list(range(1, splits + 1))), splits=splits,
           cells=len(backends) * splits, all="true" if backends == known and not env("SELECTION").strip() else "false",
           selection=shlex.join(chosen))


# ------------------------------------------------------------------------------------ the shards

def install() -> None:
    """What the backend's config asks for beyond the README's install (`extras:` or `install:`)."""
    from harness.project_files.configs import load_configs

    command = load_configs([Path("configs")])[env("BACKEND")].install
    print(command, flush=True)
    status = subprocess.run(command, shell=True).returncode
    if status:
        raise StepError(f"{command} exited with status {status}")


def shard() -> None:
    """The shard's cases (pytest-split: equal time by the last nightly's durations, else an even
    split by count; the longest first), every report written; the status is an output, so that the
    reports are uploaded before `shard-result` turns it into the job's result."""
    cell, baseline = env("CELL"), Path("nightly-baseline/test_durations.json")
    Path("reports").mkdir(exist_ok=True)
    Path("artifacts").mkdir(exist_ok=True)
    durations = [f"--durations-path={baseline}", "--splitting-algorithm=least_duration",
                 f"--durations-from={baseline}"] if baseline.is_file() else []
    status = sh(sys.executable, "-m", "pytest", "-q", "-n", "auto", f"--backend={env('BACKEND')}",
                *selection(env("SELECTION")), "--splits", env("SPLITS"), "--group", env("SHARD"), *durations,
                f"--report-json=reports/{cell}.json", f"--report-md=reports/{cell}.md",
                f"--report-html=reports/{cell}.html", f"--junitxml=reports/{cell}.xml", "--artifacts-dir=artifacts/",
                f"--cache-dir={stage_cache()}", check=False)
    output(status=status)
    print(f"pytest exited with status {status}")


def stage_cache() -> Path:
    """The folder the workflow restores and saves with actions/cache; under act (no cache action
    offline), one kept between runs in the user's cache folder."""
    return Path.home() / ".cache" / "torch-backend-e2e" / "act-stages" if os.environ.get("ACT") else Path("stage-cache")


def shard_result() -> None:
    status, cell = env("STATUS"), env("CELL")
    if status == "0":
        print(PYTEST_STATUS[status])
        return
    if status == "":
        raise StepError(f"{cell}: pytest did not finish (step timeout or cancelled)")
    if status == "1":
        raise StepError(f"{cell}: unexpected failures or passes (the matrix job lists them)")
    raise StepError(f"{cell}: pytest exited with status {status}: {PYTEST_STATUS.get(status, 'unknown')}")


def local_upload() -> None:
    """actions/upload-artifact's stand-in under act: PATH's files kept as NAME for a later job."""
    source, name = Path(env("UPLOAD_PATH")), env("UPLOAD_NAME")
    if source.is_dir() and any(source.iterdir()):
        shutil.copytree(source, local_store() / name, dirs_exist_ok=True)
        print(f"kept {source} as {local_store() / name}")


def local_download() -> None:
    """actions/download-artifact's stand-in: every kept NAME matching PATTERN, merged into PATH."""
    dest, pattern = Path(env("DOWNLOAD_PATH")), env("DOWNLOAD_PATTERN")
    dest.mkdir(parents=True, exist_ok=True)
    store = local_store()
    for kept in sorted(store.iterdir()) if store.is_dir() else []:
        if fnmatch.fnmatch(kept.name, pattern):
            shutil.copytree(kept, dest, dirs_exist_ok=True)
            print(f"{kept} -> {dest}")


# ------------------------------------------------------------------------------ the matrix job

def merge() -> None:
    shards, cells = sorted(Path("reports").glob("*.json")), int(env("CELLS", "0"))
    print(f"{len(shards)} of {cells} shard reports")
    if not shards:
        raise StepError("no shard report was uploaded")
    harness("merge", *map(str, shards), "-o", "reports/all.json")
    output(found=len(shards), complete="true" if len(shards) == cells else "false")


def diff() -> None:
    report = Path("reports/diff.md")
    if Path("nightly-baseline/all.json").is_file():
        status = harness("diff", "nightly-baseline/all.json", "reports/all.json", "--markdown", "-o", str(report),
                         check=False)
    else:
        status = "skipped"
        report.write_text("No earlier nightly report in the cache: nothing to diff against.\n", encoding="utf-8")
    output(status=status)
    print(report.read_text(encoding="utf-8"))


def history() -> None:
    """The night recorded; `drift` (an output) is 1 when a passing output drifted towards its
    tolerance (harness.history.drift), which the verdict reports."""
    text, drifted = record("nightly-history", "reports", fail_on_drift=True)
    print(text)
    output(drift=int(drifted))


def record(database: str, reports: str, fail_on_drift: bool = False) -> tuple[str, bool]:
    """REPORTS/all.json recorded in DATABASE/history.db; its text and page written beside the
    report: (the text, whether an output drifted, with `fail_on_drift`)."""
    Path(database).mkdir(exist_ok=True)
    harness("history", "ingest", f"{database}/history.db", f"{reports}/all.json")
    with open(f"{reports}/history.txt", "w", encoding="utf-8") as text:
        shown = subprocess.run([sys.executable, "-m", "harness", "history", "show", f"{database}/history.db",
                                "--html", f"{reports}/history.html", *(["--fail-on-drift"] * fail_on_drift)],
                               stdout=text)
    if shown.returncode not in ((0, 1) if fail_on_drift else (0,)):
        raise StepError(f"harness history show exited with status {shown.returncode}")
    return Path(f"{reports}/history.txt").read_text(encoding="utf-8"), shown.returncode == 1


def triage() -> None:
    """The triage report and the HTML matrix of the whole run, and how many verdicts were unexpected."""
    from harness.outcomes import Verdict

    recorded = ["--history", "nightly-history/history.db"] if env("RECORDED") == "success" else []
    harness("report", "reports/all.json", "--md", "reports/triage.md", "--html", "reports/matrix.html", *recorded)
    results = json.loads(Path("reports/all.json").read_text(encoding="utf-8"))["results"]
    count = sum(Verdict(r["verdict"]).is_unexpected for r in results)
    print(f"{count} unexpected failures or passes")
    output(count=count)


def step_summary() -> None:
    parts = [Path(f"reports/{part}.md") for part in ("table", "diff", "triage")]
    summary(f"## Nightly e2e: {env('FOUND', '0')} of {env('CELLS')} shard reports\n\n"
            + "".join(p.read_text(encoding="utf-8") + "\n" for p in parts if p.is_file()))


def keep() -> None:
    """This report and its durations, for the next nightly (a complete run of every backend only)."""
    Path("nightly-baseline").mkdir(exist_ok=True)
    shutil.copy("reports/all.json", "nightly-baseline/all.json")
    harness("durations", "reports/all.json", "-o", "nightly-baseline/test_durations.json")


def verdict() -> None:
    problems = []
    if env("MERGED") != "success":
        problems.append("the shard reports could not be merged")
    if env("COMPLETE") != "true":
        problems.append("some shard reports are missing (a shard did not finish): the verdict covers only part "
                        "of the run")
    if env("DIFF") == "1":
        problems.append("regressions against the last nightly (see the step summary)")
    elif env("DIFF") not in ("0", "skipped"):
        problems.append(f"harness diff failed (status {env('DIFF', 'none')})")
    if env("DRIFT") == "1":
        problems.append("passing outputs drifted towards their tolerance (see history.txt in the reports artifact)")
    if env("UNEXPECTED", "missing") != "0":
        problems.append(f"{env('UNEXPECTED', 'an unknown number of')} unexpected failures or passes "
                        "(see the step summary)")
    for problem in problems:
        print(f"::error::{problem}")
    if problems:
        raise SystemExit(1)
    print("the night is green")


# ------------------------------------------------------------------------ timing (--perf)

def perf() -> None:
    """The backend's convolution-backward cases and the model family's two tiers, each that passes
    timed against eager (docs/how-to/performance.md); a dispatch's selection narrows them. The
    status is an output, as a shard's."""
    Path("perf").mkdir(exist_ok=True)
    backend = env("BACKEND")
    status = sh(sys.executable, "-m", "pytest", "-q", "-n", "auto", f"--backend={backend}", "-m", PERF_MARKERS,
                MODEL_TIERS, *shlex.split(env("SELECTION")), "--perf", f"--report-json=perf/{backend}.json",
                f"--report-md=perf/{backend}.md", check=False)
    output(status=status)
    print(f"pytest exited with status {status}")


def precisions() -> None:
    """The families with a dtype axis at float16 and bfloat16 (the shards run every case at its own
    dtype, float32 mostly), OpInfo's aside; a dispatch's selection narrows them. The status is an output, as a
    shard's (docs/how-to/precisions.md)."""
    Path("precisions").mkdir(exist_ok=True)
    backend = env("BACKEND")
    status = sh(sys.executable, "-m", "pytest", "-q", "-n", "auto", f"--backend={backend}", *PRECISIONS,
                *shlex.split(env("SELECTION")), f"--report-json=precisions/{backend}.json",
                f"--report-md=precisions/{backend}.md", check=False)
    output(status=status)
    print(f"pytest exited with status {status}")


def self_tests() -> None:
    """The self-tests CI leaves to the nightly (marked nightly: every install set but the base one,
    each in a fresh venv, and the slowest of the others, each beside one CI keeps); the self_tests
    input adds pytest arguments (under act, `--collect-only`)."""
    try:
        added = shlex.split(env("SELF_TESTS"))
    except ValueError as e:
        raise StepError(f"self_tests {env('SELF_TESTS')!r} is not valid shell words ({e})") from None
    status = sh(sys.executable, "-m", "pytest", "tests", "-q", "-n", "2", "-m", "nightly", "--run-nightly",
                *added, check=False)
    if status:
        raise StepError(f"the nightly's self-tests: pytest exited with status {status}: "
                        f"{PYTEST_STATUS.get(str(status), 'see its log')}")


def perf_history() -> None:
    """The backends' timings in one report, recorded in the performance history (a file of its own:
    the main history's runs hold every case, these only the timed ones), its page and its text."""
    reports = sorted(Path("perf").glob("*.json"))
    if not reports:
        raise StepError("no perf report was uploaded")
    harness("merge", *map(str, reports), "-o", "perf/all.json")
    changes, _ = record("perf-history", "perf")
    harness("report", "perf/all.json", "--md", "perf/all.md")
    speed = Path("perf/all.md").read_text(encoding="utf-8").partition("## Speed against eager")[2]
    summary(f"## Nightly timings: {len(reports)} backends\n\n## Speed against eager{speed}\n\n```\n{changes}\n```\n")


# ----------------------------------------------------------------------- torch-mlir's own suite

def suite_checkout() -> None:
    """Upstream's main, cloned on GitHub; under act, the local checkout the input names, or the job
    is skipped with one line. Its folder is the output `dir` (empty: skipped)."""
    if not env("ACT"):
        sh("git", "clone", "--depth=1", "https://github.com/llvm/torch-mlir", env("TM"))
        output(dir=env("TM"))
        return
    local = env("LOCAL_CHECKOUT")
    if not local:
        print("::notice::torch-mlir suite skipped: no local torch-mlir checkout given "
              "(--input torch_mlir_checkout=PATH runs it under act)")
        output(dir="")
        return
    if not (Path(local) / "projects" / "pt1" / "python").is_dir():
        raise StepError(f"torch_mlir_checkout {local}: no projects/pt1/python in it; give a torch-mlir checkout")
    output(dir=str(Path(local).resolve()))


def _suite_sets() -> list[str]:
    tm = env("TM")
    return [f"{tm}/projects/pt1/e2e_testing/xfail_sets.py", "--torch-mlir-suite", f"{tm}/projects/pt1/python",
            "--set", env("XFAIL_SET"), "--crash-set", env("CRASH_SET")]


def suite_import() -> None:
    """A working directory of its own: its pytest.ini makes it pytest's rootdir (not the harness
    checkout above it), so its imported xfail/ and crash_sets/ are the ones used."""
    Path("tm-e2e/reports").mkdir(parents=True, exist_ok=True)
    Path("tm-e2e/pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    harness("import-xfail-sets", *_suite_sets(), "--backend", env("BACKEND"), cwd="tm-e2e")


def suite_run() -> None:
    """The suite with its crash set (so that check-xfail-sets can tell which entries no longer crash)."""
    chosen = selection(env("SELECTION")) if env("SELECTION").strip() else []
    suite = f"--torch-mlir-suite={env('TM')}/projects/pt1/python"
    status = sh(sys.executable, "-m", "pytest", "-p", "harness.plugin", suite,
                f"--backend={env('BACKEND')}", "-n", "auto", "--run-crash-set", "-q", *chosen,
                "--report-json=reports/suite.json", "--report-md=reports/triage.md",
                "--report-html=reports/triage.html", cwd="tm-e2e", check=False)
    output(status=status)
    print(f"pytest exited with status {status}")


def suite_stale() -> None:
    harness("check-xfail-sets", *_suite_sets(), "reports/suite.json", "--markdown", "-o", "reports/stale-entries.md",
            cwd="tm-e2e")


def suite_summary() -> None:
    stale = Path("tm-e2e/reports/stale-entries.md")
    summary(f"## torch-mlir suite on {env('BACKEND')} ({env('XFAIL_SET')}, {env('CRASH_SET')})\n\n"
            + (stale.read_text(encoding="utf-8") if stale.is_file() else "No stale-entry report.") + "\n")


def suite_result() -> None:
    """Red only when the harness could not do its job: unexpected results (status 1) against
    upstream's sets are what the reports are for (upstream's main drifts from the pinned wheel)."""
    status, backend = env("STATUS"), env("BACKEND")
    if status in ("0", "1"):
        print(PYTEST_STATUS["0"] if status == "0" else
              "unexpected results against upstream's sets: see the stale-entry report (not a failure of this job)")
        return
    if status == "":
        raise StepError(f"{backend}: the suite did not run or did not finish "
                        "(import failed, step timeout or cancelled)")
    raise StepError(f"{backend}: pytest exited with status {status}: {PYTEST_STATUS.get(status, 'unknown')}")


STEPS = {"plan": plan, "install": install, "shard": shard, "shard-result": shard_result, "merge": merge,
         "diff": diff, "history": history, "triage": triage, "summary": step_summary, "keep": keep,
         "verdict": verdict, "local-upload": local_upload, "local-download": local_download,
         "perf": perf, "perf-history": perf_history, "precisions": precisions, "suite-checkout": suite_checkout,
         "suite-import": suite_import, "suite-run": suite_run, "suite-stale": suite_stale,
         "suite-summary": suite_summary, "suite-result": suite_result, "self-tests": self_tests}


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in STEPS:
        print(f"usage: python3 .ci/nightly.py {{{','.join(STEPS)}}}", file=sys.stderr)
        return 2
    try:
        STEPS[argv[0]]()
    except StepError as e:
        print(f"::error::{e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
