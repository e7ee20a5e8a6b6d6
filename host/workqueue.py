"""Rows of a table as a work queue shared by every host: claim with a lease.

`FOR UPDATE SKIP LOCKED` keeps two hosts off the same row at the same moment; the lease (a timestamp
column pushed into the future) keeps them off it while the work runs outside any transaction, and
returns the row by itself when the host that held it dies. Poll, embed, fulltext and summarize all
claim through this one primitive, so the rule "claimed once, recovered after the lease" lives here.
A queue whose work may outlast a short lease renews it while the work runs (`renew`): a live host keeps
its rows, a dead host's rows come back one short lease after its last renewal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg


@dataclass(frozen=True, slots=True)
class WorkQueue:
    """A claimable table. SQL fragments call the queue table `q`; parameters: $1 = now (NULL: the
    database's clock), $2 = limit, $3 = lease seconds, then the caller's `params` from $4 on.

    `due`: which rows are ready; `order`: which go first; `join`: tables `due`/`order` need;
    `lease_column`: a row whose lease is in the future is never claimed; `owner_column`: receives the
    claiming host's id; `set_extra`: more assignments made when claiming (e.g. counting the attempt);
    `returning` (+ `returning_from`, `returning_where`): what a claim hands back.
    """

    table: str
    key: str
    due: str
    order: str
    returning: str = "q.*"
    returning_from: str = ""  # e.g. ", mod_rss.entries e"
    returning_where: str = ""  # e.g. "AND e.id = q.entry_id"
    join: str = ""
    lease_column: str = "lease_until"
    owner_column: str | None = "leased_by"
    set_extra: str = ""

    def claim_sql(self, n_params: int) -> str:
        owner = f", {self.owner_column} = ${4 + n_params}" if self.owner_column else ""
        extra = f", {self.set_extra}" if self.set_extra else ""
        now = "coalesce($1::timestamptz, now())"
        return f"""WITH due AS (
                SELECT q.{self.key} FROM {self.table} q {self.join}
                WHERE ({self.due}) AND (q.{self.lease_column} IS NULL OR q.{self.lease_column} <= {now})
                ORDER BY {self.order} LIMIT $2
                FOR UPDATE OF q SKIP LOCKED)
            UPDATE {self.table} q SET {self.lease_column} = {now} + make_interval(secs => $3){owner}{extra}
            FROM due {self.returning_from}
            WHERE q.{self.key} = due.{self.key} {self.returning_where}
            RETURNING {self.returning}"""

    async def claim(
        self,
        conn: asyncpg.Connection,
        *,
        now: datetime | None,
        limit: int,
        lease_s: float,
        owner: str | None = None,
        params: Sequence[Any] = (),
    ) -> list[asyncpg.Record]:
        """Lease up to `limit` due rows (to `owner` when the queue records owners). Pass `now=None` where
        the rows' timestamps come from the database's `now()`: one clock, or rows are never due."""
        args: list[Any] = [now, limit, float(lease_s), *params]
        if self.owner_column:
            args.append(owner)
        return await conn.fetch(self.claim_sql(len(params)), *args)

    async def renew(
        self, conn: asyncpg.Connection, keys: Sequence[Any], *, lease_s: float, owner: str
    ) -> int:
        """Push the lease of these rows, still held by `owner`, `lease_s` past the database's now; a
        row released or taken over meanwhile is left alone. Returns how many were renewed."""
        assert self.owner_column, "renewing needs a queue that records owners"
        done = await conn.execute(
            f"""UPDATE {self.table} SET {self.lease_column} = now() + make_interval(secs => $3)
                WHERE {self.key} = ANY($1) AND {self.owner_column} = $2 AND {self.lease_column} IS NOT NULL""",
            list(keys),
            owner,
            float(lease_s),
        )
        return int(done.split()[-1])
