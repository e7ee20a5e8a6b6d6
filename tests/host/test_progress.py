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

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


async def test_overlapping_runs_are_reported_once_per_overlap_with_progress() -> None:
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
