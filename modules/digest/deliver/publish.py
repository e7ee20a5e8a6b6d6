"""A digest → its FeedEater MessageCreated (pure): `isDigest: true`, Markdown in `Message`, the
structured digest under our extra key `digest` (docs/bus.md)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from host.events import Event, iso_z, message_created, stable_uuid

MODULE = "digest"


def digest_id(kind: str, end: datetime, *, scheduled: bool) -> uuid.UUID:
    """A scheduled slot always gets the same id (two hosts building it store and publish it once);
    on-demand digests are keyed by their build time."""
    return stable_uuid(MODULE, kind, "scheduled" if scheduled else "manual", iso_z(end))


def context_key(kind: str) -> str:
    return f"digest:{kind}"


def message(
    did: uuid.UUID, kind: str, title: str, created: datetime, markdown: str, structured: dict[str, Any]
) -> dict[str, Any]:
    return {
        "id": str(did),
        "createdAt": iso_z(created),
        "source": {"module": MODULE, "stream": kind},
        "realtime": True,
        "Message": markdown,
        "From": f"feedeater {title}",
        "contextRef": {"ownerModule": MODULE, "sourceKey": context_key(kind)},
        "isDirectMention": False,
        "isDigest": True,
        "isSystemMessage": False,
        "tags": {"source": MODULE, "digestType": kind, "title": title},
        "digest": structured,
    }


def created_event(msg: dict[str, Any]) -> Event:
    return message_created(MODULE, msg)
