"""pytest's progress with the time left (harness.plugin.progress)."""
from __future__ import annotations

import time
from types import SimpleNamespace

from harness.plugin.progress import Progress, _duration


class FakeReporter:
    def __init__(self, total: int, done: int):
        self._session, self.reported_progress = SimpleNamespace(testscollected=total), done

    def _get_progress_information_message(self) -> str:
        return " [100%]"

    def _write_progress_information_if_past_edge(self) -> None:
        pass


def progress(total: int, done: int, elapsed: float | None) -> str:
    reporter = FakeReporter(total, done)
    shown = Progress(reporter, SimpleNamespace(pluginmanager=SimpleNamespace(register=lambda *a: None)))
    shown.started = None if elapsed is None else time.monotonic() - elapsed
    return reporter._get_progress_information_message()


def test_the_progress_says_cases_done_of_all_and_the_time_left():
    assert progress(6, 2, elapsed=10) == " [2/6, 20s left]"
    assert progress(3233, 812, elapsed=300) == " [812/3233, 14m left]"
    assert progress(6, 2, elapsed=1) == " [2/6]"            # no estimate from start-up alone
    assert progress(6, 6, elapsed=10) == " [100%]"          # the end: pytest's own
    assert progress(6, 0, elapsed=None) == " [100%]"        # before the run loop


def test_durations_coarsen_as_they_grow():
    assert [_duration(s) for s in (40, 250, 840, 3900)] == ["40s", "4m10s", "14m", "1h05m"]


def test_a_verbose_run_shows_the_count_on_each_line(e2e_project):
    result = e2e_project.run("--backend=eager", "-v", "-n", "0")
    assert result.ret == 0, result.output[-2000:]
    assert "[1/3" in result.output and "[2/3" in result.output and "[100%]" in result.output, result.output[-2000:]
