"""Entry processors: an ordered list of pure steps run on a feed's intents before anything is written.

This is where filters, cross-feed dedup or scoring hook in: a processor takes the intents and returns
them (changed or not). It sees no connection and no bus, so each is tested on plain data. The poll job
runs `ctx.state["processors"]` when a module or test sets it, else `DEFAULT`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta

from modules.rss.ingest import order
from modules.rss.ingest.diff import Intents

Processor = Callable[[Intents], Intents]

FUTURE_TOLERANCE = timedelta(minutes=15)


def mark_realtime(intents: Intents) -> Intents:
    """Fresh entries only: not a first poll's backlog, and published inside the lookback window
    (widened by the grace minutes, so an entry at the window's edge does not flip with scheduler drift).

    An entry without a date counts as fresh when it appears after the first poll: first seen is now.
    """
    if intents.first_poll:
        return intents
    oldest = intents.now - timedelta(hours=intents.lookback_hours, minutes=intents.grace_minutes)
    newest = intents.now + FUTURE_TOLERANCE
    for new in intents.new:
        published = new.entry.published
        new.realtime = published is None or oldest <= published <= newest
    return intents


def never_realtime(intents: Intents) -> Intents:
    """Archive pages (RFC 5005 backfill) bring history: none of it is news, whatever its date."""
    for new in intents.new:
        new.realtime = False
    return intents


def oldest_first(intents: Intents) -> Intents:
    """New entries in chronological order (by the feed's typical order), so they are stored and
    announced oldest first and a consumer posting them in bus order posts them in publication order."""
    dates = [n.entry.published for n in intents.new]
    intents.new = [intents.new[i] for i in order.chronological(dates, intents.typical_order)]
    return intents


DEFAULT: tuple[Processor, ...] = (mark_realtime, oldest_first)


def run(intents: Intents, processors: Sequence[Processor] = DEFAULT) -> Intents:
    for process in processors:
        intents = process(intents)
    return intents
