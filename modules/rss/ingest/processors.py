"""Entry processors: an ordered list of pure steps run on a feed's intents before anything is written.

This is where filters, cross-feed dedup or scoring hook in: a processor takes the intents and returns
them (changed or not). It sees no connection and no bus, so each is tested on plain data. Every intake
runs `DEFAULT`, then the steps added with `register` (rss's public API: `register_processor`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from modules.rss.ingest import order
from modules.rss.model import Filtered, Intents

Processor = Callable[[Intents], Intents]

FUTURE_TOLERANCE = timedelta(minutes=15)


def mark_realtime(intents: Intents) -> Intents:
    """Fresh entries only: not a first poll's backlog, and published inside the lookback window
    (widened by the grace minutes, so an entry at the window's edge does not flip with scheduler drift).

    An entry without a date counts as fresh when it appears after the first poll: first seen is now.
    """
    if intents.first_poll:
        for new in intents.new:
            new.realtime, new.reason = False, "first-poll"
        return intents
    oldest = lookback_cutoff(intents.now, intents.lookback_hours, intents.grace_minutes)
    newest = intents.now + FUTURE_TOLERANCE
    for new in intents.new:
        published = new.entry.published
        new.realtime = published is None or oldest <= published <= newest
        new.reason = (
            "realtime" if new.realtime else "before-cutoff" if published and published < oldest else "future"
        )
    return intents


def lookback_cutoff(now: datetime, lookback_hours: int, grace_minutes: int) -> datetime:
    """The lookback window's start: entries published before it are not realtime (seed 004 §2.1)."""
    return now - timedelta(hours=lookback_hours, minutes=grace_minutes)


def never_realtime(intents: Intents) -> Intents:
    """Archive pages (RFC 5005 backfill) bring history: none of it is news, whatever its date."""
    for new in intents.new:
        new.realtime, new.reason = False, "archive-page"
    return intents


def oldest_first(intents: Intents) -> Intents:
    """New entries in chronological order (by the feed's typical order), so they are stored and
    announced oldest first and a consumer posting them in bus order posts them in publication order."""
    dates = [n.entry.published for n in intents.new]
    intents.new = [intents.new[i] for i in order.chronological(dates, intents.typical_order)]
    return intents


DEFAULT: tuple[Processor, ...] = (mark_realtime, oldest_first)
_REGISTERED: list[Processor] = []


def register(step: Processor) -> Callable[[], None]:
    """Run `step` after the defaults on every intake in this process (polls, pushes, archive pages);
    returns the function that takes it out again."""
    _REGISTERED.append(step)
    return lambda: _REGISTERED.remove(step)


def steps() -> tuple[Processor, ...]:
    """What an intake runs: the defaults, then the registered steps in the order they were added."""
    return (*DEFAULT, *_REGISTERED)


def run(intents: Intents, processors: Sequence[Processor] = DEFAULT) -> Intents:
    """Run the steps in order; a new entry a step removes is recorded in `filtered` with the step's name."""
    for process in processors:
        before = {id(n): n for n in intents.new}
        intents = process(intents)
        if len(before) != len(intents.new) or any(id(n) not in before for n in intents.new):
            kept = {id(n) for n in intents.new}
            name = getattr(process, "__name__", type(process).__name__)
            intents.filtered += [Filtered(n.entry, name) for key, n in before.items() if key not in kept]
    return intents
