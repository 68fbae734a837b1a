"""Every result's figures per phase: wall and CPU time and the worker's peak memory (measured by
the worker's PhaseClock), the deterministic size figures a backend notes, and the reports' table
of them (harness.views.phase_times)."""
from __future__ import annotations

import pytest
from e2e_support import Project
from test_markdown_report import record, report, section

from harness.outcomes import Phase
from harness.record import Record
from harness.views.html import render_html
from harness.views.markdown import render_markdown
from harness.views.phase_times import phase_rows
from harness.worker.session import PEAK, PhaseClock, cpu_seconds


def test_the_clock_gives_each_phase_its_own_cpu_time_and_peak_memory():
    if PEAK.fd is None:
        pytest.skip("this kernel cannot reset the peak resident memory (/proc/self/clear_refs)")
    clock = PhaseClock(lambda message: None)
    clock.enter(Phase.EXPORT)
    block = bytearray(300 * 2**20)
    block[::4096] = b"\1" * len(block[::4096])   # touch every page: resident
    del block
    start = cpu_seconds()
    while cpu_seconds() - start < 0.2:           # 0.2 s of CPU
        pass
    clock.enter(Phase.RUN)
    clock.stop()
    assert set(clock.durations) == set(clock.cpu_s) == set(clock.peak_mb) == {"setup", "export", "run"}
    assert clock.peak_mb["export"] > clock.peak_mb["run"] + 250   # the run's peak does not carry the export's
    assert clock.cpu_s["export"] >= 0.2 > clock.cpu_s["run"]
    assert clock.durations["export"] >= clock.cpu_s["export"] - 0.05


def _timed(case, backend, export, run, peak=None):
    data = record(case, backend=backend)
    data.update(phase_durations={"export": export, "run": run}, phase_cpu_s={"export": export / 2, "run": run},
                phase_peak_mb={"export": peak} if peak else {})
    return data


def test_the_phase_table_sums_each_backend_s_phases():
    results = [_timed("a", "be", 1.0, 0.1, peak=900.0), _timed("b", "be", 3.0, 0.2, peak=1200.0),
               _timed("c", "be", 2.0, 0.3), _timed("a", "other", 0.5, 0.5)]
    rows = phase_rows([Record.from_json(r) for r in results])
    export = rows[0]
    assert (export.backend, export.phase, export.cases) == ("be", "export", 3)
    assert (export.total_s, export.median_s) == (6.0, 2.0)
    assert (export.slowest, export.slowest_s, export.cpu_s, export.peak_mb) == ("b", 3.0, 3.0, 1200.0)
    assert [(r.backend, r.phase) for r in rows] == [("be", "export"), ("be", "run"), ("other", "export"),
                                                   ("other", "run")]
    assert rows[1].peak_mb is None   # not measured: an empty cell, not 0
    text = section(render_markdown(report(results)), "Time and memory by phase")
    assert "| `be` | export | 3 | 6.00 | 2.000 | `b` (3.00 s) | 3.00 | 1200 |" in text
    assert "Time and memory by phase" in render_html(report(results))


def test_a_report_without_phase_times_has_no_table():
    assert "Time and memory by phase" not in render_markdown(report([record("a")]))


@pytest.mark.e2e
def test_every_result_carries_cpu_time_peak_memory_and_sizes(pytester):
    pytest.importorskip("torch_mlir")
    project = Project(pytester.path, pytester)
    result = project.run("--backend=eager,linalg-on-tensors", "-k", "conv_forward")
    assert result.ret == 0, result.output
    for data in result.results:
        assert set(data["phase_cpu_s"]) == set(data["phase_durations"]) and data["phase_peak_mb"], data
    sizes = result.record("linalg-on-tensors", "conv_forward/2d/tiny")["sizes"]
    assert set(sizes) == {"export_ops", "decomposed_ops", "torch_ops", "torch_backend_ops", "linalg_ops",
                          "llvm_ir_bytes"}
    assert all(isinstance(v, int) and v > 0 for v in sizes.values()), sizes
