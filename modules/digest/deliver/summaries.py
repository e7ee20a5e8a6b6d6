"""Top-story summaries from the host's OpenAI-compatible summarizer, when one is configured.

The extractive summary stays whenever the model fails or answers outside 30–90 words.
"""

from __future__ import annotations

import json
import logging

from host.ai import ProviderError, Summarizer
from modules.digest.assemble.build import Digest

log = logging.getLogger("feedeater.digest")
SYSTEM = (
    'You summarize one news story for a morning brief. Reply with JSON {"summary": "..."}: '
    "50 to 75 words, the key facts and why they matter, no preamble."
)


def parse(reply: str) -> str | None:
    try:
        data = json.loads(reply)
    except ValueError:
        return None
    text = data.get("summary") if isinstance(data, dict) else None
    if not isinstance(text, str) or not 30 <= len(text.split()) <= 90:
        return None
    return " ".join(text.split())


async def improve(digest: Digest, bodies: dict[int, str], summarizer: Summarizer) -> int:
    """Replace top-story summaries in place; returns how many the model wrote."""
    done = 0
    for item in digest.section("top"):
        prompt = f"Title: {item.title}\nSource: {item.source}\n\n{bodies.get(item.article_id, item.summary)[:6000]}"
        try:
            text = parse(await summarizer.complete_json(SYSTEM, prompt))
        except ProviderError as exc:
            log.warning("digest summary for %r: %s (extractive kept)", item.title[:60], exc)
            return done  # the provider is failing: keep the rest extractive rather than wait on each
        if text:
            item.summary = text
            done += 1
    return done
