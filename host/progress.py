"""Progress of running jobs and long commands: what jobs report, progress bars, and the overlap log line.

A job calls `advance()` / `expect()` as it works (no argument threading: the running job is a context
variable set by `host.jobs.run_job`). The CLI draws a bar from the reports (`jobs run`), the scheduler's
"maximum number of running instances" warning is rewritten once per overlap with them (host.logs).
Bars use rich on stderr, and only on a terminal: piped output and logs get no progress noise.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from typing import Any

from host.textfmt import duration

MIN_RATE_S = 1.0  # a rate (and time left) is given once a run has gone on this long


@dataclass(slots=True)
class Report:
    started: float = field(default_factory=time.monotonic)
    done: int = 0
    total: int | None = None
    unit: str = "items"
    overlap_logged: bool = False  # the scheduler skipped a run while this one went on: said once

    def describe(self) -> str:
        """`running for 3 min, 120/500 feeds, 2.1/s, about 3 min left`."""
        shown = text(self.as_dict())
        return f"running for {duration(time.monotonic() - self.started)}" + (f", {shown}" if shown else "")

    def as_dict(self, now: float | None = None) -> dict[str, Any]:
        """What `jobs list`, `status` and the console show of a run in progress (host.job_runs.metrics)."""
        elapsed = (now if now is not None else time.monotonic()) - self.started
        rate = self.done / elapsed if elapsed >= MIN_RATE_S and self.done else None
        left = None if self.total is None else max(self.total - self.done, 0)
        return {
            "done": self.done,
            "total": self.total,
            "unit": self.unit,
            "per_second": None if rate is None else round(rate, 2),
            "eta_seconds": None if rate is None or left is None else round(left / rate),
        }


def text(p: dict[str, Any]) -> str:
    """A run's progress in words (pure): `117/192 entries, 3.1/s, about 24 s left`."""
    if not p.get("done") and not p.get("total"):
        return ""
    counted = f"{p['done']}/{p['total']}" if p.get("total") is not None else str(p["done"])
    out = f"{counted} {p.get('unit') or 'items'}"
    if p.get("per_second"):
        out += f", {p['per_second']:g}/s"
    if p.get("eta_seconds") is not None and p.get("total") is not None and p["done"] < p["total"]:
        out += f", about {duration(p['eta_seconds'])} left"
    return out


Listener = Callable[[str, Report], None]
_running: dict[str, Report] = {}
_current: ContextVar[str | None] = ContextVar("feedeater_job", default=None)
_listeners: list[Listener] = []


def job_started(name: str) -> Token[str | None]:
    _running[name] = Report()
    return _current.set(name)


def job_finished(name: str, token: Token[str | None]) -> None:
    _running.pop(name, None)
    _current.reset(token)


def running(name: str) -> Report | None:
    return _running.get(name)


def running_here() -> Report | None:
    """The report of the job this task runs in (None outside a job)."""
    name = _current.get()
    return _running.get(name) if name else None


def expect(more: int, unit: str) -> None:
    """The running job found `more` items of work (e.g. a batch of claimed feeds)."""
    _update(lambda r: setattr(r, "total", (r.total or 0) + more), unit)


def left(remaining: int, unit: str) -> None:
    """The running job's work left is now `remaining` (a backlog that grows while it works): its total
    becomes what it did plus that, so "done of total" never reads 117 of 75."""
    _update(lambda r: setattr(r, "total", r.done + remaining), unit)


def advance(unit: str, n: int = 1) -> None:
    """The running job finished `n` items; outside a job it does nothing."""
    _update(lambda r: setattr(r, "done", r.done + n), unit)


def _update(change: Callable[[Report], None], unit: str) -> None:
    name = _current.get()
    report = _running.get(name) if name else None
    if name is None or report is None:
        return
    change(report)
    report.unit = unit
    for listener in _listeners:
        listener(name, report)


@contextlib.contextmanager
def listening(listener: Listener) -> Iterator[None]:
    _listeners.append(listener)
    try:
        yield
    finally:
        _listeners.remove(listener)


def _ignore(_done: int, _total: int | None = None) -> None:
    """The progress callback off a terminal."""


@contextlib.contextmanager
def bar(description: str, total: int | None = None) -> Iterator[Callable[[int, int | None], None]]:
    """A progress bar on stderr while the block runs; yields `update(done, total)`. Silent off a terminal."""
    if not sys.stderr.isatty():
        yield _ignore
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as shown, _logs_above_bar():
        task = shown.add_task(description, total=total)

        def update(done: int, total: int | None = None) -> None:
            shown.update(task, completed=done, total=total if total is not None else shown.tasks[0].total)

        yield update


@contextlib.contextmanager
def _logs_above_bar() -> Iterator[None]:
    """While a bar is drawn, rich replaces sys.stderr with a proxy that prints above the bar; the log
    handlers still held the real stderr and wrote into the bar's line. Point them at the proxy."""
    import logging

    handlers = [  # a handler whose stream was closed (stderr of an earlier in-process run) has nothing to move
        h
        for h in logging.getLogger().handlers
        if isinstance(h, logging.StreamHandler) and not getattr(h.stream, "closed", False)
    ]
    before = [h.setStream(sys.stderr) for h in handlers]
    try:
        yield
    finally:
        for handler, stream in zip(handlers, before, strict=True):
            if stream is not None:
                handler.setStream(stream)


@contextlib.contextmanager
def job_bar(name: str) -> Iterator[None]:
    """A bar following what job `name` reports (for `feedeater jobs run`)."""
    with bar(name) as update, listening(lambda job, r: update(r.done, r.total) if job == name else None):
        yield
