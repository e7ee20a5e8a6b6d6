"""`feedeater modules remove NAME`: what the host keeps for a module, deleted (its data only when asked).

A module's traces live in the host's tables (settings, job runs, unit states, processed-event records,
enabled flag), on the bus (its durable consumers, its dead letters) and in its own schema `mod_<name>`
with its migration records. Removal works from what is stored, so it also cleans up after a module whose
distribution was uninstalled already (its manifest is gone: consumers are found by their name prefix).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from host import dlq, streams
from host.errors import UserError

if TYPE_CHECKING:
    import asyncpg
    from nats.js import JetStreamContext

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(slots=True)
class Removed:
    name: str
    rows: dict[str, int] = field(default_factory=dict)  # host table → rows deleted
    consumers: list[str] = field(default_factory=list)  # "<stream>/<durable>"
    dead_letters: int = 0
    schema_dropped: bool = False
    still_installed: bool = False  # a broken plugin still installed: kept disabled


def owns_consumer(durable: str, name: str, others: Collection[str]) -> bool:
    """Is `durable` (`<module>_<subscription>`) one of module `name`'s, not of another module whose name
    starts with `name_` (pure)."""
    if not durable.startswith(f"{name}_"):
        return False
    return not any(len(o) > len(name) and durable.startswith(f"{o}_") for o in others)


async def known(conn: asyncpg.Connection, name: str) -> bool:
    """Does the database hold anything of module `name`?"""
    return bool(
        await conn.fetchval(
            """SELECT EXISTS (SELECT 1 FROM host.modules WHERE name = $1)
                   OR EXISTS (SELECT 1 FROM host.settings WHERE module = $1)
                   OR EXISTS (SELECT 1 FROM host.job_runs WHERE module = $1)
                   OR EXISTS (SELECT 1 FROM host.service_state WHERE module = $1)
                   OR EXISTS (SELECT 1 FROM public.feedeater_migrations WHERE scope = $1)
                   OR to_regnamespace($2) IS NOT NULL""",
            name,
            f"mod_{name}",
        )
    )


async def remove_rows(
    conn: asyncpg.Connection, name: str, *, installed: bool, drop_data: bool, result: Removed
) -> None:
    """The database part, in the caller's transaction."""
    if not _NAME.match(name):
        raise UserError(f"{name!r} is not a module name", "module names are snake_case")
    deletes = {
        "settings": "DELETE FROM host.settings WHERE module = $1",
        "job_runs": "DELETE FROM host.job_runs WHERE module = $1",
        "service_state": "DELETE FROM host.service_state WHERE module = $1",
        "processed_events": "DELETE FROM host.processed_events WHERE consumer LIKE $1 || '.%'",
    }
    if drop_data:
        deletes["context_messages"] = "DELETE FROM host.context_messages WHERE owner_module = $1"
        deletes["contexts"] = "DELETE FROM host.contexts WHERE owner_module = $1"
        deletes["migrations"] = "DELETE FROM public.feedeater_migrations WHERE scope = $1"
    for table, sql in deletes.items():
        result.rows[table] = int((await conn.execute(sql, name)).split()[-1])
    if installed:  # a broken plugin still installed: it stays off until its distribution is uninstalled
        await conn.execute(
            """INSERT INTO host.modules (name, enabled) VALUES ($1, false)
               ON CONFLICT (name) DO UPDATE SET enabled = false, updated_at = now()""",
            name,
        )
    else:
        await conn.execute("DELETE FROM host.modules WHERE name = $1", name)
    if drop_data:
        result.schema_dropped = bool(
            await conn.fetchval("SELECT to_regnamespace($1) IS NOT NULL", f"mod_{name}")
        )
        await conn.execute(f'DROP SCHEMA IF EXISTS "mod_{name}" CASCADE')


async def remove_bus(js: JetStreamContext, name: str, others: Collection[str], result: Removed) -> None:
    """Its durable consumers on every bus stream, and its dead letters."""
    from nats.js.errors import NotFoundError

    for stream in (*streams.BUS_STREAMS,):
        try:
            consumers = await js.consumers_info(stream)
        except NotFoundError:
            continue
        for info in consumers:
            durable = info.name or ""
            if owns_consumer(durable, name, others):
                try:
                    await js.delete_consumer(stream, durable)
                except NotFoundError:
                    continue
                result.consumers.append(f"{stream}/{durable}")
    result.dead_letters = await dlq.purge(js, dlq.filter_subject(name))
