"""FeedEater wire format: subjects, envelopes, timestamps and deterministic ids (pure functions).

See docs/bus.md. Upstream validation strips unknown keys, so our extra keys are harmless to its consumers.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

# Fixed namespace for uuid5 ids: the same source item always gets the same message id.
NAMESPACE = uuid.UUID("6f1c3b7e-5a52-4d0e-9a53-0c1f6f0e7d21")
SUMMARY_SHORT_MAX = 128  # UTF-16 code units, as upstream's validator counts


def subject(module: str, event: str) -> str:
    return f"feedeater.{module}.{event}"


def iso_z(dt: datetime) -> str:
    """ISO-8601 UTC with millisecond precision and a `Z`, like JavaScript's toISOString (upstream rejects +00:00)."""
    if dt.tzinfo is None:
        raise ValueError("naive datetime: all timestamps must be timezone-aware")
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def stable_uuid(*parts: str) -> uuid.UUID:
    """uuid v5 of the parts: re-ingesting the same item yields the same id."""
    return uuid.uuid5(NAMESPACE, "\x1f".join(parts))


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def truncate_utf16(text: str, limit: int = SUMMARY_SHORT_MAX, ellipsis: str = "…") -> str:
    """Cut `text` to at most `limit` UTF-16 code units, ending with an ellipsis when cut."""
    if utf16_len(text) <= limit:
        return text
    budget = limit - utf16_len(ellipsis)
    out: list[str] = []
    used = 0
    for ch in text:
        w = 2 if ord(ch) > 0xFFFF else 1
        if used + w > budget:
            break
        out.append(ch)
        used += w
    return "".join(out).rstrip() + ellipsis


@dataclass(frozen=True, slots=True)
class Event:
    """One event bound for the bus; `event_id` becomes the JetStream `Nats-Msg-Id`."""

    event_id: uuid.UUID
    subject: str
    payload: dict[str, Any]

    def encode(self) -> bytes:
        return json.dumps(self.payload, ensure_ascii=False, separators=(",", ":")).encode()


def message_created(module: str, message: dict[str, Any]) -> Event:
    return Event(
        uuid.UUID(message["id"]),
        subject(module, "messageCreated"),
        {"type": "MessageCreated", "message": message},
    )


def message_updated(module: str, message: dict[str, Any], revision: str) -> Event:
    """A revision of a known message: same message id, a new event id per revision."""
    event_id = stable_uuid("messageUpdated", message["id"], revision)
    return Event(event_id, subject(module, "messageUpdated"), {"type": "MessageUpdated", "message": message})


def context_updated(
    module: str,
    *,
    source_key: str,
    summary_short: str,
    summary_long: str,
    key_points: Sequence[str],
    version: int,
    created_at: datetime,
    message_id: uuid.UUID | None = None,
    embedding: Sequence[float] | None = None,
) -> Event:
    context: dict[str, Any] = {
        "ownerModule": module,
        "sourceKey": source_key,
        "summaryShort": truncate_utf16(summary_short),
        "summaryLong": summary_long,
        "keyPoints": list(key_points),
    }
    if embedding is not None:
        context["embedding"] = [float(x) for x in embedding]
    payload: dict[str, Any] = {"type": "ContextUpdated", "createdAt": iso_z(created_at), "context": context}
    if message_id is not None:
        payload["messageId"] = str(message_id)
    event_id = stable_uuid("contextUpdated", module, source_key, str(version))
    return Event(event_id, subject(module, "contextUpdated"), payload)


def describe(body: dict[str, Any]) -> tuple[str, str, str]:
    """(time, type, what it is about) of an event as received (pure): for `bus tail` and the console."""
    message = body.get("message") if isinstance(body.get("message"), dict) else None
    context = body.get("context") if isinstance(body.get("context"), dict) else None
    if message is not None:
        at = str(message.get("createdAt", ""))
        tags = message.get("tags") if isinstance(message.get("tags"), dict) else {}
        about = f"{message.get('From', '')}: {tags.get('title') or message.get('Message', '')}"
    elif context is not None:
        at = str(body.get("createdAt", ""))
        about = f"{context.get('ownerModule', '')}:{context.get('sourceKey', '')} {context.get('summaryShort', '')}"
    else:
        at, about = "", json.dumps(body, ensure_ascii=False)
    return at, str(body.get("type", "?")), about
