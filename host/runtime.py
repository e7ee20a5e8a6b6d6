"""The host process: services, migrations, module contexts, scheduler, outbox relay, health endpoint."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import asyncpg

from host import db, httpserver, migrate, module, outbox, settings
from host.ai import build_ai
from host.config import HostConfig
from host.errors import UserError
from host.jobs import JobResult, parse_trigger, run_job, trigger_override_key
from host.module import Job, ModuleContext, ModuleSpec
from host.services import Endpoints, Services

if TYPE_CHECKING:
    from apscheduler.schedulers.asyncio import AsyncIOScheduler
    from nats.aio.client import Client as NatsClient
    from nats.js import JetStreamContext

log = logging.getLogger("feedeater.host")


class Host:
    """One feedeater process. Several may share one database and one NATS cluster."""

    def __init__(self, config: HostConfig, *, env: Mapping[str, str] | None = None) -> None:
        self.config = config
        self.env = dict(os.environ) if env is None else dict(env)
        self.specs: dict[str, ModuleSpec] = module.discover()
        self.services = Services(config.home)
        self.endpoints: Endpoints | None = None
        self.pool: asyncpg.Pool | None = None
        self.nc: NatsClient | None = None
        self.js: JetStreamContext | None = None
        self.contexts: dict[str, ModuleContext] = {}
        self.scheduler: AsyncIOScheduler | None = None

    # -- lifecycle -----------------------------------------------------------------------------
    async def open(self, *, with_bus: bool = True) -> None:
        """Start (or find) the services, apply migrations, connect."""
        self.endpoints = await asyncio.to_thread(
            self.services.up,
            database_url=self.config.database_url,
            nats_url=self.config.nats_url,
            with_nats=with_bus,
        )
        conn = await db.connect(self.endpoints.database_url)
        try:
            applied = await migrate.apply(conn, migrate.discover())
        finally:
            await conn.close()
        if applied:
            log.info("applied migrations: %s", ", ".join(applied))
        self.pool = await db.create_pool(
            self.endpoints.database_url, max_size=int(self.env.get("FEEDEATER_DB_POOL", "10"))
        )
        if with_bus:
            from host import bus  # nats is slow to import: only commands that use the bus load it

            self.nc = await bus.connect(self.endpoints.nats_url, name=f"feedeater {self.config.host_id}")
            self.js = self.nc.jetstream()
            await bus.ensure_stream(self.js)

    async def close(self, *, stop_started_services: bool = False) -> None:
        if self.scheduler is not None and self.scheduler.running:
            self.scheduler.shutdown(wait=False)
        for name, ctx in list(self.contexts.items()):
            spec = self.specs[name]
            if spec.teardown is not None:
                try:
                    await spec.teardown(ctx)
                except Exception as exc:
                    log.warning("module %s teardown failed: %s", name, exc)
            await ctx.ai.aclose()
        self.contexts.clear()
        if self.nc is not None and not self.nc.is_closed:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.nc.drain(), timeout=5)
        if self.pool is not None:
            await self.pool.close()
        if stop_started_services and self.endpoints is not None and self.endpoints.started:
            await asyncio.to_thread(self.services.down, self.endpoints.started)

    # -- modules -------------------------------------------------------------------------------
    def require_pool(self) -> asyncpg.Pool:
        assert self.pool is not None, "Host.open() first"
        return self.pool

    async def enabled(self, name: str) -> bool:
        spec = module.get(self.specs, name)
        row = await self.require_pool().fetchval("SELECT enabled FROM host.modules WHERE name = $1", name)
        return spec.manifest.enabled_by_default if row is None else bool(row)

    async def set_enabled(self, name: str, enabled: bool) -> None:
        module.get(self.specs, name)
        await self.require_pool().execute(
            """INSERT INTO host.modules (name, enabled) VALUES ($1, $2)
               ON CONFLICT (name) DO UPDATE SET enabled = EXCLUDED.enabled, updated_at = now()""",
            name,
            enabled,
        )

    async def resolved_settings(self, name: str) -> dict[str, Any]:
        spec = module.get(self.specs, name)
        async with self.require_pool().acquire() as conn:
            stored = await settings.load_stored(conn, name)
        return settings.resolve(spec.manifest, stored, self.env)

    async def context(self, name: str) -> ModuleContext:
        """The module's context, built and set up once per process."""
        if name in self.contexts:
            return self.contexts[name]
        spec = module.get(self.specs, name)
        resolved = await self.resolved_settings(name)
        ctx = ModuleContext(
            name=name,
            pool=self.require_pool(),
            settings=resolved,
            log=logging.getLogger(f"feedeater.{name}"),
            host_id=self.config.host_id,
            emit=outbox.enqueue_many,
            ai=build_ai(resolved),
            nats=self.nc,
            register_job=lambda job: self._schedule_job(name, job),
        )
        if spec.setup is not None:
            await spec.setup(ctx)
        self.contexts[name] = ctx
        return ctx

    # -- jobs ----------------------------------------------------------------------------------
    def trigger_for(self, name: str, job: Job) -> str:
        return self.env.get(trigger_override_key(name, job.name)) or job.trigger

    def _schedule_job(self, name: str, job: Job) -> None:
        if self.scheduler is None:
            return
        ctx = self.contexts[name]

        async def fire() -> None:
            # A run cancelled by shutdown is recorded by run_job; the scheduler needn't log it as a crash.
            with contextlib.suppress(asyncio.CancelledError):
                await run_job(ctx, job, trigger="schedule")

        self.scheduler.add_job(
            fire,
            parse_trigger(self.trigger_for(name, job)),
            id=f"{name}.{job.name}",
            name=f"{name}.{job.name}",
            max_instances=1,
            coalesce=True,
            misfire_grace_time=300,
            replace_existing=True,
        )

    async def start_scheduler(self) -> list[str]:
        """Schedule the jobs of every enabled module; a disabled module's jobs are never scheduled."""
        from apscheduler.schedulers.asyncio import AsyncIOScheduler  # only `run` schedules: CLI stays light

        self.scheduler = AsyncIOScheduler(timezone="UTC")
        scheduled: list[str] = []
        for name, spec in sorted(self.specs.items()):
            if not await self.enabled(name):
                log.info("module %s is disabled: not scheduling its jobs", name)
                continue
            await self.context(name)
            for job in spec.manifest.jobs:
                self._schedule_job(name, job)
                scheduled.append(f"{name}.{job.name}")
        self.scheduler.start()
        return scheduled

    async def run_job_once(self, qualified: str) -> JobResult:
        name, _, job_name = qualified.partition(".")
        spec = module.get(self.specs, name)
        job = spec.manifest.job(job_name)
        if not await self.enabled(name):
            raise UserError(f"module {name} is disabled", f"enable it with `feedeater modules enable {name}`")
        return await run_job(await self.context(name), job, trigger="manual")

    # -- run -----------------------------------------------------------------------------------
    async def health(self) -> dict[str, Any]:
        report: dict[str, Any] = {"host_id": self.config.host_id}
        try:
            async with self.require_pool().acquire() as conn:
                st = await outbox.status(conn)
            report["database"] = "ok"
            report["outbox"] = {"pending": st.pending, "lag_seconds": round(st.lag_seconds, 3)}
        except Exception as exc:
            report["database"] = f"error: {exc}"
        report["nats"] = "ok" if self.nc is not None and self.nc.is_connected else "disconnected"
        report["ok"] = report["database"] == "ok" and report["nats"] == "ok"
        return report

    async def run(self, stop: asyncio.Event) -> None:
        """Serve until `stop` is set: relay, scheduler, /healthz and /metrics."""
        assert self.js is not None
        # Modules and their settings first: a bad setting stops us before anything runs in the background.
        scheduled = await self.start_scheduler()
        server = await httpserver.serve(self.config.http_host, self.config.http_port, self.health)
        port = server.sockets[0].getsockname()[1]
        relay = outbox.Relay(self.require_pool(), self.js)
        relay_task = asyncio.create_task(relay.run(stop), name="outbox-relay")
        log.info(
            "feedeater running: jobs %s; health and metrics on http://%s:%s/healthz",
            ", ".join(scheduled) or "none",
            self.config.http_host,
            port,
        )
        try:
            await stop.wait()
        finally:
            server.close()
            relay_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await relay_task
