"""The host's current context per (owner_module, source_key), written together with its ContextUpdated.

The event leaves through the owner's `ctx.emit`, like every other event a module publishes: a module
that does not declare `contextUpdated` (or names another module as owner) is refused.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import asyncpg

from host.events import context_updated, truncate_utf16
from host.module import Emit


async def update(
    conn: asyncpg.Connection,
    emit: Emit,
    *,
    module: str,
    source_key: str,
    summary_short: str,
    summary_long: str,
    key_points: Sequence[str],
    message_id: uuid.UUID | None = None,
    embedding: Sequence[float] | None = None,
    meta: dict[str, Any] | None = None,
    now: datetime | None = None,
) -> int:
    """Store the new context version and emit its ContextUpdated (`ctx.emit` of `module`); call inside
    the caller's transaction."""
    now = now or datetime.now(UTC)
    short = truncate_utf16(summary_short)
    # A function running as the host (migrations/host/0033): a module role may write only its own contexts.
    version: int = await conn.fetchval(
        "SELECT host.put_context($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        module,
        source_key,
        short,
        summary_long,
        list(key_points),
        embedding,
        meta or {},
        message_id,
        now,
    )
    event = context_updated(
        module,
        source_key=source_key,
        summary_short=short,
        summary_long=summary_long,
        key_points=key_points,
        version=version,
        created_at=now,
        message_id=message_id,
        embedding=embedding,
    )
    await emit(conn, event)
    return version


_COLUMNS = (
    "owner_module, source_key, summary_short, summary_long, key_points, meta, version, message_id, updated_at"
)


async def get(conn: asyncpg.Connection, module: str, source_key: str) -> dict[str, Any] | None:
    row = await conn.fetchrow(
        f"SELECT {_COLUMNS} FROM host.contexts WHERE owner_module = $1 AND source_key = $2",
        module,
        source_key,
    )
    if row is None:
        return None
    ctx = dict(row)
    ctx["message_count"] = await conn.fetchval(
        "SELECT count(*) FROM host.context_messages WHERE owner_module = $1 AND source_key = $2",
        module,
        source_key,
    )
    return ctx


async def list_all(conn: asyncpg.Connection, module: str | None = None) -> list[dict[str, Any]]:
    rows = await conn.fetch(
        f"SELECT {_COLUMNS} FROM host.contexts WHERE $1::text IS NULL OR owner_module = $1 ORDER BY updated_at DESC",
        module,
    )
    return [dict(r) for r in rows]


async def messages(
    conn: asyncpg.Connection, module: str, source_key: str, limit: int = 20
) -> list[uuid.UUID]:
    """The ids of the newest messages linked to a context."""
    rows = await conn.fetch(
        """SELECT message_id FROM host.context_messages WHERE owner_module = $1 AND source_key = $2
           ORDER BY created_at DESC LIMIT $3""",
        module,
        source_key,
        limit,
    )
    return [r["message_id"] for r in rows]
