"""Which JetStream streams feedeater uses and which subjects each one captures (pure: no nats import).

FeedEater's archiver manages the stream `feedeater_bus`: on every start it creates it, or updates it
with exactly `feedeater.*.messageCreated` and `feedeater.tags.appended` as its subjects (nats.js merges
the rest of the old configuration). So messageCreated lives there, where the archiver reads it, and
every other subject feedeater publishes lives in `feedeater_events`, a stream nobody else manages: the
archiver can update its stream as often as it likes without taking a subject of ours away. Dead letters
have their own stream. A subject may belong to one stream only (JetStream refuses overlaps), and the
outbox relay publishes with `Nats-Expected-Stream`, so an event never lands in a stranger's stream.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Mapping

SHARED = "feedeater_bus"  # shared with FeedEater's archiver, which may rewrite its subjects
SHARED_SUBJECTS = ("feedeater.*.messageCreated", "feedeater.tags.appended")  # the archiver's two, exactly
EVENTS = "feedeater_events"  # feedeater's own: every other event it publishes
EVENTS_SUBJECTS = ("feedeater.*.messageUpdated", "feedeater.*.contextUpdated")
DLQ = "feedeater_dlq"
DLQ_SUBJECTS = ("feedeater.dlq.*.*",)  # four tokens: never overlaps feedeater.<module>.<event>
BUS_STREAMS = (SHARED, EVENTS)  # where module events live (subscriptions, readers)

Plan = Mapping[str, tuple[str, ...]]  # stream name → the subjects it should capture


def covered(subject: str, patterns: Collection[str]) -> bool:
    """Whether a literal subject matches one of the NATS patterns (`*` one token, `>` the rest)."""
    return any(overlaps(subject, pattern) for pattern in patterns)


def overlaps(a: str, b: str) -> bool:
    """Whether two subjects or patterns can match a common subject (`*` one token, `>` one or more)."""
    left, right = a.split("."), b.split(".")
    for i in range(max(len(left), len(right))):
        x = left[i] if i < len(left) else None
        y = right[i] if i < len(right) else None
        if x == ">" or y == ">":
            return x is not None and y is not None
        if x is None or y is None:
            return False
        if x != y and "*" not in (x, y):
            return False
    return True


def plan(declared: Collection[str]) -> dict[str, tuple[str, ...]]:
    """The streams and their subjects: the fixed sets, plus each declared event (`feedeater.<module>.<event>`)
    that no fixed pattern covers, in feedeater's own stream."""
    fixed = (*SHARED_SUBJECTS, *EVENTS_SUBJECTS)
    extra = sorted({s for s in declared if not covered(s, fixed)})
    return {SHARED: SHARED_SUBJECTS, EVENTS: (*EVENTS_SUBJECTS, *extra), DLQ: DLQ_SUBJECTS}


@functools.lru_cache(maxsize=4096)  # per published event: the subjects are few
def stream_for(subject: str) -> str:
    """The stream a published event belongs in: the shared one for what the archiver reads, else ours."""
    if covered(subject, DLQ_SUBJECTS):
        return DLQ
    return SHARED if covered(subject, SHARED_SUBJECTS) else EVENTS


def streams_for(pattern: str, layout: Plan) -> list[str]:
    """The bus streams a subscription's subject (a pattern) may find events in, in plan order; an event
    no host here declares would be added to feedeater's own stream by the host that does."""
    found = [
        name
        for name, subjects in layout.items()
        if name != DLQ and any(overlaps(pattern, s) for s in subjects)
    ]
    return found or [EVENTS]
