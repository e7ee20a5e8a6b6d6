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

import orjson

# Fixed namespace for uuid5 ids: the same source item always gets the same message id.
NAMESPACE = uuid.UUID("6f1c3b7e-5a52-4d0e-9a53-0c1f6f0e7d21")
SUMMARY_SHORT_MAX = 128  # UTF-16 code units, as upstream's validator counts


def subject(module: str, event: str) -> str:
    return f"feedeater.{module}.{event}"


def subject_problem(text: str) -> str | None:
    """Why `text` is not a NATS subject to subscribe to (tokens split by dots, no spaces, `*` a whole
    token, `>` only last), or None (pure): nats-py raised BadSubjectError from deep in a traceback."""
    tokens = text.split(".")
    if not text or any(not t for t in tokens):
        return "it has an empty token (two dots, or a dot at either end)"
    if any(c.isspace() for c in text):
        return "it contains a space"
    if any(("*" in t or ">" in t) and len(t) > 1 for t in tokens) or ">" in tokens[:-1]:
        return "wildcards stand alone: `*` for one token, `>` for the rest, only at the end"
    return None


def iso_z(dt: datetime) -> str:
    """ISO-8601 UTC with millisecond precision and a `Z`, like JavaScript's toISOString (upstream rejects +00:00)."""
    if dt.tzinfo is None:
        raise ValueError("naive datetime: all timestamps must be timezone-aware")
    return dt.astimezone(UTC).isoformat(timespec="milliseconds")[:-6] + "Z"  # isoformat: 5× strftime's speed


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
        """Compact UTF-8 JSON (orjson: the same bytes as json.dumps(ensure_ascii=False) with compact
        separators, in less than half its time: every event is encoded once, on its producer's loop)."""
        return orjson.dumps(self.payload, option=orjson.OPT_NON_STR_KEYS)


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


MESSAGE_EVENTS = ("MessageCreated", "MessageUpdated")
_FLAGS = ("realtime", "isDirectMention", "isDigest", "isSystemMessage")


def contract_violation(payload: Any) -> str | None:
    """Why a message event breaks the bus contract every producer keeps and every consumer may rely on
    (docs/bus.md "The message contract"), or None (pure). Producers are tested against it; consumers
    refuse (dead-letter) what breaks it with this one-line reason and accept everything else."""
    if not isinstance(payload, dict):
        return "the event is not a JSON object"
    kind = payload.get("type")
    if kind not in MESSAGE_EVENTS:
        return f"type is {str(kind)[:40]!r}, expected {' or '.join(MESSAGE_EVENTS)}"
    message = payload.get("message")
    if not isinstance(message, dict):
        return "message is missing or not an object"
    try:
        uuid.UUID(str(message.get("id")))
    except ValueError:
        return f"message.id is not a UUID: {str(message.get('id'))[:40]!r}"
    if (why := _time_violation(message.get("createdAt"), "message.createdAt")) is not None:
        return why
    source = message.get("source")
    if not isinstance(source, dict) or not isinstance(source.get("module"), str) or not source["module"]:
        return "message.source.module is missing or not a string"
    if not isinstance(source.get("stream", ""), str):
        return "message.source.stream is not a string"
    text = message.get("Message")
    if not isinstance(text, str) or not text.strip():
        return "message.Message is missing, not a string or empty"
    if not isinstance(message.get("From", ""), str):
        return "message.From is not a string"
    if any(not isinstance(message.get(flag, False), bool) for flag in _FLAGS):
        return f"message.{next(f for f in _FLAGS if not isinstance(message.get(f, False), bool))} is not a boolean"
    tags = message.get("tags", {})
    if not isinstance(tags, dict) or any(not isinstance(v, str | int | float | bool) for v in tags.values()):
        return "message.tags is not an object of strings, numbers and booleans"
    return None


def _time_violation(value: Any, what: str) -> str | None:
    if not isinstance(value, str):
        return f"{what} is missing or not a string"
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return f"{what} is not an ISO-8601 time: {value[:40]!r}"
    return f"{what} has no time zone: {value[:40]!r}" if dt.tzinfo is None else None


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
    else:  # a module's own event: its createdAt, and the rest of it
        at = str(body.get("createdAt", ""))
        rest = {k: v for k, v in body.items() if k not in ("type", "createdAt")}
        about = json.dumps(rest, ensure_ascii=False)
    return at, str(body.get("type", "?")), about
