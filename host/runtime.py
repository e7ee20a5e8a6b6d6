"""The host process: services, migrations, module contexts, scheduler, supervised services and
subscriptions, outbox relay, health endpoint."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import logging
import os
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import asyncpg

from host import db, livesettings, migrate, module, outbox, settings, streams, tracing
from host.ai import AI_SETTINGS, build_ai
from host.config import HostConfig
from host.errors import UserError
from host.events import iso_z, subject
from host.housekeeping import BUS_LIMITS, host_module
from host.jobs import JobResult, parse_trigger, run_job, trigger_override_key
from host.module import Job, ModuleContext, ModuleSpec, Service
from host.roles import Isolation
from host.services import Endpoints, Services
from host.supervise import Supervisor, Unit, cancel_and_wait

if TYPE_CHECKING:
    from apscheduler.schedulers.asyncio import AsyncIOScheduler
    from nats.aio.client import Client as NatsClient
    from nats.js import JetStreamContext

    from host import bus
    from host.web import server as web_server

log = logging.getLogger("feedeater.host")
CLOSE_TIMEOUT_S = 30.0  # how long a stop waits for job runs and database connections before forcing
_AI_KEYS = frozenset(s.key for s in AI_SETTINGS)


class StopClock:
    """What each step of a stop took, for one log line at the end: what a slow shutdown waited on."""

    def __init__(self) -> None:
        self.steps: dict[str, float] = {}
        self._last = time.monotonic()

    def mark(self, step: str) -> None:
        """`step` ended now (it began at the previous mark)."""
        now = time.monotonic()
        self.steps[step] = self.steps.get(step, 0.0) + now - self._last
        self._last = now

    def __str__(self) -> str:
        steps = ", ".join(f"{step} {took:.1f} s" for step, took in self.steps.items())
        return f"{sum(self.steps.values()):.1f} s ({steps})"


def _other_tasks() -> str:
    """The tasks running beside the current one, by name and coroutine (what a stop is waiting on)."""
    me = asyncio.current_task()
    names = sorted(
        f"{t.get_name()} ({getattr(t.get_coro(), '__qualname__', '?')})"
        for t in asyncio.all_tasks()
        if t is not me
    )
    return ", ".join(names) or "none"


def _version() -> str:
    try:
        return importlib.metadata.version("feedeater")
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"


class Host:
    """One feedeater process. Several may share one database and one NATS cluster."""

    def __init__(self, config: HostConfig, *, env: Mapping[str, str] | None = None) -> None:
        self.config = config
        self.env = dict(os.environ) if env is None else dict(env)
        # Installed modules that could not be loaded (name → why): every other one runs, and their names
        # stay known to `modules enable/disable/remove`.
        self.skipped: dict[str, str] = {}
        plugins = module.discover(self.skipped)
        self.specs: dict[str, ModuleSpec] = {"host": host_module(plugins), **plugins}
        self.services = Services(config.home)
        self.endpoints: Endpoints | None = None
        self.pool: asyncpg.Pool | None = None
        self.isolation = Isolation()  # which modules act as their own database role (host/roles.py)
        self.module_pools: dict[str, asyncpg.Pool] = {}  # module → the pool behind its ctx.pool
        self.nc: NatsClient | None = None
        self.js: JetStreamContext | None = None
        self.link: bus.BusLink | None = None
        self.contexts: dict[str, ModuleContext] = {}
        self.scheduler: AsyncIOScheduler | None = None
        self.job_tasks: set[asyncio.Task[None]] = set()  # scheduled runs in flight (awaited on close)
        self.close_timeout_s = CLOSE_TIMEOUT_S
        self.supervisor: Supervisor | None = None
        self.http_port: int | None = None  # where `run` serves HTTP (FEEDEATER_HTTP_PORT=0 picks one)
        self.started_at: datetime | None = None  # when `run` started (its host.hosts row)
        self.restart_needed: dict[str, frozenset[str]] = {}  # module → stored keys only a restart applies
        self.settings_errors: dict[str, str] = {}  # module → a stored value it refused (kept the old one)
        self.http_app: Any = None  # the ASGI app `run` serves (FastAPI)
        self.applied_migrations: list[str] = []  # what this process's open() applied
        self.on_serving: Callable[[int], None] | None = None  # told the HTTP port once `run` serves
        self.stop_clock: StopClock | None = None  # started when `run` is told to stop

    # -- lifecycle -----------------------------------------------------------------------------
    async def open(
        self, *, with_bus: bool = True, connect_bus: bool = True, wait_for_db: bool = False
    ) -> None:
        """Start (or find) the services, apply migrations, connect.

        `connect_bus=False` starts an embedded NATS but leaves connecting to `run` (which attaches in
        the background); `wait_for_db` retries an unreachable PostgreSQL for FEEDEATER_DB_WAIT_SECONDS.
        """
        self.endpoints = await asyncio.to_thread(
            self.services.up,
            database_url=self.config.database_url,
            nats_url=self.config.nats_url,
            with_nats=with_bus,
        )
        if wait_for_db:
            await db.wait_for(self.endpoints.database_url, self.config.db_wait_seconds)
        conn = await db.connect(self.endpoints.database_url)
        try:
            applied, self.isolation = await migrate.migrate(conn, self.specs)
        finally:
            await conn.close()
        self.applied_migrations = applied
        if applied:
            log.info("applied migrations: %s", ", ".join(applied))
        if self.isolation.warning:
            log.warning("%s", self.isolation.warning)
        self.pool = await db.create_pool(self.endpoints.database_url, max_size=self.config.db_pool)
        if with_bus:
            from host import bus  # nats is slow to import: only commands that use the bus load it

            self.link = bus.BusLink(
                self.endpoints.nats_url, name=f"feedeater {self.config.host_id}", prepare=self.prepare_streams
            )
        if with_bus and connect_bus:
            from host import bus

            self.nc = await bus.connect(self.endpoints.nats_url, name=f"feedeater {self.config.host_id}")
            self.js = self.nc.jetstream()
            await self.prepare_streams(self.nc)

    @property
    def stream_plan(self) -> streams.Plan:
        """Which stream captures which subjects, declared events included (host/streams.py)."""
        return streams.plan({subject(n, e) for n, s in self.specs.items() for e in s.manifest.events})

    async def prepare_streams(self, nc: NatsClient) -> list[str]:
        """Create the streams or bring them to the plan and the host's bus settings; returns what changed
        (also the outbox relay's repair when a subject finds no stream)."""
        from host import bus

        limits = bus.BusLimits.from_settings(await self.resolved_settings("host"), bus.known_servers(nc))
        changes = await bus.ensure_streams(nc, self.stream_plan, limits)
        if changes:
            log.info("bus streams (%d replicas): %s", limits.replicas, "; ".join(changes))
        return changes

    async def close(self, *, stop_started_services: bool = False) -> None:
        clock = self.stop_clock or StopClock()
        if self.scheduler is not None and self.scheduler.running:
            self.scheduler.shutdown(wait=False)  # cancels the runs in flight without waiting for them
        await self._finish_job_runs()
        clock.mark("job runs")
        if self.supervisor is not None:
            await self.supervisor.stop()
            await livesettings.forget_host(self.require_pool(), self.config.host_id)
        clock.mark("units")
        for name, ctx in list(self.contexts.items()):
            await ctx.close_retired()
            spec = self.specs[name]
            if spec.teardown is not None:
                try:
                    await spec.teardown(ctx)
                except Exception as exc:
                    log.warning("module %s teardown failed: %s", name, exc)
            await ctx.ai.aclose()
        self.contexts.clear()
        clock.mark("teardown")
        tracing.shutdown()  # after the jobs and units: their last spans are exported too
        if self.nc is not None and not self.nc.is_closed:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.nc.drain(), timeout=5)
        clock.mark("nats")
        pools = [*self.module_pools.values(), *([self.pool] if self.pool is not None else [])]
        self.module_pools.clear()
        await asyncio.gather(*(self._close_pool(pool) for pool in pools))
        clock.mark("database pool")
        if stop_started_services and self.endpoints is not None and self.endpoints.started:
            await asyncio.to_thread(self.services.down, self.endpoints.started)
            clock.mark("embedded services")
        log.info("stopped in %s", clock)

    async def _close_pool(self, pool: asyncpg.Pool) -> None:
        try:  # bounded: a stop (systemd, Ctrl-C) must end even if something still holds a connection
            await asyncio.wait_for(pool.close(), timeout=self.close_timeout_s)
        except TimeoutError:
            log.warning(
                "database connections still busy after %.0f s: closed forcibly (tasks still running: %s)",
                self.close_timeout_s,
                _other_tasks(),
            )
            pool.terminate()

    async def _finish_job_runs(self) -> None:
        """Cancel the scheduled runs still in flight and wait for them to record it and give their
        connections back; otherwise closing the pool waits for them (it warned after 60 s and never ended)."""
        for task in await cancel_and_wait(self.job_tasks, self.close_timeout_s):
            log.warning(
                "job run %s did not stop within %.0f s of shutdown", task.get_name(), self.close_timeout_s
            )

    # -- modules -------------------------------------------------------------------------------
    def require_pool(self) -> asyncpg.Pool:
        assert self.pool is not None, "Host.open() first"
        return self.pool

    async def enabled(self, name: str) -> bool:
        default = True if name in self.skipped else module.get(self.specs, name).manifest.enabled_by_default
        if name == "host":
            return True
        row = await self.require_pool().fetchval("SELECT enabled FROM host.modules WHERE name = $1", name)
        return default if row is None else bool(row)

    async def set_enabled(self, name: str, enabled: bool) -> None:
        if (
            name not in self.skipped
        ):  # a broken plugin can still be disabled (or enabled for when it is fixed)
            module.get(self.specs, name)
        if name == "host":
            raise UserError("the host cannot be disabled", "disable a module instead")
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
            pool=await self.module_pool(name),
            settings=resolved,
            log=logging.getLogger(f"feedeater.{name}"),
            host_id=self.config.host_id,
            emit=outbox.emitter(name, spec.manifest.events),
            ai=build_ai(resolved),
            nats=self.nc,
            home=self.config.home,
        )
        if spec.setup is not None:
            await spec.setup(ctx)
        self.contexts[name] = ctx
        return ctx

    async def module_pool(self, name: str) -> asyncpg.Pool:
        """The pool behind a module's ctx.pool: connections acting as its role, or the host's own pool
        when it has none (the host pseudo-module; a database user that may not create roles)."""
        role = self.isolation.roles.get(name)
        if role is None:
            return self.require_pool()
        if name not in self.module_pools:
            assert self.endpoints is not None
            self.module_pools[name] = await db.create_pool(
                self.endpoints.database_url, min_size=0, max_size=self.config.db_pool, role=role
            )
        return self.module_pools[name]

    async def enabled_contexts(self, *, say_disabled: bool = True) -> list[ModuleContext]:
        """Set up every enabled module (settings validated first); a disabled module is never started."""
        out = []
        for name in sorted(self.specs, key=lambda n: (n != "host", n)):
            if await self.enabled(name):
                out.append(await self.context(name))
            elif say_disabled:
                log.info("module %s is disabled: not starting its jobs, services or subscriptions", name)
        return out

    # -- settings changed while running (host/livesettings.py) --------------------------------
    async def apply_settings(self, name: str | None) -> None:
        """Re-read the stored settings of module `name` (None: every running module) and apply them;
        then refresh this host's row, which confirms the change to `settings set`."""
        read_at = await self.require_pool().fetchval("SELECT clock_timestamp()")
        for n in [name] if name is not None else list(self.contexts):
            if n in self.contexts:
                await self._apply_module_settings(self.contexts[n])
        await self._save_host_row(read_at)

    async def _apply_module_settings(self, ctx: ModuleContext) -> None:
        spec = self.specs[ctx.name]
        try:
            resolved = await self.resolved_settings(ctx.name)
            change = livesettings.plan(spec.manifest, ctx.settings, resolved)
            ai = build_ai(change.values) if change.live & _AI_KEYS else None
        except UserError as exc:  # a value stored past validation (SQL): keep running with the old ones
            if self.settings_errors.get(ctx.name) != exc.message:
                log.warning("settings of %s not applied: %s", ctx.name, exc)
            self.settings_errors[ctx.name] = exc.message
            return
        self.settings_errors.pop(ctx.name, None)
        ctx.settings = change.values
        if ai is not None:
            ctx.retire(ctx.ai.aclose)
            ctx.ai = ai
        if change.live and spec.reconfigure is not None:
            await spec.reconfigure(ctx, change.live)
        if ctx.name == "host" and change.live & BUS_LIMITS and self.nc is not None:
            try:
                await self.prepare_streams(self.nc)
            except Exception as exc:  # NATS refused the new limits: say so, keep running
                self.settings_errors["host"] = f"bus streams not updated: {exc}"
                log.warning("bus streams not updated to the new settings: %s", exc)
        if change.services and self.supervisor is not None:
            self.supervisor.restart_services(ctx.name)
        if change.restart and change.restart != self.restart_needed.get(ctx.name, frozenset()):
            log.warning(
                "settings %s changed: they apply when this host restarts",
                ", ".join(f"{ctx.name}.{k}" for k in sorted(change.restart)),
            )
        self.restart_needed[ctx.name] = change.restart
        if applied := sorted(change.live | change.services):
            log.info("settings applied: %s", ", ".join(f"{ctx.name}.{k}" for k in applied))

    def pending_restart(self) -> list[str]:
        """`module.key` of stored settings this process runs without (they apply at its next start)."""
        return sorted(f"{n}.{k}" for n, keys in self.restart_needed.items() for k in keys)

    async def _save_host_row(self, settings_read_at: datetime | None = None) -> None:
        assert self.started_at is not None
        await livesettings.save_host(
            self.require_pool(),
            self.config.host_id,
            started_at=self.started_at,
            restart_needed=self.pending_restart(),
            env_overrides=livesettings.env_overrides(self.specs, self.env),
            settings_error="; ".join(self.settings_errors.values()) or None,
            settings_read_at=settings_read_at,
        )

    # -- jobs ----------------------------------------------------------------------------------
    def trigger_for(self, name: str, job: Job) -> str:
        return self.env.get(trigger_override_key(name, job.name)) or job.trigger

    def _schedule_job(self, ctx: ModuleContext, job: Job) -> None:
        assert self.scheduler is not None

        async def fire() -> None:
            task = asyncio.current_task()
            assert task is not None
            self.job_tasks.add(task)
            try:
                # A run cancelled by shutdown is recorded by run_job; the scheduler needn't log it as a crash.
                with contextlib.suppress(asyncio.CancelledError):
                    await run_job(ctx, job, trigger="schedule")
            finally:
                self.job_tasks.discard(task)

        self.scheduler.add_job(
            fire,
            parse_trigger(self.trigger_for(ctx.name, job)),
            id=f"{ctx.name}.{job.name}",
            name=f"{ctx.name}.{job.name}",
            max_instances=1,
            coalesce=True,
            misfire_grace_time=300,
            replace_existing=True,
        )

    async def start_scheduler(self) -> list[str]:
        """Schedule the jobs of every enabled module and the host's own."""
        from apscheduler.schedulers.asyncio import AsyncIOScheduler  # only `run` schedules: CLI stays light

        self.scheduler = AsyncIOScheduler(timezone="UTC")
        scheduled: list[str] = []
        for ctx in await self.enabled_contexts():
            for job in self.specs[ctx.name].manifest.jobs:
                self._schedule_job(ctx, job)
                scheduled.append(f"{ctx.name}.{job.name}")
        self.scheduler.start()
        return scheduled

    async def run_job_once(self, qualified: str) -> JobResult:
        name, _, job_name = qualified.partition(".")
        spec = module.get(self.specs, name)
        job = spec.manifest.job(job_name)
        if not await self.enabled(name):
            raise UserError(f"module {name} is disabled", f"enable it with `feedeater modules enable {name}`")
        return await run_job(await self.context(name), job, trigger="manual")

    # -- services and subscriptions ------------------------------------------------------------
    def _start_service(self, ctx: ModuleContext, service: Service, unit: Unit) -> None:
        assert self.supervisor is not None
        self.supervisor.start(unit, lambda: service.run(ctx))

    def _start_units(self) -> list[tuple[ModuleContext, Service | None, Unit]]:
        """Start the services that need no bus; return what waits for the bus (services, subscriptions)."""
        assert self.supervisor is not None
        waiting: list[tuple[ModuleContext, Service | None, Unit]] = []
        for ctx in self.contexts.values():
            manifest = self.specs[ctx.name].manifest
            for service in manifest.services:
                unit = self.supervisor.add(Unit(ctx.name, service.name, "service"))
                if service.needs_bus:
                    waiting.append((ctx, service, unit))
                else:
                    self._start_service(ctx, service, unit)
            for sub in manifest.subscriptions:
                waiting.append((ctx, None, self.supervisor.add(Unit(ctx.name, sub.name, "subscription"))))
        return waiting

    async def _attach_bus(
        self, stop: asyncio.Event, waiting: list[tuple[ModuleContext, Service | None, Unit]]
    ) -> None:
        """Connect (retrying while NATS is down), then start the relay and everything that needs the bus."""
        from host import consumers

        assert self.link is not None and self.supervisor is not None
        if self.js is None:
            if not await self.link.attach(stop):
                return
            self.nc, self.js = self.link.nc, self.link.js
        else:
            self.link.nc, self.link.js = self.nc, self.js
        assert self.js is not None
        for ctx in self.contexts.values():
            ctx.nats = self.nc
        nc = self.nc
        assert nc is not None
        relay = outbox.Relay(self.require_pool(), self.js, repair=lambda: self.prepare_streams(nc))
        self.supervisor.start(
            self.supervisor.add(Unit("host", "outbox-relay", "service")), lambda: relay.run(stop)
        )
        for ctx, service, unit in waiting:
            if service is not None:
                self._start_service(ctx, service, unit)
                continue
            sub = next(s for s in self.specs[ctx.name].manifest.subscriptions if s.name == unit.name)
            consumer = consumers.Consumer(ctx, sub, self.js, unit, layout=self.stream_plan)
            self.supervisor.start(unit, consumer.run)

    # -- run -----------------------------------------------------------------------------------
    async def health(self) -> dict[str, Any]:
        """/healthz: ok, or degraded with the reasons (database, bus, units not running)."""
        report: dict[str, Any] = {"host_id": self.config.host_id}
        problems: list[str] = []
        try:
            async with self.require_pool().acquire() as conn:
                st = await outbox.status(conn)
            report["database"] = "ok"
            report["outbox"] = {
                "pending": st.pending,
                "lag_seconds": round(st.lag_seconds, 3),
                "stalled": [
                    {"subject": x.subject, "pending": x.pending, "since": iso_z(x.since), "error": x.error}
                    for x in st.stalled
                ],
            }
            problems += [f"outbox: {stalled.describe()}" for stalled in st.stalled]
        except Exception as exc:
            report["database"] = f"error: {exc}"
            problems.append(f"database: {exc}")
        trouble = self.link.trouble() if self.link is not None else "no bus configured"
        report["nats"] = trouble or "ok"
        if trouble:
            problems.append(trouble)
        units = self.supervisor.units if self.supervisor is not None else []
        report["units"] = [u.as_dict() for u in units]
        # Not a fault (the host runs as configured before): listed so an operator knows to restart it.
        report["restart_required"] = self.pending_restart()
        report["settings_errors"] = sorted(self.settings_errors.values())
        # Not a fault of this host (every other module runs): listed so the broken plugin gets fixed.
        report["skipped_modules"] = dict(sorted(self.skipped.items()))
        problems += [
            f"{u.kind} {u.label}: {u.state}" + (f" ({u.last_error})" if u.last_error else "")
            for u in units
            if u.state != "running" and not u.state.startswith("idle")  # idle as configured: not a fault
        ]
        report["status"] = "degraded" if problems else "ok"
        report["degraded"] = problems
        report["ok"] = not problems
        return report

    async def _serve_http(self) -> web_server.Served:
        """The one ASGI app: /healthz, /metrics, every enabled module's routes and the web console at /."""
        from host.console import app as console_app
        from host.web import app as web_app  # FastAPI is slow to import: only `run` needs it
        from host.web import dlq as web_dlq
        from host.web import server as web_server

        mounted = [
            (ctx, r)
            for ctx in await self.enabled_contexts(say_disabled=False)  # the scheduler said it already
            for r in self.specs[ctx.name].manifest.routes
        ]
        app = await web_app.build_app(
            self.health,
            [(ctx, r) for ctx, r in mounted if not r.pages],
            version=_version(),
            pool=self.require_pool(),
            bind_host=self.config.http_host,
            public_hosts=self.config.public_hosts,
            trusted_proxies=self.config.trusted_proxies,
            host_routers=[web_dlq.build(lambda: self.js, self.specs, self.context)],
        )
        await console_app.mount(app, self, [(ctx, r) for ctx, r in mounted if r.pages])
        self.http_app = app
        return await web_server.serve(app, self.config.http_host, self.config.http_port)

    async def run(self, stop: asyncio.Event) -> None:
        """Serve until `stop` is set: jobs, services, subscriptions, relay, /healthz and /metrics.

        The bus may be down at start: everything that needs it starts once it is attached.
        """
        assert self.link is not None, "Host.open(with_bus=True) first"
        for name, reason in sorted(self.skipped.items()):
            (log.warning if await self.enabled(name) else log.info)("%s", module.skipped_line(name, reason))
        # Modules and their settings first: a bad setting stops us before anything runs in the background.
        host_settings = (await self.context("host")).settings
        tracing.configure(self.env, setting=host_settings["otlp_endpoint"], host_id=self.config.host_id)
        scheduled = await self.start_scheduler()
        server = await self._serve_http()
        port = self.http_port = server.port
        if self.on_serving is not None:
            self.on_serving(port)
        self.supervisor = Supervisor(self.require_pool(), self.config.host_id)
        self.started_at = datetime.now(UTC)
        waiting = self._start_units()
        assert self.endpoints is not None
        url = self.endpoints.database_url
        self.supervisor.start(
            self.supervisor.add(Unit("host", "settings", "service")),
            lambda: livesettings.listen(url, self.apply_settings, self._save_host_row),
        )
        background = [
            asyncio.create_task(self._attach_bus(stop, waiting), name="bus-attach"),
            asyncio.create_task(self.supervisor.keep_saving(), name="unit-state"),
        ]
        log.info(
            "feedeater running: jobs %s; services and subscriptions %s; console on http://%s:%s/ (health: /healthz)",
            ", ".join(scheduled) or "none",
            ", ".join(u.label for u in self.supervisor.units) or "none",
            self.config.http_host,
            port,
        )
        try:
            await stop.wait()
        finally:
            clock = self.stop_clock = StopClock()
            self.supervisor.stopping = True
            await server.close()
            clock.mark("http")
            await cancel_and_wait(background, self.close_timeout_s)
            clock.mark("background tasks")
            await self.supervisor.stop()
            clock.mark("units")
