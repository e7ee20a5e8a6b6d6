"""HTML from feeds is hostile: an nh3 (ammonia) allowlist makes it safe to display, lxml makes it text.

Policy: only formatting/structure tags and their harmless attributes survive; script/style/iframe/embed/svg
are removed with their content; <object> and <applet> go but their fallback content stays (browsers show it
when they do not run the plugin, and none runs one now); no event handlers or style attributes; href/src must be http,
https or mailto after relative URLs are resolved against the entry's base; links get
rel="noopener noreferrer".
"""

from __future__ import annotations

import html as htmllib
import re
import threading
from functools import lru_cache
from typing import Literal

import nh3
from lxml import etree

_CLEAN_CONTENT_TAGS = frozenset({
    "script", "style", "iframe", "embed", "template", "noembed", "noframes", "frame", "frameset", "svg",
    "math",
})  # fmt: skip
_URL_SCHEMES = frozenset({"http", "https", "mailto"})
# html5ever checks the stack of open elements for every start tag, so deeply nested input costs
# O(tags x depth) inside nh3 (20 000 nested <ul> take 5 s). Markup with many tags is measured first
# with lxml, whose parser stops at depth 255 by itself.
_MANY_TAGS = 256
_MAX_DEPTH = 64
_TOO_DEEP = "body" + "/*" * _MAX_DEPTH  # ElementPath: some element this deep exists
_VOID = ("area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
         "track", "wbr")  # fmt: skip
_START_OR_END_TAG = re.compile(rf"<(/?)(?!(?:{'|'.join(_VOID)})[\s/>])([A-Za-z][A-Za-z0-9]*)")
# A start tag (not of a void element) up to its own end tag, no "<" between: both are tags for
# _START_OR_END_TAG, the end tag closes the start tag, and nothing else is counted in between.
_INNERMOST_PAIR = re.compile(
    rf"<(?!(?:{'|'.join(_VOID)})(?![A-Za-z0-9]))([A-Za-z][A-Za-z0-9]*+)[^<]*</\1(?![A-Za-z0-9])"
)

# No readable text inside. embed and frame are void in HTML5, but lxml nests what follows them inside
# them, so dropping those two would drop the rest of the document.
_DROPPED = ("head", *sorted(_CLEAN_CONTENT_TAGS - {"embed", "frame"}))
_BLOCKS = (
    "p", "div", "section", "article", "aside", "header", "footer", "nav", "main", "blockquote", "pre",
    "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "dl", "table", "tr", "figure", "figcaption",
    "address", "hr", "details", "summary", "form", "fieldset", "center", "hgroup", "menu", "dialog",
    "video", "audio", "caption", "tbody", "thead", "tfoot",
)  # fmt: skip
_LINES = ("br", "li", "dt", "dd", "td", "th")
# Tags as html5ever serializes them (lower-case names, double-quoted attribute values that may hold ">")
_ATTRIBUTES = r'[^>"]*(?:"[^"]*"[^>"]*)*>'
_BLOCK_TAG = re.compile(rf"</?(?:{'|'.join(_BLOCKS)})(?=[\s/>]){_ATTRIBUTES}")
_LINE_TAG = re.compile(rf"(?:</(?:{'|'.join(_LINES)})|<br(?=[\s/>])){_ATTRIBUTES}")
_ANY_TAG = re.compile(rf"</?[A-Za-z][A-Za-z0-9]*{_ATTRIBUTES}")
_PARAGRAPH, _LINE = "\ue000", "\ue001"  # private-use sentinels: str.split() does not treat them as space
_PARAGRAPHS = re.compile(r"\n\s*\n")
_NOT_XML_CHARS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_local = threading.local()


def _needs_markup_handling(text: str) -> bool:
    return "<" in text or "&" in text


@lru_cache(maxsize=256)
def _cleaner(base: str | None) -> nh3.Cleaner:
    """One cleaner per base URL (feeds have one or a few); unresolvable bases drop relative URLs."""
    relative: Literal["deny"] | tuple[Literal["rewrite_with_base"], str] = "deny"
    if base and base.startswith(("http://", "https://")):
        relative = ("rewrite_with_base", base)
    try:
        return nh3.Cleaner(
            clean_content_tags=set(_CLEAN_CONTENT_TAGS),
            url_schemes=set(_URL_SCHEMES),
            link_rel="noopener noreferrer",
            strip_comments=True,
            url_relative=relative,
        )
    except ValueError:  # a base nh3 cannot parse
        return _cleaner(None)


def _parse_html(markup: str) -> etree._Element | None:
    """An lxml HTML tree (depth-capped by libxml2), or None for empty input."""
    parsers: tuple[etree.HTMLParser, etree.HTMLParser] | None = getattr(_local, "parsers", None)
    if parsers is None:  # lxml parsers must not be shared between threads
        parsers = _local.parsers = (
            etree.HTMLParser(no_network=True, remove_comments=True, remove_pis=True),
            etree.HTMLParser(no_network=True, remove_comments=True, remove_pis=True, encoding="utf-8"),
        )
    try:
        return etree.fromstring(markup, parsers[0])
    except ValueError:  # a str with an XML encoding declaration: lxml wants bytes
        return etree.fromstring(markup.encode("utf-8"), parsers[1])


def _tree_text(root: etree._Element) -> str:
    """Text of a parsed HTML tree with paragraph and line breaks; mutates the tree."""
    etree.strip_elements(root, *_DROPPED, with_tail=False)
    for el in root.iter(*_BLOCKS):
        el.text = _PARAGRAPH + (el.text or "")
        el.tail = _PARAGRAPH + (el.tail or "")
    for el in root.iter(*_LINES):
        el.tail = _LINE + (el.tail or "")
    return _layout(etree.tostring(root, method="text", encoding="unicode"))


def _layout(marked: str) -> str:
    """Text with paragraph/line sentinels → single spaces, "\n" lines, "\n\n" paragraphs."""
    text = " ".join(marked.split())
    paragraphs = []
    for paragraph in text.split(_PARAGRAPH):
        if _LINE in paragraph:
            paragraph = "\n".join(line for line in (part.strip() for part in paragraph.split(_LINE)) if line)
        else:
            paragraph = paragraph.strip()
        if paragraph:
            paragraphs.append(paragraph)
    return "\n\n".join(paragraphs)


def _markup_text(markup: str, root: etree._Element | None = None) -> str:
    """_tree_text of `markup` (already parsed as `root`, if given)."""
    root = _parse_html(markup) if root is None else root
    if root is None:
        return ""
    try:
        return _tree_text(root)
    except ValueError:  # lxml parsed control characters (&#29;) that it refuses to write back
        root = _parse_html(_NOT_XML_CHARS.sub(" ", markup))
        return "" if root is None else _tree_text(root)


def html_to_text(markup: str) -> str:
    """Readable plain text of an HTML fragment (for search, embeddings, prompts and word counts).

    Parsed with lxml, never with regexes: entities are decoded, script/style content is dropped,
    and block elements become blank lines so paragraphs stay apart. Words are separated by single
    spaces, lines by "\\n", paragraphs by "\\n\\n".
    """
    if not _needs_markup_handling(markup):
        return " ".join(markup.split())
    return _markup_text(markup)


def sanitized_text(clean: str) -> str:
    """html_to_text of sanitize_html's output, without building a tree (the hot path of normalizing).

    nh3 serializes a parsed tree: every `<` in it starts a tag (text has `&lt;`), attribute values are
    double-quoted with `&quot;` inside, comments and script/style/... contents are gone, and every
    non-void element has its end tag. So tags can be read with one regular expression; the breaks are
    the same as _tree_text's (block: before its content and after its end; line: after its end)."""
    if not _needs_markup_handling(clean):
        return " ".join(clean.split())
    marked = _LINE_TAG.sub(_LINE, _BLOCK_TAG.sub(_PARAGRAPH, clean))
    return _layout(htmllib.unescape(_ANY_TAG.sub("", marked)))


def plain_text(text: str) -> str:
    """Plain text normalized like html_to_text's output (paragraphs kept, other whitespace collapsed)."""
    paragraphs = (" ".join(p.split()) for p in _PARAGRAPHS.split(text))
    return "\n\n".join(p for p in paragraphs if p)


def text_to_html(text: str) -> str:
    """Escape plain text into paragraphs, so every entry has displayable HTML."""
    paragraphs = (p.strip() for p in _PARAGRAPHS.split(text.strip()))
    return "".join(f"<p>{htmllib.escape(p).replace(chr(10), '<br>')}</p>" for p in paragraphs if p)


def _nests_deeper_than(markup: str, limit: int) -> bool:
    """A bound of the nesting depth from start and end tags alone exceeds `limit`. An end tag counts only
    against an open start tag of its name (`<div></b>` repeated nests: a stray end tag closes nothing);
    void elements never nest; implied end tags (`<p>`, `<li>` left open) only raise the bound."""
    depth = 0
    unclosed: dict[str, int] = {}
    for end, name in _START_OR_END_TAG.findall(markup):
        if not end:
            unclosed[name] = unclosed.get(name, 0) + 1
            depth += 1
            if depth > limit:
                return True
        elif unclosed.get(name):
            unclosed[name] -= 1
            depth -= 1
    return False


def _may_nest_deeper_than_allowed(markup: str) -> bool:
    """_nests_deeper_than(markup, _MAX_DEPTH), so only markup that might be too deep pays for a full lxml
    parse (lxml then decides).

    Counting every tag in Python is the cost (tag-dense articles: syntax-highlighted code is a <span>
    per token), so innermost pairs (`<b>text</b>`: no tag inside) are first cut out by one regex pass.
    Cutting a pair leaves every other depth unchanged and lowers the maximum by at most one, so a
    shortened text that stays within _MAX_DEPTH - 1 proves the answer; otherwise the full count runs."""
    shortened = _INNERMOST_PAIR.sub("", markup)
    return _nests_deeper_than(shortened, _MAX_DEPTH - 1) and _nests_deeper_than(markup, _MAX_DEPTH)


def sanitize_html(markup: str, base: str | None) -> str:
    """Allowlist-sanitize an HTML fragment, resolving relative href/src against `base`."""
    if not _needs_markup_handling(markup):
        return markup.strip()  # no tag and no entity: already safe, and the common case for short fields
    if markup.count("<") > _MANY_TAGS and _may_nest_deeper_than_allowed(markup):
        root = _parse_html(markup)
        if root is None:
            return ""
        if root.find(_TOO_DEEP) is not None:
            # Pathological nesting (no real article needs 64 levels): keep the words, drop the markup.
            return text_to_html(_markup_text(markup, root))
    return _cleaner(base).clean(markup).strip()
