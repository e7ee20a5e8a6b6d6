"""Top-story summaries and topic labels from the host's OpenAI-compatible summarizer, when one is
configured.

The extractive summary and the headline label stay whenever the model fails or answers outside the
bounds (a summary of 30–90 words; a label of 2–10 words, at most 72 characters, one line).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from host.ai import ProviderError, Summarizer
from modules.digest.cluster.labels import LABEL_MAX
from modules.digest.model import Digest

log = logging.getLogger("feedeater.digest")
SYSTEM = (
    "You summarize one news story for a morning brief. Reply with JSON "
    '{"summary": "...", "label": "..."}: the summary 50 to 75 words, the key facts and why they matter, '
    "no preamble; the label a topic heading an editor would write, 2 to 8 words, no trailing period."
)


def _reply(reply: str) -> dict[str, Any]:
    try:
        data = json.loads(reply)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def parse(reply: str) -> str | None:
    """The summary of a reply, when it is one (30–90 words)."""
    text = _reply(reply).get("summary")
    if not isinstance(text, str) or not 30 <= len(text.split()) <= 90:
        return None
    return " ".join(text.split())


def parse_label(reply: str) -> str | None:
    """The label of a reply, when it reads as one (2–10 words, one line, ≤ LABEL_MAX characters)."""
    text = _reply(reply).get("label")
    if not isinstance(text, str):
        return None
    label = " ".join(text.split()).strip(" .\"'")
    if not 2 <= len(label.split()) <= 10 or len(label) > LABEL_MAX or "\n" in text:
        return None
    return label


async def improve(digest: Digest, bodies: dict[int, str], summarizer: Summarizer) -> int:
    """Replace top-story summaries and labels in place; returns how many summaries the model wrote."""
    done = 0
    for item in digest.section("top"):
        prompt = f"Title: {item.title}\nSource: {item.source}\n\n{bodies.get(item.article_id, item.summary)[:6000]}"
        try:
            reply = await summarizer.complete_json(SYSTEM, prompt)
        except ProviderError as exc:
            log.warning("digest summary for %r: %s (extractive kept)", item.title[:60], exc)
            return done  # the provider is failing: keep the rest extractive rather than wait on each
        if text := parse(reply):
            item.summary = text
            done += 1
        if label := parse_label(reply):
            item.label = label
    return done
