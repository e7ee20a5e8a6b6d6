"""JSON Feed 1.0 and 1.1 (https://jsonfeed.org/version/1.1), which feedparser does not read.

Real JSON Feeds bend the spec (numeric ids, both `author` and `authors`, relative URLs), so every field
is type-checked and anything of the wrong type is treated as absent rather than trusted.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

from modules.rss.parse.raw import FeedParseError, RawEnclosure, RawFeed, RawItem, RawText


def _str(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return str(value)  # ids are strings by the spec, numbers in practice
    if not isinstance(value, str):
        return None
    return value.replace("\x00", "").strip() or None  # JSON may escape NUL (\u0000); no database stores it


def _text(value: Any, html: bool, base: str) -> RawText | None:
    text = _str(value) if isinstance(value, str) else None
    return RawText(text, html, base) if text else None


def _title(value: Any, base: str) -> RawText | None:
    """Titles are plain text by the spec: `<i>` is two characters and a letter, never a tag. Publishers
    entity-encode them all the same (`&amp;`), so character references are decoded."""
    text = _str(value) if isinstance(value, str) else None
    return RawText(html.unescape(text), False, base) if text else None


def _authors(obj: dict[str, Any]) -> list[str]:
    """1.1 `authors` (list) or 1.0 `author` (object): names, else their URLs."""
    people = obj.get("authors")
    if not isinstance(people, list):
        people = [obj.get("author")]
    return [n for p in people if isinstance(p, dict) and (n := _str(p.get("name")) or _str(p.get("url")))]


def _attachments(item: dict[str, Any]) -> list[RawEnclosure]:
    found = []
    for a in item.get("attachments") or ():
        if isinstance(a, dict) and (url := _str(a.get("url"))):
            found.append(RawEnclosure(url, _str(a.get("mime_type")), _str(a.get("size_in_bytes"))))
    return found


def _item(item: dict[str, Any], base: str) -> RawItem:
    content = _text(item.get("content_html"), True, base) or _text(item.get("content_text"), False, base)
    durations = [a.get("duration_in_seconds") for a in item.get("attachments") or () if isinstance(a, dict)]
    tags = item.get("tags")
    if isinstance(tags, str):  # "workflow,omnifocus": one string instead of a list
        tags = tags.split(",")
    return RawItem(
        base=base,
        guid=_str(item.get("id")),
        title=_title(item.get("title"), base),
        link=_str(item.get("url")) or _str(item.get("external_url")),
        content=content,
        summary=_text(item.get("summary"), False, base),
        published=_str(item.get("date_published")),
        updated=_str(item.get("date_modified")),
        authors=_authors(item),
        categories=[n for t in tags if (n := _str(t))] if isinstance(tags, list) else [],
        enclosures=_attachments(item),
        image=_str(item.get("image")) or _str(item.get("banner_image")),
        duration=next((s for d in durations if (s := _str(d))), None),
    )


def _links(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """`feed_url` is the feed's self link, `next_url` its next page, WebSub `hubs` its hubs."""
    hubs = doc.get("hubs")
    found = [
        ("hub", href)
        for hub in (hubs if isinstance(hubs, list) else ())
        if isinstance(hub, dict)
        and (_str(hub.get("type")) or "").lower() == "websub"
        and (href := _str(hub.get("url")))
    ]
    found += [
        (rel, href)
        for rel, key in (("self", "feed_url"), ("next", "next_url"))
        if (href := _str(doc.get(key)))
    ]
    return found


_JSON_FEED_KEYS = frozenset({"feed_url", "home_page_url"})  # names no other JSON format uses at the top
_ITEMS = re.compile(r'"items"\s*:\s*\[')
_DECODER = json.JSONDecoder(strict=False)


def _complete_items(text: str, error: ValueError) -> tuple[dict[str, Any], str]:
    """A document cut short (a truncated download): its feed fields before "items" and every item that is
    complete. Raises FeedParseError when not even that can be read."""
    for m in _ITEMS.finditer(text):
        try:
            doc = json.loads(text[: m.start()].rstrip().rstrip(",") + "}", strict=False)
        except (ValueError, RecursionError):
            continue
        if not isinstance(doc, dict):
            continue
        items, pos = [], m.end()
        while True:
            while pos < len(text) and text[pos] in " \t\r\n,":
                pos += 1
            try:
                item, pos = _DECODER.raw_decode(text, pos)
            except (ValueError, RecursionError):
                break
            items.append(item)
        doc["items"] = items
        return doc, f"invalid JSON ({error}); kept the {len(items)} complete item(s)"
    raise FeedParseError(f"invalid JSON ({error})")


def parse_json(text: str, url: str) -> RawFeed:
    """Parse a JSON Feed document. Raises FeedParseError for invalid JSON or JSON that is no JSON Feed.
    Control characters in strings are accepted (publishers write raw tabs); a document cut short keeps
    its complete items."""
    problems = []
    try:
        doc = json.loads(text, strict=False)
    except RecursionError:  # "[[[[..." nested deeper than the stack
        raise FeedParseError("invalid JSON (nested too deeply)") from None
    except ValueError as exc:
        doc, problem = _complete_items(text, exc)
        problems.append(problem)
    version = _str(doc.get("version")) if isinstance(doc, dict) else None
    if problems and version is None and isinstance(doc, dict) and _JSON_FEED_KEYS & doc.keys():
        version = "https://jsonfeed.org/version/1"  # the marker was in the part that never arrived
    if not isinstance(doc, dict) or not version or "jsonfeed.org/version/" not in version:
        raise FeedParseError("JSON document is not a JSON Feed (no https://jsonfeed.org/version/ marker)")
    items = doc.get("items")
    items = items if isinstance(items, list) else []
    warnings = problems + (
        []
        if all(isinstance(i, dict) for i in items)
        else ["JSON Feed items that are not objects were skipped"]
    )
    return RawFeed(
        format="jsonfeed1.1" if version.rstrip("/").endswith("1.1") else "jsonfeed1.0",
        parser="json",
        base=url,
        title=_title(doc.get("title"), url),
        link=_str(doc.get("home_page_url")),
        description=_text(doc.get("description"), False, url),
        language=_str(doc.get("language")),
        image=_str(doc.get("icon")) or _str(doc.get("favicon")),
        authors=_authors(doc),
        items=[_item(i, url) for i in items if isinstance(i, dict)],
        warnings=warnings,
        links=_links(doc),
    )
