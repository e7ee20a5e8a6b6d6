"""Which RFC 5005 relation a walk follows (pure).

Archived feeds (§4) link the subscription document to older archives with `prev-archive`; paged feeds
(§3) link each page to the next older one with `next` (`previous`/`prev` point the other way and are
followed only when a document offers nothing else). A walk keeps the relation it started with.
"""

from __future__ import annotations

from collections.abc import Iterable

ORDER = ("prev-archive", "next", "previous")
_ALIASES = {"prev": "previous"}


def start(links: Iterable[tuple[str, str]]) -> tuple[str, str] | None:
    """(relation, first page URL) of a document's archive walk, or None when it has no archive links."""
    found = _by_rel(links)
    return next(((rel, found[rel]) for rel in ORDER if rel in found), None)


def follow(links: Iterable[tuple[str, str]], rel: str, visited: Iterable[str]) -> str | None:
    """The next page along `rel`, or None at the end (or when it leads back to a page already walked)."""
    url = _by_rel(links).get(rel)
    return None if url is None or url in set(visited) else url


def _by_rel(links: Iterable[tuple[str, str]]) -> dict[str, str]:
    found: dict[str, str] = {}
    for rel, url in links:
        found.setdefault(_ALIASES.get(rel, rel), url)
    return found
