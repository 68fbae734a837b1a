"""pytest's progress with the time left: `[812/3233, 14m left]` where it would say `[ 25%]`.

The estimate is the mean time per finished test so far, times the tests left (under -n, the
workers' rate). pytest offers no hook for this text, so its terminal reporter's progress message
is wrapped; where a pytest release lacks that method, its own progress is left as it is. The
`console_output_style` ini values other than the default (`count`, `times`) are left alone.
"""
from __future__ import annotations

import time

import pytest

ETA_AFTER_S = 5.0   # before this, an estimate is mostly start-up


@pytest.hookimpl(trylast=True)   # after pytest's terminal reporter is registered
def pytest_configure(config: pytest.Config) -> None:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or getattr(reporter, "_show_progress_info", None) != "progress":
        return
    if not all(hasattr(reporter, name) for name in ("_get_progress_information_message",
                                                    "_write_progress_information_if_past_edge", "reported_progress")):
        return
    Progress(reporter, config)


class Progress:
    def __init__(self, reporter, config: pytest.Config):
        self.reporter = reporter
        self.started: float | None = None
        self.default = reporter._get_progress_information_message
        reporter._get_progress_information_message = self.message
        reporter._write_progress_information_if_past_edge = self.end_of_line_if_full
        config.pluginmanager.register(self, "harness-progress")

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> None:
        self.started = time.monotonic()

    def message(self) -> str:
        session = self.reporter._session
        total, done = (session.testscollected if session else 0), self.reporter.reported_progress
        if not total or done >= total or self.started is None:
            return self.default()
        elapsed = time.monotonic() - self.started
        left = f", {_duration(elapsed / done * (total - done))} left" if done and elapsed >= ETA_AFTER_S else ""
        return f" [{done}/{total}{left}]"

    def end_of_line_if_full(self) -> None:
        """pytest's own rule, with room for the longest message this run can write."""
        session = self.reporter._session
        total = session.testscollected if session else 0
        room = len(f" [{total}/{total}, 99h59m left]") + 1
        if self.reporter._tw.width_of_current_line + room >= self.reporter._screen_width:
            color, _ = self.reporter._get_main_color()
            self.reporter._tw.write(self.message() + "\n", **{color: True})


def _duration(seconds: float) -> str:
    """40s, 4m10s, 14m, 1h05m: coarser as it grows, as an estimate should be."""
    minutes, secs = divmod(int(seconds + 0.5), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m" if minutes >= 10 else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"
