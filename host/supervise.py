"""Supervised long-running units (module services and bus subscriptions): restart with backoff, report state.

A unit that raises or returns is restarted after 1 s, 2 s, 4 s … up to 60 s; a unit that ran for a
minute before failing starts again from 1 s. Every unit's state, restarts and last error are kept in
memory for /healthz and written to host.service_state for `feedeater status` (other processes).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any, Literal

import asyncpg
from prometheus_client import Counter, Gauge

from host.backoff import Backoff
from host.module import Idle

log = logging.getLogger("feedeater.supervise")

RESTARTS = Counter("feedeater_service_restarts_total", "Restarts of supervised units", ["unit"])
UP = Gauge("feedeater_service_up", "1 while a supervised unit is running", ["unit"])

MIN_DELAY_S = 1.0
MAX_DELAY_S = 60.0
STABLE_AFTER_S = 60.0  # a unit that ran this long before failing counts as healthy again
SAVE_EVERY_S = 5.0
RECANCEL_S = 10.0  # a stop cancels a task that is still running again after this long


@dataclass(slots=True)
class Unit:
    module: str
    name: str
    kind: Literal["service", "subscription"]
    state: str = "waiting for bus"  # → running → backoff → running …; stopped at shutdown
    restarts: int = 0
    last_error: str | None = None
    pending: int | None = None  # subscriptions: consumer lag (messages not yet delivered)

    @property
    def label(self) -> str:
        return f"{self.module}.{self.name}"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


RESTART = Backoff(MIN_DELAY_S, MAX_DELAY_S)


def failures_after(previous_failures: int, ran_s: float) -> int:
    """Consecutive failures counting this one: a run that lasted STABLE_AFTER_S starts the count again (pure)."""
    return 1 if ran_s >= STABLE_AFTER_S else previous_failures + 1


class Supervisor:
    """Runs units until stop(); one instance per host process."""

    def __init__(self, pool: asyncpg.Pool, host_id: str) -> None:
        self.pool = pool
        self.host_id = host_id
        self.units: list[Unit] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._runs: dict[str, asyncio.Task[None]] = {}  # each unit's current run, by label
        self._restarting: set[str] = set()
        self._wake: dict[str, asyncio.Event] = {}  # idle units wait on these for a settings change
        self.stopping = False  # the host is shutting down: a unit that returns now is done, not failed

    def add(self, unit: Unit) -> Unit:
        self.units.append(unit)
        return unit

    def start(self, unit: Unit, run: Callable[[], Awaitable[None]]) -> None:
        self._tasks.append(asyncio.create_task(self._keep(unit, run), name=f"unit {unit.label}"))

    async def _keep(self, unit: Unit, run: Callable[[], Awaitable[None]]) -> None:
        failures = 0
        while True:
            unit.state = "running"
            UP.labels(unit.label).set(1)
            await self.save(unit)
            started = time.monotonic()
            current = self._runs[unit.label] = asyncio.ensure_future(run())
            try:
                await current
                if self.stopping:  # the outbox relay returns once the host's stop is set
                    return
                error = "stopped by itself (a service must run until cancelled)"
            except asyncio.CancelledError:
                me = asyncio.current_task()
                if unit.label not in self._restarting or (me is not None and me.cancelling()):
                    raise  # stop(): cancelling this task cancelled the run it awaited, too
                self._restarting.discard(unit.label)
                log.info("%s %s restarting to apply changed settings", unit.kind, unit.label)
                failures = 0
                continue
            except Idle as exc:
                await self._idle(unit, str(exc))
                failures = 0
                continue
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
            if self.stopping:
                return  # a unit that consumed its cancel (or turned it into an error) stays down
            failures = failures_after(failures, time.monotonic() - started)
            delay = RESTART.delay(failures)
            unit.restarts += 1
            unit.last_error = error
            unit.state = "backoff"
            UP.labels(unit.label).set(0)
            RESTARTS.labels(unit.label).inc()
            log.warning("%s %s failed: %s; restarting in %.0fs", unit.kind, unit.label, error, delay)
            await self.save(unit)
            await asyncio.sleep(delay)

    async def _idle(self, unit: Unit, reason: str) -> None:
        """Wait, idle, until the module's settings change (restart_services)."""
        unit.state = f"idle: {reason}"
        UP.labels(unit.label).set(0)
        await self.save(unit)
        wake = self._wake.setdefault(unit.label, asyncio.Event())
        wake.clear()
        await wake.wait()

    def restart_services(self, module: str) -> list[str]:
        """Restart the module's services at once (settings they read at start changed); idle ones wake."""
        restarted = []
        for unit in self.units:
            if unit.module != module or unit.kind != "service":
                continue
            run = self._runs.get(unit.label)
            if unit.state.startswith("idle") and (wake := self._wake.get(unit.label)) is not None:
                wake.set()
            elif run is not None and not run.done():
                self._restarting.add(unit.label)
                run.cancel()
            else:
                continue
            restarted.append(unit.label)
        return restarted

    async def save(self, unit: Unit) -> None:
        """Record the unit's state for other processes; the database being down must not stop the unit."""
        with contextlib.suppress(asyncpg.PostgresError, OSError, asyncpg.InterfaceError):
            await self.pool.execute(
                """INSERT INTO host.service_state (host_id, module, name, kind, state, restarts, last_error, pending)
                   VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                   ON CONFLICT (host_id, module, name) DO UPDATE SET kind = EXCLUDED.kind,
                       state = EXCLUDED.state, restarts = EXCLUDED.restarts, last_error = EXCLUDED.last_error,
                       pending = EXCLUDED.pending, updated_at = now()""",
                self.host_id,
                unit.module,
                unit.name,
                unit.kind,
                unit.state,
                unit.restarts,
                unit.last_error,
                unit.pending,
            )

    async def keep_saving(self) -> None:
        """Refresh every unit's row (lag changes, updated_at shows this host is alive)."""
        while True:
            for unit in self.units:
                await self.save(unit)
            await asyncio.sleep(SAVE_EVERY_S)

    async def stop(self, timeout: float = 30.0) -> None:
        self.stopping = True
        for task in await cancel_and_wait(self._tasks, timeout):
            log.warning("%s did not stop within %.0f s of shutdown", task.get_name(), timeout)
        self._tasks.clear()
        for unit in self.units:
            unit.state = "stopped"
            UP.labels(unit.label).set(0)
            await self.save(unit)


async def cancel_and_wait(tasks: Iterable[asyncio.Task[Any]], timeout: float) -> set[asyncio.Task[Any]]:
    """Cancel `tasks` and wait until they end, cancelling those still running again every RECANCEL_S;
    returns the ones still running after `timeout`. One cancel() is not always enough: Python 3.11's
    wait_for (inside nats-py) loses a cancel that arrives as its inner future completes, and the task
    carries on. Not sooner: a second cancel would cut short a task's cleanup (a connection not released)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    tasks = list(tasks)
    pending = {task for task in tasks if not task.done()}
    rounds = 0
    while pending and loop.time() < deadline:
        if rounds:
            names = ", ".join(sorted(task.get_name() for task in pending))
            log.info("still running %.0f s after a cancel, cancelled again: %s", rounds * RECANCEL_S, names)
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=min(RECANCEL_S, max(0.0, deadline - loop.time())))
        rounds += 1
    for task in tasks:
        if task.done() and not task.cancelled():
            task.exception()  # retrieved: no "exception was never retrieved" at exit
    return pending
