"""Job progress and the scheduler's overlap warning: one line per overlap, saying how far the job is."""

from __future__ import annotations

import asyncio
import logging

import pytest
from apscheduler.schedulers.asyncio import AsyncIOScheduler

from host import logs, progress
from tests.services import until


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []
        self.levels: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())
        self.levels.append(record.levelname)


async def test_overlapping_runs_are_reported_once_per_overlap_with_progress(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)  # the overlap line is INFO (`run` logs at INFO)
    scheduler_log = logging.getLogger("apscheduler.scheduler")
    overlap_filter = logs.OverlapFilter()  # what logs.setup installs
    scheduler_log.addFilter(overlap_filter)
    collected = Collect()
    scheduler_log.addHandler(collected)
    release = asyncio.Event()
    runs = 0

    async def slow() -> None:
        nonlocal runs
        runs += 1
        token = progress.job_started("t.slow")
        try:
            progress.expect(10, "feeds")
            progress.advance("feeds", 3)
            await release.wait()
        finally:
            progress.job_finished("t.slow", token)

    scheduler = AsyncIOScheduler(timezone="UTC")
    scheduler.add_job(slow, "interval", seconds=0.1, id="t.slow", max_instances=1, coalesce=True)
    scheduler.start()
    try:

        def overlaps() -> list[str]:
            return [line for line in collected.lines if "t.slow" in line and "skipped" in line]

        async def seen(n: int) -> bool:
            return len(overlaps()) >= n

        await until(lambda: seen(1), what="the overlap line")
        await asyncio.sleep(1.0)  # ~10 more skipped ticks: still one line
        assert len(overlaps()) == 1, collected.lines
        assert overlaps()[0].startswith("job t.slow is still running for ")
        assert "3/10 feeds" in overlaps()[0]
        assert set(collected.levels) == {"INFO"}  # a job longer than its interval: nothing to act on
        assert not any("maximum number of running instances" in line for line in collected.lines)
        release.set()  # the run ends; the next overlap is a new one and is reported again

        async def second_run() -> bool:
            return runs >= 2

        await until(second_run, what="a second run")
        release.clear()
        await until(lambda: seen(2), what="the second overlap line")
        assert sum("t.slow" in line and "skipped" in line for line in collected.lines) == 2
    finally:
        release.set()
        scheduler.shutdown(wait=False)
        scheduler_log.removeHandler(collected)
        scheduler_log.removeFilter(overlap_filter)


def test_reports_outside_a_job_are_ignored_and_listeners_hear_them() -> None:
    progress.advance("feeds")  # no job running: nothing happens, nothing raises
    heard: list[tuple[str, int, int | None]] = []
    token = progress.job_started("m.j")
    try:
        with progress.listening(lambda name, r: heard.append((name, r.done, r.total))):
            progress.expect(4, "items")
            progress.advance("items", 2)
        report = progress.running("m.j")
        assert report is not None and report.describe().endswith(", 2/4 items")
    finally:
        progress.job_finished("m.j", token)
    assert heard == [("m.j", 0, 4), ("m.j", 2, 4)] and progress.running("m.j") is None


@pytest.mark.parametrize("tty", [False])
def test_bars_are_silent_off_a_terminal(tty: bool, capsys: pytest.CaptureFixture[str]) -> None:
    with progress.bar("work", 3) as update:
        update(1, None)
        update(3, 3)
    assert capsys.readouterr().err == ""


def test_log_lines_go_above_a_progress_bar_not_into_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue #20 item 9: log lines written while an import's bar was drawn landed inside its line."""
    import io
    import sys

    terminal = io.StringIO()
    terminal.isatty = lambda: True  # type: ignore[method-assign]
    monkeypatch.setattr(sys, "stderr", terminal)
    handler = logging.StreamHandler(terminal)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        with progress.bar("importing", 3) as update:
            assert handler.stream is not terminal  # rich's proxy, which prints above the bar
            update(1, None)
            logging.getLogger("feedeater.test").warning("a line while the bar is drawn")
        assert handler.stream is terminal
    finally:
        root.removeHandler(handler)
    assert "a line while the bar is drawn\n" in terminal.getvalue()


def test_progress_in_words_with_rate_and_time_left() -> None:
    report = progress.Report(started=100.0, done=117, total=192, unit="entries")
    shown = report.as_dict(now=137.0)
    assert shown == {"done": 117, "total": 192, "unit": "entries", "per_second": 3.16, "eta_seconds": 24}
    assert progress.text(shown) == "117/192 entries, 3.16/s, about 24 s left"
    assert progress.text(progress.Report(started=100.0, done=5).as_dict(now=100.5)) == "5 items"  # too soon
    assert progress.text({"done": 0, "total": None}) == ""
