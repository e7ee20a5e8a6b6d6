"""Why an item was (not) announced, decided from stored facts (pure): the one answer `feedeater rss why`, the
API and the console's entry page all give.

The facts are what storage kept when the item passed intake (its entry row: the fetch it came from, whether
its MessageCreated was realtime and why), what a processor kept out (intake_skips), the feed's latest stored
fetch parsed again (is the item still listed, is it over the item cap, are there copies under a duplicate
guid) and the feed's poll state (what the next poll will do).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from host.events import iso_z
from host.textfmt import upcoming
from modules.rss.ingest.diff import REASONS
from modules.rss.ingest.processors import FUTURE_TOLERANCE, lookback_cutoff


@dataclass(frozen=True, slots=True)
class FeedFacts:
    id: int
    title: str
    url: str
    enabled: bool
    dead: bool
    lookback_hours: int
    lookback_source: str  # "override" (the feed's own) or "default" (rss.lookback_hours)
    grace_minutes: int
    successful_polls: int  # parsed 200s so far: 0 means the next one is the first poll
    next_poll_at: datetime | None
    interval_reason: str | None
    push_until: datetime | None = None  # an active WebSub subscription's lease end
    push_only: bool = False


@dataclass(frozen=True, slots=True)
class StoredEntry:
    id: int
    guid: str
    guid_source: str  # id, link or hash
    link: str | None
    title: str
    message_id: str
    published: datetime | None
    first_seen: datetime
    last_seen: datetime
    seen_count: int
    revision: int
    fetch_id: int | None  # None: stored before rss migration 0019 recorded it
    last_fetch_id: int | None
    announced: bool | None  # realtime MessageCreated; None: not recorded (before rss migration 0019)
    intake_reason: str | None  # a key of diff.REASONS


@dataclass(frozen=True, slots=True)
class Skipped:
    """A new item a processor kept out of storage (mod_rss.intake_skips)."""

    guid: str
    reason: str
    title: str
    fetch_id: int | None
    first_at: datetime
    last_at: datetime


@dataclass(frozen=True, slots=True)
class Document:
    """The feed's latest stored fetch, parsed again."""

    fetch_id: int
    fetched_at: datetime
    error: str | None = None  # the fetch was no feed
    listed: bool = False  # the item is among its entries
    over_cap: bool = False  # it is in the document but beyond the item cap
    copies: int = 0  # further items under the same guid (stored as guid#…)
    content_hash: str | None = None  # of the item as the document has it now


@dataclass(frozen=True, slots=True)
class Facts:
    query: str
    feed: FeedFacts
    now: datetime
    entry: StoredEntry | None = None
    skipped: Skipped | None = None
    document: Document | None = None
    tombstoned: bool = False
    stored_hash: str | None = None  # the stored entry's content hash


@dataclass(slots=True)
class Explanation:
    feed_id: int
    query: str
    verdict: str  # announced | not-announced | not-stored | not-seen
    reason: str  # a key of diff.REASONS, or filtered, over-cap, deleted, not-listed, never-polled, unknown
    announced: bool | None
    summary: str  # one sentence
    lines: list[str] = field(default_factory=list)  # the whole explanation, one fact per line
    next_poll: str = ""
    entry_id: int | None = None
    message_id: str | None = None
    guid: str | None = None
    guid_source: str | None = None
    link: str | None = None
    fetch_id: int | None = None
    last_fetch_id: int | None = None
    first_seen: datetime | None = None
    last_seen: datetime | None = None
    listed: bool | None = None  # in the feed's current document; None when there is none to look at


def _at(when: datetime | None) -> str:
    return iso_z(when) if when is not None else "an unknown time"


def _window(feed: FeedFacts) -> str:
    grace = f", +{feed.grace_minutes} min grace" if feed.grace_minutes else ""
    return f"{feed.lookback_hours} h lookback ({feed.lookback_source}{grace})"


def _inferred(entry: StoredEntry, feed: FeedFacts) -> tuple[bool | None, str]:
    """What the dates say for an entry stored before the decision was recorded."""
    cut = lookback_cutoff(entry.first_seen, feed.lookback_hours, feed.grace_minutes)
    if entry.published is not None and entry.published < cut:
        return False, "before-cutoff"
    if entry.published is not None and entry.published > entry.first_seen + FUTURE_TOLERANCE:
        return False, "future"
    return None, "unknown"


def _announcement(entry: StoredEntry, feed: FeedFacts) -> tuple[bool | None, str, str]:
    """(announced, reason, the sentence) for a stored entry."""
    announced, reason = entry.announced, entry.intake_reason or "unknown"
    recorded = entry.announced is not None
    if not recorded:
        announced, reason = _inferred(entry, feed)
    cut = lookback_cutoff(entry.first_seen, feed.lookback_hours, feed.grace_minutes)
    published = f"published {_at(entry.published)}" if entry.published else "undated (first seen counts)"
    if reason == "realtime":
        sentence = f"announced in real time: MessageCreated {entry.message_id} when it was first seen"
    elif reason == "before-cutoff":
        sentence = (
            f"not announced in real time: {published}, before the cutoff {_at(cut)} ({_window(feed)}) of"
            " the poll that first saw it; its MessageCreated went out with realtime=false"
        )
    elif reason == "unknown":
        sentence = (
            "announcement not recorded (stored before rss migration 0019); by its dates it was inside the"
            " lookback window, so it was realtime unless it came with the feed's first poll or an archive page"
        )
    else:
        sentence = f"not announced in real time: {REASONS.get(reason, reason)}; its MessageCreated went out with realtime=false"
    if not recorded and reason != "unknown":
        sentence += " (inferred from its dates: stored before rss migration 0019 recorded the decision)"
    return announced, reason, sentence


def _next_poll(feed: FeedFacts, now: datetime, stored: bool, listed: bool | None) -> str:
    if feed.dead:
        return "the feed answered 410 Gone and is not polled (re-enable it with `rss set FEED enabled=true`)"
    if not feed.enabled:
        return "the feed is disabled: nothing is polled (`rss set FEED enabled=true`)"
    when = feed.next_poll_at
    head = (
        f"next poll {upcoming(when, now)} at {iso_z(when)} ({feed.interval_reason or 'first poll'})"
        if when is not None
        else "next poll: not scheduled"
    )
    if feed.push_until is not None:
        head += f"; a WebSub hub pushes new entries until {iso_z(feed.push_until)}"
        if feed.push_only:
            head += " (push only: no polling meanwhile)"
    if feed.successful_polls == 0:
        return (
            head + ": it is the feed's first poll, whose entries are stored but never announced in real time"
        )
    if stored and listed is not False:
        return (
            head + ": it will see the item again; a change of its content is a revision (MessageUpdated),"
            " never a second MessageCreated"
        )
    if stored:
        return head + ": the item is no longer listed, so nothing will happen to it"
    cut = lookback_cutoff(when or now, feed.lookback_hours, feed.grace_minutes)
    return (
        head + f": if the feed lists the item then, it is announced in real time when published after"
        f" {iso_z(cut)} ({_window(feed)}) or undated"
    )


def _listing(doc: Document | None, entry: StoredEntry | None) -> tuple[bool | None, list[str]]:
    if doc is None:
        return None, ["no stored fetch of the feed to look at (none kept yet)"]
    if doc.error is not None:
        return None, [
            f"the feed's latest fetch {doc.fetch_id} at {iso_z(doc.fetched_at)} was no feed: {doc.error}"
        ]
    where = f"fetch {doc.fetch_id} at {iso_z(doc.fetched_at)}"
    lines = []
    if doc.listed:
        lines.append(f"listed in the feed's current document ({where})")
    elif doc.over_cap:
        lines.append(
            f"in the feed's current document ({where}) but over the item cap: left out, the oldest go first"
        )
    elif entry is not None:
        lines.append(
            f"no longer listed: the current document ({where}) does not carry it; last seen {iso_z(entry.last_seen)}"
            + (f" in fetch {entry.last_fetch_id}" if entry.last_fetch_id else "")
        )
    else:
        lines.append(f"not in the feed's current document ({where})")
    if doc.copies:
        lines.append(
            f"the document lists {doc.copies + 1} items under this guid: the later ones are stored as separate"
            " entries (guid#…), each announced on its own"
        )
    return doc.listed or doc.over_cap, lines


def explain(facts: Facts) -> Explanation:
    """The explanation of one item of one feed from its facts (pure)."""
    feed, entry, now = facts.feed, facts.entry, facts.now
    head = f"feed {feed.id} ({feed.title or feed.url})"
    listed, listing = _listing(facts.document, entry)
    if entry is not None:
        announced, reason, sentence = _announcement(entry, feed)
        seen = f"seen: first {iso_z(entry.first_seen)}" + (
            f" in fetch {entry.fetch_id}" if entry.fetch_id else ""
        )
        seen += f", last {iso_z(entry.last_seen)}" + (
            f" in fetch {entry.last_fetch_id}" if entry.last_fetch_id else ""
        )
        seen += f" ({entry.seen_count} time{'s' if entry.seen_count != 1 else ''})"
        lines = [
            f"{head}: entry {entry.id} “{entry.title or '(untitled)'}”",
            f"identity: guid {entry.guid!r} (from the feed's {entry.guid_source}); message id {entry.message_id}",
            seen,
            ("announced: " if announced else "") + sentence,
        ]
        if entry.revision > 1:
            lines.append(
                f"revised {entry.revision - 1} time{'s' if entry.revision > 2 else ''}: each revision went out as"
                " MessageUpdated (realtime=false), never as a new MessageCreated"
            )
        doc = facts.document
        if doc is not None and doc.listed and doc.content_hash is not None and facts.stored_hash is not None:
            same = doc.content_hash == facts.stored_hash
            lines.append(
                "the current document carries it unchanged: nothing is announced"
                if same
                else "the current document carries a changed version: the next parse stores it as a revision"
            )
        lines += listing
        nxt = _next_poll(feed, now, True, listed)
        lines.append(nxt)
        verdict = "announced" if announced else "not-announced"
        return Explanation(
            feed.id, facts.query, verdict, reason, announced, sentence, lines, nxt, entry.id, entry.message_id,
            entry.guid, entry.guid_source, entry.link, entry.fetch_id, entry.last_fetch_id, entry.first_seen,
            entry.last_seen, listed,
        )  # fmt: skip
    if facts.skipped is not None:
        s = facts.skipped
        sentence = f"not stored and not announced: {s.reason}"
        lines = [
            f"{head}: item {s.guid!r} “{s.title or '(untitled)'}”",
            sentence
            + f" (first {iso_z(s.first_at)}, last {iso_z(s.last_at)}"
            + (f" in fetch {s.fetch_id})" if s.fetch_id else ")"),
            *listing,
        ]
        nxt = _next_poll(feed, now, False, listed)
        lines.append(nxt)
        return Explanation(
            feed.id, facts.query, "not-stored", "filtered", False, sentence, lines, nxt, guid=s.guid,
            fetch_id=s.fetch_id, listed=listed,
        )  # fmt: skip
    if facts.tombstoned:
        sentence = "deleted (retention or by hand): the tombstone keeps the feed from bringing it back"
        lines = [f"{head}: item {facts.query!r}", sentence, *listing]
        nxt = _next_poll(feed, now, False, listed)
        return Explanation(
            feed.id, facts.query, "not-stored", "deleted", False, sentence, [*lines, nxt], nxt, listed=listed
        )
    doc = facts.document
    if doc is not None and doc.over_cap:
        sentence = (
            "not stored: the feed's document holds more items than the item cap, and it is among the oldest"
        )
        reason = "over-cap"
    elif feed.successful_polls == 0:
        sentence = "not seen: the feed has not been parsed yet"
        reason = "never-polled"
    elif doc is not None and doc.listed:
        sentence = (
            "listed in the current document but not stored yet: it is stored by the next poll that parses it"
        )
        reason = "not-listed"
    else:
        sentence = (
            "not seen: no entry of this feed has that guid, link or id, and its current document does not"
            " list it (entries expire after their retention; a deleted one leaves a tombstone)"
        )
        reason = "not-listed"
    lines = [f"{head}: item {facts.query!r}", sentence, *listing]
    nxt = _next_poll(feed, now, False, listed)
    lines.append(nxt)
    return Explanation(feed.id, facts.query, "not-seen", reason, None, sentence, lines, nxt, listed=listed)
