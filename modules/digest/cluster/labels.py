"""Topic labels a person would write (pure): the lead story's cleaned headline, led by the name the
topic's articles share when the headline does not already say it ("Django: Security releases issued").

Keyword lists read as noise ("XAI: nude, images, onlyfans"); a headline is what an editor would put
there. The host's LLM writes better ones when configured (deliver/summaries.py); these stay otherwise.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from modules.digest.dedup.titles import strip_decoration
from modules.digest.text import demojibake

LABEL_MAX = 72


def headline(title: str, limit: int = LABEL_MAX) -> str:
    """A title without news prefixes, site suffix, mojibake or doubled spaces, cut at a word (…)."""
    text = " ".join(strip_decoration(demojibake(title)).split()).strip(" -–—|:")
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    cut = cut[: cut.rfind(" ")] if " " in cut else cut
    return cut.rstrip(" ,;:-–—") + "…"


def surface(name: str, texts: Sequence[str]) -> str | None:
    """How the texts write a (lowercase) name: "xai" → "xAI", "apple's app store" → "Apple's App Store"."""
    pattern = re.compile(r"(?<!\w)" + re.escape(name).replace("'", "['’]") + r"(?!\w)", re.IGNORECASE)
    for text in texts:
        if (m := pattern.search(text)) is not None:
            return m.group()
    return None


def label(lead_title: str, entities: Sequence[Sequence[str]], texts: Sequence[str]) -> str:
    """The topic's label: its lead's headline, led by the person, organisation or place most of its
    articles name (two or more) when the headline does not name it. `entities` are the members' stored
    entities (`kind:name`), `texts` the members' titles and leads (for the name as written)."""
    text = headline(lead_title)
    counts = Counter(
        e.split(":", 1)[1] for ents in entities for e in set(ents) if ":" in e and not e.startswith("misc:")
    )
    if len(entities) < 2 or not counts:
        return text
    name, n = counts.most_common(1)[0]
    if n < 2 or n * 2 < len(entities) or name in text.lower():
        return text
    written = surface(name, texts)
    if written is None:
        return text
    return headline(f"{written}: {text}")
