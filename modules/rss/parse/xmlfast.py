"""Fast path: well-formed RSS 0.9x/1.0/2.0 and Atom 0.3/1.0 with lxml, mapped onto `raw.RawFeed`.

Every element name is normalized once to "prefix:local" with a fixed prefix per namespace URI (whatever
prefix the document chose, in any letter case), so `content:encoded`, `<encoded xmlns="...content/">`
and `<CONTENT:encoded>` are the same key. The parser never loads DTDs, never expands entities and never
touches the network; documents that are not well-formed get a few cheap, safe repairs and one more
strict attempt before the caller falls back to feedparser.
"""

from __future__ import annotations

import base64
import binascii
import html
import re
import threading
from dataclasses import dataclass
from html.entities import html5 as _HTML5_ENTITIES
from urllib.parse import urljoin

from lxml import etree

from modules.rss.parse import fields
from modules.rss.parse.namespaces import ATOM03, ATOM10, CANONICAL, RDF, RSS090, prefix_of
from modules.rss.parse.raw import FeedParseError, RawEnclosure, RawFeed, RawItem, RawText

XMLSyntaxError = etree.XMLSyntaxError

_XML_BASE = "{http://www.w3.org/XML/1998/namespace}base"
_XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
# <content xmlns="http://purl.org/rss/1.0/modules/content/"> means content:encoded (design doc).
_ALIASES = {"content:content": "content:encoded"}
_TEXT_TYPES = ("text", "text/plain")


class _Keys(dict[str, str]):
    """Memoized Clark-notation tag → normalized key; `bare` is the prefix for un-namespaced names."""

    def __init__(self, bare: str) -> None:
        super().__init__()
        self.bare = bare

    def __missing__(self, tag: str) -> str:
        if tag[0] != "{":
            # "dc:date" without a namespace: a recovering parse of an undeclared prefix, read as written
            key = tag.lower() if ":" in tag else self.bare + tag.lower()
        else:
            uri, local = tag[1:].split("}", 1)
            prefix = prefix_of(uri)
            if prefix is None:
                key = f"{{{uri}}}{local.lower()}"  # a namespace no field is read from
            else:
                key = f"{prefix}:{local.lower()}" if prefix else local.lower()
        key = _ALIASES.get(key, key)
        self[tag] = key
        return key


_RSS_KEYS = _Keys("")
_ATOM_KEYS = _Keys("atom:")  # Atom without a namespace declaration (seen in the wild) reads the same
_local = threading.local()


def _parser() -> etree.XMLParser:
    """One hardened parser per thread (lxml parsers must not be shared across threads)."""
    parser: etree.XMLParser | None = getattr(_local, "parser", None)
    if parser is None:
        parser = etree.XMLParser(
            encoding="utf-8",  # the caller decoded the bytes; the document's own label may be wrong
            resolve_entities=False,
            no_network=True,
            load_dtd=False,
            huge_tree=False,
            remove_comments=True,
            remove_pis=True,
        )
        _local.parser = parser
    return parser


Children = dict[str, list[etree._Element]]


def _children(el: etree._Element, keys: _Keys) -> Children:
    """Child elements by normalized key, in document order; media:group is flattened into its parent."""
    out: Children = {}
    for child in el:
        tag = child.tag
        if not isinstance(tag, str):
            continue  # unexpanded entity references
        key = keys[tag]
        if key == "media:group":
            for key_, els in _children(child, keys).items():
                out.setdefault(key_, []).extend(els)
            continue
        found = out.get(key)
        if found is None:
            out[key] = [child]
        else:
            found.append(child)
    return out


def _first(c: Children, *keys: str) -> etree._Element | None:
    for key in keys:
        found = c.get(key)
        if found:
            return found[0]
    return None


def _text(el: etree._Element | None) -> str:
    """Character content of an element (CDATA included), stripped."""
    if el is None:
        return ""
    if len(el) == 0:
        return (el.text or "").strip()
    return etree.tostring(el, method="text", encoding="unicode", with_tail=False).strip()


def _first_text(c: Children, *keys: str) -> str | None:
    for key in keys:
        for el in c.get(key, ()):
            value = _text(el)
            if value:
                return value
    return None


def _base(el: etree._Element, parent_base: str) -> str:
    value = el.get(_XML_BASE)
    if not value:
        return parent_base
    try:
        return urljoin(parent_base, value.strip())
    except ValueError:  # e.g. a malformed IPv6 host
        return parent_base


def _href(el: etree._Element, attr: str, base: str) -> str | None:
    """An URL attribute; pre-joined only when the element carries its own xml:base."""
    value = (el.get(attr) or "").strip()
    if not value:
        return None
    if not el.get(_XML_BASE):
        return value
    try:
        return urljoin(_base(el, base), value)
    except ValueError:
        return value


def _markup(el: etree._Element, *, xml: bool = False) -> str:
    """Inner content as HTML: the text (CDATA or escaped markup), or serialized child elements.

    `xml`: the content is markup itself (Atom type="xhtml"), so its text is text even without child
    elements: `&lt;marquee&gt;` there means the characters, not a tag."""
    if len(el) == 0:
        return html.escape(el.text or "", quote=False) if xml else el.text or ""
    for node in el.iterdescendants():
        if isinstance(node.tag, str) and node.tag[0] == "{":
            node.tag = node.tag.split("}", 1)[1]  # XHTML elements: serialize as plain HTML
    inner = [html.escape(el.text or "", quote=False)]
    inner.extend(etree.tostring(child, encoding="unicode", method="html") for child in el)
    return "".join(inner)


def _html(el: etree._Element | None, base: str) -> RawText | None:
    if el is None:
        return None
    value = _markup(el)
    return RawText(value, True, _base(el, base)) if value.strip() else None


def _base64_text(value: str) -> str:
    """Atom 0.3 mode="base64": the decoded text; the text as written when it does not decode (feedparser
    does the same). Publishers drop the `=` padding, which the decoder insists on: it is put back."""
    packed = "".join(value.split())
    try:
        return base64.b64decode(packed + "=" * (-len(packed) % 4)).decode("utf-8")
    except (binascii.Error, ValueError):
        return value


def _atom_text(el: etree._Element | None, base: str) -> RawText | None:
    """An Atom text construct (type text/html/xhtml; Atom 0.3 mode escaped/xml/base64)."""
    if el is None:
        return None
    kind = (el.get("type") or "text").strip().lower()
    mode = (el.get("mode") or "").strip().lower()
    base = _base(el, base)
    if mode == "base64":
        value, is_html = _base64_text(_text(el)), "html" in kind
    elif "xhtml" in kind or mode == "xml":
        divs = [child for child in el if isinstance(child.tag, str)]
        only = divs[0] if len(divs) == 1 and etree.QName(divs[0]).localname == "div" else el
        value, is_html = _markup(only, xml=True), True
    elif "html" in kind or mode == "escaped":
        value, is_html = _markup(el), True
    elif kind in _TEXT_TYPES or kind.startswith("text/"):
        value, is_html = _text(el), False
    else:
        return None  # binary media in <content>: nothing to show as text
    return RawText(value, is_html, base) if value.strip() else None


def _atom_id_link(c: Children) -> str | None:
    """A feed without an alternate link: its atom:id, when that is a web address."""
    value = _first_text(c, "atom:id")
    return value if value and value.lower().startswith(("http://", "https://")) else None


def _atom_link(c: Children, base: str) -> str | None:
    """The best alternate atom:link (no rel means alternate), preferring HTML targets."""
    candidates = [
        el for el in c.get("atom:link", ()) if (el.get("rel") or "alternate").strip() == "alternate"
    ]
    candidates.sort(key=lambda el: "html" not in (el.get("type") or "text/html"))
    for el in candidates:
        href = _href(el, "href", base)
        if href:
            return href
    return None


def _feed_links(c: Children, base: str) -> list[tuple[str, str]]:
    """Feed-level atom:link relations other than alternate/enclosure (hub, self, prev-archive, next …)."""
    found = []
    for el in c.get("atom:link", ()):
        rel = (el.get("rel") or "alternate").strip().lower()
        href = _href(el, "href", base)
        if rel not in ("alternate", "enclosure") and href:
            found.append((rel, href))
    return found


def _person(el: etree._Element) -> str:
    """A person element's name: Atom <name> (else email, uri), or the text of a childless element.
    RSS <author> with children (<name>, <title>, ...) is read like an Atom person."""
    if len(el) == 0:
        return (el.text or "").strip()
    sub = _children(el, _ATOM_KEYS)
    return _first_text(sub, "atom:name", "atom:email", "atom:uri") or _text(el)


def _authors(c: Children) -> list[str]:
    return [name for key in fields.AUTHORS for el in c.get(key, ()) if (name := _person(el))]


def _categories(c: Children) -> tuple[list[str], dict[str, str]]:
    """Category names, Atom terms and keywords; and the Atom labels that differ from their terms."""
    found = [_text(el) for key in fields.CATEGORIES for el in c.get(key, ())]
    for wrapper in c.get("categories", ()):  # <categories><category>..</category></categories>
        found += [_text(el) for el in wrapper if isinstance(el.tag, str) and _RSS_KEYS[el.tag] == "category"]
    for el in c.get("itunes:category", ()):  # item level: text="Technology", subcategories nested
        found += [(sub.get("text") or "").strip() for sub in el.iter(el.tag)]
    labels: dict[str, str] = {}
    for el in c.get("atom:category", ()):
        term, label = (el.get("term") or "").strip(), (el.get("label") or "").strip()
        term = term or label or _text(el)
        found.append(term)
        if label and label != term:
            labels[term] = label
    found += fields.split_keywords(_text(el) for key in fields.KEYWORDS for el in c.get(key, ()))
    return [name for name in found if name], labels


def _enclosures(c: Children, base: str, keys: _Keys) -> list[RawEnclosure]:
    """Enclosures, then media:content (normalize decides which count): alternatives inside one
    media:group (flattened into `c` by _children) share the group's number."""
    found: list[RawEnclosure] = []
    for el in c.get("enclosure", ()):
        url = _href(el, "url", base) or _href(el, "href", base)
        if url:
            found.append(RawEnclosure(url, el.get("type"), el.get("length")))
    for el in c.get("atom:link", ()):
        if (el.get("rel") or "").strip() == "enclosure":
            url = _href(el, "href", base)
            if url:
                found.append(RawEnclosure(url, el.get("type"), el.get("length")))
    groups: dict[etree._Element, int] = {}
    for el in c.get("media:content", ()):
        url = _href(el, "url", base)
        if url:
            parent = el.getparent()
            group = None
            if parent is not None and keys[parent.tag] == "media:group":
                group = groups.setdefault(parent, len(groups))
            default = (el.get("isDefault") or "").strip().lower() == "true"
            medium = el.get("medium")
            found.append(RawEnclosure(url, el.get("type"), el.get("fileSize"), medium, True, group, default))
    return found


def _link(el: etree._Element | None, attr: str, base: str) -> str | None:
    """An URL written as element text or, in some feeds, as an attribute (<link href=".."/>)."""
    if el is None:
        return None
    return _text(el) or _href(el, attr, base)


def _image(c: Children, base: str) -> str | None:
    for key, attr in (("itunes:image", "href"), ("media:thumbnail", "url"), ("image", "href")):
        for el in c.get(key, ()):
            url = _href(el, attr, base) or _first_text(_children(el, _RSS_KEYS), "url") or _text(el)
            if url:
                return url
    for el in c.get("media:content", ()):  # <media:content><media:thumbnail url=".."/></media:content>
        nested = _children(el, _RSS_KEYS).get("media:thumbnail") if len(el) else None
        if nested and (image := _image({"media:thumbnail": nested}, base)):
            return image
    return None


def _channel_authors(channel: etree._Element | None) -> list[str]:
    """A channel's authors and managingEditor in document order (feedparser's feed `authors`)."""
    if channel is None:
        return []
    return [
        name
        for el in channel
        if isinstance(el.tag, str) and _RSS_KEYS[el.tag] in fields.FEED_AUTHORS and (name := _person(el))
    ]


def _dates(c: Children) -> tuple[str | None, str | None]:
    """(published, updated) as written, by the shared mapping (fields.PUBLISHED, fields.UPDATED)."""
    updated = fields.latest(_text(el) for key in fields.UPDATED for el in c.get(key, ()))
    return _first_text(c, *fields.PUBLISHED), updated


def _rss_item(el: etree._Element, feed_base: str) -> RawItem:
    base = _base(el, feed_base)
    c = _children(el, _RSS_KEYS)
    guid_el = _first(c, "guid")
    guid = _text(guid_el) or _first_text(c, "atom:id") or (el.get(f"{{{RDF}}}about") or "").strip()
    title_el = _first(c, "title", "dc:title")
    title = _html(title_el, base) if title_el is not None else _atom_text(_first(c, "atom:title"), base)
    published, updated = _dates(c)
    categories, labels = _categories(c)
    return RawItem(
        base=base,
        guid=guid or None,
        guid_is_permalink=guid_el is not None
        and (guid_el.get("isPermaLink") or "true").strip().lower() == "true",
        title=title or _html(_first(c, *fields.TITLE_FALLBACK), base),
        link=_first_text(c, "feedburner:origlink")
        or _link(_first(c, "link"), "href", base)
        or _atom_link(c, base),
        content_encoded=_html(_first(c, *fields.CONTENT_ENCODED), base),
        content=_atom_text(_first(c, "atom:content"), base),
        description=_html(_first(c, *fields.DESCRIPTION), base),
        summary=_atom_text(_first(c, "atom:summary"), base)
        or _html(_first(c, "itunes:summary", "media:description"), base),
        published=published,
        updated=updated,
        authors=_authors(c),
        categories=categories,
        category_labels=labels,
        enclosures=_enclosures(c, base, _RSS_KEYS),
        image=_image(c, base),
        duration=_first_text(c, "itunes:duration"),
    )


def _atom_entry(el: etree._Element, feed_base: str) -> RawItem:
    base = _base(el, feed_base)
    c = _children(el, _ATOM_KEYS)
    published, updated = _dates(c)
    categories, labels = _categories(c)
    return RawItem(
        base=base,
        guid=_first_text(c, "atom:id"),
        guid_is_permalink=True,  # an entry without a usable link is found at its id, when that is a URL
        title=_atom_text(_first(c, "atom:title"), base) or _html(_first(c, *fields.TITLE_FALLBACK), base),
        link=_first_text(c, "feedburner:origlink") or _atom_link(c, base),
        content=_atom_text(_first(c, "atom:content"), base),
        content_encoded=_html(_first(c, "content:encoded"), base),
        summary=_atom_text(_first(c, "atom:summary"), base) or _html(_first(c, "media:description"), base),
        published=published,
        updated=updated,
        authors=_authors(c),
        categories=categories,
        category_labels=labels,
        enclosures=_enclosures(c, base, _ATOM_KEYS),
        image=_image(c, base),
        duration=_first_text(c, "itunes:duration"),
    )


def _rss_feed(root: etree._Element, key: str, url: str) -> RawFeed:
    base = _base(root, url)
    root_c = _children(root, _RSS_KEYS)
    channel = root if key == "channel" else _first(root_c, "channel")
    c = _children(channel, _RSS_KEYS) if channel is not None else {}
    if channel is not None:
        base = _base(channel, base)
    if key == "rdf:rdf":
        namespaces = {child.tag.split("}")[0][1:] for child in root if isinstance(child.tag, str)}
        fmt = "rss0.90" if RSS090 in namespaces else "rss1.0"
    else:
        version = (root.get("version") or "").strip()
        fmt = f"rss{version}" if re.fullmatch(r"\d\.\d{1,2}", version) else "rss"
    image_el = _first(c, "image")
    image = _first_text(_children(image_el, _RSS_KEYS), "url") if image_el is not None else None
    items = [*c.get("item", ()), *root_c.get("item", ())] if channel is not root else c.get("item", [])
    return RawFeed(
        format=fmt,
        parser="fast",
        base=base,
        title=_html(_first(c, "title", "dc:title"), base),
        link=_link(_first(c, "link"), "href", base) or _atom_link(c, base),
        description=_html(_first(c, *fields.DESCRIPTION, "itunes:summary"), base),
        language=_first_text(c, "language", "dc:language") or root.get(_XML_LANG),
        image=image or _image(c, base),
        ttl=_first_text(c, "ttl"),
        authors=_channel_authors(channel),
        skip_hours=[_text(h) for el in c.get("skiphours", ()) for h in el],
        skip_days=[_text(d) for el in c.get("skipdays", ()) for d in el],
        items=[_rss_item(item, base) for item in items],
        links=_feed_links(c, base),
    )


def _atom_feed(root: etree._Element, url: str, *, single_entry: bool) -> RawFeed:
    base = _base(root, url)
    namespace = etree.QName(root).namespace
    fmt = "atom0.3" if namespace == ATOM03 else "atom1.0"
    warnings = [] if namespace in (ATOM10, ATOM03) else ["Atom feed without the Atom namespace"]
    if single_entry:
        warnings.append("document is a single Atom entry")
        return RawFeed(
            format=fmt, parser="fast", base=base, items=[_atom_entry(root, base)], warnings=warnings
        )
    c = _children(root, _ATOM_KEYS)
    author_c = {"atom:author": c.get("atom:author", [])}
    return RawFeed(
        format=fmt,
        parser="fast",
        base=base,
        title=_atom_text(_first(c, "atom:title"), base),
        link=_atom_link(c, base) or _atom_id_link(c),
        description=_atom_text(_first(c, "atom:subtitle", "atom:tagline"), base),
        language=root.get(_XML_LANG),
        image=_first_text(c, "atom:logo", "atom:icon") or _image(c, base),
        authors=_authors(author_c),
        items=[_atom_entry(entry, base) for entry in c.get("atom:entry", ())],
        warnings=warnings,
        links=_feed_links(c, base),
    )


def _feed_from_root(root: etree._Element, url: str) -> RawFeed:
    key = _RSS_KEYS[root.tag] if isinstance(root.tag, str) else ""
    if key in ("rss", "rdf:rdf", "channel"):
        return _rss_feed(root, key, url)
    if key in ("atom:feed", "atom:entry", "feed"):
        return _atom_feed(root, url, single_entry=key == "atom:entry")
    if key.endswith("}feed"):  # Atom in a namespace of its own making: read it as Atom
        namespace = etree.QName(root).namespace or ""
        _move_to_atom(root, namespace)
        raw = _atom_feed(root, url, single_entry=False)
        raw.format = "atom"  # no version can be told
        raw.warnings.append(f"Atom feed in the unknown namespace {namespace!r}")
        return raw
    if key in ("html", "xhtml:html"):
        for el in root.iter("rss", f"{{{ATOM10}}}feed", f"{{{RDF}}}RDF"):
            raw = _feed_from_root(el, url)
            raw.warnings.append("feed embedded in an (X)HTML page")
            return raw
        raise FeedParseError("document is an HTML page, not a feed")
    raise FeedParseError(f"root element <{etree.QName(root).localname}> is not RSS, RDF or Atom")


def _move_to_atom(root: etree._Element, namespace: str) -> None:
    """Rename every element of `namespace` into the Atom namespace (rare documents, one pass)."""
    prefix = f"{{{namespace}}}"
    for el in root.iter():
        if isinstance(el.tag, str) and el.tag.startswith(prefix):
            el.tag = f"{{{ATOM10}}}{el.tag[len(prefix) :]}"


# An internal entity's replacement text may name other entities and character references.
_REFERENCE = re.compile(r"&(?:#([0-9]{1,7})|#[xX]([0-9a-fA-F]{1,6})|([A-Za-z_][\w.-]*));")
_PREDEFINED = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'"}
ENTITY_TEXT_MAX = 4096  # characters one internal entity may expand to (a billion laughs stops here)
ENTITY_DEPTH_MAX = 8  # entities naming entities naming ...
ENTITY_TOTAL_MAX = 1_000_000  # characters all references of one document may add (amplification)


def _declarations(dtd: etree.DTD) -> dict[str, str | None]:
    """The DTD's entity declarations: name → replacement text (None for an external entity)."""
    entities = dtd.iterentities()  # type: ignore[attr-defined]  # lxml has it, its stubs do not
    return {e.name: None if e.system_url or e.content is None else e.content for e in entities}


def _internal_entities(dtd: etree.DTD) -> tuple[dict[str, str], int]:
    """The internal subset's entities expanded to text, bounded (each at most ENTITY_TEXT_MAX characters,
    ENTITY_DEPTH_MAX levels deep); external ones (SYSTEM/PUBLIC) are never read. Returns the expansions
    and how many entities were refused."""
    written = _declarations(dtd)
    done: dict[str, str | None] = {}

    def expand(name: str, depth: int) -> str | None:
        if name in done:
            return done[name]
        done[name] = None  # while expanding: a reference back to it is a loop, refused
        text = written.get(name)
        if text is not None and depth <= ENTITY_DEPTH_MAX:
            text = _REFERENCE.sub(lambda m: reference(m, depth), text)
            if len(text) > ENTITY_TEXT_MAX or "\x00" in text:
                text = None
        done[name] = text
        return text

    def reference(m: re.Match[str], depth: int) -> str:
        number, hexadecimal, name = m.groups()
        if name is None:
            code = int(number) if number else int(hexadecimal, 16)
            return chr(code) if 0 < code <= 0x10FFFF else ""
        if name in _PREDEFINED:
            return _PREDEFINED[name]
        value = expand(name, depth + 1)
        if value is None:
            raise _Refused
        return value

    expanded: dict[str, str] = {}
    for name in written:
        try:
            value = expand(name, 0)
        except _Refused:
            value = done[name] = None
        if value is not None:
            expanded[name] = value
    return expanded, len(written) - len(expanded)


class _Refused(Exception):
    """An entity refers to one that is external, unknown, looping or too large."""


def _inline_entity_references(root: etree._Element, entities: dict[str, str]) -> int:
    """Replace the entity references a DOCTYPE left in the tree (lxml never expands them here): internal
    entities by their bounded expansion (ENTITY_TOTAL_MAX in all), HTML names by their character,
    anything else (external entities, entity bombs) by nothing. Returns how many were dropped."""
    dropped, budget = 0, ENTITY_TOTAL_MAX
    for ref in list(root.iter(etree.Entity)):
        name = (ref.text or "&").strip("&;")  # ref.text is "&name;"
        text = entities.get(name)
        if text is not None:
            budget -= len(text)
            text = text if budget >= 0 else None
        else:
            text = _HTML5_ENTITIES.get(name + ";")
        if text is None:
            dropped += 1
        text = (text or "") + (ref.tail or "")
        parent, previous = ref.getparent(), ref.getprevious()
        if parent is None:
            continue
        if previous is not None:
            previous.tail = (previous.tail or "") + text
        else:
            parent.text = (parent.text or "") + text
        parent.remove(ref)
    return dropped


_INTERNAL_SUBSET = re.compile(r"<!DOCTYPE\s[^\[>]*\[(.*?)\]\s*>", re.DOTALL)


def expand_internal_entities(text: str) -> tuple[str, int]:
    """For a document lxml cannot parse (the feedparser path, which never expands entities): the internal
    subset's entities expanded in place as text, within the same bounds as the fast path. Returns the text
    and how many declarations were refused."""
    subset = _INTERNAL_SUBSET.search(text, 0, 65536)
    if subset is None:
        return text, 0
    try:
        doctype = etree.fromstring(f"<!DOCTYPE x [{subset[1]}]><x/>".encode(), _parser())
    except XMLSyntaxError:
        return text, 0
    dtd = doctype.getroottree().docinfo.internalDTD
    if dtd is None:
        return text, 0
    entities, refused = _internal_entities(dtd)
    declared = _declarations(dtd).keys()
    budget = ENTITY_TOTAL_MAX

    def replace(m: re.Match[str]) -> str:
        nonlocal budget
        if m[3] not in declared:
            return m[0]  # a character reference or an HTML name: feedparser reads those itself
        value = entities.get(m[3], "")
        budget -= len(value)
        return html.escape(value, quote=False) if budget >= 0 else ""

    return text[: subset.end()] + _REFERENCE.sub(replace, text[subset.end() :]), refused


def parse_xml(data: bytes, url: str) -> RawFeed:
    """Parse well-formed UTF-8 XML. Raises XMLSyntaxError (not well-formed) or FeedParseError."""
    root = etree.fromstring(data, _parser())
    if root is None:
        raise FeedParseError("empty XML document")
    dtd = root.getroottree().docinfo.internalDTD
    dropped = refused = 0
    if dtd is not None:
        entities, refused = _internal_entities(dtd)
        dropped = _inline_entity_references(root, entities)
    raw = _feed_from_root(root, url)
    if refused:
        raw.warnings.append(f"{refused} DTD entity declaration(s) refused (external, looping or too large)")
    if dropped:
        raw.warnings.append(f"{dropped} reference(s) to entities that were not expanded")
    return raw


@dataclass(frozen=True, slots=True)
class Structured:
    """What the feedparser path takes from lxml for one item: the fields feedparser flattens or loses
    (every update date, media:group alternatives, the nesting of thumbnails, wrapped categories)."""

    updated: str | None
    enclosures: list[RawEnclosure]
    image: str | None
    categories: list[str]
    category_labels: dict[str, str]


def structured_items(data: bytes, url: str) -> list[Structured]:
    """Every item's structured fields, by the fast path's own mapping, from lxml's recovering parser (no
    entities, DTDs or network), items in document order; [] when nothing can be read."""
    parser = etree.XMLParser(
        recover=True, resolve_entities=False, no_network=True, load_dtd=False, remove_comments=True
    )
    try:
        root = etree.fromstring(data, parser)
    except XMLSyntaxError:
        return []
    found = []
    for item in () if root is None else root.iter("{*}item", "{*}entry", "item", "entry"):
        keys = _ATOM_KEYS if str(item.tag).endswith("entry") else _RSS_KEYS
        c = _children(item, keys)
        categories, labels = _categories(c)
        base = _base(item, url)
        found.append(
            Structured(_dates(c)[1], _enclosures(c, base, keys), _image(c, base), categories, labels)
        )
    return found


# --- repairs for documents that are almost well-formed -------------------------------------------------

_CONTROL_CHARS = bytes(c for c in range(32) if c not in (9, 10, 13))
_CDATA = re.compile(rb"(<!\[CDATA\[.*?\]\]>)", re.DOTALL)
# An "&" that does not start an XML entity or character reference, with the HTML entity name if any.
_AMPERSAND = re.compile(
    rb"&(?!(?:amp|lt|gt|quot|apos|#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6});)([A-Za-z][A-Za-z0-9]{0,31};)?"
)
_ROOT_END = re.compile(rb"</(?:[\w.-]+:)?(?:rss|feed|RDF)\s*>")
# Prefixes used by element names and by attribute names: two patterns, not one alternation, so the
# first is found by a fast search for its leading "<" (an alternation is tried at every byte).
_ELEMENT_PREFIX = re.compile(rb"</?([A-Za-z_][\w.-]*):[A-Za-z_]")
_ATTRIBUTE_PREFIX = re.compile(rb"\s([A-Za-z_][\w.-]*):[A-Za-z_][\w.-]*\s*=")
_PREFIX_DECL = re.compile(rb"xmlns:([A-Za-z_][\w.-]*)\s*=")
_ROOT_START = re.compile(rb"<(?![?!])[^\s>/]+")
_BEFORE_DECLARATION = re.compile(
    rb"^.{1,4096}?(?=<\?xml(?![\w.-]))", re.DOTALL
)  # PHP warnings, comments, blanks
_LEADING_COMMENTS = re.compile(rb"(?:<!--.*?-->\s*)+", re.DOTALL)
_DECLARATION = re.compile(rb"<\?xml(?![\w.-])[^>]*>")
_GOOD_DECLARATION = re.compile(
    rb"""<\?xml\s+version\s*=\s*(["'])[\w.:-]+\1(?:\s+encoding\s*=\s*(["'])[\w.:-]+\2)?"""
    rb"""(?:\s+standalone\s*=\s*(["'])(?:yes|no)\3)?\s*\?>"""
)
# A start tag with an attribute value in no quotes (rss:version=2.0); values are found token by token, so
# "=" inside a quoted value is never taken for another attribute.
_UNQUOTED_HINT = re.compile(rb"""<[A-Za-z_][\w.:-]*\s[^<>]*?=[ \t]*[^\s"'<>]""")
_START_TAG_ATTRIBUTES = re.compile(rb"<[A-Za-z_][\w.:-]*\s[^<>]*>")
_ATTRIBUTE_VALUE = re.compile(rb"""(\s[\w.:-]+\s*=\s*)("[^"]*"|'[^']*'|[^\s"'>/][^\s"'>]*)""")
_NAMESPACE_DECL = re.compile(rb"""(\sxmlns(?::[\w.-]+)?\s*=\s*)(["'])([^"'<>]*?)\2""")
# Some namespace URI holds whitespace: a literal-led search that spares most documents _NAMESPACE_DECL's
# attempt at every whitespace byte.
_SPACE_IN_NAMESPACE = re.compile(rb"""xmlns(?::[\w.-]+)?\s*=\s*(["'])[^"'<>]*?\s[^"'<>]*?\1""")
# An undeclared `rss:` prefix on RSS's own elements (<rss:item>) means RSS: RSS 1.0's namespace reads as such.
_KNOWN_URIS = {prefix.encode(): uri.encode() for prefix, uri in CANONICAL.items()} | {
    b"rss": b"http://purl.org/rss/1.0/"
}


# What the balancer steps over: a comment, a processing instruction, a declaration, the start of a CDATA
# section, or a start/end tag (group 1: "/", 2: name, 3: "/" of an empty-element tag).
_MARKUP = re.compile(
    rb"""<(?:!--.*?-->|\?.*?\?>|!\[CDATA\[|![^>]*>|(/?)([A-Za-z_][\w.:-]*)(?:[^>"']|"[^"]*"|'[^']*')*?(/?)>)""",
    re.DOTALL,
)
_ITEM_NAMES = frozenset({b"item", b"entry"})
_ITEM_CONTAINERS = frozenset({b"channel", b"rss", b"rdf", b"feed"})  # items are children of these only
MAX_XML_DEPTH = 256  # libxml2's own limit without huge_tree; the balancer refuses deeper documents too


def _local_name(name: bytes) -> bytes:
    return name.rpartition(b":")[2].lower()


def balance(data: bytes) -> tuple[bytes, int]:
    """Tags put in order, as a browser would: an end tag closes the elements left open inside its element,
    an item's start tag closes whatever is left open inside the channel (items never nest: an unclosed
    <itunes:category> or <item> must not swallow the items after it), an end tag that closes nothing goes, a CDATA section that runs past its element's end tag ends there,
    and elements still open at the end are closed. Returns the bytes and the number of fixes; raises
    FeedParseError for a document nested deeper than MAX_XML_DEPTH (the lenient path has no limit)."""
    out: list[bytes] = []
    stack: list[bytes] = []
    pos = fixes = 0
    while (m := _MARKUP.search(data, pos)) is not None:
        if m.group(0) == b"<![CDATA[":
            end = data.find(b"]]>", m.end())
            closing = data.find(b"</" + stack[-1] + b">", m.end()) if stack else -1
            if end == -1 or -1 < closing < end:
                cut = closing if closing != -1 else len(data)
                out += (data[pos:cut], b"]]>")
                pos, fixes = cut, fixes + 1
            else:
                out.append(data[pos : end + 3])
                pos = end + 3
            continue
        slash, name, empty = m.groups()
        if name is None or empty:
            out.append(data[pos : m.end()])
        elif not slash:
            if _local_name(name) in _ITEM_NAMES and any(_local_name(n) in _ITEM_CONTAINERS for n in stack):
                while _local_name(stack[-1]) not in _ITEM_CONTAINERS:  # an unclosed element before it
                    out.append(b"</" + stack.pop() + b">")
                    fixes += 1
            stack.append(name)
            if len(stack) > MAX_XML_DEPTH:
                raise FeedParseError(f"elements nested deeper than {MAX_XML_DEPTH} levels")
            out.append(data[pos : m.end()])
        elif stack and stack[-1] == name:
            stack.pop()
            out.append(data[pos : m.end()])
        elif name in stack:
            out.append(data[pos : m.start()])
            while stack[-1] != name:
                out.append(b"</" + stack.pop() + b">")
                fixes += 1
            stack.pop()
            out.append(m.group(0))
        else:  # closes nothing that is open: dropped
            out.append(data[pos : m.start()])
            fixes += 1
        pos = m.end()
    out.append(data[pos:])
    fixes += len(stack)
    out += (b"</" + name + b">" for name in reversed(stack))
    return b"".join(out), fixes


def _fix_ampersand(m: re.Match[bytes]) -> bytes:
    ref = m.group(1)
    if ref is None:
        return b"&amp;"  # a bare "&" (AT&T, ?a=1&b=2)
    chars = _HTML5_ENTITIES.get(ref.decode("ascii"))
    if chars is None:
        return b"&amp;" + ref
    return "".join(f"&#{ord(ch)};" for ch in chars).encode("ascii")


def _fix_entities(data: bytes) -> bytes:
    """HTML entities and bare ampersands outside CDATA → XML character references."""
    parts = _CDATA.split(data)
    return b"".join(part if i % 2 else _AMPERSAND.sub(_fix_ampersand, part) for i, part in enumerate(parts))


def _declare_prefixes(data: bytes) -> bytes:
    """Declare namespace prefixes the document uses without declaring (itunes:, media:, ...)."""
    used = {*_ELEMENT_PREFIX.findall(data), *_ATTRIBUTE_PREFIX.findall(data)} - {b"xml", b"xmlns"}
    missing = used - set(_PREFIX_DECL.findall(data))
    root = _ROOT_START.search(data)
    if not missing or root is None:
        return data
    decls = b"".join(
        b' xmlns:%s="%s"' % (p, _KNOWN_URIS.get(p.lower(), b"urn:undeclared:" + p)) for p in sorted(missing)
    )
    return data[: root.end()] + decls + data[root.end() :]


def _quote_value(m: re.Match[bytes]) -> bytes:
    value = m.group(2)
    return m.group(0) if value[:1] in (b'"', b"'") else m.group(1) + b'"' + value + b'"'


def _quote_attributes(m: re.Match[bytes]) -> bytes:
    return _ATTRIBUTE_VALUE.sub(_quote_value, m.group(0))


def _compact_namespace(m: re.Match[bytes]) -> bytes:
    return m.group(1) + m.group(2) + b"".join(m.group(3).split()) + m.group(2)


def repair(data: bytes) -> tuple[bytes, list[str]]:
    """Cheap fixes for the usual ways feeds fail to be XML; returns the new bytes and what was done."""
    done: list[str] = []
    fixed = data.lstrip()
    if not fixed.startswith(b"<") and b"<" in fixed:
        fixed = fixed[fixed.index(b"<") :]
    comments = _LEADING_COMMENTS.match(fixed)
    if comments and fixed.startswith(b"<?xml", comments.end()):  # a comment may mention "<?xml" itself
        fixed = fixed[comments.end() :]
    else:
        fixed = _BEFORE_DECLARATION.sub(b"", fixed, count=1)
    if fixed != data:
        done.append("removed content before the XML declaration")
    declaration = _DECLARATION.match(fixed)
    if declaration and not _GOOD_DECLARATION.fullmatch(declaration.group(0)):
        fixed = fixed[declaration.end() :].lstrip()  # the decoder read what it could from it already
        done.append("removed a malformed XML declaration")
    if _UNQUOTED_HINT.search(fixed):
        quoted = _START_TAG_ATTRIBUTES.sub(_quote_attributes, fixed)
        if quoted != fixed:
            fixed = quoted
            done.append("quoted attribute values")
    compact = _NAMESPACE_DECL.sub(_compact_namespace, fixed) if _SPACE_IN_NAMESPACE.search(fixed) else fixed
    if compact != fixed:
        fixed = compact
        done.append("removed whitespace from namespace URIs")
    stripped = fixed.translate(None, _CONTROL_CHARS)
    if stripped != fixed:
        done.append("removed control characters")
    fixed = _fix_entities(stripped)
    if fixed != stripped:
        done.append("escaped bare '&' and HTML entities")
    ends = list(_ROOT_END.finditer(fixed))
    if ends and fixed[ends[-1].end() :].strip():
        fixed = fixed[: ends[-1].end()]
        done.append("removed junk after the root element")
    declared = _declare_prefixes(fixed)
    if declared != fixed:
        done.append("declared undeclared namespace prefixes")
    return declared, done
