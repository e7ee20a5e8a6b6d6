"""Parsed entries against stored ones → typed intents (pure).

Like reader's `_update`: deciding what changed is separate from writing it, so processors (filters,
cross-feed dedup, scoring) work on plain data and storage only writes what the intents say.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from datetime import datetime

from modules.rss.model import Entry, Intents, Known, New, Revised, SameItem

# Why a new entry's MessageCreated is (not) realtime, stored as entries.intake_reason (`rss why` explains them).
REASONS = {
    "realtime": "announced in real time",
    "first-poll": "part of the feed's first poll (its backlog is never announced in real time)",
    "before-cutoff": "published before the lookback cutoff",
    "future": "dated in the future",
    "archive-page": "read from an RFC 5005 archive page (history, never real time)",
    "not-judged": "no processor judged it",
}


class StaleSkip(Exception):
    """An item parse skipped as unchanged no longer has the stored entry its raw hash stood for (deleted,
    or revised by a concurrent intake since the hashes were read): the document must be parsed in full."""


def diff(
    entries: Sequence[Entry],
    known: Mapping[str, Known],
    tombstoned: Set[str],
    *,
    feed_id: int,
    feed_title: str,
    now: datetime,
    first_poll: bool,
    lookback_hours: int,
    grace_minutes: int = 0,
    fetch_id: int | None = None,
    typical_order: str | None = None,
    same: Sequence[SameItem] = (),
) -> Intents:
    """`same`: items parse knew unchanged by their raw hash (Feed.same); seen like unchanged entries."""
    intents = Intents(
        feed_id,
        feed_title,
        now,
        first_poll,
        lookback_hours,
        grace_minutes=grace_minutes,
        fetch_id=fetch_id,
        typical_order=typical_order,
    )
    for e in entries:
        if e.guid in tombstoned:
            intents.gone.append(e.guid)
        elif (k := known.get(e.guid)) is None:
            intents.new.append(New(e))
        else:
            if k.content_hash != e.content_hash:
                intents.revised.append(Revised(e, k))
            else:
                intents.unchanged.append(e.guid)
            if e.raw_hash is not None:
                intents.raw_hashes[e.guid] = e.raw_hash
    for s in same:
        if s.guid in tombstoned:
            intents.gone.append(s.guid)
        elif (k := known.get(s.guid)) is None or k.raw_hash != s.raw_hash:
            raise StaleSkip(s.guid)
        else:
            intents.unchanged.append(s.guid)
            intents.raw_hashes[s.guid] = s.raw_hash
    return intents
