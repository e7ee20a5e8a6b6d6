"""Parsed entries against stored ones → typed intents (pure).

Like reader's `_update`: deciding what changed is separate from writing it, so processors (filters,
cross-feed dedup, scoring) work on plain data and storage only writes what the intents say.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field
from datetime import datetime

from modules.rss.model import Entry


@dataclass(frozen=True, slots=True)
class Known:
    """What storage knows of one stored entry."""

    content_hash: str
    revision: int
    first_seen: datetime
    entry_id: int | None = None  # its row (events refer to the whole entry by it)


@dataclass(slots=True)
class New:
    entry: Entry
    realtime: bool = False  # set by the `mark_realtime` processor
    reason: str = "not-judged"  # why it is (not) realtime: realtime, first-poll, before-cutoff, … (REASONS)


# Why a new entry's MessageCreated is (not) realtime, stored as entries.intake_reason (`rss why` explains them).
REASONS = {
    "realtime": "announced in real time",
    "first-poll": "part of the feed's first poll (its backlog is never announced in real time)",
    "before-cutoff": "published before the lookback cutoff",
    "future": "dated in the future",
    "archive-page": "read from an RFC 5005 archive page (history, never real time)",
    "not-judged": "no processor judged it",
}


@dataclass(frozen=True, slots=True)
class Filtered:
    """A new entry a processor removed: it is not stored and not announced (intake_skips keeps the fact)."""

    entry: Entry
    processor: str


@dataclass(slots=True)
class Revised:
    entry: Entry
    known: Known

    @property
    def revision(self) -> int:
        return self.known.revision + 1


@dataclass(slots=True)
class Intents:
    """Everything one intake of one feed document will do."""

    feed_id: int
    feed_title: str
    now: datetime
    first_poll: bool  # the feed's first successful parse: its backlog is never realtime
    lookback_hours: int
    new: list[New] = field(default_factory=list)
    revised: list[Revised] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)  # guids seen again with the same content
    gone: list[str] = field(default_factory=list)  # guids deleted before (tombstoned): never re-added
    filtered: list[Filtered] = field(default_factory=list)  # new entries a processor removed (processors.run)
    grace_minutes: int = 0  # the lookback window is this much wider (scheduler drift at its edge)
    fetch_id: int | None = None  # the raw fetch the entries were parsed from (events carry it)
    typical_order: str | None = None  # how the feed orders its entries (ingest.order), None = unknown

    @property
    def seen(self) -> list[str]:
        """Guids already stored that the document still carries (their last_seen moves)."""
        return [r.entry.guid for r in self.revised] + self.unchanged


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
) -> Intents:
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
        elif k.content_hash != e.content_hash:
            intents.revised.append(Revised(e, k))
        else:
            intents.unchanged.append(e.guid)
    return intents
