"""OPML subscription lists: lenient import, valid OPML 2.0 export.

Import rules (what real exports in the wild need, without ever guessing silently):

* A feed is an `<outline>` with an `xmlUrl` attribute (any letter case: `xmlurl` is common), or
  with `url` when `type` is rss/atom. `type="link"`/`"include"` outlines point at web pages or
  other OPML files and are not feeds. Only http(s) URLs are kept; the first outline with a given
  URL wins.
* Titles come from `text`, falling back to `title`; whitespace is stripped and "" becomes None.
* Every named outline that has child outlines is a folder for them; nested folders become a path
  "Tech/Python". A "/" inside one folder name is replaced by "∕" (U+2215, looks the same) so the
  path stays splittable on "/". An unnamed folder adds no path segment.
* Only `<body>` holds subscriptions. A feed outline anywhere else (e.g. after `<body/>`) raises
  OpmlError: dropping it would lose a subscription without telling anyone.
* The document must be XML with an `<opml>` root (or `<outlineDocument>`, its pre-1.0 name) and a
  `<body>`. Encoding comes from the XML declaration (or BOM; UTF-8 by default). Entity
  declarations are refused outright: OPML never needs them, and the `&` repair below would turn
  references to them into literal text.

Broken XML is repaired only where the intent is unambiguous: a `&` that starts no valid reference
is escaped (HTML entity names such as `&nbsp;` become their character), then libxml2's recover
mode may fix a raw `<` inside an attribute value. Any other error (bytes invalid in the declared
encoding, unclosed or mismatched tags, not XML at all) raises OpmlError naming the line and how to
fix it, because recovering from those can silently misplace or drop subscriptions.
"""

from __future__ import annotations

import html.entities
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import cast
from urllib.parse import urlsplit

from lxml import etree

_SLASH_STANDIN = "\u2215"
_ROOTS = frozenset({"opml", "outlineDocument"})
_URL_FEED_TYPES = frozenset({"rss", "atom"})
# libxml2 errors whose recovery is unambiguous: a raw "<" in an attribute value is kept as text.
_RECOVERABLE = frozenset({"ERR_LT_IN_ATTRIBUTE"})
_ENCODING_ERRORS = frozenset({"ERR_INVALID_ENCODING", "ERR_UNSUPPORTED_ENCODING"})
_STRAY_AMPERSAND = re.compile(rb"&(?!#[0-9]+;|#x[0-9A-Fa-f]+;)([A-Za-z][A-Za-z0-9]*;)?")
_XML_ILLEGAL = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


@dataclass(frozen=True, slots=True)
class OpmlFeed:
    url: str
    title: str | None = None
    site_url: str | None = None
    folder: str | None = None  # nested folders as a path "Tech/Python"


class OpmlError(Exception):
    """The data cannot be read as OPML; the message says where and how to fix it."""


def parse_opml(data: bytes) -> list[OpmlFeed]:
    """Subscriptions in `data`, in document order (see the module docstring for the rules)."""
    declaration = data.find(b"<!ENTITY")
    if declaration >= 0:
        raise _error(
            data.count(b"\n", 0, declaration) + 1,
            "the document declares XML entities",
            "remove the <!DOCTYPE ...> block; OPML never needs entities (they are how XXE attacks work)",
        )
    root = _parse_xml(data)
    if _local_name(root) not in _ROOTS:
        raise _error(
            _line(root),
            f"the root element is <{_local_name(root)}>, not <opml>",
            "this is not an OPML subscription list (a feed URL, perhaps?); export the list from your reader as OPML",
        )
    body = root.find("{*}body")
    if body is None:
        raise _error(
            _line(root),
            "<opml> has no <body> element",
            "subscriptions belong in <opml><body><outline .../></body></opml>; re-export the file",
        )
    for outline in root.iter("{*}outline"):
        if _feed_url(outline) is not None and body not in outline.iterancestors():
            raise _error(
                _line(outline),
                "a feed <outline> is outside <body>",
                "move it inside <body> (a self-closed <body/> ends the body early)",
            )
    feeds: dict[str, OpmlFeed] = {}
    for feed in _walk(body, ()):
        feeds.setdefault(feed.url, feed)
    return list(feeds.values())


def export_opml(feeds: Iterable[OpmlFeed], *, title: str = "feedeater subscriptions") -> bytes:
    """OPML 2.0 (UTF-8) with folders as nested outlines, feeds in the given order.

    A folder is reopened if the input interleaves folders, so that `parse_opml` returns the list
    in the same order; sort by folder first for one outline per folder. For any list `parse_opml`
    can return, `parse_opml(export_opml(x)) == x`. Characters XML cannot carry (control
    characters) are dropped.
    """
    root = etree.Element("opml", version="2.0")
    etree.SubElement(etree.SubElement(root, "head"), "title").text = _xml_safe(title)
    body = etree.SubElement(root, "body")
    stack: list[tuple[str, etree._Element]] = [("", body)]  # <body>, then the open folders
    for feed in feeds:
        path = [_xml_safe(segment) for segment in (feed.folder or "").split("/") if segment]
        depth = 0  # how many of the open folders this feed's path shares
        while depth < min(len(path), len(stack) - 1) and stack[depth + 1][0] == path[depth]:
            depth += 1
        del stack[depth + 1 :]
        for segment in path[depth:]:
            stack.append((segment, etree.SubElement(stack[-1][1], "outline", text=segment, title=segment)))
        attributes = {"type": "rss", "text": _xml_safe(feed.title or "")}
        if feed.title:
            attributes["title"] = _xml_safe(feed.title)
        attributes["xmlUrl"] = _xml_safe(feed.url)
        if feed.site_url:
            attributes["htmlUrl"] = _xml_safe(feed.site_url)
        etree.SubElement(stack[-1][1], "outline", attributes)
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True)


def _parse_xml(data: bytes) -> etree._Element:
    """Parse strictly; on failure repair stray `&` and accept recover mode's result only if every
    remaining error is one it fixes unambiguously."""
    try:
        return etree.fromstring(data, _parser(recover=False))
    except etree.XMLSyntaxError:
        pass
    parser = _parser(recover=True)
    root: etree._Element | None
    try:
        root = etree.fromstring(_STRAY_AMPERSAND.sub(_escape_ampersand, data), parser)
    except etree.XMLSyntaxError:
        root = None
    blocking = [entry for entry in parser.error_log if entry.type_name not in _RECOVERABLE]
    if root is not None and not blocking:
        return root
    # Recover mode gives up (no root) only together with a fatal, logged error.
    first = blocking[0]
    if first.type_name in _ENCODING_ERRORS:
        fix = (
            "the bytes do not match the encoding in the <?xml ... encoding=...?> declaration (UTF-8 if none): "
            "re-save the file as UTF-8 or correct the declaration"
        )
    elif first.type_name == "ERR_DOCUMENT_EMPTY":
        fix = "this is not XML at all; export the subscription list from your feed reader as OPML"
    else:
        fix = "close every tag and write '<' as &lt; and '&' as &amp; inside text and attributes"
    raise _error(first.line, first.message.strip(), fix)


def _escape_ampersand(match: re.Match[bytes]) -> bytes:
    """`&name;` with an XML or HTML entity name becomes character references; any other `&` is
    escaped. The repair keeps every byte on its line, so libxml2's line numbers stay right."""
    name = match.group(1)
    replacement = html.entities.html5.get(name.decode("ascii")) if name else None
    if replacement is None:
        return b"&amp;" + (name or b"")
    return "".join(f"&#{ord(char)};" for char in replacement).encode("ascii")


def _parser(*, recover: bool) -> etree.XMLParser:
    """No DTD loading, entity expansion or network access: OPML files are untrusted uploads."""
    return etree.XMLParser(
        recover=recover, resolve_entities=False, load_dtd=False, no_network=True, huge_tree=False
    )


def _walk(parent: etree._Element, path: tuple[str, ...]) -> Iterator[OpmlFeed]:
    for outline in parent.iterchildren("{*}outline"):
        name = _attribute(outline, "text") or _attribute(outline, "title")
        url = _feed_url(outline)
        if url is not None and _is_http(url):
            site_url = _attribute(outline, "htmlurl")
            yield OpmlFeed(
                url=url,
                title=name,
                site_url=site_url if site_url and _is_http(site_url) else None,
                folder="/".join(path) or None,
            )
        yield from _walk(outline, (*path, name.replace("/", _SLASH_STANDIN)) if name else path)


def _feed_url(outline: etree._Element) -> str | None:
    url = _attribute(outline, "xmlurl")
    if url is None and (_attribute(outline, "type") or "").lower() in _URL_FEED_TYPES:
        url = _attribute(outline, "url")
    return url


def _attribute(element: etree._Element, lowercase_name: str) -> str | None:
    """The first attribute whose local name matches case-insensitively, stripped; "" is None."""
    for key, value in element.attrib.items():
        if etree.QName(key).localname.lower() == lowercase_name:
            return cast(str, value).strip() or None  # parsed documents give str (stubs: str | bytes)
    return None


def _is_http(url: str) -> bool:
    try:
        parts = urlsplit(url)
    except ValueError:  # e.g. an unbalanced "[" in the host
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.netloc)


def _local_name(element: etree._Element) -> str:
    return etree.QName(element).localname


def _xml_safe(text: str) -> str:
    return _XML_ILLEGAL.sub("", text)


def _line(element: etree._Element) -> int | None:
    return cast(int | None, element.sourceline)  # the stubs leave it untyped


def _error(line: int | None, what: str, fix: str) -> OpmlError:
    return OpmlError(f"OPML line {line}: {what}. How to fix: {fix}.")
