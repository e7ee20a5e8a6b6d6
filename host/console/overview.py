"""What the overview page shows, read from the host's own tables (no module's private data)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import asyncpg

from host import dlq, livesettings, outbox, progress

if TYPE_CHECKING:
    from host.console.hostview import ConsoleHost

SPARK_MINUTES = 60


@dataclass(slots=True)
class JobView:
    name: str
    trigger: str
    last_started: datetime | None = None
    last_status: str | None = None
    last_error: str | None = None
    last_seconds: float | None = None
    failures_24h: int = 0
    progress: str = ""  # a run still going: `117/192 entries, 3.1/s, about 24 s left`


@dataclass(slots=True)
class ModuleView:
    name: str
    version: str
    enabled: bool
    jobs: list[JobView] = field(default_factory=list)
    units: list[dict[str, Any]] = field(default_factory=list)


@dataclass(slots=True)
class Overview:
    postgres_version: str
    nats_version: str | None
    nats_state: str
    outbox: outbox.OutboxStatus
    modules: list[ModuleView]
    events_per_minute: list[int]
    throughput: list[tuple[str, list[int]]]  # (unit, per minute) of every module's Manifest.overview
    hosts: list[dict[str, Any]] = field(default_factory=list)  # running hosts (host.hosts)
    skipped: dict[str, str] = field(default_factory=dict)  # installed modules that could not be loaded
    dead_letters: int | None = None  # events subscriptions gave up on (None: the bus is not attached)


def per_minute(rows: list[asyncpg.Record], minutes: int = SPARK_MINUTES) -> list[int]:
    """Counts by minutes-ago (0 = this minute) → oldest first, zeros where nothing happened (pure)."""
    out = [0] * minutes
    for r in rows:
        ago = int(r["ago"])
        if 0 <= ago < minutes:
            out[minutes - 1 - ago] += int(r["n"] or 0)
    return out


async def _outbox_status(pool: asyncpg.Pool) -> outbox.OutboxStatus:
    async with pool.acquire() as conn:
        return await outbox.status(conn)


async def load(host: ConsoleHost) -> Overview:
    """The queries run concurrently on the pool's connections: on a busy machine the page then waits for
    the slowest one, not for their sum."""
    pool = host.require_pool()
    declared = [(name, job.name) for name, spec in host.specs.items() for job in spec.manifest.jobs]
    charted = [(name, t) for name, spec in host.specs.items() for t in spec.manifest.overview]
    version, status, events, counted, runs, units, enabled_rows, hosts = await asyncio.gather(
        pool.fetchval("SHOW server_version"),
        _outbox_status(pool),
        pool.fetch(
            """SELECT floor(extract(epoch FROM now() - created_at) / 60) AS ago, count(*) AS n
               FROM host.outbox WHERE created_at > now() - make_interval(mins => $1) GROUP BY 1""",
            SPARK_MINUTES,
        ),
        pool.fetch(
            """SELECT t.i, floor(extract(epoch FROM now() - r.started_at) / 60) AS ago,
                      sum((r.metrics ->> t.metric)::bigint) AS n
               FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS t(module, job, metric, i)
               JOIN host.job_runs r ON r.module = t.module AND r.job = t.job
                AND r.started_at > now() - make_interval(mins => $4)
               GROUP BY 1, 2""",
            [name for name, _ in charted],
            [t.job for _, t in charted],
            [t.metric for _, t in charted],
            SPARK_MINUTES,
        ),
        # One index range per declared job (job_runs_by_job), however many runs a week leaves behind.
        pool.fetch(
            """SELECT j.module, j.job, r.started_at, r.status, r.error, r.seconds, r.progress, f.failures
               FROM unnest($1::text[], $2::text[]) AS j(module, job)
               LEFT JOIN LATERAL (
                   SELECT started_at, status, error, extract(epoch FROM finished_at - started_at) AS seconds,
                          CASE WHEN status = 'running' THEN metrics -> 'progress' END AS progress
                   FROM host.job_runs WHERE module = j.module AND job = j.job ORDER BY started_at DESC LIMIT 1
               ) r ON true
               LEFT JOIN LATERAL (
                   SELECT count(*) AS failures FROM host.job_runs WHERE module = j.module AND job = j.job
                     AND status = 'failed' AND started_at > now() - interval '1 day'
               ) f ON true
               WHERE r.started_at IS NOT NULL""",
            [m for m, _ in declared],
            [j for _, j in declared],
        ),
        pool.fetch(
            """SELECT host_id, module, name, kind, state, restarts, last_error, pending, updated_at
               FROM host.service_state WHERE updated_at > now() - interval '1 minute' ORDER BY module, name"""
        ),
        pool.fetch("SELECT name, enabled FROM host.modules"),
        livesettings.running_hosts(pool),
    )
    enabled = {r["name"]: r["enabled"] for r in enabled_rows}
    last = {(r["module"], r["job"]): r for r in runs}
    modules = []
    for name, spec in host.specs.items():
        m = spec.manifest
        view = ModuleView(name, m.version, enabled.get(name, m.enabled_by_default) or name == "host")
        for job in m.jobs:
            jv = JobView(job.name, host.trigger_for(name, job))
            r = last.get((name, job.name))
            if r is not None:
                jv.last_started, jv.last_status, jv.last_error = r["started_at"], r["status"], r["error"]
                jv.last_seconds = float(r["seconds"]) if r["seconds"] is not None else None
                jv.failures_24h = int(r["failures"])
                jv.progress = progress.text(r["progress"]) if r["progress"] else ""
            view.jobs.append(jv)
        view.units = [dict(u) for u in units if u["module"] == name]
        modules.append(view)
    nc = host.nc
    v = nc.connected_server_version if nc is not None and nc.is_connected else None
    trouble = host.link.trouble() if host.link is not None else "no bus configured"
    return Overview(
        postgres_version=str(version),
        nats_version=f"{v.major}.{v.minor}.{v.patch}" if v is not None else None,
        nats_state=trouble or "connected",
        outbox=status,
        modules=modules,
        events_per_minute=per_minute(events),
        throughput=[
            (t.unit, per_minute([r for r in counted if r["i"] == i]))
            for i, (_, t) in enumerate(charted, start=1)
        ],
        hosts=hosts,
        skipped=dict(sorted(host.skipped.items())),
        dead_letters=await dlq.count(nc.jetstream()) if nc is not None and nc.is_connected else None,
    )
