"""Job triggers and recorded runs: every run, scheduled or manual, goes through `run_job`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import traceback
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from prometheus_client import Counter, Gauge, Histogram

from host import progress, textfmt
from host.errors import UserError, unavailable
from host.module import Job, ModuleContext, interval_seconds

if TYPE_CHECKING:
    from apscheduler.triggers.base import BaseTrigger

log = logging.getLogger("feedeater.jobs")


JOB_RUNS = Counter("feedeater_job_runs_total", "Job runs", ["job", "status"])
JOB_SECONDS = Histogram("feedeater_job_duration_seconds", "Job duration", ["job"])
JOB_DONE = Gauge("feedeater_job_progress_done", "Items a running job has done so far", ["job", "unit"])
JOB_TOTAL = Gauge(
    "feedeater_job_progress_total", "Items a running job has done plus those left", ["job", "unit"]
)
JOB_RATE = Gauge("feedeater_job_progress_per_second", "Items per second of a running job", ["job", "unit"])
JOB_ETA = Gauge(
    "feedeater_job_progress_eta_seconds", "Estimated seconds a running job has left", ["job", "unit"]
)
PROGRESS_SAVE_S = 5.0  # how often a running job's progress is written to its host.job_runs row
_run_id: ContextVar[int | None] = ContextVar("feedeater_job_run", default=None)


def current_run_id() -> int | None:
    """The host.job_runs id of the job this task runs in (None outside a job): log lines carry it so a
    run's lines can be found together and matched with `feedeater jobs`."""
    return _run_id.get()


def describe_trigger(spec: str) -> str:
    """How a job trigger reads to a person: `every 5 min`, `daily at 03:17 UTC`, `hourly at :05`; any
    other crontab as written (weekday numbers mean different days to crontab and APScheduler)."""
    seconds = interval_seconds(spec)
    if seconds is not None:
        return f"every {textfmt.duration(seconds)}"
    fields = spec.split()
    if len(fields) == 5 and fields[0].isdigit() and fields[2:] == ["*", "*", "*"]:
        minute, hour = int(fields[0]), fields[1]
        if hour.isdigit():
            return f"daily at {int(hour):02d}:{minute:02d} UTC"
        if hour == "*":
            return f"hourly at :{minute:02d}"
    return f"cron {spec.strip()}"


def parse_trigger(spec: str) -> BaseTrigger:
    """'90s' / '5m' / '1h' / '1d' → interval; five crontab fields → cron (UTC)."""
    from apscheduler.triggers.cron import CronTrigger  # only `run` needs the scheduler: keep the CLI light
    from apscheduler.triggers.interval import IntervalTrigger

    seconds = interval_seconds(spec)
    if seconds is not None:
        if seconds <= 0:
            raise UserError(f"job trigger {spec!r} must be positive", "use e.g. 60s, 5m, 1h")
        return IntervalTrigger(seconds=seconds, timezone="UTC")
    if len(spec.split()) == 5:
        try:
            return CronTrigger.from_crontab(spec, timezone="UTC")
        except ValueError as exc:
            raise UserError(
                f"bad crontab {spec!r}: {exc}", "use five fields: minute hour day month weekday"
            ) from None
    raise UserError(
        f"bad job trigger {spec!r}",
        "use an interval such as 60s, 5m, 1h, 1d or a crontab such as '0 3 * * *'",
    )


def trigger_override_key(module: str, job: str) -> str:
    return f"FEEDEATER_JOB_{module.upper()}_{job.upper()}"


@dataclass(frozen=True, slots=True)
class JobResult:
    run_id: int
    status: str
    error: str | None
    metrics: Mapping[str, Any]
    seconds: float


async def run_job(ctx: ModuleContext, job: Job, *, trigger: str) -> JobResult:
    """Run one job, recording start, end, status, error and the metrics it returns in host.job_runs."""
    name = f"{ctx.name}.{job.name}"
    # host.job_runs through functions running as the host (migrations/host/0033): ctx.pool is the module's.
    run_id: int = await ctx.pool.fetchval(
        "SELECT host.job_run_start($1, $2, $3, $4)",
        ctx.name,
        job.name,
        ctx.host_id,
        trigger,
    )
    started = time.monotonic()
    metrics: Mapping[str, Any] = {}
    error: str | None = None
    cancelled = False
    token = progress.job_started(name)
    run_token = _run_id.set(run_id)
    saving = asyncio.create_task(_save_progress(ctx, name, run_id), name=f"{name}: progress")
    try:
        metrics = dict(await job.handler(ctx))
        status = "ok"
    except asyncio.CancelledError:
        # The host is stopping mid-run: record it, then let the cancellation go on. Leases taken by the
        # job expire and another run (here or on another host) picks the work up.
        cancelled = True
        status, error = "failed", "cancelled: the host stopped during the run"
        log.info("job %s cancelled by shutdown", name)
    except Exception as exc:
        status = "failed"
        error = f"{type(exc).__name__}: {exc}"
        # A bug gets its traceback; a service that did not answer gets one line (the next run retries).
        extra = {} if unavailable(exc) else {"traceback": traceback.format_exc()}
        log.error("job %s failed: %s", name, error, extra=extra)
    finally:
        saving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await saving
        progress.job_finished(name, token)
        _run_id.reset(run_token)
    seconds = time.monotonic() - started
    JOB_RUNS.labels(name, status).inc()
    JOB_SECONDS.labels(name).observe(seconds)
    try:
        await ctx.pool.execute(
            "SELECT host.job_run_record($1, $2, $3, $4)",
            run_id,
            status,
            error,
            _jsonable(metrics),
        )
    except Exception as exc:  # the database may be the reason the job failed
        log.warning("could not record the end of job run %s: %s", run_id, exc)
    if cancelled:
        raise asyncio.CancelledError
    return JobResult(run_id, status, error, metrics, seconds)


async def _save_progress(ctx: ModuleContext, name: str, run_id: int) -> None:
    """While the job runs: its progress (done/total, rate, time left) into its host.job_runs row, for
    `jobs list`, `status` and the console in other processes, and into the /metrics gauges."""
    saved: dict[str, Any] | None = None
    try:
        while True:
            await asyncio.sleep(PROGRESS_SAVE_S)
            report = progress.running(name)
            if report is None or not (report.done or report.total):
                continue
            now = report.as_dict()
            labels = (name, now["unit"])
            JOB_DONE.labels(*labels).set(now["done"])
            JOB_TOTAL.labels(*labels).set(now["total"] if now["total"] is not None else now["done"])
            JOB_RATE.labels(*labels).set(now["per_second"] or 0)
            JOB_ETA.labels(*labels).set(
                now["eta_seconds"] if now["eta_seconds"] is not None else float("nan")
            )
            if now != saved:
                with contextlib.suppress(Exception):  # progress is a courtesy: never fail the job for it
                    await ctx.pool.execute(
                        "SELECT host.job_run_record($1, NULL, NULL, $2)", run_id, {"progress": now}
                    )
                saved = now
    finally:
        if saved is not None:
            for gauge in (JOB_DONE, JOB_TOTAL, JOB_RATE, JOB_ETA):
                with contextlib.suppress(KeyError):
                    gauge.remove(name, saved["unit"])


def _jsonable(metrics: Mapping[str, Any]) -> dict[str, Any]:
    return {
        k: (v if isinstance(v, int | float | str | bool | type(None) | list | dict) else str(v))
        for k, v in metrics.items()
    }
