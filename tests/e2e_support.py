"""Helpers of the end-to-end tests: a tiny harness project and the result of a pytest run on it."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
SUBPROCESS_TIMEOUT = 240  # seconds for one pytest run of a tiny project (a hang here is a harness bug)

# Three tiny cases: eager runs each in a few milliseconds.
TINY_CASES = '''\
from harness.families.conv import conv_backward_case, conv_forward_case

CASES = [
    conv_backward_case("tiny", input_shape=[1, 2, 4, 4], weight_shape=[2, 2, 3, 3]),
    conv_backward_case("tiny_stride2", input_shape=[1, 2, 5, 5], weight_shape=[2, 2, 3, 3], stride=2),
    conv_forward_case("tiny", input_shape=[1, 2, 4, 4], weight_shape=[2, 2, 3, 3]),
]
'''
TINY_IDS = ["conv_backward/2d/tiny", "conv_backward/2d/tiny_stride2", "conv_forward/2d/tiny"]

# Records, per pytest process of the project, whether torch was imported by the end of the session.
PROBE_CONFTEST = '''\
import json, os, sys

def pytest_sessionfinish(session):
    path = os.path.join(str(session.config.rootpath), "controller_modules.jsonl")
    with open(path, "a") as out:
        out.write(json.dumps({"pid": os.getpid(), "torch": "torch" in sys.modules,
                              "xdist_worker": hasattr(session.config, "workerinput")}) + "\\n")
'''

# A transformers model as another project writes it in a cases file (issue 33's form).
DISTILBERT_CASE = """\
- family: model
  name: distilbert_tiny
  transformers: DistilBertModel
  config: {dim: 32, n_layers: 2, n_heads: 2, hidden_dim: 64, vocab_size: 128, max_position_embeddings: 64}
  inputs: {input_ids: {shape: [2, 16], high: 128}}
"""
# A sitecustomize.py that refuses every socket in each interpreter whose path holds it (the
# workers' too): a download, or a look at the hub, would fail the case.
NO_NETWORK = """\
import socket


def _refused(*args, **kwargs):
    raise OSError("the network is cut")


socket.socket.connect = _refused
socket.create_connection = _refused
"""


class E2EResult:
    """One pytest run of a project: exit code, output, and the parsed JSON report."""

    def __init__(self, ret: int, stdout: str, stderr: str, report: dict | None, seconds: float):
        self.ret = int(ret)
        self.stdout = stdout
        self.stderr = stderr
        self.output = stdout + "\n" + stderr
        self.report = report
        self.seconds = seconds

    @property
    def results(self) -> list[dict]:
        assert self.report is not None, f"no JSON report was written\n{self.output}"
        return self.report["results"]

    def record(self, backend: str, case: str) -> dict:
        found = [r for r in self.results if r["backend"] == backend and r["case"] == case]
        assert len(found) == 1, f"{len(found)} records for {case} on {backend}"
        return found[0]

    def error_lines(self) -> list[str]:
        return [line for line in self.output.splitlines() if line.startswith("ERROR:")]


class Project:
    """A tiny harness project in a directory, and ways to run pytest on it."""

    def __init__(self, path: Path, pytester: pytest.Pytester | None = None):
        self.path = Path(path)
        self.pytester = pytester
        (self.path / "cases").mkdir(exist_ok=True)
        (self.path / "configs").mkdir(exist_ok=True)
        # The built-in cases left out: a tiny project's ids and expectations are its own.
        (self.path / "pytest.ini").write_text("[pytest]\ntestpaths = cases\ne2e_backends = eager\n"
                                              "e2e_builtin_cases = false\n")
        (self.path / "cases" / "tiny.py").write_text(TINY_CASES)
        (self.path / "conftest.py").write_text(PROBE_CONFTEST)
        shutil.copy(REPO / "configs" / "eager.yaml", self.path / "configs" / "eager.yaml")
        shutil.copy(REPO / "tests" / "fake_backends.py", self.path / "fake_backends.py")

    def add_fake(self, name: str, fault: str, phase: str = "compile", only: str = "*",
                 timeout: float | None = 60, options: dict | None = None, **extra: Any) -> str:
        """configs/<name>.yaml for a FaultyBackend (more `options` for it, `extra` config keys); returns the name."""
        config = {"name": name, "class": "fake_backends:FaultyBackend",
                  "options": {"fault": fault, "phase": phase, "only": only, **(options or {})}, **extra}
        if timeout is not None:
            config["timeout"] = timeout
        self.write(f"configs/{name}.yaml", json.dumps(config, indent=1))  # JSON is YAML
        return name

    def write(self, relpath: str, text: str) -> Path:
        path = self.path / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
        return path

    def xfail(self, backend: str, text: str) -> Path:
        return self.write(f"xfail/{backend}.yaml", text)

    def crash_set(self, backend: str, text: str) -> Path:
        return self.write(f"crash_sets/{backend}.yaml", text)

    def probes(self) -> list[dict]:
        """One entry per pytest process of the last run (controller and xdist workers)."""
        path = self.path / "controller_modules.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def run(self, *args: str, report: str | None = "report.json", serial: bool = True) -> E2EResult:
        """pytest -p harness.plugin [--report-json] ARGS in a subprocess, from the project root; serial
        unless ARGS say -n, or `serial` is false (then the harness's default, ini e2e_workers)."""
        assert self.pytester is not None
        report_path = self.path / report if report else None
        for stale in (report_path, self.path / "controller_modules.jsonl"):  # both describe one run
            if stale and stale.exists():
                stale.unlink()
        full = ["-p", "harness.plugin", *([f"--report-json={report}"] if report else []),
                *(serial_unless_told(args) if serial else args)]
        started = time.monotonic()
        result = self.pytester.runpytest_subprocess(*full, timeout=SUBPROCESS_TIMEOUT)
        seconds = time.monotonic() - started
        data = json.loads(report_path.read_text()) if report_path and report_path.exists() else None
        return E2EResult(result.ret, "\n".join(result.outlines), "\n".join(result.errlines), data, seconds)


def serial_unless_told(args: tuple[str, ...]) -> list[str]:
    """The harness runs on every core unless told otherwise (ini e2e_workers); the self-tests' runs
    are serial unless the test says -n, so their output and records are one process's."""
    told = any(a.startswith(("-n", "--numprocesses", "--dist", "-pno:xdist")) or a == "no:xdist" for a in args)
    no_xdist = os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD") and "xdist" not in args   # nothing to tell
    return [*args] if told or no_xdist else ["-n", "0", *args]


def run_pytest_with(python: Path, cwd: Path, *args: str, env: dict[str, str],
                    report: str = "report.json") -> E2EResult:
    """`python -m pytest --report-json ARGS` in cwd with exactly `env`: a set-up other than this
    process's (another interpreter, an unactivated venv, a reduced PATH)."""
    (Path(cwd) / report).unlink(missing_ok=True)
    started = time.monotonic()
    done = subprocess.run([str(python), "-m", "pytest", f"--report-json={report}", *serial_unless_told(args)],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT)
    path = Path(cwd) / report
    data = json.loads(path.read_text()) if path.exists() else None
    return E2EResult(done.returncode, done.stdout, done.stderr, data, time.monotonic() - started)


# The frames tests/native/fake_compiler.cpp hangs and crashes in.
PATTERN = "mlir::(anonymous namespace)::ConvolutionBackwardPattern::matchAndRewrite"
PASS = "mlir::(anonymous namespace)::FakeLoweringPass::runOnOperation"


def build_fake_compiler(dest: Path) -> None:
    """tests/native/fake_compiler.cpp as dest/libfake_compiler.so (FaultyBackend's native faults)."""
    if shutil.which("g++") is None:
        pytest.skip("g++ is needed to build tests/native/fake_compiler.cpp")
    source = REPO / "tests" / "native" / "fake_compiler.cpp"
    subprocess.run(["g++", "-shared", "-fPIC", "-O1", "-o", str(dest / "libfake_compiler.so"), str(source)],
                   check=True)


def python_path_env() -> str:
    return os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))


def wait_for(predicate, timeout: float, what: str, log: Path | None = None):
    """The first truthy value of predicate() within timeout seconds, else a test failure with the log's tail."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}" + (f"\n{log.read_text()[-5000:]}" if log and log.exists() else ""))
