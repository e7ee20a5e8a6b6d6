"""The host's own daily job, scheduled whatever modules are enabled: it keeps host tables bounded.

- published outbox rows older than `host.outbox_keep_days` (the stream keeps the events for consumers);
- job runs older than `host.job_runs_keep_days`;
- processed-event ids older than the bus stream keeps messages (no redelivery can need them after);
- state rows of hosts silent for a day;
- context links whose message the owning module no longer has, and contexts (with their links) of
  sources the owner removed. The owner answers through `ModuleSpec.live_messages` / `live_sources`
  (given a batch of ids the host holds, return those still alive); a module without them keeps its
  links and contexts, and so does a module that is no longer installed.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

import asyncpg

from host import migrate, outbox, validate
from host.ai import AI_SETTINGS
from host.module import Job, LiveMessages, LiveSources, Manifest, ModuleContext, ModuleSpec, Setting

BATCH = 1000
# The bus streams' limits: a running host applies a change by updating the streams (Host.prepare_streams).
BUS_LIMITS = frozenset({"bus_replicas", "bus_max_age_days", "bus_max_bytes_mb"})


def host_module(plugins: Mapping[str, ModuleSpec]) -> ModuleSpec:
    """The host's pseudo-module `host` (migrations, settings, the housekeeping job) over `plugins`."""

    async def run(ctx: ModuleContext) -> dict[str, Any]:
        return await housekeeping(ctx, plugins)

    return ModuleSpec(
        manifest=Manifest(
            name="host",
            version="1",
            description="the host's own tables: outbox, job runs, processed events, contexts",
            jobs=(Job("housekeeping", run, "41 * * * *", "prune outbox, job runs, processed ids, contexts"),),
            settings=(
                Setting(
                    "outbox_keep_days",
                    "float",
                    0.1,
                    "days published outbox rows are kept (0.1 = 2.4 h): JetStream has them once published; the "
                    "window is for looking back (the console's last hour), not for delivery",
                    min=0.05,
                    max=3650,
                ),
                Setting("job_runs_keep_days", "int", 30, "days job runs are kept", min=1, max=3650),
                Setting(
                    "bus_replicas",
                    "int",
                    0,
                    "replicas of each JetStream stream (3 on a cluster); 0 = 3 when NATS has three or more "
                    "servers, else 1",
                    min=0,
                    max=5,
                ),
                Setting(
                    "bus_max_age_days",
                    "int",
                    30,
                    "days the bus streams keep events (consumers that lag longer lose them)",
                    min=1,
                    max=3650,
                ),
                Setting(
                    "bus_max_bytes_mb",
                    "int",
                    1024,
                    "size limit of each bus stream in MB (reserved on every replica's server); when full, "
                    "new events wait in the outbox; 0 = no limit",
                    min=0,
                ),
                Setting(
                    "otlp_endpoint",
                    "str",
                    "",
                    "OTLP/HTTP collector base URL for traces (e.g. http://localhost:4318); empty = "
                    "OTEL_EXPORTER_OTLP_ENDPOINT, else tracing off",
                    check=validate.url(empty=True),
                    applies="restart",  # the tracer provider is process-wide, set up once at start
                ),
                *AI_SETTINGS,  # one AIServices per host: every module's ctx.ai (Host.host_ai)
            ),
            migrations=migrate.builtin("host"),
        )
    )


async def housekeeping(ctx: ModuleContext, plugins: Mapping[str, ModuleSpec]) -> dict[str, Any]:
    async with ctx.pool.acquire() as conn:
        metrics: dict[str, Any] = {
            "outbox_rows_pruned": await outbox.prune(conn, keep_days=float(ctx.settings["outbox_keep_days"])),
            "job_runs_deleted": _count(
                await conn.execute(
                    "DELETE FROM host.job_runs WHERE started_at < now() - make_interval(days => $1)",
                    int(ctx.settings["job_runs_keep_days"]),
                )
            ),
            "processed_ids_deleted": _count(
                await conn.execute(
                    "DELETE FROM host.processed_events WHERE processed_at < now() - make_interval(secs => $1)",
                    float((int(ctx.settings["bus_max_age_days"]) + 1) * 86400),
                )
            ),
            "service_rows_deleted": _count(
                await conn.execute(
                    "DELETE FROM host.service_state WHERE updated_at < now() - interval '1 day'"
                )
            )
            + _count(await conn.execute("DELETE FROM host.hosts WHERE seen_at < now() - interval '1 day'")),
        }
        links = contexts = 0
        for name, spec in sorted(plugins.items()):
            if spec.live_sources is not None:
                contexts += await prune_contexts(conn, name, spec.live_sources)
            if spec.live_messages is not None:
                links += await prune_links(conn, name, spec.live_messages)
        metrics |= {"context_links_deleted": links, "contexts_deleted": contexts}
    return metrics


async def prune_links(conn: asyncpg.Connection, owner: str, live: LiveMessages) -> int:
    """Delete links of `owner`'s messages the module no longer has, a batch of ids at a time."""
    deleted = 0
    after = uuid.UUID(int=0)
    while ids := [
        r["message_id"]
        for r in await conn.fetch(
            """SELECT message_id FROM host.context_messages WHERE owner_module = $1 AND message_id > $2
               ORDER BY message_id LIMIT $3""",
            owner,
            after,
            BATCH,
        )
    ]:
        after = ids[-1]
        alive = set(await live(conn, ids))
        gone = [i for i in ids if i not in alive]
        if gone:
            deleted += _count(
                await conn.execute(
                    "DELETE FROM host.context_messages WHERE message_id = ANY($1::uuid[])", gone
                )
            )
    return deleted


async def prune_contexts(conn: asyncpg.Connection, owner: str, live: LiveSources) -> int:
    """Delete `owner`'s contexts (and their links) whose source the module no longer has."""
    keys = [
        r["source_key"]
        for r in await conn.fetch(
            """SELECT source_key FROM host.contexts WHERE owner_module = $1
               UNION SELECT DISTINCT source_key FROM host.context_messages WHERE owner_module = $1""",
            owner,
        )
    ]
    deleted = 0
    for start in range(0, len(keys), BATCH):
        batch = keys[start : start + BATCH]
        alive = set(await live(conn, batch))
        gone = [k for k in batch if k not in alive]
        if not gone:
            continue
        async with conn.transaction():
            await conn.execute(
                "DELETE FROM host.context_messages WHERE owner_module = $1 AND source_key = ANY($2::text[])",
                owner,
                gone,
            )
            deleted += _count(
                await conn.execute(
                    "DELETE FROM host.contexts WHERE owner_module = $1 AND source_key = ANY($2::text[])",
                    owner,
                    gone,
                )
            )
    return deleted


def _count(status: str) -> int:
    """Rows affected, from asyncpg's command status ("DELETE 12")."""
    return int(status.split()[-1])
