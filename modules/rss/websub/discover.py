"""Where to subscribe (pure): WebSub hubs and the topic URL from HTTP Link headers and the feed's links.

WebSub §4: the Link header wins over links in the document; the topic is the `self` URL, and without
one the URL the feed was fetched from.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from modules.rss.parse.normalize import absolute_url

MAX_LINK_CHARS = 64 * 1024  # of the (joined) Link headers read; links past it are ignored
_NAME = re.compile(r'[^;,="\s<]*')
_BARE = re.compile(r"[^;,\s]*")
_SPACE = re.compile(r"\s*")


@dataclass(frozen=True, slots=True)
class Push:
    hubs: tuple[str, ...]  # in preference order; we subscribe at the first
    topic: str


def link_header(value: str, base: str) -> list[tuple[str, str]]:
    """RFC 8288 Link header → (rel, absolute URL) pairs; a rel with several values yields one pair each.

    One pass that only moves forward (a hostile server's 2 MB of `<` cost a regex minutes of backtracking
    on the event loop): `<URI>` then `; name=value` parameters; an unclosed `<` or quote ends the header.
    """
    text = (value or "")[:MAX_LINK_CHARS]
    found: list[tuple[str, str]] = []
    pos = 0
    while (start := text.find("<", pos)) >= 0:
        end = text.find(">", start + 1)
        if end < 0:
            break
        params, pos = _params(text, end + 1)
        url = absolute_url(text[start + 1 : end], base)
        if url and params.get("rel"):
            found += [(rel, url) for rel in params["rel"].lower().split()]
    return found


def _params(text: str, i: int) -> tuple[dict[str, str], int]:
    """The `; name[=value]` parameters of one link-value from `i` (the first of each name), and where
    they end (the end of the text after an unclosed quote)."""
    params: dict[str, str] = {}
    while True:
        i = _end(_SPACE, text, i)
        if i >= len(text) or text[i] != ";":
            return params, i
        i = _end(_SPACE, text, i + 1)
        name_end = _end(_NAME, text, i)
        name, i = text[i:name_end].lower(), _end(_SPACE, text, name_end)
        value = ""
        if i < len(text) and text[i] == "=":
            i = _end(_SPACE, text, i + 1)
            if i < len(text) and text[i] == '"':
                close = text.find('"', i + 1)
                if close < 0:
                    return params, len(text)
                value, i = text[i + 1 : close], close + 1
            else:
                value_end = _end(_BARE, text, i)
                value, i = text[i:value_end], value_end
        if name:
            params.setdefault(name, value)


def _end(pattern: re.Pattern[str], text: str, i: int) -> int:
    """Where a pattern that may match nothing (`x*`) stops matching at `i`."""
    match = pattern.match(text, i)
    return match.end() if match else i


def discover(
    feed_links: Iterable[tuple[str, str]], headers: Mapping[str, str], fetched_url: str
) -> Push | None:
    """The hubs and topic to subscribe with, or None when the feed names no hub."""
    header = link_header(headers.get("link", ""), fetched_url)
    document = list(feed_links)
    hubs = tuple(dict.fromkeys(url for rel, url in [*header, *document] if rel == "hub"))
    if not hubs:
        return None
    selfs = [url for rel, url in header if rel == "self"] or [url for rel, url in document if rel == "self"]
    return Push(hubs, selfs[0] if selfs else fetched_url)


def secure_hubs(push: Push, *, allow_http: bool) -> Push | None:
    """Only the hubs our secret may be sent to: https ones (WebSub §5.1), http ones only when allowed."""
    hubs = tuple(h for h in push.hubs if allow_http or h.lower().startswith("https://"))
    return Push(hubs, push.topic) if hubs else None
