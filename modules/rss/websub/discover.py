"""Where to subscribe (pure): WebSub hubs and the topic URL from HTTP Link headers and the feed's links.

WebSub §4: the Link header wins over links in the document; the topic is the `self` URL, and without
one the URL the feed was fetched from.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from modules.rss.parse.normalize import absolute_url

# One link-value: <URI> followed by ;-separated parameters (values quoted or bare). The URI may hold commas.
_LINK = re.compile(r'<([^>]*)>((?:\s*;\s*[^;,"=\s]+(?:\s*=\s*(?:"[^"]*"|[^;,\s]*))?)*)')
_PARAM = re.compile(r';\s*([^;,"=\s]+)(?:\s*=\s*(?:"([^"]*)"|([^;,\s]*)))?')


@dataclass(frozen=True, slots=True)
class Push:
    hubs: tuple[str, ...]  # in preference order; we subscribe at the first
    topic: str


def link_header(value: str, base: str) -> list[tuple[str, str]]:
    """RFC 8288 Link header → (rel, absolute URL) pairs; a rel with several values yields one pair each."""
    found = []
    for match in _LINK.finditer(value or ""):
        rels = [
            (quoted or bare).lower().split()
            for name, quoted, bare in _PARAM.findall(match[2])
            if name.lower() == "rel"
        ]
        url = absolute_url(match[1], base)
        if url and rels:
            found += [(rel, url) for rel in rels[0]]
    return found


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
