"""Report formats are registered views: the built-in ones through the entry-point group
`torch_backend_e2e.report_formats`, and another package's the same way. A tiny package on the
import path (a module and its dist-info, as pip would install it) adds a CSV format; pytest's
`--report-csv` / `e2e_report_csv` and `python -m harness report --csv` then write it."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from e2e_support import REPO, TINY_IDS, python_path_env

from harness.cli import main
from harness.views.formats import report_formats

CSV_FORMAT = '''\
"""One line per result: backend, case, outcome."""
from harness.api import ReportFormat


def render(report, context):
    rows = [f"{r['backend']},{r['case']},{r['outcome']}" for r in report["results"]]
    return "backend,case,outcome\\n" + "".join(row + "\\n" for row in rows)


FORMAT = ReportFormat("csv", "one CSV line per result", render)
'''
BROKEN_FORMAT = 'raise ImportError("no module named csvkit")\n'


def install(folder: Path, module: str, text: str) -> Path:
    """A distribution `csv-format` with one module and its report-format entry point, importable
    from `folder` as if pip had installed it there."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{module}.py").write_text(text)
    info = folder / "csv_format-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: csv-format\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[torch_backend_e2e.report_formats]\ncsv = {module}:FORMAT\n")
    return folder


@pytest.fixture
def csv_project(e2e_project, monkeypatch):
    site = install(e2e_project.path / "site", "csv_results", CSV_FORMAT)
    monkeypatch.setenv("PYTHONPATH", f"{site}:{python_path_env()}")
    return e2e_project


def test_a_format_of_another_package_is_written_by_pytest_and_by_the_report_command(csv_project):
    csv_project.write("pytest.ini", (csv_project.path / "pytest.ini").read_text()
                      + "e2e_report_csv = reports/run.csv\n")   # relative to the rootdir
    (csv_project.path / "reports").mkdir()
    result = csv_project.run("--backend=eager")
    assert result.ret == 0, result.output
    written = (csv_project.path / "reports" / "run.csv").read_text()
    assert written == "backend,case,outcome\n" + "".join(f"eager,{case},passed\n" for case in TINY_IDS)

    again = subprocess.run([sys.executable, "-m", "harness", "report", "report.json", "--csv=again.csv",
                            "--summary=summary.txt"], cwd=csv_project.path, capture_output=True, text=True,
                           timeout=120)
    assert again.returncode == 0, again.stderr
    assert (csv_project.path / "again.csv").read_text() == written
    summary = (csv_project.path / "summary.txt").read_text().splitlines()
    assert summary[0] == "eager: 3 cases  passed=3" and summary[1].startswith("stage cache: hits golden ")
    assert "e2e summary" in result.output and "eager: 3 cases  passed=3" in result.output


def test_its_setting_is_checked_like_every_other(csv_project):
    result = csv_project.run("--backend=eager", "--report-csv=nowhere/run.csv", report=None)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "ERROR: --report-csv=nowhere/run.csv: cannot write there; create the directory or pick another path" \
        in result.stderr, result.stderr


def test_a_broken_format_is_one_error_line(e2e_project, monkeypatch):
    site = install(e2e_project.path / "site", "csv_results", BROKEN_FORMAT)
    monkeypatch.setenv("PYTHONPATH", f"{site}:{python_path_env()}")
    result = e2e_project.run("--backend=eager", report=None)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    lines = [line for line in result.stderr.splitlines() if line.startswith("ERROR:")]
    assert lines == ["ERROR: entry point csv = csv_results:FORMAT of csv-format (group "
                     "torch_backend_e2e.report_formats): does not load (ImportError: no module named csvkit); "
                     "fix csv-format or uninstall it"], result.stderr


def test_the_built_in_formats_are_registered_as_another_package_would_and_documented():
    formats = report_formats()
    assert list(formats)[:4] == ["html", "json", "md", "summary"]
    reference = (REPO / "docs" / "reference" / "reports.md").read_text()
    for name, one in formats.items():
        assert one.declared.flag == f"--report-{name}" and one.declared.ini == f"e2e_report_{name}"
        assert f"`--report-{name}=PATH`" in reference, name
    assert re.search(r"^json = \"harness\.views\.json_report:FORMAT\"$", (REPO / "pyproject.toml").read_text(), re.M)


def test_the_report_command_says_which_formats_it_writes(tmp_path, capsys):
    (tmp_path / "r.json").write_text('{"schema_version": 1, "environment": {}, "results": []}')
    assert main(["report", str(tmp_path / "r.json")]) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"error: {tmp_path / 'r.json'}: nothing to write; pass one or more of --html=PATH, "
                            "--json=PATH, --md=PATH, --summary=PATH"), error
