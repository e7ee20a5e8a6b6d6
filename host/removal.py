"""`feedeater modules remove NAME`: what the host keeps for a module, deleted (its data only when asked).

A module's traces live in the host's tables (settings, job runs, unit states, processed-event records,
enabled flag), on the bus (its durable consumers, its dead letters), in its schemas `mod_<name>` and
`<name>_public` with its migration records, and in what this database grants its role. The role itself
stays: roles are cluster-wide and `feedeater_mod_<name>` is the same name in every database of the
cluster (host/roles.py), so dropping it would break the module in the others. Removal works from what is stored, so it also cleans up after a module whose
distribution was uninstalled already (its manifest is gone: consumers are found by their name prefix).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from host import dlq, roles, streams
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
    schema_dropped: bool = False  # mod_<name>
    public_schema_dropped: bool = False  # <name>_public, its public views
    role_revoked: str | None = None  # its role, this database's grants revoked (the role is kept)
    role_objects_left: int = 0  # objects of this database still owned by or granted to the role
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
        await _drop_data(conn, name, result)


async def _drop_data(conn: asyncpg.Connection, name: str, result: Removed) -> None:
    """Its schemas, and what this database grants its role (not the role: other databases share it).
    Not `DROP OWNED BY`: it also revokes the role's rights on the cluster's other databases."""
    private, public = roles.schemas(name)
    exists = "SELECT to_regnamespace($1) IS NOT NULL"
    result.schema_dropped = bool(await conn.fetchval(exists, private))
    result.public_schema_dropped = bool(await conn.fetchval(exists, public))
    for schema in (private, public):
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    role = roles.role_name(name)
    if not await conn.fetchval("SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)", role):
        return
    await conn.execute(
        await conn.fetchval(
            "SELECT format('REVOKE ALL ON DATABASE %I FROM %I', current_database(), $1::text)", role
        )
    )
    result.role_revoked = role
    result.role_objects_left = await conn.fetchval(
        """SELECT count(*) FROM pg_shdepend
           WHERE refclassid = 'pg_authid'::regclass AND refobjid = $1::regrole
             AND dbid = (SELECT oid FROM pg_database WHERE datname = current_database())""",
        role,
    )


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
