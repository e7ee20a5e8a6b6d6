"""The namespaces feeds use, under every spelling seen in the wild, for both parse paths.

Publishers write the same namespace as `http://` or `https://`, with or without `www.` and a trailing
slash, in any letter case (`https://search.yahoo.com/mrss/`, `https://purl.org/dc/elements/1.1/`). A
spelling we did not recognise silently loses content:encoded, dc:creator or media:content, so every
namespace URI is reduced to one key (`key`) before it is looked up. The fast path maps keys to its
fixed prefixes; the feedparser path rewrites declarations to the one spelling feedparser knows.
"""

from __future__ import annotations

import re

ATOM10 = "http://www.w3.org/2005/Atom"
ATOM03 = "http://purl.org/atom/ns#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RSS090 = "http://my.netscape.com/rdf/simple/0.9/"

# canonical prefix → the spelling feedparser recognises (and the one the fast path declares for
# documents that use a prefix without declaring it)
CANONICAL: dict[str, str] = {
    "content": "http://purl.org/rss/1.0/modules/content/",
    "dc": "http://purl.org/dc/elements/1.1/",
    "dcterms": "http://purl.org/dc/terms/",
    "media": "http://search.yahoo.com/mrss/",
    "itunes": "http://www.itunes.com/dtds/podcast-1.0.dtd",
    "googleplay": "http://www.google.com/schemas/play-podcasts/1.0",
    "podcast": "https://podcastindex.org/namespace/1.0",
    "feedburner": "http://rssnamespace.org/feedburner/ext/1.0",
    "atom": ATOM10,
    "rdf": RDF,
    "xhtml": "http://www.w3.org/1999/xhtml",
}
_OTHER_SPELLINGS: dict[str, str] = {  # further URIs of the same namespaces ("" = plain RSS elements)
    "http://tools.search.yahoo.com/mrss/": "media",
    "http://video.search.yahoo.com/mrss/": "media",
    "http://www.itunes.com/dtds/podcast-1.0.dtd/": "itunes",
    "http://www.itunes.com/dtds/podcast.dtd": "itunes",
    ATOM03: "atom",
    "http://purl.org/rss/1.0/": "",
    RSS090: "",
    "http://backend.userland.com/rss2": "",
    "http://blogs.law.harvard.edu/tech/rss": "",
}
_SCHEME_WWW = re.compile(r"^(?:https?://)?(?:www\.)?")


def key(uri: str) -> str:
    """One spelling-independent key per namespace: no scheme, no `www.`, no trailing slash, lower case."""
    return _SCHEME_WWW.sub("", uri.strip().lower()).rstrip("/")


PREFIXES: dict[str, str] = {
    key(uri): prefix for uri, prefix in (*((u, p) for p, u in CANONICAL.items()), *_OTHER_SPELLINGS.items())
}


def prefix_of(uri: str) -> str | None:
    """The canonical prefix of a namespace URI ("" for RSS's own), or None for a namespace we do not read."""
    return PREFIXES.get(key(uri))


_ATOM03_KEY = key(ATOM03)
_DECLARATION = re.compile(r"""(\sxmlns(?::[\w.-]+)?\s*=\s*)(["'])([^"'<>]*?)\2""")


def _canonical_declaration(m: re.Match[str]) -> str:
    found = key(m.group(3))
    prefix = PREFIXES.get(found)
    uri = CANONICAL.get(prefix) if prefix and found != _ATOM03_KEY else None  # Atom 0.3 stays itself
    return m.group(0) if uri is None else f"{m.group(1)}{m.group(2)}{uri}{m.group(2)}"


def canonical_declarations(text: str) -> str:
    """Rewrite namespace declarations of known namespaces to their canonical spelling (for feedparser)."""
    return _DECLARATION.sub(_canonical_declaration, text)
